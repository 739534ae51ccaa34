package agentcore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/sessions"
)

// errorMentions fails unless err is non-nil and contains every fragment.
func errorMentions(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

func TestNewLlmAgentRejectsBadConfig(t *testing.T) {
	m := replies(textResp("ok"))
	echo := echoTool(t, "echo")
	for _, tc := range []struct {
		name string
		cfg  agentcore.LlmConfig
		want []string
	}{
		{"empty name", agentcore.LlmConfig{Model: m}, []string{"empty name"}},
		{"no model", agentcore.LlmConfig{Name: "helper"}, []string{`"helper"`, "no model"}},
		{"bad include_contents", agentcore.LlmConfig{Name: "helper", Model: m, IncludeContents: "everything"},
			[]string{`"helper"`, "include_contents", `"everything"`}},
		{"duplicate tools", agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{echo, echoTool(t, "echo")}},
			[]string{`"helper"`, `duplicate tool "echo"`}},
		{"nil tool", agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{nil}}, []string{`"helper"`, "nil tool"}},
		{"negative max_iterations", agentcore.LlmConfig{Name: "helper", Model: m, MaxIterations: -1}, []string{`"helper"`, "max_iterations"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := agentcore.NewLlmAgent(tc.cfg)
			if a != nil {
				t.Errorf("NewLlmAgent returned an agent with the error")
			}
			errorMentions(t, err, tc.want...)
		})
	}
}

func TestNewLlmAgentDefaults(t *testing.T) {
	a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: replies(textResp("ok"))})
	cfg := a.Config()
	if cfg.MaxIterations != agentcore.DefaultMaxIterations || agentcore.DefaultMaxIterations != 16 {
		t.Errorf("MaxIterations = %d (DefaultMaxIterations %d), want 16", cfg.MaxIterations, agentcore.DefaultMaxIterations)
	}
	if cfg.IncludeContents != agentcore.IncludeDefault {
		t.Errorf("IncludeContents = %q, want %q", cfg.IncludeContents, agentcore.IncludeDefault)
	}
}

func TestWorkflowAgentsRejectBadConfig(t *testing.T) {
	leaf := &stubAgent{name: "leaf"}
	builders := map[string]func(agentcore.WorkflowConfig) (agentcore.Agent, error){
		"sequential": func(c agentcore.WorkflowConfig) (agentcore.Agent, error) { return agentcore.NewSequentialAgent(c) },
		"parallel":   func(c agentcore.WorkflowConfig) (agentcore.Agent, error) { return agentcore.NewParallelAgent(c) },
		"loop":       func(c agentcore.WorkflowConfig) (agentcore.Agent, error) { return agentcore.NewLoopAgent(c) },
	}
	for kind, build := range builders {
		for _, tc := range []struct {
			name string
			cfg  agentcore.WorkflowConfig
			want []string
		}{
			{"empty name", agentcore.WorkflowConfig{SubAgents: []agentcore.Agent{leaf}}, []string{kind, "empty name"}},
			{"no sub-agents", agentcore.WorkflowConfig{Name: "flow"}, []string{`"flow"`, "no sub-agents"}},
			{"nil sub-agent", agentcore.WorkflowConfig{Name: "flow", SubAgents: []agentcore.Agent{leaf, nil}}, []string{`"flow"`, "nil sub-agent"}},
			{"negative max_iterations", agentcore.WorkflowConfig{Name: "flow", SubAgents: []agentcore.Agent{leaf}, MaxIterations: -2},
				[]string{`"flow"`, "max_iterations"}},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				_, err := build(tc.cfg)
				errorMentions(t, err, tc.want...)
			})
		}
	}
}

func TestTreeValidationNamesTheAgent(t *testing.T) {
	m := replies(textResp("ok"))
	llm := func(name string, subs ...agentcore.Agent) *agentcore.LlmAgent {
		return mustLlm(t, agentcore.LlmConfig{Name: name, Model: m, SubAgents: subs})
	}
	for _, tc := range []struct {
		name string
		root func() agentcore.Agent
		want []string
	}{
		{"nil root", func() agentcore.Agent { return nil }, []string{"nil root"}},
		{"duplicate names", func() agentcore.Agent {
			return llm("root", llm("helper"), llm("other", llm("helper")))
		}, []string{`agent "helper"`, "duplicate"}},
		{"same agent twice", func() agentcore.Agent {
			h := llm("helper")
			return llm("root", h, llm("other", h))
		}, []string{`agent "helper"`, "twice"}},
		{"nil sub-agent", func() agentcore.Agent {
			return llm("root", llm("helper"), nil)
		}, []string{`nil sub-agent under "root"`}},
		{"empty name", func() agentcore.Agent {
			return llm("root", &stubAgent{name: ""})
		}, []string{`under "root"`, "empty name"}},
		{"malformed name", func() agentcore.Agent {
			return llm("root", &stubAgent{name: "has space"})
		}, []string{`agent "has space"`}},
		{"cycle through sub-agents", func() agentcore.Agent {
			s := &stubAgent{name: "looper"}
			s.subs = []agentcore.Agent{llm("inner"), s}
			return llm("root", s)
		}, []string{`agent "looper"`, "cycle"}},
		{"cycle through an agent tool", func() agentcore.Agent {
			// root -> caller, and caller calls root as a tool.
			root := &stubAgent{name: "root"}
			caller := mustLlm(t, agentcore.LlmConfig{Name: "caller", Model: m, Tools: []agentcore.Tool{agentTool(t, root)}})
			root.subs = []agentcore.Agent{caller}
			return root
		}, []string{`agent "caller"`, "cycle", `"root"`}},
		{"cycle deeper in an agent tool", func() agentcore.Agent {
			// root -> caller; caller calls tooled as a tool; tooled's
			// sub-agent calls root as a tool.
			root := &stubAgent{name: "root"}
			inner := &stubAgent{name: "inner"}
			tooled := llm("tooled", inner)
			caller := mustLlm(t, agentcore.LlmConfig{Name: "caller", Model: m, Tools: []agentcore.Tool{agentTool(t, tooled)}})
			inner.subs = []agentcore.Agent{mustLlm(t, agentcore.LlmConfig{Name: "back", Model: m, Tools: []agentcore.Tool{agentTool(t, root)}})}
			root.subs = []agentcore.Agent{caller}
			return root
		}, []string{`agent "back"`, "cycle", `"root"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root()
			errorMentions(t, agentcore.ValidateTree(root), tc.want...)
			_, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: root, Sessions: sessions.NewMemoryService(sessions.MemoryConfig{})})
			errorMentions(t, err, tc.want...)
		})
	}
}

func TestNewAgentToolValidatesItsTree(t *testing.T) {
	m := replies(textResp("ok"))
	bad := mustLlm(t, agentcore.LlmConfig{Name: "bad", Model: m, SubAgents: []agentcore.Agent{
		mustLlm(t, agentcore.LlmConfig{Name: "twin", Model: m}), mustLlm(t, agentcore.LlmConfig{Name: "twin", Model: m}),
	}})
	_, err := agentcore.NewAgentTool(bad, agentcore.AgentToolConfig{})
	errorMentions(t, err, `agent "twin"`, "duplicate")
}

func TestRunnerFindAgent(t *testing.T) {
	h := newHarness(t, coordinatorTree(t))
	for _, name := range []string{"coordinator", "greeter", "task_executor"} {
		if a := h.runner.FindAgent(name); a == nil || a.Name() != name {
			t.Errorf("FindAgent(%q) = %v", name, a)
		}
	}
	if a := h.runner.FindAgent("nobody"); a != nil {
		t.Errorf("FindAgent(nobody) = %v, want nil", a.Name())
	}
	if diff := cmp.Diff("coordinator", h.runner.Root().Name()); diff != "" {
		t.Errorf("Root (-want +got):\n%s", diff)
	}
}

func TestRunnerConfigErrors(t *testing.T) {
	root := &stubAgent{name: "root"}
	svc := sessions.NewMemoryService(sessions.MemoryConfig{})
	for _, tc := range []struct {
		name string
		cfg  agentcore.RunnerConfig
		want string
	}{
		{"no app", agentcore.RunnerConfig{Agent: root, Sessions: svc}, "app name"},
		{"no sessions", agentcore.RunnerConfig{AppName: "app", Agent: root}, "session service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agentcore.NewRunner(tc.cfg)
			errorMentions(t, err, tc.want)
		})
	}
}

func TestMissingSessionWithoutAutoCreate(t *testing.T) {
	h := newHarness(t, &stubAgent{name: "root"}, func(c *agentcore.RunnerConfig) { c.AutoCreateSession = false })
	_, err := h.run("nope", userText("hi"), agentcore.RunConfig{})
	if !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("run on a missing session: err = %v, want sessions.ErrNotFound", err)
	}
}

// With AutoCreateSession a run on a missing session creates it with its
// turn (once: the next run continues it), and a run that names no session
// gets a new one with a generated id.
func TestAutoCreateSession(t *testing.T) {
	h := newHarness(t, &stubAgent{name: "root"})
	h.mustRun("new", userText("hi"), agentcore.RunConfig{})
	h.mustRun("new", userText("again"), agentcore.RunConfig{})
	if got := h.session("new"); len(got.Events) < 2 || got.Events[0].Text() != "hi" {
		t.Errorf("session new: %d events, want both turns' messages", len(got.Events))
	}
	h.mustRun("", userText("hi"), agentcore.RunConfig{})
	list, err := h.svc.List(t.Context(), sessions.ListRequest{AppName: "app", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 2 {
		t.Errorf("%d sessions after runs on \"new\" and on no session, want 2", len(list.Sessions))
	}
}
