package agentcore

import (
	"errors"
	"fmt"
	"regexp"
)

// treeIndex answers name and parent lookups over a validated agent tree.
type treeIndex struct {
	root   Agent
	byName map[string]Agent
	parent map[string]Agent
	order  []string // depth-first, root first
	// params: an agent of the tree may declare parameters (see
	// mayDeclareParams); without, no agent of a turn has any of its own.
	params bool
}

var agentNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// ValidateTree checks an agent tree: every name non-empty and well formed,
// names unique in the tree, no cycles through sub-agents or agents called
// as tools. Errors name the agent at fault.
func ValidateTree(root Agent) error {
	_, err := indexTree(root)
	return err
}

func indexTree(root Agent) (*treeIndex, error) {
	if root == nil {
		return nil, errors.New("agent tree: nil root agent")
	}
	ix := &treeIndex{root: root, byName: map[string]Agent{}, parent: map[string]Agent{}}
	var errs []error
	// Agents called as tools run in sub-conversations: they are checked for
	// cycles (an agent that ends up calling itself, the first one met per
	// agent tool) but are not transfer targets of this tree. toolDepth is
	// the depth of the agent-tool edge whose subtree the walk is in (-1 in
	// the transfer tree); toolFailed, whether that subtree has reported.
	toolDepth, toolFailed := -1, false
	Walk(root, func(n TreeNode) bool {
		depth := len(n.Path)
		if toolDepth >= 0 && depth <= toolDepth {
			toolDepth = -1
		}
		if toolDepth < 0 && n.Edge == EdgeAgentTool {
			toolDepth, toolFailed = depth, false
		}
		if toolDepth >= 0 {
			switch {
			case toolFailed:
			case n.Agent == nil:
				errs, toolFailed = append(errs, fmt.Errorf("agent %q: nil agent tool", n.Parent().Name())), true
			case n.Cycle():
				errs, toolFailed = append(errs, fmt.Errorf("agent %q: cycle: calls %q as a tool, which is its own ancestor", n.Parent().Name(), n.Agent.Name())), true
			}
			return !toolFailed
		}
		return ix.add(n, &errs)
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ix, nil
}

// add indexes an agent of the transfer tree, or appends why it cannot, and
// reports whether to index what is below it.
func (ix *treeIndex) add(n TreeNode, errs *[]error) bool {
	var path string
	if p := n.Parent(); p != nil {
		path = p.Name()
	}
	a := n.Agent
	if a == nil {
		*errs = append(*errs, fmt.Errorf("agent tree: nil sub-agent under %q", path))
		return false
	}
	name := a.Name()
	if name == "" {
		*errs = append(*errs, fmt.Errorf("agent tree: agent under %q has an empty name", path))
		return false
	}
	if !agentNameRE.MatchString(name) {
		*errs = append(*errs, fmt.Errorf("agent %q: name must match %s", name, agentNameRE))
	}
	if n.Cycle() {
		*errs = append(*errs, fmt.Errorf("agent %q: cycle in the agent tree (%s -> %s)", name, path, name))
		return false
	}
	if prev, dup := ix.byName[name]; dup {
		if prev == a {
			*errs = append(*errs, fmt.Errorf("agent %q: appears twice in the tree (under %q)", name, path))
		} else {
			*errs = append(*errs, fmt.Errorf("agent %q: duplicate agent name in the tree", name))
		}
		return false
	}
	ix.byName[name] = a
	ix.order = append(ix.order, name)
	ix.params = ix.params || mayDeclareParams(a)
	if p := n.Parent(); p != nil {
		ix.parent[name] = p
	}
	return true
}

// findIn searches a's subtree (a included, agents called as tools not) for
// name.
func findIn(a Agent, name string) (found Agent) {
	Walk(a, func(n TreeNode) bool {
		if found != nil || n.Agent == nil || n.Edge == EdgeAgentTool {
			return false
		}
		if n.Agent.Name() == name {
			found = n.Agent
		}
		return found == nil
	})
	return found
}

// resolveTransfer finds a transfer target: the caller's own subtree first,
// then the whole tree from the root.
func (inv *Invocation) resolveTransfer(from Agent, name string) Agent {
	if a := findIn(from, name); a != nil {
		return a
	}
	return inv.sh.index.byName[name]
}

// transferTargets lists the names an agent may transfer to: its sub-agents
// first, then every other agent of the tree.
func (ix *treeIndex) transferTargets(self Agent) []string {
	seen := map[string]bool{self.Name(): true}
	var out []string
	for _, s := range self.SubAgents() {
		if !seen[s.Name()] {
			seen[s.Name()] = true
			out = append(out, s.Name())
		}
	}
	for _, n := range ix.order {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
