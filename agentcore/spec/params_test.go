package spec_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
)

func TestBuildParameters(t *testing.T) {
	no := false
	cat, err := spec.Build(spec.Set{
		Providers: []spec.Provider{demoProvider},
		Agents: []spec.Agent{
			{Name: "root", Model: "demo/m", AgentTools: []string{"profile"}, Parameters: []spec.Parameter{{Name: "country", Description: "c"}}},
			{Name: "profile", Model: "demo/m", Parameters: []spec.Parameter{{Name: "userId", SendToModel: &no, ForbidModelGeneration: true}}},
		},
		Models: []spec.VirtualModel{{ID: "m", Agent: "root"}},
	}, spec.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := agentcore.TreeParams(cat.App("m").Root)
	want := map[string]agentcore.ParamSpec{
		"country": {Name: "country", Description: "c"},
		"userId":  {Name: "userId", HideFromModel: true, ForbidModelGeneration: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parameters (-want +got):\n%s", d)
	}
}

func TestBuildParameterErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		agents []spec.Agent
		want   string
	}{
		{"workflow", []spec.Agent{{Name: "a", Type: "sequential", SubAgents: []string{"b"}, Parameters: []spec.Parameter{{Name: "x"}}}, {Name: "b", Model: "demo/m"}},
			"agents[0].parameters: only llm agents declare parameters"},
		{"bad name", []spec.Agent{{Name: "a", Model: "demo/m", Parameters: []spec.Parameter{{Name: "user-id"}}}}, "parameters[0]: name must match"},
		{"duplicate", []spec.Agent{{Name: "a", Model: "demo/m", Parameters: []spec.Parameter{{Name: "x"}, {Name: "x"}}}}, "duplicate parameter \"x\""},
		{"request on an agent tool", []spec.Agent{{Name: "a", Model: "demo/m", AgentTools: []string{"b"}}, {Name: "b", Model: "demo/m", Parameters: []spec.Parameter{{Name: "request"}}}},
			"agents[0].agent_tools: agent tool b: a parameter may not be named \"request\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Build(spec.Set{Providers: []spec.Provider{demoProvider}, Agents: tc.agents,
				Models: []spec.VirtualModel{{ID: "m", Agent: "a"}}}, spec.BuildOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
