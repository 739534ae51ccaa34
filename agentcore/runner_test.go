package agentcore_test

import (
	"context"
	"errors"
	"iter"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// app: keys are shared by every session of the app, user: keys by the
// user's sessions, plain keys stay in their session, and temp: keys live
// only for the invocation.
func TestStateScopes(t *testing.T) {
	const instr = "{app:plan?}|{user:lang?}|{topic?}|{temp:scratch?}"
	setState := fnTool(t, "remember", func(_ context.Context, tc *agentcore.ToolContext, _ struct{}) (string, error) {
		for k, v := range map[string]any{"app:plan": "pro", "user:lang": "fr", "topic": "go", "temp:scratch": "x"} {
			tc.SetState(k, v)
		}
		return "ok", nil
	})
	m := perAgent(map[string][]*model.Response{"helper": {callResp("c1", "remember", nil), textResp("stored")}})
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: instr, Tools: []agentcore.Tool{setState}}))
	evs := h.mustRun("s1", userText("remember"), agentcore.RunConfig{})

	// Within the invocation, every scope is readable, temp: included.
	if diff := cmp.Diff([]string{"|||", "pro|fr|go|x"}, []string{sysText(m.requests()[0]), sysText(m.requests()[1])}); diff != "" {
		t.Errorf("instructions in s1 (-want +got):\n%s", diff)
	}
	wantDelta := map[string]any{"app:plan": "pro", "user:lang": "fr", "topic": "go"}
	if diff := cmp.Diff(wantDelta, evs[1].Actions.StateDelta); diff != "" {
		t.Errorf("tool event stateDelta (-want +got):\n%s", diff)
	}
	s1 := h.session("s1")
	if diff := cmp.Diff(wantDelta, s1.State); diff != "" {
		t.Errorf("s1 state (-want +got):\n%s", diff)
	}
	for _, e := range s1.Events {
		if _, ok := e.Actions.StateDelta["temp:scratch"]; ok {
			t.Errorf("stored event %s keeps the temp: key", e.ID)
		}
	}

	for _, tc := range []struct {
		user, session, want string
	}{
		{"u1", "s1", "pro|fr|go|"}, // a new invocation: temp: is gone
		{"u1", "s2", "pro|fr||"},
		{"u2", "s3", "pro|||"},
	} {
		t.Run(tc.user+"/"+tc.session, func(t *testing.T) {
			m := replies(textResp("ok"))
			h2 := &harness{t: t, svc: h.svc, app: h.app}
			r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Sessions: h.svc, AutoCreateSession: true,
				Agent: mustLlm(t, agentcore.LlmConfig{Name: "reader", Model: m, Instruction: instr})})
			if err != nil {
				t.Fatal(err)
			}
			h2.runner = r
			if _, err := h2.runReq(context.Background(), agentcore.RunRequest{UserID: tc.user, SessionID: tc.session, NewMessage: userText("hi")}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sysText(m.lastRequest(t))); diff != "" {
				t.Errorf("instruction (-want +got):\n%s", diff)
			}
		})
	}
}

// The usage of every model call of the turn is summed, agents called as
// tools included.
func TestUsageSummedAcrossTheTree(t *testing.T) {
	withUsage := func(r *model.Response, prompt, out int32) *model.Response {
		c := *r
		c.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: out, TotalTokenCount: prompt + out}
		return &c
	}
	m := perAgent(map[string][]*model.Response{
		"parent": {withUsage(callResp("p1", "child", map[string]any{"request": "x"}), 10, 1), withUsage(textResp("done"), 20, 3)},
		"child":  {withUsage(textResp("child text"), 5, 2)},
	})
	child := mustLlm(t, agentcore.LlmConfig{Name: "child", Model: m})
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "parent", Model: m, Tools: []agentcore.Tool{agentTool(t, child)}}))
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("hi")})
	if _, err := collect(run); err != nil {
		t.Fatal(err)
	}
	want := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 35, CandidatesTokenCount: 6, TotalTokenCount: 41}
	if diff := cmp.Diff(want, run.Usage()); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	// The sum is shared, not copied for each caller.
	if n := testing.AllocsPerRun(10, func() { _ = run.Usage() }); n != 0 {
		t.Errorf("Usage: %v allocations, want 0", n)
	}
	// A second turn counts only its own calls.
	run2 := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("again")})
	if _, err := collect(run2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 20, CandidatesTokenCount: 3, TotalTokenCount: 23}, run2.Usage()); diff != "" {
		t.Errorf("second turn usage (-want +got):\n%s", diff)
	}
}

// A model that fails after streaming some text: the caller sees the
// partial events, then the error; nothing of the turn but the user's
// message is stored.
func TestModelErrorMidStream(t *testing.T) {
	upstream := &model.Error{Provider: "p", Model: "m", Code: "stream_cut", Message: "connection reset"}
	for _, tc := range []struct {
		name    string
		resps   []*model.Response
		err     error
		wantErr string
	}{
		{"error after partials", []*model.Response{{Partial: true, Content: content("Hel")}, {Partial: true, Content: content("lo")}}, upstream,
			"agent helper: model p/m: stream_cut: connection reset"},
		{"stream ends without a final response", []*model.Response{{Partial: true, Content: content("Hel")}}, nil,
			"agent helper: model fake returned no response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeLLM{name: "fake", fn: func(context.Context, *model.Request, bool, int) ([]*model.Response, error) { return tc.resps, tc.err }}
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m}))
			evs, err := h.run("s1", userText("hi"), agentcore.RunConfig{Streaming: true})
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.err != nil {
				if me, ok := model.AsError(err); !ok || me != upstream {
					t.Errorf("the model's *Error is not in the chain: %v", err)
				}
			}
			var got []string
			for _, e := range evs {
				if !e.Partial {
					t.Errorf("non-partial event %+v", e)
				}
				got = append(got, e.Text())
			}
			var want []string
			for _, r := range tc.resps {
				want = append(want, r.Content.Parts[0].Text)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("partial texts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"user"}, authors(h.session("s1").Events)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
}

// blocker is a model that cancels the run's context on its first call (as
// a client going away would) and then waits for the cancellation.
type blocker struct {
	cancel func()
	once   sync.Once
}

func (b *blocker) Name() string { return "blocker" }

func (b *blocker) GenerateContent(ctx context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req.Agent == "caller" {
			yield(callResp("", "work", map[string]any{"request": "go"}), nil)
			return
		}
		b.once.Do(b.cancel)
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// Cancelling the context stops the run wherever it is, reports the
// cancellation and leaves no goroutine behind.
func TestCancellationStopsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, m model.LLM, cancel func()) agentcore.Agent
	}{
		{"model call", func(t *testing.T, m model.LLM, _ func()) agentcore.Agent {
			return mustLlm(t, agentcore.LlmConfig{Name: "solo", Model: m})
		}},
		{"tool call", func(t *testing.T, _ model.LLM, cancel func()) agentcore.Agent {
			work := fnTool(t, "work", func(ctx context.Context, _ *agentcore.ToolContext, _ map[string]any) (string, error) {
				cancel()
				<-ctx.Done()
				return "", ctx.Err()
			})
			return mustLlm(t, agentcore.LlmConfig{Name: "caller", Model: &blocker{cancel: cancel}, Tools: []agentcore.Tool{work}})
		}},
		{"agent tool", func(t *testing.T, m model.LLM, _ func()) agentcore.Agent {
			work := mustLlm(t, agentcore.LlmConfig{Name: "work", Model: m})
			return mustLlm(t, agentcore.LlmConfig{Name: "caller", Model: m, Tools: []agentcore.Tool{agentTool(t, work)}})
		}},
		{"parallel", func(t *testing.T, m model.LLM, _ func()) agentcore.Agent {
			var subs []agentcore.Agent
			for _, n := range []string{"p1", "p2", "p3"} {
				subs = append(subs, mustLlm(t, agentcore.LlmConfig{Name: n, Model: m}))
			}
			return mustParallel(t, "fan", subs...)
		}},
		{"sequential", func(t *testing.T, m model.LLM, _ func()) agentcore.Agent {
			return mustSequential(t, "seq", mustLlm(t, agentcore.LlmConfig{Name: "first", Model: m}), &stubAgent{name: "second"})
		}},
		{"loop", func(t *testing.T, m model.LLM, _ func()) agentcore.Agent {
			l, err := agentcore.NewLoopAgent(agentcore.WorkflowConfig{Name: "loop", SubAgents: []agentcore.Agent{mustLlm(t, agentcore.LlmConfig{Name: "body", Model: m})}})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := newHarness(t, tc.build(t, &blocker{cancel: cancel}, cancel))
			evs, err := h.runReq(ctx, agentcore.RunRequest{SessionID: "s1", NewMessage: userText("hi")})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v after %v, want context.Canceled", err, authors(evs))
			}
			for _, e := range evs {
				if e.Author == "second" {
					t.Errorf("the sequence went on after the cancellation")
				}
			}
		})
	}
}

// Nothing panics on a nil message: the turn runs on the history.
func TestRunWithoutMessage(t *testing.T) {
	m := replies(textResp("hello"))
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m}))
	evs := h.mustRun("s1", nil, agentcore.RunConfig{})
	if diff := cmp.Diff([]string{"helper: hello"}, texts(evs)); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"helper"}, authors(h.session("s1").Events)); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
}

// The runner stamps events with its clock and id generator, so streams are
// reproducible in tests.
func TestRunnerClockAndIDs(t *testing.T) {
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: replies(textResp("hi"))}))
	h.mustRun("s1", userText("hello"), agentcore.RunConfig{})
	var got []string
	for _, e := range h.session("s1").Events {
		got = append(got, e.ID+" "+e.InvocationID+" "+e.Timestamp.Format("15:04:05.000"))
	}
	want := []string{"id-0002 e-id-0001 03:04:05.002", "id-0003 e-id-0001 03:04:05.003"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids and timestamps (-want +got):\n%s", diff)
	}
}

// Whatever shape the model's answer takes, the run neither panics nor
// stores junk.
func TestOddModelOutput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resp      *model.Response
		wantParts []string // rendered parts of the stored model event
		wantResp  string   // the result of the call, as JSON
	}{
		{name: "no content", resp: &model.Response{TurnComplete: true}},
		{name: "empty and nil parts dropped", resp: &model.Response{Content: &genai.Content{Parts: []*genai.Part{nil, {Text: ""}, {Text: "kept"}}}},
			wantParts: []string{"model: kept"}},
		{name: "call without an id gets one", resp: callResp("", "echo", map[string]any{"a": 1}),
			wantParts: []string{`model: call echo {"a":1}`}, wantResp: `{"echo":{"a":1}}`},
		{name: "call without a name", resp: callResp("c1", "", nil),
			wantParts: []string{"model: call  null"}, wantResp: `{"error":"tool \"\" not found; available tools: echo"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(tc.resp, textResp("after"))
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{echoTool(t, "echo")}}))
			evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{})
			var parts []string
			if evs[0].Content != nil {
				parts = render([]*genai.Content{evs[0].Content})
			}
			if diff := cmp.Diff(tc.wantParts, parts); diff != "" {
				t.Errorf("model event parts (-want +got):\n%s", diff)
			}
			if tc.wantResp == "" {
				return
			}
			calls := evs[0].FunctionCalls()
			if len(calls) != 1 || calls[0].ID == "" {
				t.Fatalf("calls %+v", calls)
			}
			got := responses(evs)
			if diff := cmp.Diff(tc.wantResp, jsonString(got[calls[0].ID])); diff != "" {
				t.Errorf("result for %s (-want +got):\n%s", calls[0].ID, diff)
			}
		})
	}
}
