package agentcore_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixedClock returns a clock that starts at a fixed instant and advances one
// millisecond per reading, and a counter id generator.
func determinism() (func() time.Time, func() string) {
	var mu sync.Mutex
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n atomic.Int64
	return func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			t = t.Add(time.Millisecond)
			return t
		}, func() string {
			return fmt.Sprintf("id-%04d", n.Add(1))
		}
}

// fakeLLM answers with fn and records every request it receives.
type fakeLLM struct {
	name string
	fn   func(ctx context.Context, req *model.Request, stream bool, n int) ([]*model.Response, error)

	mu   sync.Mutex
	reqs []*model.Request
}

func (f *fakeLLM) Name() string { return f.name }

func (f *fakeLLM) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		n := len(f.reqs)
		f.mu.Unlock()
		resps, err := f.fn(ctx, req, stream, n)
		for _, r := range resps {
			if !yield(r, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

func (f *fakeLLM) requests() []*model.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*model.Request(nil), f.reqs...)
}

// textResp is a final text response.
func textResp(s string) *model.Response {
	return &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s}}}, FinishReason: genai.FinishReasonStop, TurnComplete: true}
}

// callResp is a final response with one function call.
func callResp(id, name string, args map[string]any) *model.Response {
	return &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}}}, FinishReason: genai.FinishReasonStop, TurnComplete: true}
}

type harness struct {
	t      *testing.T
	runner *agentcore.Runner
	svc    *sessions.MemoryService
	app    string
}

type harnessOpt func(*agentcore.RunnerConfig)

func newHarness(t *testing.T, root agentcore.Agent, opts ...harnessOpt) *harness {
	t.Helper()
	now, ids := determinism()
	svc := sessions.NewMemoryService(sessions.MemoryConfig{Now: now})
	cfg := agentcore.RunnerConfig{AppName: "app", Agent: root, Sessions: svc, Now: now, NewID: ids, AutoCreateSession: true}
	for _, o := range opts {
		o(&cfg)
	}
	r, err := agentcore.NewRunner(cfg)
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	return &harness{t: t, runner: r, svc: svc, app: "app"}
}

// run runs one turn and returns every event; a run error fails the test
// unless wantErr.
func (h *harness) run(sessionID string, msg *genai.Content, cfg agentcore.RunConfig) ([]*sessions.Event, error) {
	h.t.Helper()
	return h.runReq(context.Background(), agentcore.RunRequest{SessionID: sessionID, NewMessage: msg, Config: cfg})
}

func (h *harness) mustRun(sessionID string, msg *genai.Content, cfg agentcore.RunConfig) []*sessions.Event {
	h.t.Helper()
	evs, err := h.run(sessionID, msg, cfg)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return evs
}

func (h *harness) session(id string) *sessions.Session {
	h.t.Helper()
	s, err := h.svc.Get(context.Background(), sessions.GetRequest{AppName: h.app, UserID: "u1", SessionID: id})
	if err != nil {
		h.t.Fatalf("get session %s: %v", id, err)
	}
	return s
}

func userText(s string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: s}}}
}

func funcResponse(id, name string, resp map[string]any) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: resp}}}}
}

// golden compares the events' JSON (one event per line) with a file in
// testdata; -update rewrites it.
func golden(t *testing.T, name string, evs []*sessions.Event) {
	t.Helper()
	var got []byte
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got = append(append(got, b...), '\n')
	}
	path := filepath.Join("testdata", name+".golden.jsonl")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func mustLlm(t testing.TB, cfg agentcore.LlmConfig) *agentcore.LlmAgent {
	t.Helper()
	a, err := agentcore.NewLlmAgent(cfg)
	if err != nil {
		t.Fatalf("NewLlmAgent(%s): %v", cfg.Name, err)
	}
	return a
}

// authors lists event authors, marking partial events with a '~'.
func authors(evs []*sessions.Event) []string {
	var out []string
	for _, e := range evs {
		a := e.Author
		if e.Partial {
			a = "~" + a
		}
		out = append(out, a)
	}
	return out
}

// counterIDs returns a deterministic id generator: prefix + 32 digits.
func counterIDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s%032d", prefix, n.Add(1)) }
}
