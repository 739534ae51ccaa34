package agentcore_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

func content(text string) *genai.Content {
	return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: text}}}
}

// Each callback, with the seed's short-circuit semantics. The model calls
// echo {"x": 1} once, then answers "final".
func TestCallbacks(t *testing.T) {
	failModel := errors.New("model down")
	for _, tc := range []struct {
		name       string
		cb         agentcore.Callbacks
		modelErr   bool // the model's first call fails
		wantTexts  []string
		wantResult map[string]any // echo's call c1, as the model saw it
		wantCalls  int            // model calls
		wantRuns   []string       // echo's arguments per run
		wantErr    string
		wantState  map[string]any // session state after the turn
		wantSystem string         // the first request's system instruction, when set
	}{
		{name: "no callbacks", wantTexts: []string{"helper: final"}, wantResult: map[string]any{"echo": map[string]any{"x": float64(1)}},
			wantCalls: 2, wantRuns: []string{`{"x":1}`}},
		{name: "before_agent content ends the run",
			cb: agentcore.Callbacks{
				BeforeAgent: func(context.Context, *agentcore.CallbackContext) (*genai.Content, error) {
					return content("closed today"), nil
				},
				AfterAgent: func(context.Context, *agentcore.CallbackContext) (*genai.Content, error) {
					return content("after"), nil
				},
			},
			wantTexts: []string{"helper: closed today"}},
		{name: "before_agent state only goes on",
			cb: agentcore.Callbacks{BeforeAgent: func(_ context.Context, cc *agentcore.CallbackContext) (*genai.Content, error) {
				cc.SetState("seen", true)
				return nil, nil
			}},
			wantTexts: []string{"helper: final"}, wantResult: map[string]any{"echo": map[string]any{"x": float64(1)}},
			wantCalls: 2, wantRuns: []string{`{"x":1}`}, wantState: map[string]any{"seen": true}},
		{name: "before_agent error fails the run",
			cb: agentcore.Callbacks{BeforeAgent: func(context.Context, *agentcore.CallbackContext) (*genai.Content, error) {
				return nil, errors.New("denied")
			}},
			wantErr: "agent helper: before_agent callback: denied"},
		{name: "after_agent appends an event",
			cb: agentcore.Callbacks{AfterAgent: func(_ context.Context, cc *agentcore.CallbackContext) (*genai.Content, error) {
				cc.SetState("closed", "yes")
				return content("anything else?"), nil
			}},
			wantTexts: []string{"helper: final", "helper: anything else?"}, wantResult: map[string]any{"echo": map[string]any{"x": float64(1)}},
			wantCalls: 2, wantRuns: []string{`{"x":1}`}, wantState: map[string]any{"closed": "yes"}},
		{name: "before_model response skips the model",
			cb: agentcore.Callbacks{BeforeModel: func(context.Context, *agentcore.CallbackContext, *model.Request) (*model.Response, error) {
				return textResp("cached answer"), nil
			}},
			wantTexts: []string{"helper: cached answer"}},
		{name: "before_model rewrites the request",
			cb: agentcore.Callbacks{BeforeModel: func(_ context.Context, cc *agentcore.CallbackContext, req *model.Request) (*model.Response, error) {
				req.Config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: "rewritten"}}}
				cc.SetState("model_calls", 1)
				return nil, nil
			}},
			wantTexts: []string{"helper: final"}, wantResult: map[string]any{"echo": map[string]any{"x": float64(1)}},
			wantCalls: 2, wantRuns: []string{`{"x":1}`}, wantState: map[string]any{"model_calls": 1}, wantSystem: "rewritten"},
		{name: "after_model replaces the response",
			cb: agentcore.Callbacks{AfterModel: func(_ context.Context, _ *agentcore.CallbackContext, resp *model.Response) (*model.Response, error) {
				if len(resp.Content.Parts) > 0 && resp.Content.Parts[0].FunctionCall != nil {
					return nil, nil // keep the call
				}
				return textResp("[redacted] " + resp.Content.Parts[0].Text), nil
			}},
			wantTexts: []string{"helper: [redacted] final"}, wantResult: map[string]any{"echo": map[string]any{"x": float64(1)}},
			wantCalls: 2, wantRuns: []string{`{"x":1}`}},
		{name: "after_model error fails the run",
			cb: agentcore.Callbacks{AfterModel: func(context.Context, *agentcore.CallbackContext, *model.Response) (*model.Response, error) {
				return nil, errors.New("unsafe")
			}},
			wantCalls: 1, wantErr: "agent helper: after_model callback: unsafe"},
		{name: "on_model_error recovers", modelErr: true,
			cb: agentcore.Callbacks{OnModelError: func(_ context.Context, _ *agentcore.CallbackContext, _ *model.Request, err error) (*model.Response, error) {
				return textResp("sorry: " + err.Error()), nil
			}},
			wantTexts: []string{"helper: sorry: model down"}, wantCalls: 1},
		{name: "on_model_error declining leaves the error", modelErr: true,
			cb: agentcore.Callbacks{OnModelError: func(context.Context, *agentcore.CallbackContext, *model.Request, error) (*model.Response, error) {
				return nil, nil
			}},
			wantCalls: 1, wantErr: "agent helper: model down"},
		{name: "before_tool result skips the tool",
			cb: agentcore.Callbacks{BeforeTool: func(context.Context, *agentcore.ToolContext, agentcore.Tool, map[string]any) (map[string]any, error) {
				return map[string]any{"cached": true}, nil
			}},
			wantTexts: []string{"helper: final"}, wantResult: map[string]any{"cached": true}, wantCalls: 2},
		{name: "before_tool rewrites the arguments",
			cb: agentcore.Callbacks{BeforeTool: func(_ context.Context, _ *agentcore.ToolContext, _ agentcore.Tool, args map[string]any) (map[string]any, error) {
				args["x"] = 2
				return nil, nil
			}},
			wantTexts: []string{"helper: final"}, wantResult: map[string]any{"echo": map[string]any{"x": 2}},
			wantCalls: 2, wantRuns: []string{`{"x":2}`}},
		{name: "before_tool error is the result",
			cb: agentcore.Callbacks{BeforeTool: func(context.Context, *agentcore.ToolContext, agentcore.Tool, map[string]any) (map[string]any, error) {
				return nil, errors.New("not allowed")
			}},
			wantTexts: []string{"helper: final"}, wantResult: map[string]any{"error": "not allowed"}, wantCalls: 2},
		{name: "after_tool replaces the result",
			cb: agentcore.Callbacks{AfterTool: func(_ context.Context, tc *agentcore.ToolContext, tool agentcore.Tool, _, result map[string]any) (map[string]any, error) {
				tc.SetState("last_tool", tool.Name())
				return map[string]any{"wrapped": result, "call": tc.FunctionCallID()}, nil
			}},
			wantTexts: []string{"helper: final"}, wantResult: map[string]any{"wrapped": map[string]any{"echo": map[string]any{"x": float64(1)}}, "call": "c1"},
			wantCalls: 2, wantRuns: []string{`{"x":1}`}, wantState: map[string]any{"last_tool": "echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var runs []string
			echo := fnTool(t, "echo", func(_ context.Context, _ *agentcore.ToolContext, args map[string]any) (map[string]any, error) {
				mu.Lock()
				defer mu.Unlock()
				runs = append(runs, jsonString(args))
				return map[string]any{"echo": args}, nil
			})
			m := replies(callResp("c1", "echo", map[string]any{"x": 1}), textResp("final"))
			if tc.modelErr {
				m = &fakeLLM{name: "fake", fn: func(context.Context, *model.Request, bool, int) ([]*model.Response, error) { return nil, failModel }}
			}
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: "Be brief.", Tools: []agentcore.Tool{echo}, Callbacks: tc.cb})
			h := newHarness(t, a)
			evs, err := h.run("s1", userText("hi"), agentcore.RunConfig{})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("run: %v", err)
			}
			if diff := cmp.Diff(tc.wantTexts, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			reqs := m.requests()
			if len(reqs) != tc.wantCalls {
				t.Fatalf("model called %d times, want %d", len(reqs), tc.wantCalls)
			}
			if tc.wantResult != nil {
				lines := render(reqs[1].Contents)
				if diff := cmp.Diff("user: resp echo "+jsonString(tc.wantResult), lines[len(lines)-1]); diff != "" {
					t.Errorf("result the model saw (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantRuns, runs); diff != "" {
				t.Errorf("tool runs (-want +got):\n%s", diff)
			}
			state := h.session("s1").State
			for k, v := range tc.wantState {
				if diff := cmp.Diff(v, state[k]); diff != "" {
					t.Errorf("state %s (-want +got):\n%s", k, diff)
				}
			}
			if tc.wantSystem != "" && sysText(reqs[0]) != tc.wantSystem {
				t.Errorf("the model saw system instruction %q, want %q", sysText(reqs[0]), tc.wantSystem)
			}
		})
	}
}

// on_tool_error may recover a failed call; otherwise the model sees the
// tool's own error.
func TestOnToolError(t *testing.T) {
	for _, tc := range []struct {
		name string
		cb   func(context.Context, *agentcore.ToolContext, agentcore.Tool, map[string]any, error) (map[string]any, error)
		want map[string]any
	}{
		{"recovers", func(_ context.Context, _ *agentcore.ToolContext, _ agentcore.Tool, _ map[string]any, err error) (map[string]any, error) {
			return map[string]any{"fallback": err.Error()}, nil
		}, map[string]any{"fallback": "disk full"}},
		{"declines", func(context.Context, *agentcore.ToolContext, agentcore.Tool, map[string]any, error) (map[string]any, error) {
			return nil, nil
		}, map[string]any{"error": "disk full"}},
		{"fails", func(context.Context, *agentcore.ToolContext, agentcore.Tool, map[string]any, error) (map[string]any, error) {
			return nil, errors.New("gave up")
		}, map[string]any{"error": "gave up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			save := fnTool(t, "save", func(context.Context, *agentcore.ToolContext, struct{}) (map[string]any, error) {
				return nil, errors.New("disk full")
			})
			m := replies(callResp("c1", "save", nil), textResp("ok"))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{save},
				Callbacks: agentcore.Callbacks{OnToolError: tc.cb}})
			evs := newHarness(t, a).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			if diff := cmp.Diff(tc.want, responses(evs)["c1"]); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}
