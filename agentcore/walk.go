package agentcore

import "slices"

// Edge is how a tree walk reached an agent from its parent.
type Edge uint8

const (
	// EdgeRoot: the agent the walk started at.
	EdgeRoot Edge = iota
	// EdgeSubAgent: a sub-agent (a transfer target, a workflow's step).
	EdgeSubAgent
	// EdgeAgentTool: an agent its parent, an LLM agent, calls as a tool
	// (it runs in a sub-conversation, outside the parent's transfer tree).
	EdgeAgentTool
)

// String names the edge: "root", "sub-agent" or "agent-tool" (the A2A
// agent card's skill tags; stable).
func (e Edge) String() string {
	switch e {
	case EdgeRoot:
		return "root"
	case EdgeSubAgent:
		return "sub-agent"
	case EdgeAgentTool:
		return "agent-tool"
	}
	return "unknown"
}

// TreeNode is an agent Walk met, and how.
type TreeNode struct {
	// Agent is nil for a nil sub-agent or agent tool (in a tree that
	// ValidateTree rejects).
	Agent Agent
	Edge  Edge
	// Path holds the agents from the walk's root down to Agent's parent
	// (empty for the root). Walk reuses it: it is valid during the visit
	// only.
	Path []Agent
}

// Parent is the agent n was reached from; nil for the root.
func (n TreeNode) Parent() Agent {
	if len(n.Path) == 0 {
		return nil
	}
	return n.Path[len(n.Path)-1]
}

// Cycle reports whether n's agent is one of its own ancestors (a tree that
// ValidateTree rejects). Walk never goes below such a node.
func (n TreeNode) Cycle() bool {
	return n.Agent != nil && slices.Contains(n.Path, n.Agent)
}

// Walk is the one walk over an agent tree: it visits root and every agent
// below it, depth first, each agent before what is below it: its
// sub-agents in order, then (for an LLM agent) the agents it calls as
// tools, in the order of its tools. visit reports whether to go below n;
// Walk never goes below a nil agent or a cycle. An agent reached twice is
// visited twice: a visitor that wants each agent once keeps a set.
func Walk(root Agent, visit func(n TreeNode) bool) {
	var path []Agent
	walkFrom(root, EdgeRoot, &path, visit)
}

func walkFrom(a Agent, e Edge, path *[]Agent, visit func(TreeNode) bool) {
	n := TreeNode{Agent: a, Edge: e, Path: *path}
	if !visit(n) || a == nil || n.Cycle() {
		return
	}
	*path = append(*path, a)
	for _, s := range a.SubAgents() {
		walkFrom(s, EdgeSubAgent, path, visit)
	}
	if la, ok := a.(*LlmAgent); ok {
		for _, t := range la.cfg.Tools {
			if at, ok := t.(*AgentTool); ok {
				walkFrom(at.agent, EdgeAgentTool, path, visit)
			}
		}
	}
	*path = (*path)[:len(*path)-1]
}

// walkTree visits every agent of a tree once: sub-agents and agents called
// as tools.
func walkTree(root Agent, visit func(Agent)) {
	seen := map[Agent]bool{}
	Walk(root, func(n TreeNode) bool {
		if n.Agent == nil || seen[n.Agent] {
			return false
		}
		seen[n.Agent] = true
		visit(n.Agent)
		return true
	})
}
