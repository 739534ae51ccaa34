package agentcore_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// A caller may name a new turn's invocation (an A2A task id); a turn that
// resumes a paused invocation keeps the paused one's id whatever it asks.
func TestRunRequestInvocationID(t *testing.T) {
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: perAgent(map[string][]*model.Response{
		"root": {callResp("c1", agentcore.GetUserChoiceToolName, map[string]any{"options": []any{"a", "b"}}), textResp("chose")},
	}), Tools: []agentcore.Tool{agentcore.GetUserChoice()}})
	h := newHarness(t, root)
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s", NewMessage: userText("pick"), InvocationID: "e-task-1"})
	evs, err := collect(run)
	if err != nil {
		t.Fatal(err)
	}
	if run.NewInvocation() {
		t.Error("NewInvocation of a turn its caller named: true, want false (the caller may have used the id before)")
	}
	for _, ev := range evs {
		if ev.InvocationID != "e-task-1" {
			t.Fatalf("event %s has invocation %q, want e-task-1", ev.ID, ev.InvocationID)
		}
	}
	resume := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: agentcore.GetUserChoiceToolName, Response: map[string]any{"choice": "a"}}}}}
	evs, err = h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: resume, InvocationID: "e-other"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[len(evs)-1].InvocationID != "e-task-1" {
		t.Fatalf("resumed turn ran under %q, want the paused invocation e-task-1", evs[len(evs)-1].InvocationID)
	}
}
