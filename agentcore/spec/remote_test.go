package spec_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/sessions"
)

// remoteStub stands for what BuildOptions.Remote makes.
type remoteStub struct{ name, desc string }

func (r *remoteStub) Name() string                 { return r.name }
func (r *remoteStub) Description() string          { return r.desc }
func (r *remoteStub) SubAgents() []agentcore.Agent { return nil }
func (r *remoteStub) Run(context.Context, *agentcore.Invocation) iter.Seq2[*sessions.Event, error] {
	return func(func(*sessions.Event, error) bool) {}
}

func remoteSet(mutate func(*spec.Set)) spec.Set {
	set := spec.Set{
		Providers: []spec.Provider{demoProvider},
		Agents: []spec.Agent{
			{Name: "front", Model: "demo/m", SubAgents: []string{"analyst"}, AgentTools: []string{"checker"}},
			{Name: "analyst", Description: "Remote analyst.", Endpoint: &spec.Endpoint{A2A: "https://analyst.example/a2a/analyst"}},
			{Name: "checker", Endpoint: &spec.Endpoint{A2A: "https://checker.example"}},
		},
		Models: []spec.VirtualModel{{ID: "m", Agent: "front"}},
	}
	if mutate != nil {
		mutate(&set)
	}
	return set
}

// Agents with an endpoint are made by the Remote hook and may be transfer
// targets and agent tools.
func TestBuildRemoteAgents(t *testing.T) {
	var made []string
	opts := spec.BuildOptions{Remote: func(a spec.Agent) (agentcore.Agent, error) {
		made = append(made, a.Name+"@"+a.Endpoint.A2A)
		return &remoteStub{name: a.Name, desc: a.Description}, nil
	}}
	cat, err := spec.Build(remoteSet(nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	root := cat.App("m").Root.(*agentcore.LlmAgent)
	if subs := root.SubAgents(); len(subs) != 1 || subs[0].Name() != "analyst" {
		t.Errorf("sub-agents %v", subs)
	}
	var tools []string
	for _, tl := range root.Config().Tools {
		if at, ok := tl.(*agentcore.AgentTool); ok {
			tools = append(tools, at.Agent().Name())
		}
	}
	if strings.Join(tools, ",") != "checker" {
		t.Errorf("agent tools %v", tools)
	}
	if strings.Join(made, " ") != "analyst@https://analyst.example/a2a/analyst checker@https://checker.example" {
		t.Errorf("made %v", made)
	}
}

func TestBuildRemoteErrors(t *testing.T) {
	ok := func(a spec.Agent) (agentcore.Agent, error) { return &remoteStub{name: a.Name}, nil }
	for _, tc := range []struct {
		name   string
		mutate func(*spec.Set)
		remote func(spec.Agent) (agentcore.Agent, error)
		want   []string
	}{
		{"no hook", nil, nil, []string{"agents[1].endpoint: remote (A2A) agents are not available in this build"}},
		{"no url", func(s *spec.Set) { s.Agents[1].Endpoint.A2A = "" }, ok, []string{"agents[1].endpoint.a2a: required"}},
		{"local settings", func(s *spec.Set) { s.Agents[1].Model, s.Agents[1].SubAgents = "demo/m", []string{"checker"} },
			ok, []string{"agents[1]: a remote agent runs on its own server"}},
		{"workflow type", func(s *spec.Set) { s.Agents[2].Type = "sequential" }, ok, []string{"agents[2].type: a remote agent (with an endpoint) cannot be a sequential agent"}},
		{"negative durations", func(s *spec.Set) { s.Agents[1].Endpoint.Timeout, s.Agents[1].Endpoint.PollInterval = -1, -1 }, ok,
			[]string{"agents[1].endpoint.timeout: must not be negative", "agents[1].endpoint.poll_interval: must not be negative"}},
		{"hook errors, one line each", nil, func(spec.Agent) (agentcore.Agent, error) {
			return nil, errors.Join(errors.New("first"), errors.New("second"))
		}, []string{"agents[1].endpoint: first", "agents[1].endpoint: second", "agents[2].endpoint: first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := spec.Build(remoteSet(tc.mutate), spec.BuildOptions{Remote: tc.remote})
			if err == nil {
				t.Fatal("built")
			}
			lines := strings.Split(err.Error(), "\n")
			for _, w := range tc.want {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, w)
				}
				if !found {
					t.Errorf("no line starting %q in:\n%v", w, err)
				}
			}
		})
	}
}
