package agentcore

import "strings"

// subInvocationSep joins an invocation id and the name of an agent it calls
// as a tool.
const subInvocationSep = ".sub."

// NewInvocationID is the id of a new top-level invocation made from a
// unique string (a UUID, or a test's id): "e-<unique>".
func NewInvocationID(unique string) string { return "e-" + unique }

// SubInvocationID is the id of the invocation in which agent, called as a
// tool from invocation parent, runs its sub-conversation:
// "<parent>.sub.<agent>". Deeper calls nest: "e-1.sub.outer.sub.inner".
// ParseInvocationID reads it back.
func SubInvocationID(parent, agent string) string {
	return parent + subInvocationSep + agent
}

// ParseInvocationID splits an invocation id into the top-level invocation
// and the agents called as tools that lead from it to id, outermost first:
// "e-1.sub.outer.sub.inner" is ("e-1", [outer inner]); a top-level id is
// itself with no chain. ok is false for an id SubInvocationID cannot have
// built: an empty top-level id, or a link that is not an agent name
// ("e-1.sub.", "e-1.sub.a.b").
func ParseInvocationID(id string) (root string, chain []string, ok bool) {
	root, rest, sub := strings.Cut(id, subInvocationSep)
	if root == "" {
		return "", nil, false
	}
	if !sub {
		return root, nil, true
	}
	chain = strings.Split(rest, subInvocationSep)
	for _, name := range chain {
		if !agentNameRE.MatchString(name) {
			return "", nil, false
		}
	}
	return root, chain, true
}
