package spec_test

import (
	"strings"
	"testing"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/spec"
)

var demoProvider = spec.Provider{Name: "demo", Type: "scripted", Rules: []scripted.Rule{{Reply: "ok"}}}

func TestBuildDemoTree(t *testing.T) {
	cat, err := spec.Build(spec.Set{
		Providers: []spec.Provider{demoProvider},
		Agents: []spec.Agent{
			{Name: "coordinator", Model: "demo/m", SubAgents: []string{"greeter", "pipeline"}, AgentTools: []string{"summarizer"},
				Tools: []spec.Tool{{Builtin: "get_user_choice"}, {Name: "refund", Kind: "client"}}},
			{Name: "greeter", Model: "demo/m", Tools: []spec.Tool{{Name: "wave", Kind: "client"}}},
			{Name: "summarizer", Model: "demo/m"},
			{Name: "pipeline", Type: "sequential", SubAgents: []string{"step"}},
			{Name: "step", Model: "demo/m", OutputKey: "x"},
		},
		Models: []spec.VirtualModel{{ID: "desk", Agent: "coordinator", Description: "Desk"}},
	}, spec.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	app := cat.App("desk")
	if app == nil || app.Root.Name() != "coordinator" || app.RouteToRoot {
		t.Fatalf("app %+v", app)
	}
	if _, ok := app.Root.(*agentcore.LlmAgent); !ok {
		t.Errorf("root is %T", app.Root)
	}
	want := map[string]spec.ClientAction{"refund": {Agent: "coordinator", Name: "refund"}, "greeter__wave": {Agent: "greeter", Name: "wave"}}
	if len(app.ClientActions) != len(want) {
		t.Errorf("client actions %v", app.ClientActions)
	}
	for k, v := range want {
		if app.ClientActions[k] != v {
			t.Errorf("client action %s = %v, want %v", k, app.ClientActions[k], v)
		}
	}
}

func TestBuildErrorsNameTheKey(t *testing.T) {
	base := func() spec.Set {
		return spec.Set{
			Providers: []spec.Provider{demoProvider},
			Agents:    []spec.Agent{{Name: "a", Model: "demo/m", SubAgents: []string{"b"}}, {Name: "b", Model: "demo/m"}, {Name: "c", Model: "demo/m"}},
			Models:    []spec.VirtualModel{{ID: "m", Agent: "a"}},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*spec.Set)
		want   string
	}{
		{"unknown sub-agent", func(s *spec.Set) { s.Agents[2].SubAgents = []string{"biling"} }, `agents[2].sub_agents: unknown agent "biling"`},
		{"unknown agent tool", func(s *spec.Set) { s.Agents[0].AgentTools = []string{"zz"} }, `agents[0].agent_tools: unknown agent "zz"`},
		{"cycle", func(s *spec.Set) { s.Agents[1].SubAgents = []string{"a"} }, "cycle: a -> b -> a"},
		{"cycle through agent tools", func(s *spec.Set) { s.Agents[1].AgentTools = []string{"a"} }, "cycle"},
		{"duplicate name", func(s *spec.Set) { s.Agents[2].Name = "b" }, `agents[2].name: duplicate agent "b"`},
		{"bad name", func(s *spec.Set) { s.Agents[2].Name = "Bad Name" }, "agents[2].name: must match"},
		{"missing model", func(s *spec.Set) { s.Agents[1].Model = "" }, "agents[1].model: required"},
		{"bad model ref", func(s *spec.Set) { s.Agents[1].Model = "gpt" }, `agents[1].model: want <provider>/<model>, got "gpt"`},
		{"unknown provider", func(s *spec.Set) { s.Agents[1].Model = "nope/x" }, `agents[1].model: unknown provider "nope"`},
		{"unknown provider type", func(s *spec.Set) { s.Providers = append(s.Providers, spec.Provider{Name: "x", Type: "anthropic"}) }, `providers[1].type: unknown provider type "anthropic"`},
		{"unknown builtin", func(s *spec.Set) { s.Agents[1].Tools = []spec.Tool{{Builtin: "teleport"}} }, `agents[1].tools[0].builtin: unknown builtin "teleport"`},
		{"unknown tool kind", func(s *spec.Set) { s.Agents[1].Tools = []spec.Tool{{Name: "t", Kind: "ftp"}} }, `agents[1].tools[0].kind`},
		{"bad include_contents", func(s *spec.Set) { s.Agents[1].IncludeContents = "some" }, "agents[1]: llm agent \"b\": include_contents"},
		{"workflow with a model", func(s *spec.Set) {
			s.Agents[2] = spec.Agent{Name: "c", Type: "loop", Model: "demo/m", SubAgents: []string{"b"}}
		}, "agents[2]: a loop agent takes only sub_agents"},
		{"unknown type", func(s *spec.Set) { s.Agents[2].Type = "swarm" }, `agents[2].type: must be llm, sequential, parallel or loop, not "swarm"`},
		{"model with unknown agent", func(s *spec.Set) { s.Models[0].Agent = "zz" }, `models[0].agent: unknown agent "zz"`},
		{"duplicate model", func(s *spec.Set) { s.Models = append(s.Models, s.Models[0]) }, `models[1].id: duplicate model id "m"`},
		{"bad route", func(s *spec.Set) { s.Models[0].RouteNextTurn = "random" }, "models[0].route_next_turn"},
		{"bad client instructions", func(s *spec.Set) { s.Models[0].ClientInstructions = "prepend" }, "models[0].client_instructions: must be ignore or append"},
		{"no models", func(s *spec.Set) { s.Models = nil }, "models: at least one virtual model is required"},
		{"bad scripted regexp", func(s *spec.Set) { s.Providers[0].Rules = []scripted.Rule{{Match: "(", Reply: "x"}} }, "providers[0].rules[0].match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.mutate(&s)
			_, err := spec.Build(s, spec.BuildOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestBuildReportsEveryProblem(t *testing.T) {
	_, err := spec.Build(spec.Set{
		Providers: []spec.Provider{demoProvider},
		Agents:    []spec.Agent{{Name: "a", Model: "demo/m", SubAgents: []string{"x"}}, {Name: "b", Model: "demo/m", AgentTools: []string{"y"}}},
		Models:    []spec.VirtualModel{{ID: "m", Agent: "a"}},
	}, spec.BuildOptions{})
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("want two problems, one per line: %v", err)
	}
}

type fakeCallable struct {
	agentcore.CallableTool
	name string
}

func (f fakeCallable) Name() string { return f.name }

func TestToolConfirmAndStreamSubAgents(t *testing.T) {
	gate := agentcore.ExitLoop()
	cat, err := spec.Build(spec.Set{
		Providers: []spec.Provider{demoProvider},
		Agents: []spec.Agent{{Name: "a", Model: "demo/m", Tools: []spec.Tool{
			{Name: "pay", Kind: "http", URL: "http://127.0.0.1:1/pay", Confirm: true, ConfirmHint: "Pay now?"},
			{Name: "look", Kind: "http", URL: "http://127.0.0.1:1/look"},
		}}},
		Models: []spec.VirtualModel{{ID: "m", Agent: "a", StreamSubAgents: true, OnDisconnect: "continue"}},
	}, spec.BuildOptions{Tools: func(agent string, t spec.Tool) (agentcore.Tool, error) {
		return fakeCallable{gate, t.Name}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	app := cat.App("m")
	if !app.StreamSubAgents {
		t.Error("stream_sub_agents not carried to the app")
	}
	if !app.ContinueOnDisconnect {
		t.Error("on_disconnect: continue not carried to the app")
	}
	tools := app.Root.(*agentcore.LlmAgent).Config().Tools
	cf, ok := tools[0].(agentcore.Confirmer)
	if !ok {
		t.Fatalf("confirm: true did not wrap the tool (%T)", tools[0])
	}
	if need, hint := cf.RequiresConfirmation(nil); !need || hint != "Pay now?" {
		t.Errorf("RequiresConfirmation = %v %q", need, hint)
	}
	if _, ok := tools[1].(agentcore.Confirmer); ok {
		t.Error("a tool without confirm was wrapped")
	}
}

func TestOnDisconnectValues(t *testing.T) {
	_, err := spec.Build(spec.Set{
		Providers: []spec.Provider{demoProvider},
		Agents:    []spec.Agent{{Name: "a", Model: "demo/m"}},
		Models:    []spec.VirtualModel{{ID: "m", Agent: "a", OnDisconnect: "linger"}},
	}, spec.BuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "on_disconnect") {
		t.Errorf("on_disconnect: linger: %v", err)
	}
}

// models[].multitask: reject when absent, the value when valid, and an
// error naming the key otherwise.
func TestMultitaskValues(t *testing.T) {
	for _, tc := range []struct {
		value spec.Multitask
		want  spec.Multitask
		err   string
	}{
		{"", spec.MultitaskReject, ""},
		{"reject", spec.MultitaskReject, ""},
		{"enqueue", spec.MultitaskEnqueue, ""},
		{"interrupt", spec.MultitaskInterrupt, ""},
		{"rollback", "", `models[0].multitask: must be reject, enqueue or interrupt, not "rollback"`},
	} {
		cat, err := spec.Build(spec.Set{
			Providers: []spec.Provider{demoProvider},
			Agents:    []spec.Agent{{Name: "a", Model: "demo/m"}},
			Models:    []spec.VirtualModel{{ID: "m", Agent: "a", Multitask: tc.value}},
		}, spec.BuildOptions{})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("multitask %q: err = %v, want %q", tc.value, err, tc.err)
			}
		case err != nil:
			t.Errorf("multitask %q: %v", tc.value, err)
		case cat.App("m").Multitask != tc.want:
			t.Errorf("multitask %q: the app's is %q, want %q", tc.value, cat.App("m").Multitask, tc.want)
		}
	}
}
