package agentcore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// An agent called as a tool streams from its model only when its events
// are streamed to the caller (StreamSubAgents); otherwise nobody sees its
// deltas and it asks for whole answers.
func TestAgentToolStreamsOnlyWhenObserved(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        agentcore.RunConfig
		wantStream bool
	}{
		{"hidden", agentcore.RunConfig{Streaming: true}, false},
		{"streamed to the caller", agentcore.RunConfig{Streaming: true, StreamSubAgents: true}, true},
		{"not streaming", agentcore.RunConfig{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var childStream []bool
			child := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: &fakeLLM{name: "h",
				fn: func(ctx context.Context, req *model.Request, stream bool, n int) ([]*model.Response, error) {
					mu.Lock()
					childStream = append(childStream, stream)
					mu.Unlock()
					return []*model.Response{textResp("found it")}, nil
				}}})
			parent := mustLlm(t, agentcore.LlmConfig{Name: "caller", Tools: []agentcore.Tool{agentTool(t, child)}, Model: &fakeLLM{name: "c",
				fn: func(ctx context.Context, req *model.Request, stream bool, n int) ([]*model.Response, error) {
					if n == 1 {
						return []*model.Response{callResp("c1", "helper", map[string]any{"request": "look it up"})}, nil
					}
					return []*model.Response{textResp("done")}, nil
				}}})
			h := newHarness(t, parent)
			h.mustRun("s1", userText("go"), c.cfg)
			mu.Lock()
			defer mu.Unlock()
			if len(childStream) != 1 || childStream[0] != c.wantStream {
				t.Errorf("helper called with stream %v, want [%v]", childStream, c.wantStream)
			}
		})
	}
}
