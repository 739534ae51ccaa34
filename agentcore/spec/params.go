package spec

import "github.com/agentgate/agentgate/agentcore"

// paramSpecs converts an agent's parameters entries (send_to_model
// defaults to true).
func paramSpecs(ps []Parameter) []agentcore.ParamSpec {
	if len(ps) == 0 {
		return nil
	}
	out := make([]agentcore.ParamSpec, len(ps))
	for i, p := range ps {
		out[i] = agentcore.ParamSpec{Name: p.Name, Description: p.Description,
			HideFromModel: p.SendToModel != nil && !*p.SendToModel, ForbidModelGeneration: p.ForbidModelGeneration}
	}
	return out
}
