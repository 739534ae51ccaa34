package gateway

import (
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/agentcore"
)

// serializedAgent is an agent as adk-web's structure graph reads it (ADK
// Python's serialize_agent: snake_case keys).
type serializedAgent struct {
	Name        string            `json:"name"`
	Type        string            `json:"type"`
	Description string            `json:"description,omitempty"`
	Model       string            `json:"model,omitempty"`
	SubAgents   []serializedAgent `json:"sub_agents,omitempty"`
	Tools       []serializedRef   `json:"tools,omitempty"`
}

type serializedRef struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// devRoute serves the development routes adk-web needs to draw an app
// (build_graph) and answers the rest as stubs.
func (s *Server) devRoute(c *gin.Context) {
	segs := strings.Split(strings.Trim(c.Param("rest"), "/"), "/")
	if len(segs) >= 4 && segs[0] == "apps" && segs[2] == "debug" && segs[3] == "trace" {
		s.serveTrace(c, segs[4:])
		return
	}
	if len(segs) == 3 && segs[0] == "apps" && segs[2] == "build_graph_image" {
		s.graphImage(c, segs[1])
		return
	}
	if len(segs) == 3 && segs[0] == "apps" && segs[2] == "build_graph" {
		a, ok := s.devApp(c, segs[1])
		if !ok {
			return
		}
		c.JSON(200, gin.H{"name": a.ID, "root_agent": serializeAgent(a.Root)})
		return
	}
	devStub(c)
}

// devApp finds the app a dev-UI route names, if the caller may use it;
// otherwise it answers 404 as ADK's dev server does.
func (s *Server) devApp(c *gin.Context, id string) (*app, bool) {
	a, ok := s.appByID(id)
	if !ok || !canUse(c.Request.Context(), a.ID) {
		writeNativeError(c, appNotFound(id))
		return nil, false
	}
	return a, true
}

func serializeAgent(ag agentcore.Agent) serializedAgent {
	out := serializedAgent{Name: ag.Name(), Description: ag.Description()}
	switch t := ag.(type) {
	case *agentcore.LlmAgent:
		out.Type = "LlmAgent"
		cfg := t.Config()
		if cfg.Model != nil {
			out.Model = cfg.Model.Name()
		}
		for _, tl := range cfg.Tools {
			kind := "FunctionTool"
			if _, ok := tl.(*agentcore.AgentTool); ok {
				kind = "AgentTool"
			}
			out.Tools = append(out.Tools, serializedRef{Name: tl.Name(), Type: kind})
		}
	case *agentcore.SequentialAgent:
		out.Type = "SequentialAgent"
	case *agentcore.ParallelAgent:
		out.Type = "ParallelAgent"
	case *agentcore.LoopAgent:
		out.Type = "LoopAgent"
	default:
		out.Type = "BaseAgent"
	}
	for _, sub := range ag.SubAgents() {
		out.SubAgents = append(out.SubAgents, serializeAgent(sub))
	}
	return out
}
