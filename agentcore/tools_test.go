package agentcore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

type weatherArgs struct {
	City  string   `json:"city" jsonschema:"the city to look up"`
	Days  int      `json:"days,omitempty" jsonschema:"how many days"`
	Units []string `json:"units,omitempty"`
}

type forecast struct {
	City    string `json:"city"`
	Summary string `json:"summary"`
}

func weatherTool(t testing.TB) agentcore.CallableTool {
	return fnTool(t, "weather", func(_ context.Context, _ *agentcore.ToolContext, a weatherArgs) (forecast, error) {
		return forecast{City: a.City, Summary: strings.Repeat("sunny ", max(a.Days, 1))[:5]}, nil
	})
}

func TestFunctionToolDeclaration(t *testing.T) {
	d := weatherTool(t).Declaration()
	want := &genai.FunctionDeclaration{Name: "weather", Description: "test tool weather", ParametersJsonSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":  map[string]any{"type": "string", "description": "the city to look up"},
			"days":  map[string]any{"type": "integer", "description": "how many days"},
			"units": map[string]any{"type": []any{"null", "array"}, "items": map[string]any{"type": "string"}},
		},
		"required":             []any{"city"},
		"additionalProperties": false,
	}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("declaration (-want +got):\n%s", diff)
	}
}

func TestNewFunctionToolErrors(t *testing.T) {
	ok := func(context.Context, *agentcore.ToolContext, struct{}) (string, error) { return "", nil }
	for _, tc := range []struct {
		name string
		tool string
		fn   func(context.Context, *agentcore.ToolContext, struct{}) (string, error)
		want string
	}{
		{"empty name", "", ok, "invalid name"},
		{"name with spaces", "do it", ok, "invalid name"},
		{"nil function", "fine", nil, "nil function"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agentcore.NewFunctionTool(agentcore.FunctionToolConfig{Name: tc.tool}, tc.fn)
			errorMentions(t, err, tc.want)
		})
	}
}

// toolErrors records the errors the observer saw per tool.
type toolErrors struct {
	agentcore.NopObserver
	mu   sync.Mutex
	errs map[string]string
}

func (o *toolErrors) ToolCall(_, tool string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.errs == nil {
		o.errs = map[string]string{}
	}
	o.errs[tool] = ""
	if err != nil {
		o.errs[tool] = err.Error()
	}
}

// Whatever goes wrong with a call becomes a result the model sees; the run
// goes on.
func TestToolCallOutcomes(t *testing.T) {
	boom := fnTool(t, "boom", func(context.Context, *agentcore.ToolContext, struct{}) (map[string]any, error) {
		return nil, errors.New("the tool broke")
	})
	panicky := fnTool(t, "panicky", func(context.Context, *agentcore.ToolContext, struct{}) (map[string]any, error) {
		panic("kaboom")
	})
	scalar := fnTool(t, "scalar", func(context.Context, *agentcore.ToolContext, struct{}) (int, error) { return 42, nil })
	for _, tc := range []struct {
		name       string
		call       string
		args       map[string]any
		want       map[string]any
		wantErr    string // prefix of the "error" result
		wantObsErr bool
	}{
		{name: "typed arguments", call: "weather", args: map[string]any{"city": "Oslo", "days": 2},
			want: map[string]any{"city": "Oslo", "summary": "sunny"}},
		{name: "garbage arguments", call: "weather", args: map[string]any{"city": 42}, wantErr: "invalid arguments: ", wantObsErr: true},
		{name: "missing required argument", call: "weather", args: map[string]any{"days": 1}, wantErr: "invalid arguments: ", wantObsErr: true},
		{name: "unknown property", call: "weather", args: map[string]any{"city": "Oslo", "planet": "Mars"}, wantErr: "invalid arguments: ", wantObsErr: true},
		{name: "unknown tool", call: "nope", wantErr: `tool "nope" not found; available tools: weather, boom, panicky, scalar`, wantObsErr: true},
		{name: "passive tool", call: agentcore.PreloadMemoryToolName, wantErr: `tool "preload_memory" cannot be called`, wantObsErr: true},
		{name: "tool error", call: "boom", wantErr: "the tool broke", wantObsErr: true},
		{name: "tool panic", call: "panicky", wantErr: "tool panicky panicked: kaboom", wantObsErr: true},
		{name: "scalar result wrapped", call: "scalar", want: map[string]any{"result": float64(42)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(callResp("c1", tc.call, tc.args), textResp("handled"))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m,
				Tools: []agentcore.Tool{weatherTool(t), boom, panicky, scalar, agentcore.PreloadMemory(3)}})
			obs := &toolErrors{}
			evs := newHarness(t, a, func(c *agentcore.RunnerConfig) { c.Observer = obs }).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			got := responses(evs)["c1"]
			if tc.wantErr != "" {
				msg, _ := got["error"].(string)
				if len(got) != 1 || !strings.HasPrefix(msg, tc.wantErr) {
					t.Errorf("result %v, want {\"error\": %q...}", got, tc.wantErr)
				}
			} else if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			// The model saw the result and answered.
			lines := render(m.lastRequest(t).Contents)
			if !strings.HasPrefix(lines[len(lines)-1], "user: resp "+tc.call+" ") {
				t.Errorf("last content the model saw: %q", lines[len(lines)-1])
			}
			if diff := cmp.Diff([]string{"helper: handled"}, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			if gotErr := obs.errs[tc.call] != ""; gotErr != tc.wantObsErr {
				t.Errorf("observer error for %s: %q, want error %v", tc.call, obs.errs[tc.call], tc.wantObsErr)
			}
		})
	}
}

// Calls of one turn run concurrently and their responses come back in one
// event, in call order, whatever order they finish in.
func TestSeveralCallsInOneTurn(t *testing.T) {
	fastDone := make(chan struct{})
	slow := fnTool(t, "slow", func(ctx context.Context, _ *agentcore.ToolContext, _ struct{}) (string, error) {
		select {
		case <-fastDone:
			return "slow done", nil
		case <-time.After(5 * time.Second):
			return "", errors.New("calls ran one after another")
		}
	})
	fast := fnTool(t, "fast", func(context.Context, *agentcore.ToolContext, struct{}) (string, error) {
		close(fastDone)
		return "fast done", nil
	})
	m := perAgent(map[string][]*model.Response{
		"boss": {callsResp(
			fc("c1", "slow", nil), fc("c2", "alpha", map[string]any{"request": "a?"}),
			fc("c3", "beta", map[string]any{"request": "b?"}), fc("c4", "fast", nil),
		), textResp("all done")},
		"alpha": {textResp("alpha answer")},
		"beta":  {textResp("beta answer")},
	})
	alpha := mustLlm(t, agentcore.LlmConfig{Name: "alpha", Model: m, Description: "first helper"})
	beta := mustLlm(t, agentcore.LlmConfig{Name: "beta", Model: m, Description: "second helper"})
	boss := mustLlm(t, agentcore.LlmConfig{Name: "boss", Model: m, Tools: []agentcore.Tool{slow, agentTool(t, alpha), agentTool(t, beta), fast}})
	h := newHarness(t, boss)
	evs := h.mustRun("s1", userText("go"), agentcore.RunConfig{})

	if diff := cmp.Diff([]string{"boss", "boss", "boss"}, authors(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	var got []string
	for _, r := range evs[1].FunctionResponses() {
		got = append(got, r.ID+" "+r.Name+" "+jsonString(r.Response))
	}
	want := []string{
		`c1 slow {"result":"slow done"}`,
		`c2 alpha {"text":"alpha answer"}`,
		`c3 beta {"text":"beta answer"}`,
		`c4 fast {"result":"fast done"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
	for _, child := range []string{"alpha", "beta"} {
		if diff := cmp.Diff([]string{"user", child}, authors(h.session("s1/"+child).Events)); diff != "" {
			t.Errorf("%s sub-conversation (-want +got):\n%s", child, diff)
		}
	}
}

func TestAgentToolDeclaration(t *testing.T) {
	child := mustLlm(t, agentcore.LlmConfig{Name: "researcher", Model: replies(textResp("ok")), Description: "Finds sources."})
	for _, tc := range []struct {
		name, override, want string
	}{
		{"agent description", "", "Finds sources."},
		{"overridden", "Research assistant", "Research assistant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := agentcore.NewAgentTool(child, agentcore.AgentToolConfig{Description: tc.override})
			if err != nil {
				t.Fatal(err)
			}
			want := &genai.FunctionDeclaration{Name: "researcher", Description: tc.want, ParametersJsonSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"request": map[string]any{"type": "string", "description": "The task or question for researcher."}},
				"required":   []string{"request"},
			}}
			if diff := cmp.Diff(want, tool.Declaration()); diff != "" {
				t.Errorf("declaration (-want +got):\n%s", diff)
			}
			if tool.Agent() != agentcore.Agent(child) || tool.IsLongRunning() || tool.Description() != tc.want {
				t.Errorf("Agent/IsLongRunning/Description = %v/%v/%q", tool.Agent().Name(), tool.IsLongRunning(), tool.Description())
			}
		})
	}
}

// The parent gets the newline-joined text of the child's events, plus
// "error" when a child event carried one; sub-conversations nest and keep
// their history from call to call.
func TestAgentToolResults(t *testing.T) {
	echo := echoTool(t, "echo")
	for _, tc := range []struct {
		name      string
		childCfg  agentcore.LlmConfig
		childSays []*model.Response
		args      map[string]any
		want      map[string]any
	}{
		{name: "text of every child event", childSays: []*model.Response{
			{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "step one"}, {FunctionCall: fc("e1", "echo", nil)}}}},
			textResp("step two"),
		}, args: map[string]any{"request": "work"}, want: map[string]any{"text": "step one\nstep two"}},
		{name: "child error", childCfg: agentcore.LlmConfig{MaxIterations: 1}, childSays: []*model.Response{callResp("e1", "echo", nil)},
			args: map[string]any{"request": "work"},
			want: map[string]any{"text": "", "error": "agent child stopped after max_iterations (1) without a final answer"}},
		{name: "missing request", childSays: []*model.Response{textResp("unused")}, args: map[string]any{},
			want: map[string]any{"error": "request is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{"parent": {callResp("p1", "child", tc.args), textResp("done")}, "child": tc.childSays})
			cfg := tc.childCfg
			cfg.Name, cfg.Model, cfg.Tools = "child", m, []agentcore.Tool{echo}
			parent := mustLlm(t, agentcore.LlmConfig{Name: "parent", Model: m, Tools: []agentcore.Tool{agentTool(t, mustLlm(t, cfg))}})
			evs := newHarness(t, parent).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			if diff := cmp.Diff(tc.want, responses(evs)["p1"]); diff != "" {
				t.Errorf("agent tool result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAgentToolNestedSubConversations(t *testing.T) {
	askMiddle := callResp("", "middle", map[string]any{"request": "ask the bottom"})
	askBottom := callResp("", "bottom", map[string]any{"request": "deepest"})
	m := perAgent(map[string][]*model.Response{
		"top":    {askMiddle, textResp("top done"), askMiddle, textResp("top done")},
		"middle": {askBottom, textResp("middle relays"), askBottom, textResp("middle relays")},
		"bottom": {textResp("bottom answer")},
	})
	bottom := mustLlm(t, agentcore.LlmConfig{Name: "bottom", Model: m})
	middle := mustLlm(t, agentcore.LlmConfig{Name: "middle", Model: m, Tools: []agentcore.Tool{agentTool(t, bottom)}})
	top := mustLlm(t, agentcore.LlmConfig{Name: "top", Model: m, Tools: []agentcore.Tool{agentTool(t, middle)}})
	h := newHarness(t, top)
	for turn := 1; turn <= 2; turn++ {
		evs := h.mustRun("s1", userText("question"), agentcore.RunConfig{})
		invID := evs[0].InvocationID
		for _, tc := range []struct {
			session, wantInv string
			wantAuthors      []string
		}{
			{"s1/middle", invID + ".sub.middle", []string{"user", "middle", "middle", "middle"}},
			{"s1/middle/bottom", invID + ".sub.middle.sub.bottom", []string{"user", "bottom"}},
		} {
			evs := h.session(tc.session).Events
			wantAuthors := tc.wantAuthors
			for i := 1; i < turn; i++ {
				wantAuthors = append(append([]string(nil), tc.wantAuthors...), wantAuthors...)
			}
			if diff := cmp.Diff(wantAuthors, authors(evs)); diff != "" {
				t.Errorf("turn %d %s authors (-want +got):\n%s", turn, tc.session, diff)
			}
			if got := last(t, evs).InvocationID; got != tc.wantInv {
				t.Errorf("turn %d %s invocation %q, want %q", turn, tc.session, got, tc.wantInv)
			}
		}
		if diff := cmp.Diff(map[string]any{"text": "middle relays"}, responses(evs)[evs[0].FunctionCalls()[0].ID]); diff != "" {
			t.Errorf("turn %d result (-want +got):\n%s", turn, diff)
		}
	}
	// In the second call the child saw its first exchange.
	reqs := m.requestsBy("bottom")
	if diff := cmp.Diff([]string{"user: deepest", "model: bottom answer", "user: deepest"}, render(reqs[1].Contents)); diff != "" {
		t.Errorf("bottom's second request (-want +got):\n%s", diff)
	}
}

// Toolsets are asked for their tools at every request; their tools are
// offered and called like the agent's own, which win on a name clash.
func TestToolsets(t *testing.T) {
	m := replies(callResp("c1", "listed", map[string]any{"q": "x"}), textResp("ok"))
	shadow := fnTool(t, "echo", func(context.Context, *agentcore.ToolContext, struct{}) (string, error) { return "shadowed", nil })
	a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{echoTool(t, "echo")},
		Toolsets: []agentcore.Toolset{agentcore.NewStaticToolset("static", echoTool(t, "listed"), shadow)}})
	evs := newHarness(t, a).mustRun("s1", userText("hi"), agentcore.RunConfig{})
	for i, r := range m.requests() {
		if diff := cmp.Diff([]string{"echo", "listed"}, declNames(r)); diff != "" {
			t.Errorf("request %d offers (-want +got):\n%s", i+1, diff)
		}
	}
	if diff := cmp.Diff(`{"echo":{"q":"x"}}`, jsonString(responses(evs)["c1"])); diff != "" {
		t.Errorf("toolset tool result (-want +got):\n%s", diff)
	}
}
