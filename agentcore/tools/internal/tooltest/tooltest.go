// Package tooltest runs one scripted agent over tools and toolsets, for the
// tests of the tool packages: a turn goes through the real runtime (request
// building, dispatch, the function response fed back to the model), and
// the model's requests are recorded.
package tooltest

import (
	"context"
	"iter"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/sessions"
)

// Config is the agent under test.
type Config struct {
	Tools    []agentcore.Tool
	Toolsets []agentcore.Toolset
	// Rules script the model (agent "agent").
	Rules []scripted.Rule
	// Params are the parameters the agent declares (it sees only those).
	Params []agentcore.ParamSpec
}

// Harness runs turns of one session.
type Harness struct {
	t      testing.TB
	runner *agentcore.Runner
	model  *recorder
}

// New builds the agent and its runner.
func New(t testing.TB, cfg Config) *Harness {
	t.Helper()
	sm, err := scripted.New("scripted", scripted.Config{Rules: cfg.Rules})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{LLM: sm}
	a, err := agentcore.NewLlmAgent(agentcore.LlmConfig{Name: "agent", Model: rec, Instruction: "Use your tools.",
		Tools: cfg.Tools, Toolsets: cfg.Toolsets, Parameters: cfg.Params})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: a, AutoCreateSession: true,
		Sessions: sessions.NewMemoryService(sessions.MemoryConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	return &Harness{t: t, runner: r, model: rec}
}

// Turn runs one user turn with params (nil: none) and returns its events;
// a run error fails the test.
func (h *Harness) Turn(text string, params *agentcore.Params) []*sessions.Event {
	h.t.Helper()
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1",
		NewMessage: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: text}}}, Params: params})
	var evs []*sessions.Event
	for ev, err := range run.Events() {
		if err != nil {
			h.t.Fatalf("turn %q: %v", text, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// Requests are the model requests so far.
func (h *Harness) Requests() []*model.Request {
	h.model.mu.Lock()
	defer h.model.mu.Unlock()
	return append([]*model.Request(nil), h.model.reqs...)
}

// Responses are the function responses of evs by function name.
func Responses(evs []*sessions.Event) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, ev := range evs {
		for _, r := range ev.FunctionResponses() {
			out[r.Name] = r.Response
		}
	}
	return out
}

// FinalText is the text of the last event.
func FinalText(evs []*sessions.Event) string {
	if len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].Text()
}

// Declared lists the function names a request offers.
func Declared(req *model.Request) []string {
	var out []string
	for _, d := range req.FunctionDeclarations() {
		out = append(out, d.Name)
	}
	return out
}

// recorder records the requests of a model.
type recorder struct {
	model.LLM
	mu   sync.Mutex
	reqs []*model.Request
}

func (r *recorder) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.LLM.GenerateContent(ctx, req, stream)
}
