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
	onPath := map[Agent]bool{}
	var walk func(a, parent Agent, path string)
	walk = func(a, parent Agent, path string) {
		if a == nil {
			errs = append(errs, fmt.Errorf("agent tree: nil sub-agent under %q", path))
			return
		}
		name := a.Name()
		if name == "" {
			errs = append(errs, fmt.Errorf("agent tree: agent under %q has an empty name", path))
			return
		}
		if !agentNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("agent %q: name must match %s", name, agentNameRE))
		}
		if onPath[a] {
			errs = append(errs, fmt.Errorf("agent %q: cycle in the agent tree (%s -> %s)", name, path, name))
			return
		}
		if prev, dup := ix.byName[name]; dup {
			if prev == a {
				errs = append(errs, fmt.Errorf("agent %q: appears twice in the tree (under %q)", name, path))
			} else {
				errs = append(errs, fmt.Errorf("agent %q: duplicate agent name in the tree", name))
			}
			return
		}
		ix.byName[name] = a
		ix.order = append(ix.order, name)
		if parent != nil {
			ix.parent[name] = parent
		}
		onPath[a] = true
		defer delete(onPath, a)
		for _, s := range a.SubAgents() {
			walk(s, a, name)
		}
		// Agents called as tools run in sub-conversations; they are checked
		// for cycles (an agent that ends up calling itself) but are not
		// transfer targets of this tree.
		if la, ok := a.(*LlmAgent); ok {
			for _, t := range la.cfg.Tools {
				if at, ok := t.(*AgentTool); ok {
					if err := checkToolCycle(at.agent, onPath, name); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
	}
	walk(root, nil, "")
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ix, nil
}

// checkToolCycle reports an agent called as a tool that reaches an agent on
// the current path.
func checkToolCycle(a Agent, onPath map[Agent]bool, caller string) error {
	if a == nil {
		return fmt.Errorf("agent %q: nil agent tool", caller)
	}
	if onPath[a] {
		return fmt.Errorf("agent %q: cycle: calls %q as a tool, which is its own ancestor", caller, a.Name())
	}
	onPath[a] = true
	defer delete(onPath, a)
	for _, s := range a.SubAgents() {
		if err := checkToolCycle(s, onPath, a.Name()); err != nil {
			return err
		}
	}
	if la, ok := a.(*LlmAgent); ok {
		for _, t := range la.cfg.Tools {
			if at, ok := t.(*AgentTool); ok {
				if err := checkToolCycle(at.agent, onPath, a.Name()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// findIn searches a's subtree (a included) for name.
func findIn(a Agent, name string) Agent {
	if a.Name() == name {
		return a
	}
	for _, s := range a.SubAgents() {
		if f := findIn(s, name); f != nil {
			return f
		}
	}
	return nil
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
