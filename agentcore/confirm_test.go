package agentcore_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

type transferArgs struct {
	Amount int `json:"amount"`
}

// confirmTree: the model calls a confirmation-gated tool, then reports the
// tool's response.
func confirmTree(t *testing.T, runs *atomic.Int64) (*agentcore.LlmAgent, *fakeLLM) {
	t.Helper()
	tool, err := agentcore.NewFunctionTool(agentcore.FunctionToolConfig{Name: "wire_money", Description: "Sends money."},
		func(ctx context.Context, tc *agentcore.ToolContext, a transferArgs) (map[string]any, error) {
			runs.Add(1)
			if c := tc.ToolConfirmation(); c == nil || !c.Confirmed || c.Hint != "Send the money?" {
				t.Errorf("tool ran with confirmation %+v", c)
			}
			return map[string]any{"sent": a.Amount}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	llm := &fakeLLM{name: "m", fn: func(ctx context.Context, req *model.Request, stream bool, n int) ([]*model.Response, error) {
		last := req.Contents[len(req.Contents)-1]
		if fr := last.Parts[0].FunctionResponse; fr != nil {
			return []*model.Response{textResp("result: " + jsonText(fr.Response))}, nil
		}
		return []*model.Response{callResp("call-1", "wire_money", map[string]any{"amount": 5})}, nil
	}}
	return mustLlm(t, agentcore.LlmConfig{Name: "banker", Model: llm, Tools: []agentcore.Tool{agentcore.RequireConfirmation(tool, "Send the money?")}}), llm
}

func TestToolConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		confirmed bool
		wantText  string
		wantRuns  int64
	}{
		{"approved", true, `result: {"sent":5}`, 1},
		{"rejected", false, `result: {"error":"This tool call is rejected."}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			root, llm := confirmTree(t, &runs)
			h := newHarness(t, root)
			evs := h.mustRun("s1", userText("send 5"), agentcore.RunConfig{})
			if len(evs) != 3 {
				t.Fatalf("first turn: %d events (%v)", len(evs), authors(evs))
			}
			resp, ask := evs[1], evs[2]
			if got := resp.Actions.RequestedToolConfirmations["call-1"]; got["hint"] != "Send the money?" || got["confirmed"] != false {
				t.Errorf("requestedToolConfirmations = %v", resp.Actions.RequestedToolConfirmations)
			}
			calls := ask.FunctionCalls()
			if len(calls) != 1 || calls[0].Name != agentcore.RequestConfirmationToolName || len(ask.LongRunningToolIDs) != 1 || ask.LongRunningToolIDs[0] != calls[0].ID {
				t.Fatalf("confirmation request event: %+v", ask)
			}
			if orig := calls[0].Args["originalFunctionCall"].(map[string]any); orig["id"] != "call-1" || orig["name"] != "wire_money" {
				t.Errorf("originalFunctionCall = %v", orig)
			}
			if runs.Load() != 0 {
				t.Fatal("tool ran before approval")
			}
			evs = h.mustRun("s1", funcResponse(calls[0].ID, agentcore.RequestConfirmationToolName, map[string]any{"confirmed": tc.confirmed}), agentcore.RunConfig{})
			if runs.Load() != tc.wantRuns {
				t.Errorf("tool ran %d times, want %d", runs.Load(), tc.wantRuns)
			}
			last := evs[len(evs)-1]
			if last.Text() != tc.wantText || last.InvocationID != ask.InvocationID {
				t.Errorf("final %q (invocation %s), want %q (%s)", last.Text(), last.InvocationID, tc.wantText, ask.InvocationID)
			}
			// The confirmation exchange never reaches the model.
			for _, r := range llm.requests() {
				for _, c := range r.Contents {
					for _, p := range c.Parts {
						if (p.FunctionCall != nil && p.FunctionCall.Name == agentcore.RequestConfirmationToolName) || (p.FunctionResponse != nil && p.FunctionResponse.Name == agentcore.RequestConfirmationToolName) {
							t.Errorf("model saw the confirmation exchange")
						}
					}
				}
			}
			// The stored stream has the tool's latest response last for
			// call-1.
			var lastResp map[string]any
			for _, ev := range h.session("s1").Events {
				for _, r := range ev.FunctionResponses() {
					if r.ID == "call-1" {
						lastResp = r.Response
					}
				}
			}
			if strings.Contains(jsonText(lastResp), "requires confirmation") {
				t.Errorf("latest stored response for call-1 is still the request: %v", lastResp)
			}
		})
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
