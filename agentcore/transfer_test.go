package agentcore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// A transfer the tool refuses is a recoverable error result: the model
// sees it and the run goes on with the same agent.
func TestTransferRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown agent", map[string]any{"agent_name": "nobody"}, "unknown agent nobody; transfer not performed"},
		{"self-transfer", map[string]any{"agent_name": "coordinator"}, "cannot transfer to coordinator: it is the current agent; transfer not performed"},
		{"no name", map[string]any{}, "agent_name is required; transfer not performed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{
				"coordinator": {callResp("t1", agentcore.TransferToolName, tc.args), textResp("I will answer myself.")},
				"greeter":     {textResp("hello")},
			})
			greeter := mustLlm(t, agentcore.LlmConfig{Name: "greeter", Model: m})
			root := mustLlm(t, agentcore.LlmConfig{Name: "coordinator", Model: m, SubAgents: []agentcore.Agent{greeter}})
			evs := newHarness(t, root).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			if diff := cmp.Diff(map[string]map[string]any{"t1": {"error": tc.want}}, responses(evs)); diff != "" {
				t.Errorf("transfer response (-want +got):\n%s", diff)
			}
			for _, e := range evs {
				if e.Actions.TransferToAgent != "" {
					t.Errorf("event %s transfers to %q", e.ID, e.Actions.TransferToAgent)
				}
			}
			if diff := cmp.Diff([]string{"coordinator: I will answer myself."}, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			reqs := m.requestsBy("coordinator")
			if len(reqs) != 2 {
				t.Fatalf("coordinator called the model %d times, want 2", len(reqs))
			}
			lines := render(reqs[1].Contents)
			if diff := cmp.Diff(`user: resp transfer_to_agent {"error":"`+tc.want+`"}`, lines[len(lines)-1]); diff != "" {
				t.Errorf("what the model saw last (-want +got):\n%s", diff)
			}
			if n := len(m.requestsBy("greeter")); n != 0 {
				t.Errorf("greeter ran %d times", n)
			}
		})
	}
}

type transferLog struct {
	agentcore.NopObserver
	mu  sync.Mutex
	got []string
}

func (o *transferLog) Transfer(from, to string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, from+"->"+to)
}

// Targets are found in the caller's subtree and then in the whole tree, so
// an agent can hand over to a child, a sibling or an ancestor. The caller
// never regains control in that invocation.
func TestTransferTargets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		midTo     string
		wantTexts []string
	}{
		{"own sub-agent", "leaf", []string{"leaf: leaf here"}},
		{"sibling", "other", []string{"other: other here"}},
		{"ancestor", "root", []string{"root: root again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{
				"root":  {transferResp("t1", "mid"), textResp("root again")},
				"mid":   {transferResp("t2", tc.midTo), textResp("mid regained control")},
				"leaf":  {textResp("leaf here")},
				"other": {textResp("other here")},
			})
			var afterAgent []string
			var mu sync.Mutex
			cb := agentcore.Callbacks{AfterAgent: func(_ context.Context, cc *agentcore.CallbackContext) (*genai.Content, error) {
				mu.Lock()
				defer mu.Unlock()
				afterAgent = append(afterAgent, cc.AgentName())
				return nil, nil
			}}
			leaf := mustLlm(t, agentcore.LlmConfig{Name: "leaf", Model: m, Callbacks: cb})
			mid := mustLlm(t, agentcore.LlmConfig{Name: "mid", Model: m, SubAgents: []agentcore.Agent{leaf}, Callbacks: cb})
			other := mustLlm(t, agentcore.LlmConfig{Name: "other", Model: m, Callbacks: cb})
			root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: m, SubAgents: []agentcore.Agent{mid, other}, Callbacks: cb})
			obs := &transferLog{}
			h := newHarness(t, root, func(c *agentcore.RunnerConfig) { c.Observer = obs })
			evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{})

			if diff := cmp.Diff(tc.wantTexts, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"root->mid", "mid->" + tc.midTo}, obs.got); diff != "" {
				t.Errorf("observed transfers (-want +got):\n%s", diff)
			}
			var transfers []string
			for _, e := range evs {
				if e.InvocationID != evs[0].InvocationID {
					t.Errorf("event %s left the invocation: %s", e.ID, e.InvocationID)
				}
				if e.Actions.TransferToAgent != "" {
					transfers = append(transfers, e.Author+"->"+e.Actions.TransferToAgent)
				}
			}
			if diff := cmp.Diff([]string{"root->mid", "mid->" + tc.midTo}, transfers); diff != "" {
				t.Errorf("transferToAgent actions (-want +got):\n%s", diff)
			}
			// Only the agent that finished runs its after-agent callback:
			// the callers handed over and never came back.
			if diff := cmp.Diff([]string{tc.midTo}, afterAgent); diff != "" {
				t.Errorf("after_agent callbacks (-want +got):\n%s", diff)
			}
			if n := len(m.requestsBy("mid")); n != 1 {
				t.Errorf("mid called the model %d times after handing over", n)
			}
		})
	}
}

// The agent receiving a transfer sees the whole conversation, other agents'
// events recast as user-role context.
func TestTransferTargetSeesContext(t *testing.T) {
	m := perAgent(map[string][]*model.Response{
		"coordinator": {&model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "Let me find someone."}, {FunctionCall: fc("t1", agentcore.TransferToolName, map[string]any{"agent_name": "greeter"})},
		}}}},
		"greeter": {textResp("Hello!")},
	})
	greeter := mustLlm(t, agentcore.LlmConfig{Name: "greeter", Model: m})
	root := mustLlm(t, agentcore.LlmConfig{Name: "coordinator", Model: m, SubAgents: []agentcore.Agent{greeter}})
	newHarness(t, root).mustRun("s1", userText("hello"), agentcore.RunConfig{})
	want := []string{
		"user: hello",
		"user: For context:\n[coordinator] said: Let me find someone.\n[coordinator] called tool `transfer_to_agent` with parameters: {\"agent_name\":\"greeter\"}",
		"user: For context:\n[coordinator] `transfer_to_agent` tool returned result: {\"result\":null}",
	}
	if diff := cmp.Diff(want, render(m.requestsBy("greeter")[0].Contents)); diff != "" {
		t.Errorf("greeter's contents (-want +got):\n%s", diff)
	}
}

// A transfer requested by any tool is acted on, unless the agent disables
// transfer: then it is dropped and the agent keeps control.
func TestTransferFromCustomTool(t *testing.T) {
	for _, tc := range []struct {
		name         string
		disable      bool
		wantTexts    []string
		wantTransfer string
	}{
		{"honoured", false, []string{"specialist: specialist here"}, "specialist"},
		{"ignored with disable_transfer", true, []string{"boss: kept control"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{
				"boss":       {callResp("h1", "handoff", nil), textResp("kept control")},
				"specialist": {textResp("specialist here")},
			})
			handoff := fnTool(t, "handoff", func(_ context.Context, tc *agentcore.ToolContext, _ struct{}) (map[string]any, error) {
				tc.Actions().TransferToAgent = "specialist"
				return map[string]any{"ok": true}, nil
			})
			spec := mustLlm(t, agentcore.LlmConfig{Name: "specialist", Model: m})
			boss := mustLlm(t, agentcore.LlmConfig{Name: "boss", Model: m, DisableTransfer: tc.disable, Tools: []agentcore.Tool{handoff},
				SubAgents: []agentcore.Agent{spec}})
			evs := newHarness(t, boss).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			if diff := cmp.Diff(tc.wantTexts, texts(evs)); diff != "" {
				t.Errorf("texts (-want +got):\n%s", diff)
			}
			if got := evs[1].Actions.TransferToAgent; got != tc.wantTransfer {
				t.Errorf("tool response transfers to %q, want %q", got, tc.wantTransfer)
			}
		})
	}
}
