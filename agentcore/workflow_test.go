package agentcore_test

import (
	"context"
	"iter"
	"strings"
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

func mustSequential(t testing.TB, name string, subs ...agentcore.Agent) *agentcore.SequentialAgent {
	t.Helper()
	a, err := agentcore.NewSequentialAgent(agentcore.WorkflowConfig{Name: name, SubAgents: subs})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustParallel(t testing.TB, name string, subs ...agentcore.Agent) *agentcore.ParallelAgent {
	t.Helper()
	a, err := agentcore.NewParallelAgent(agentcore.WorkflowConfig{Name: name, SubAgents: subs})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A child's output_key is readable downstream as {key}; a temp: key only
// for the rest of the invocation, and it is never stored.
func TestSequentialPipeline(t *testing.T) {
	for _, tc := range []struct {
		key        string
		wantStored bool
	}{
		{"draft", true},
		{"temp:draft", false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{"writer": {textResp("A short poem.")}, "reviewer": {textResp("Lovely.")}})
			writer := mustLlm(t, agentcore.LlmConfig{Name: "writer", Model: m, OutputKey: tc.key})
			reviewer := mustLlm(t, agentcore.LlmConfig{Name: "reviewer", Model: m, Instruction: "Review this draft: {" + tc.key + "}"})
			h := newHarness(t, mustSequential(t, "pipeline", writer, reviewer))
			evs := h.mustRun("s1", userText("write"), agentcore.RunConfig{})
			if diff := cmp.Diff([]string{"writer: A short poem.", "reviewer: Lovely."}, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff("Review this draft: A short poem.", sysText(m.requestsBy("reviewer")[0])); diff != "" {
				t.Errorf("reviewer instruction (-want +got):\n%s", diff)
			}
			sess := h.session("s1")
			if _, ok := sess.State[tc.key]; ok != tc.wantStored {
				t.Errorf("state %v: key %s stored = %v, want %v", sess.State, tc.key, ok, tc.wantStored)
			}
			for _, e := range sess.Events {
				if _, ok := e.Actions.StateDelta[tc.key]; ok != (tc.wantStored && e.Author == "writer") {
					t.Errorf("stored event of %s has stateDelta %v", e.Author, e.Actions.StateDelta)
				}
			}
		})
	}
}

// Parallel children run on branches "<parent>.<child>", do not see each
// other's events, and their events are merged into the one stream; the
// agents after the fan-out see everything.
func TestParallelBranches(t *testing.T) {
	bDone := make(chan struct{})
	var once sync.Once
	m := perAgent(map[string][]*model.Response{
		"a":      {callResp("ca", "wait_for_b", nil), textResp("a result")},
		"b":      {callResp("cb", "echo", map[string]any{"from": "b"}), textResp("b result")},
		"x":      {textResp("x result")},
		"merger": {textResp("merged")},
	})
	waitForB := fnTool(t, "wait_for_b", func(ctx context.Context, _ *agentcore.ToolContext, _ struct{}) (string, error) {
		select {
		case <-bDone:
			return "b finished", nil
		case <-time.After(5 * time.Second):
			return "timed out", nil
		}
	})
	a := mustLlm(t, agentcore.LlmConfig{Name: "a", Model: m, Tools: []agentcore.Tool{waitForB}})
	b := mustLlm(t, agentcore.LlmConfig{Name: "b", Model: m, Tools: []agentcore.Tool{echoTool(t, "echo")},
		Callbacks: agentcore.Callbacks{AfterAgent: func(context.Context, *agentcore.CallbackContext) (*genai.Content, error) {
			once.Do(func() { close(bDone) }) // b's events are all stored by now
			return nil, nil
		}}})
	x := mustLlm(t, agentcore.LlmConfig{Name: "x", Model: m})
	inner := mustParallel(t, "inner", x)
	fan := mustParallel(t, "fan", a, b, inner)
	merger := mustLlm(t, agentcore.LlmConfig{Name: "merger", Model: m})
	h := newHarness(t, mustSequential(t, "flow", fan, merger))
	evs := h.mustRun("s1", userText("go"), agentcore.RunConfig{})

	branches := map[string]string{}
	count := map[string]int{}
	for _, e := range evs {
		branches[e.Author] = e.Branch
		count[e.Author]++
	}
	wantBranches := map[string]string{"a": "fan.a", "b": "fan.b", "x": "fan.inner.x", "merger": ""}
	if diff := cmp.Diff(wantBranches, branches); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"a": 3, "b": 3, "x": 1, "merger": 1}, count); diff != "" {
		t.Errorf("merged events per author (-want +got):\n%s", diff)
	}
	if got := len(h.session("s1").Events); got != 1+len(evs) {
		t.Errorf("stored %d events, want the user's and %d", got, len(evs))
	}
	// a's second call came after b had finished, and still saw only its own
	// branch.
	want := []string{"user: go", "model: call wait_for_b null", `user: resp wait_for_b {"result":"b finished"}`}
	if diff := cmp.Diff(want, render(m.requestsBy("a")[1].Contents)); diff != "" {
		t.Errorf("a's second request (-want +got):\n%s", diff)
	}
	// The merger, outside the fan-out, sees every branch.
	got := strings.Join(render(m.requestsBy("merger")[0].Contents), "\n")
	for _, w := range []string{"[a] said: a result", "[b] said: b result", "[x] said: x result", "[b] called tool `echo`"} {
		if !strings.Contains(got, w) {
			t.Errorf("merger's request lacks %q:\n%s", w, got)
		}
	}
}

// endless is a model that streams deltas until its consumer stops or ctx
// ends, counting how many of its streams ended.
type endless struct {
	started, stopped atomic.Int64
}

func (e *endless) Name() string { return "endless" }

func (e *endless) GenerateContent(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		e.started.Add(1)
		defer e.stopped.Add(1)
		for {
			if ctx.Err() != nil {
				yield(nil, ctx.Err())
				return
			}
			if !yield(&model.Response{Partial: true, Content: content("tick ")}, nil) {
				return
			}
		}
	}
}

// When the consumer stops reading, the fan-out is cancelled and drained
// before Events returns: no branch is left running.
func TestParallelConsumerStopsEarly(t *testing.T) {
	noLeaks(t)
	m := &endless{}
	var subs []agentcore.Agent
	for _, n := range []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"} {
		subs = append(subs, mustLlm(t, agentcore.LlmConfig{Name: n, Model: m}))
	}
	h := newHarness(t, mustParallel(t, "fan", subs...))
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("go"),
		Config: agentcore.RunConfig{Streaming: true}})
	seen := 0
	for ev, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial {
			t.Fatalf("unexpected final event %+v", ev)
		}
		if seen++; seen == 20 {
			break
		}
	}
	if s, e := m.started.Load(), m.stopped.Load(); s == 0 || s != e {
		t.Errorf("%d model streams started, %d stopped", s, e)
	}
	if got := h.session("s1").Events; len(got) != 1 {
		t.Errorf("stored %v, want only the user's message", authors(got))
	}
}

func TestLoopAgent(t *testing.T) {
	exit := callResp("x1", agentcore.ExitLoopToolName, nil)
	for _, tc := range []struct {
		name      string
		maxIter   int
		worker    []*model.Response
		wantTexts []string
		wantEsc   bool
	}{
		{name: "max_iterations", maxIter: 3, worker: []*model.Response{textResp("draft")},
			wantTexts: []string{"worker: draft", "critic: again", "worker: draft", "critic: again", "worker: draft", "critic: again", "after: done"}},
		{name: "exit_loop escalates and ends it", maxIter: 10, worker: []*model.Response{textResp("draft"), exit},
			wantTexts: []string{"worker: draft", "critic: again", "after: done"}, wantEsc: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{"worker": tc.worker, "critic": {textResp("again")}, "after": {textResp("done")}})
			worker := mustLlm(t, agentcore.LlmConfig{Name: "worker", Model: m, Tools: []agentcore.Tool{agentcore.ExitLoop()}})
			critic := mustLlm(t, agentcore.LlmConfig{Name: "critic", Model: m})
			loop, err := agentcore.NewLoopAgent(agentcore.WorkflowConfig{Name: "refine", MaxIterations: tc.maxIter,
				SubAgents: []agentcore.Agent{worker, critic}})
			if err != nil {
				t.Fatal(err)
			}
			after := mustLlm(t, agentcore.LlmConfig{Name: "after", Model: m})
			evs := newHarness(t, mustSequential(t, "flow", loop, after)).mustRun("s1", userText("go"), agentcore.RunConfig{})
			if diff := cmp.Diff(tc.wantTexts, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			var esc []*sessions.Event
			for _, e := range evs {
				if e.Actions.Escalate {
					esc = append(esc, e)
				}
			}
			if !tc.wantEsc {
				if len(esc) != 0 {
					t.Errorf("escalations: %v", authors(esc))
				}
				return
			}
			if len(esc) != 1 || esc[0].Author != "worker" || !esc[0].Actions.SkipSummarization || len(esc[0].FunctionResponses()) != 1 {
				t.Fatalf("escalation events %+v, want worker's exit_loop response", esc)
			}
			if n := len(m.requestsBy("worker")); n != 2 {
				t.Errorf("worker called the model %d times after escalating", n)
			}
		})
	}
}
