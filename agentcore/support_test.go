package agentcore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// TestMain fails the package when any test leaves a goroutine running:
// every stream the runtime starts must be released when it ends or when
// its consumer stops. (opencensus, pulled in by genai, starts a worker at
// init.)
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// noLeaks checks, at the end of one test, that the test's runs stopped
// every goroutine they started.
func noLeaks(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// replies is a fakeLLM that answers its n-th call with resps[n-1] and
// repeats the last response once the list runs out.
func replies(resps ...*model.Response) *fakeLLM {
	return &fakeLLM{name: "fake", fn: func(_ context.Context, _ *model.Request, _ bool, n int) ([]*model.Response, error) {
		return []*model.Response{resps[min(n, len(resps))-1]}, nil
	}}
}

// perAgent is a fakeLLM that answers each calling agent from its own list
// (by that agent's call count), repeating the list's last response.
func perAgent(script map[string][]*model.Response) *fakeLLM {
	var mu sync.Mutex
	count := map[string]int{}
	return &fakeLLM{name: "fake", fn: func(_ context.Context, req *model.Request, _ bool, _ int) ([]*model.Response, error) {
		mu.Lock()
		count[req.Agent]++
		n := count[req.Agent]
		mu.Unlock()
		rs := script[req.Agent]
		if len(rs) == 0 {
			return nil, fmt.Errorf("no script for agent %s", req.Agent)
		}
		return []*model.Response{rs[min(n, len(rs))-1]}, nil
	}}
}

// requestsBy lists the requests a given agent made.
func (f *fakeLLM) requestsBy(agent string) []*model.Request {
	var out []*model.Request
	for _, r := range f.requests() {
		if r.Agent == agent {
			out = append(out, r)
		}
	}
	return out
}

// lastRequest is the latest request the fake received.
func (f *fakeLLM) lastRequest(t testing.TB) *model.Request {
	t.Helper()
	rs := f.requests()
	if len(rs) == 0 {
		t.Fatal("the model was never called")
	}
	return rs[len(rs)-1]
}

func fc(id, name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: name, Args: args}
}

// callsResp is a final response holding several function calls.
func callsResp(calls ...*genai.FunctionCall) *model.Response {
	c := &genai.Content{Role: genai.RoleModel}
	for _, f := range calls {
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: f})
	}
	return &model.Response{Content: c, FinishReason: genai.FinishReasonStop, TurnComplete: true}
}

// transferResp is a call of transfer_to_agent.
func transferResp(id, to string) *model.Response {
	return callResp(id, agentcore.TransferToolName, map[string]any{"agent_name": to})
}

// sysText is the text of a request's system instruction.
func sysText(req *model.Request) string {
	if req.Config == nil || req.Config.SystemInstruction == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range req.Config.SystemInstruction.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// render flattens contents into one line per part, for diffs: "role: text",
// "role: call name {args}" or "role: resp name {response}".
func render(cs []*genai.Content) []string {
	var out []string
	for _, c := range cs {
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				out = append(out, fmt.Sprintf("%s: call %s %s", c.Role, p.FunctionCall.Name, jsonString(p.FunctionCall.Args)))
			case p.FunctionResponse != nil:
				out = append(out, fmt.Sprintf("%s: resp %s %s", c.Role, p.FunctionResponse.Name, jsonString(p.FunctionResponse.Response)))
			default:
				out = append(out, c.Role+": "+p.Text)
			}
		}
	}
	return out
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// decl finds a function declaration offered in req, or nil.
func decl(req *model.Request, name string) *genai.FunctionDeclaration {
	for _, d := range req.FunctionDeclarations() {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// declNames lists the names of the functions offered in req.
func declNames(req *model.Request) []string {
	var out []string
	for _, d := range req.FunctionDeclarations() {
		out = append(out, d.Name)
	}
	return out
}

// collect drains a run; it stops at the first error.
func collect(run *agentcore.Run) ([]*sessions.Event, error) {
	var out []*sessions.Event
	for ev, err := range run.Events() {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// runReq runs a turn built from req (user u1 unless set) and drains it.
func (h *harness) runReq(ctx context.Context, req agentcore.RunRequest) ([]*sessions.Event, error) {
	h.t.Helper()
	if req.UserID == "" {
		req.UserID = "u1"
	}
	return collect(h.runner.Run(ctx, req))
}

// responses collects every function response in evs by call id.
func responses(evs []*sessions.Event) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range evs {
		for _, r := range e.FunctionResponses() {
			out[r.ID] = r.Response
		}
	}
	return out
}

// last is the last event of evs.
func last(t testing.TB, evs []*sessions.Event) *sessions.Event {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return evs[len(evs)-1]
}

// texts lists "author: text" for the non-partial events of evs with text.
func texts(evs []*sessions.Event) []string {
	var out []string
	for _, e := range evs {
		if !e.Partial && e.Text() != "" {
			out = append(out, e.Author+": "+e.Text())
		}
	}
	return out
}

// fnTool builds a typed function tool or fails the test.
func fnTool[A, R any](t testing.TB, name string, fn func(context.Context, *agentcore.ToolContext, A) (R, error)) agentcore.CallableTool {
	t.Helper()
	tool, err := agentcore.NewFunctionTool(agentcore.FunctionToolConfig{Name: name, Description: "test tool " + name}, fn)
	if err != nil {
		t.Fatalf("NewFunctionTool(%s): %v", name, err)
	}
	return tool
}

// echoTool returns its arguments as its result.
func echoTool(t testing.TB, name string) agentcore.CallableTool {
	return fnTool(t, name, func(_ context.Context, _ *agentcore.ToolContext, args map[string]any) (map[string]any, error) {
		return map[string]any{"echo": args}, nil
	})
}

// agentTool wraps a as a tool or fails the test.
func agentTool(t testing.TB, a agentcore.Agent) *agentcore.AgentTool {
	t.Helper()
	tool, err := agentcore.NewAgentTool(a, agentcore.AgentToolConfig{})
	if err != nil {
		t.Fatalf("NewAgentTool(%s): %v", a.Name(), err)
	}
	return tool
}

// stubAgent is a hand-written Agent: its sub-agents can be changed after
// construction (to build invalid trees) and its run is a function.
type stubAgent struct {
	name string
	subs []agentcore.Agent
	run  func(ctx context.Context, inv *agentcore.Invocation) iter.Seq2[*sessions.Event, error]
}

func (s *stubAgent) Name() string                 { return s.name }
func (s *stubAgent) Description() string          { return "stub " + s.name }
func (s *stubAgent) SubAgents() []agentcore.Agent { return s.subs }
func (s *stubAgent) Run(ctx context.Context, inv *agentcore.Invocation) iter.Seq2[*sessions.Event, error] {
	if s.run != nil {
		return s.run(ctx, inv)
	}
	return func(yield func(*sessions.Event, error) bool) {
		ev := inv.NewEvent()
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "stub " + s.name}}}
		yield(ev, nil)
	}
}
