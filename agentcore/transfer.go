package agentcore

import (
	"strings"

	"github.com/agentgate/agentgate/sessions"
)

// llmParent returns a's parent when it is an LlmAgent: an agent under an
// LLM agent can hand the conversation back to it or to its peers (as in
// ADK); an agent under a workflow agent cannot.
func (ix *treeIndex) llmParent(a Agent) *LlmAgent {
	if a == ix.root {
		return nil // the root has no parent: no name to look up
	}
	p, _ := ix.parent[a.Name()].(*LlmAgent)
	return p
}

// canTransfer reports whether agent a gets the transfer tool: it has
// sub-agents, or an LLM parent to return to.
func (a *LlmAgent) canTransfer(ix *treeIndex) bool {
	return !a.cfg.DisableTransfer && (len(a.cfg.SubAgents) > 0 || ix.llmParent(a) != nil)
}

// rosterAgents lists the agents the roster advertises: the sub-agents, then
// the LLM parent, then its other children (the peers).
func (a *LlmAgent) rosterAgents(ix *treeIndex) (subs []Agent, parent Agent, peers []Agent) {
	subs = a.cfg.SubAgents
	if p := ix.llmParent(a); p != nil {
		parent = p
		for _, s := range p.SubAgents() {
			if s.Name() != a.cfg.Name {
				peers = append(peers, s)
			}
		}
	}
	return subs, parent, peers
}

// writeRoster renders the transfer roster.
func (a *LlmAgent) writeRoster(b *strings.Builder, ix *treeIndex) {
	subs, parent, peers := a.rosterAgents(ix)
	line := func(ag Agent, note string) {
		b.WriteString("\n- " + ag.Name())
		if note != "" {
			b.WriteString(" (" + note + ")")
		}
		if d := ag.Description(); d != "" {
			b.WriteString(": " + d)
		}
	}
	for _, s := range subs {
		line(s, "")
	}
	if parent != nil {
		line(parent, "your parent agent; transfer back to it when the request is outside your role")
	}
	for _, s := range peers {
		line(s, "")
	}
}

// waitingOn filters the long-running calls a turn waits on: a call whose
// tool failed (its response carries an error) does not pause the
// invocation, so the model can react to the error.
func waitingOn(ids []string, respEv *sessions.Event) []string {
	if respEv == nil || len(ids) == 0 {
		return ids
	}
	failed := map[string]bool{}
	for _, r := range respEv.FunctionResponses() {
		if _, ok := r.Response["error"]; ok {
			failed[r.ID] = true
		}
	}
	var out []string
	for _, id := range ids {
		if !failed[id] {
			out = append(out, id)
		}
	}
	return out
}
