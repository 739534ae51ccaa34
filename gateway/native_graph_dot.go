package gateway

import (
	"fmt"
	"strings"

	"github.com/gin-gonic/gin"
)

// graphImage answers adk-web's agent-graph tab
// (/dev/apps/{app}/build_graph_image?dark_mode=&node=): the app's agent tree
// and tools as Graphviz DOT, which adk-web renders itself. As ADK's dev
// server, the graph of the node path asked for is under its path and under
// "dotSrc"; agentgate's trees have no sub-workflow graphs, so that is the
// whole tree from the named agent down.
func (s *Server) graphImage(c *gin.Context, appID string) {
	a, ok := s.devApp(c, appID)
	if !ok {
		return
	}
	root := serializeAgent(a.Root)
	node := c.Query("node")
	target, ok := root.find(node)
	if !ok {
		writeNativeError(c, notFound("Node not found: "+node))
		return
	}
	dot := agentGraphDOT(target, c.Query("dark_mode") == "true")
	c.JSON(200, gin.H{node: gin.H{"dotSrc": dot}, "dotSrc": dot})
}

// find returns the agent at a node path: "" is a itself, else agent names
// joined by "/" below it (the root's own name may lead).
func (a serializedAgent) find(path string) (serializedAgent, bool) {
	path = strings.Trim(path, "/")
	if path == "" {
		return a, true
	}
	names := strings.Split(path, "/")
	if names[0] == a.Name {
		names = names[1:]
	}
	cur := a
next:
	for _, n := range names {
		for _, sub := range cur.SubAgents {
			if sub.Name == n {
				cur = sub
				continue next
			}
		}
		return serializedAgent{}, false
	}
	return cur, true
}

// graphPalette are the colours of one mode.
type graphPalette struct{ background, fill, border, text, edge, tool string }

var (
	lightGraph = graphPalette{"#F8FAFC", "#FFFFFF", "#94A3B8", "#0F172A", "#64748B", "#6B7280"}
	darkGraph  = graphPalette{"#0F172A", "#1E293B", "#475569", "#F8FAFC", "#94A3B8", "#9CA3AF"}
)

// agentGraphDOT renders an agent tree: an edge from each agent to its
// sub-agents, and dashed edges to its tools (an agent called as a tool
// included).
func agentGraphDOT(root serializedAgent, dark bool) string {
	p := lightGraph
	if dark {
		p = darkGraph
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotID(root.Name))
	fmt.Fprintf(&b, "  graph [bgcolor=%q, pad=0.5, nodesep=0.5, ranksep=0.8, fontname=\"Helvetica\"];\n", p.background)
	fmt.Fprintf(&b, "  node [shape=rect, style=\"rounded,filled\", fillcolor=%q, color=%q, fontcolor=%q, fontname=\"Helvetica\", fontsize=12];\n",
		p.fill, p.border, p.text)
	fmt.Fprintf(&b, "  edge [color=%q, arrowhead=vee, arrowsize=0.7];\n", p.edge)
	tools := map[string]bool{}
	var walk func(a serializedAgent)
	walk = func(a serializedAgent) {
		fmt.Fprintf(&b, "  %s [label=%q, tooltip=%q];\n", dotID(a.Name), a.Name, a.Type)
		for _, t := range a.Tools {
			if !tools[t.Name] {
				tools[t.Name] = true
				fmt.Fprintf(&b, "  %s [label=%q, tooltip=%q, shape=ellipse, style=\"filled\", fontcolor=%q, color=%q];\n",
					dotID("tool:"+t.Name), t.Name, t.Type, p.text, p.tool)
			}
			fmt.Fprintf(&b, "  %s -> %s [style=dashed];\n", dotID(a.Name), dotID("tool:"+t.Name))
		}
		for _, sub := range a.SubAgents {
			walk(sub)
			fmt.Fprintf(&b, "  %s -> %s;\n", dotID(a.Name), dotID(sub.Name))
		}
	}
	walk(root)
	b.WriteString("}\n")
	return b.String()
}

// dotID quotes a name as a DOT identifier.
func dotID(name string) string { return fmt.Sprintf("%q", name) }
