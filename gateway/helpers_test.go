package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
	"google.golang.org/genai"
)

// fakeFn scripts a fake model call.
type fakeFn func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool)

// fakeModel is a model.LLM whose behaviour a test sets, and which records
// the requests it was sent.
type fakeModel struct {
	id string
	fn fakeFn

	mu   sync.Mutex
	reqs []*model.Request
}

func (f *fakeModel) Name() string { return f.id }

func (f *fakeModel) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		f.fn(ctx, req, stream, yield)
	}
}

func (f *fakeModel) requests() []*model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*model.Request(nil), f.reqs...)
}

func textFinal(s string) *model.Response {
	return &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s}}}, FinishReason: genai.FinishReasonStop,
		TurnComplete: true, UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15}}
}

// demoRules mirror config.yaml's demo desk.
var demoRules = []scripted.Rule{
	{Agent: "coordinator", Match: `\b(hello|hi)\b`, Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "greeter"}}},
	{Agent: "coordinator", AfterTool: "summarizer", Reply: "Summary: {response.text}"},
	{Agent: "coordinator", Match: "summar", Call: &scripted.Call{Name: "summarizer", Args: map[string]any{"request": "{last}"}}},
	{Agent: "coordinator", WhenTool: "get_weather", Match: "weather", Call: &scripted.Call{Name: "get_weather", Args: map[string]any{"location": "Paris"}}},
	{Agent: "coordinator", AfterTool: "get_weather", Reply: "Client says: {response.forecast}"},
	{Agent: "coordinator", Match: "refund", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "billing"}}},
	{Agent: "coordinator", AfterTool: "auditor", Reply: "Audit result: {response.text}"},
	{Agent: "coordinator", Match: "audit", Call: &scripted.Call{Name: "auditor", Args: map[string]any{"request": "{last}"}}},
	{Agent: "coordinator", Reply: "Coordinator here. You said: {last}"},
	{Agent: "auditor", AfterTool: "confirm", Reply: "audited, confirmed={response.ok}"},
	{Agent: "auditor", WhenTool: "confirm", Call: &scripted.Call{Name: "confirm", Args: map[string]any{"what": "{last}"}}},
	{Agent: "greeter", Reply: "Hello from the greeter!"},
	{Agent: "summarizer", Reply: "short version of: {last}"},
	{Agent: "billing", WhenTool: "issue_refund", Call: &scripted.Call{Name: "issue_refund", Args: map[string]any{"amount": 42}}},
	{Agent: "billing", AfterTool: "issue_refund", Reply: "Refund done: {response.status}"},
}

type fixture struct {
	t     *testing.T
	srv   *httptest.Server
	gw    *gateway.Server
	store *sessions.MemoryService
	fakes map[string]*fakeModel
}

type fixtureOpt func(*gateway.Config)

// newFixture serves two virtual models: "desk" (the scripted demo tree with
// a transfer, an agent tool and a client action on a sub-agent) and "fake"
// (one agent on a fake model whose behaviour the test gives).
func newFixture(t *testing.T, fake fakeFn, opts ...fixtureOpt) *fixture {
	t.Helper()
	set := spec.Set{
		Providers: []spec.Provider{{Name: "demo", Type: "scripted", ChunkSize: 4, Rules: demoRules}, {Name: "fk", Type: "fake"}},
		Agents: []spec.Agent{
			{Name: "coordinator", Model: "demo/coord", Description: "Routes.", Instruction: "Route.", SubAgents: []string{"greeter", "billing"}, AgentTools: []string{"summarizer", "auditor"}},
			{Name: "auditor", Model: "demo/auditor", Description: "Audits with the user's confirmation.", Tools: []spec.Tool{{Name: "confirm", Kind: "client"}}},
			{Name: "greeter", Model: "demo/greeter", Description: "Greets."},
			{Name: "billing", Model: "demo/billing", Description: "Refunds.", Tools: []spec.Tool{{Name: "issue_refund", Kind: "client", Description: "Refund in the client's system"}}},
			{Name: "summarizer", Model: "demo/summ", Description: "Summarizes."},
			{Name: "solo", Model: "fk/solo", Description: "A single agent on a fake model."},
			{Name: "flow", Type: "sequential", SubAgents: []string{"greeter"}},
		},
		Models: []spec.VirtualModel{{ID: "desk", Agent: "coordinator", RouteNextTurn: "root"}, {ID: "fake", Agent: "solo"}, {ID: "team/flow", Agent: "flow"}},
	}
	return newFixtureWith(t, set, fake, opts...)
}

// newFixtureWith serves set; providers of type "fake" run fake.
func newFixtureWith(t *testing.T, set spec.Set, fake fakeFn, opts ...fixtureOpt) *fixture {
	t.Helper()
	f := &fixture{t: t, fakes: map[string]*fakeModel{}}
	cat := buildCatalog(t, set, fake, f.fakes)
	var err error
	f.store = sessions.NewMemoryService(sessions.MemoryConfig{})
	cfg := gateway.Config{Catalog: cat, Sessions: f.store}
	for _, o := range opts {
		o(&cfg)
	}
	f.gw, err = gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.gw)
	t.Cleanup(f.srv.Close)
	return f
}

// shutdown stops the fixture's server as a stopping process does, with
// what is left of grace: the runs still going then are ended.
func (f *fixture) shutdown(grace context.Context) {
	f.t.Helper()
	if err := f.gw.Shutdown(grace, f.srv.Config); err != nil {
		f.t.Errorf("Shutdown: %v", err)
	}
}

// shutdownNow is shutdown without a grace.
func (f *fixture) shutdownNow() {
	f.t.Helper()
	grace, cancel := context.WithCancel(context.Background())
	cancel()
	f.shutdown(grace)
}

// post sends a JSON body and returns the response (the caller closes it).
func (f *fixture) post(path, body string, headers ...string) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

// decode reads a JSON body into a generic map.
func decode(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return m
}

// sseFrames reads a whole SSE body: data payloads and comment lines. Id
// lines ("id: <invocationId>:<n>", run frames' cursors) are checked for
// form only; sseIDs reads them.
func sseFrames(t *testing.T, r io.Reader) (data []string, comments []string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"):
			comments = append(comments, line)
		case strings.HasPrefix(line, "id: ") && strings.Contains(line, ":"):
		case line == "":
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	return data, comments
}

// silentUntil is a model that answers "late" once heard is closed: the
// test closes it when it read a keepalive, so the stream stays silent
// until then however late the machine sends one. Without a keepalive
// it answers after 10 s, and the stream begins with the answer.
func silentUntil(heard <-chan struct{}) fakeFn {
	return func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
			return
		}
		yield(textFinal("late"), nil)
	}
}

// keptAliveData reads the SSE body of a turn on silentUntil(heard): its
// first line must be a keepalive, whereupon heard closes and the model
// answers. It returns the data payloads that follow.
func keptAliveData(t *testing.T, body io.Reader, heard chan<- struct{}) []string {
	t.Helper()
	br := bufio.NewReader(body)
	first, err := br.ReadString('\n')
	close(heard)
	if err != nil || first != ": keepalive\n" {
		t.Errorf("the silent stream began with %q (%v), want a keepalive", first, err)
	}
	data, _ := sseFrames(t, br)
	return data
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// partialThenWait is a model call that streams "a", closes started, waits
// for its context to end, closes cancelled (when not nil) and reports the
// context's error: a run the client or the server must stop.
func partialThenWait(started, cancelled chan struct{}) fakeFn {
	return func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		part := &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "a"}}}}
		if !yield(part, nil) {
			return
		}
		close(started)
		<-ctx.Done()
		if cancelled != nil {
			close(cancelled)
		}
		yield(nil, ctx.Err())
	}
}

// buildCatalog builds set with providers of type "fake" running fake (a
// fixed answer when nil), recording each fake model by id in models.
func buildCatalog(t *testing.T, set spec.Set, fake fakeFn, models map[string]*fakeModel) *spec.Catalog {
	t.Helper()
	if fake == nil {
		fake = func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
			yield(textFinal("fake answer"), nil)
		}
	}
	cat, err := spec.Build(set, spec.BuildOptions{Factories: map[string]spec.ProviderFactory{
		"fake": func(p spec.Provider) (func(string) (model.LLM, error), error) {
			return func(id string) (model.LLM, error) {
				m := &fakeModel{id: id, fn: fake}
				models[id] = m
				return m, nil
			}, nil
		},
	}})
	if err != nil {
		t.Fatalf("spec.Build: %v", err)
	}
	return cat
}
