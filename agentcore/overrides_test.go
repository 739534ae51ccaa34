package agentcore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// A client's tool choice is about its own functions; the agents' own
// (transfers here) stay as the model's to call, and a call that offers no
// client function keeps the agent's settings. The options go where they
// apply, the reasoning effort also as genai's thinking settings.
func TestOverridesApplyWhereTheyBelong(t *testing.T) {
	clientTools := []*genai.FunctionDeclaration{{Name: "get_weather"}}
	fc := func(mode genai.FunctionCallingConfigMode, names ...string) *genai.ToolConfig {
		return &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: mode, AllowedFunctionNames: names}}
	}
	tests := []struct {
		name        string
		clientTools []*genai.FunctionDeclaration
		choice      *genai.ToolConfig
		effort      string
		wantChoice  *genai.ToolConfig
		wantThink   *genai.ThinkingConfig
		wantPar     bool // parallel_tool_calls reaches the call
	}{
		{"none withdraws only the client's functions", clientTools, fc(genai.FunctionCallingConfigModeNone), "none",
			fc(genai.FunctionCallingConfigModeValidated, agentcore.TransferToolName), &genai.ThinkingConfig{ThinkingBudget: genai.Ptr[int32](0)}, true},
		{"allowed client functions keep the agent's own", clientTools, fc(genai.FunctionCallingConfigModeAuto, "get_weather"), "xhigh",
			fc(genai.FunctionCallingConfigModeAuto, "get_weather", agentcore.TransferToolName), &genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelHigh}, true},
		{"a forced function stays forced", clientTools, fc(genai.FunctionCallingConfigModeAny, "get_weather"), "low",
			fc(genai.FunctionCallingConfigModeAny, "get_weather"), &genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelLow}, true},
		{"no client functions: no tool choice", nil, fc(genai.FunctionCallingConfigModeNone), "", nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := replies(textResp("ok"))
			root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: m, Instruction: "Route.",
				SubAgents: []agentcore.Agent{mustLlm(t, agentcore.LlmConfig{Name: "desk", Description: "d", Model: replies(textResp("x"))})}})
			h := newHarness(t, root)
			no := false
			o := &agentcore.Overrides{ToolConfig: tt.choice, Instruction: "Answer in French.",
				Options: model.Options{ReasoningEffort: tt.effort, Verbosity: "low", ServiceTier: "flex", ParallelToolCalls: &no,
					SchemaName: "answer"}}
			if _, err := h.runReq(context.Background(), agentcore.RunRequest{UserID: "u", SessionID: "s", NewMessage: userText("hi"),
				ClientTools: tt.clientTools, Overrides: o}); err != nil {
				t.Fatal(err)
			}
			req := m.lastRequest(t)
			if diff := cmp.Diff(tt.wantChoice, req.Config.ToolConfig); diff != "" {
				t.Errorf("tool config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantThink, req.Config.ThinkingConfig); diff != "" {
				t.Errorf("thinking (-want +got):\n%s", diff)
			}
			want := model.Options{ReasoningEffort: tt.effort, Verbosity: "low", ServiceTier: "flex"}
			if tt.wantPar {
				want.ParallelToolCalls = &no
			}
			// No output schema: its name does not go alone.
			if diff := cmp.Diff(want, req.Options); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if got := sysText(req); !strings.HasPrefix(got, "Route.\n\nAnswer in French.") {
				t.Errorf("the client's instruction is not after the root's: %q", got)
			}
		})
	}
}
