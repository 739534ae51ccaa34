package agentcore_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
)

// walkLines renders every visit of Walk as "agent edge parent depth", with
// descend deciding whether to go below.
func walkLines(root agentcore.Agent, descend func(agentcore.TreeNode) bool) []string {
	var out []string
	agentcore.Walk(root, func(n agentcore.TreeNode) bool {
		name, parent := "<nil>", "-"
		if n.Agent != nil {
			name = n.Agent.Name()
		}
		if p := n.Parent(); p != nil {
			parent = p.Name()
		}
		line := name + " " + n.Edge.String() + " " + parent + " " + strings.Repeat(">", len(n.Path))
		if n.Cycle() {
			line += " cycle"
		}
		out = append(out, line)
		return descend(n)
	})
	return out
}

func TestWalk(t *testing.T) {
	m := replies(textResp("ok"))
	llm := func(name string, tools []agentcore.Tool, subs ...agentcore.Agent) *agentcore.LlmAgent {
		return mustLlm(t, agentcore.LlmConfig{Name: name, Model: m, Tools: tools, SubAgents: subs})
	}
	seq, err := agentcore.NewSequentialAgent(agentcore.WorkflowConfig{Name: "steps", SubAgents: []agentcore.Agent{llm("one", nil), llm("two", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	helper := llm("helper", nil, llm("helper_sub", nil))
	tree := llm("root", []agentcore.Tool{echoTool(t, "echo"), agentTool(t, helper)}, seq, llm("last", nil))
	all := func(agentcore.TreeNode) bool { return true }

	for _, tc := range []struct {
		name    string
		root    func() agentcore.Agent
		descend func(agentcore.TreeNode) bool
		want    []string
	}{
		{"whole tree: sub-agents, then agents called as tools", func() agentcore.Agent { return tree }, all, []string{
			"root root - ",
			"steps sub-agent root >",
			"one sub-agent steps >>",
			"two sub-agent steps >>",
			"last sub-agent root >",
			"helper agent-tool root >",
			"helper_sub sub-agent helper >>",
		}},
		{"the visitor prunes", func() agentcore.Agent { return tree }, func(n agentcore.TreeNode) bool {
			return n.Agent.Name() != "steps" && n.Edge != agentcore.EdgeAgentTool
		}, []string{
			"root root - ",
			"steps sub-agent root >",
			"last sub-agent root >",
			"helper agent-tool root >",
		}},
		{"a cycle is visited, not entered", func() agentcore.Agent {
			s := &stubAgent{name: "looper"}
			s.subs = []agentcore.Agent{s}
			return llm("top", nil, s)
		}, all, []string{
			"top root - ",
			"looper sub-agent top >",
			"looper sub-agent looper >> cycle",
		}},
		{"a nil sub-agent is visited", func() agentcore.Agent {
			return &stubAgent{name: "top", subs: []agentcore.Agent{nil, &stubAgent{name: "after"}}}
		}, all, []string{
			"top root - ",
			"<nil> sub-agent top >",
			"after sub-agent top >",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, walkLines(tc.root(), tc.descend)); diff != "" {
				t.Errorf("visits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEdgeString(t *testing.T) {
	for e, want := range map[agentcore.Edge]string{agentcore.EdgeRoot: "root", agentcore.EdgeSubAgent: "sub-agent",
		agentcore.EdgeAgentTool: "agent-tool", agentcore.Edge(9): "unknown"} {
		if got := e.String(); got != want {
			t.Errorf("Edge(%d).String() = %q, want %q", e, got, want)
		}
	}
}
