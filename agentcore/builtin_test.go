package agentcore_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/memory"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// seedMemory remembers an earlier conversation of u1 and one of u2.
func seedMemory(t *testing.T) *memory.InMemory {
	t.Helper()
	mem := memory.NewInMemory()
	for user, said := range map[string][]string{
		"u1": {"I love hiking in the Alps", "Hiking boots matter."},
		"u2": {"My hiking secret spot"},
	} {
		s := &sessions.Session{AppName: "app", UserID: user, ID: "old"}
		for i, text := range said {
			author := "user"
			if i%2 == 1 {
				author = "helper"
			}
			s.Events = append(s.Events, &sessions.Event{Author: author, Content: userText(text)})
		}
		if err := mem.AddSession(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

func withMemory(mem memory.Service) harnessOpt {
	return func(c *agentcore.RunnerConfig) { c.Memory = mem }
}

// What the built-in tools return for one call, as the model sees it.
func TestBuiltinToolResults(t *testing.T) {
	mem := seedMemory(t)
	store := seedArtifacts(t, map[string]*genai.Part{"notes": {Text: "remember the milk"}})
	for _, tc := range []struct {
		name string
		tool agentcore.Tool
		args map[string]any
		opts []harnessOpt
		want string // the result as JSON
		// stops: the agent does not call the model again (a long-running
		// call pauses even when it failed; escalation ends the run).
		stops bool
	}{
		{"load_memory", agentcore.LoadMemory(), map[string]any{"query": "hiking"}, []harnessOpt{withMemory(mem)},
			`{"memories":[{"author":"user","text":"I love hiking in the Alps"},{"author":"helper","text":"Hiking boots matter."}]}`, false},
		{"load_memory without hits", agentcore.LoadMemory(), map[string]any{"query": "sailing"}, []harnessOpt{withMemory(mem)}, `{"memories":[]}`, false},
		{"load_memory without query", agentcore.LoadMemory(), map[string]any{}, []harnessOpt{withMemory(mem)}, `{"error":"query is required"}`, false},
		{"load_memory without a memory service", agentcore.LoadMemory(), map[string]any{"query": "hiking"}, nil,
			`{"error":"no memory service configured"}`, false},
		{"load_artifacts", agentcore.LoadArtifacts(), map[string]any{"artifact_names": []any{"notes", "gone"}}, []harnessOpt{withArtifacts(store)},
			`{"loaded":[{"name":"notes","part":{"text":"remember the milk"}},{"error":"not found","name":"gone"}]}`, false},
		{"load_artifacts with bad arguments", agentcore.LoadArtifacts(), map[string]any{"artifact_names": "notes"}, []harnessOpt{withArtifacts(store)},
			`{"error":"artifact_names must be a list of strings"}`, false},
		{"load_artifacts without an artifact service", agentcore.LoadArtifacts(), map[string]any{"artifact_names": []any{"notes"}}, nil,
			`{"error":"no artifact service configured"}`, false},
		// A long-running call that failed does not pause: the model sees
		// the error and can try again.
		{"get_user_choice without options", agentcore.GetUserChoice(), map[string]any{"prompt": "?"}, nil,
			`{"error":"options must be a non-empty list of strings"}`, false},
		{"exit_loop outside a loop", agentcore.ExitLoop(), nil, nil, `{"result":null}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(callResp("c1", tc.tool.Name(), tc.args), textResp("ok"))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{tc.tool}})
			evs := newHarness(t, a, tc.opts...).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			if diff := cmp.Diff(tc.want, jsonString(responses(evs)["c1"])); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if tc.stops {
				if n := len(m.requests()); n != 1 {
					t.Errorf("model called %d times, want 1", n)
				}
				return
			}
			lines := render(m.lastRequest(t).Contents)
			if diff := cmp.Diff("user: resp "+tc.tool.Name()+" "+tc.want, lines[len(lines)-1]); diff != "" {
				t.Errorf("what the model saw (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuiltinDeclarations(t *testing.T) {
	for _, tc := range []struct {
		tool         agentcore.CallableTool
		name         string
		longRunning  bool
		wantRequired []string
	}{
		{agentcore.ExitLoop(), "exit_loop", false, nil},
		{agentcore.GetUserChoice(), "get_user_choice", true, []string{"options"}},
		{agentcore.LoadMemory(), "load_memory", false, []string{"query"}},
		{agentcore.LoadArtifacts(), "load_artifacts", false, []string{"artifact_names"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.tool.Declaration()
			if d.Name != tc.name || tc.tool.Name() != tc.name || d.Description == "" || tc.tool.IsLongRunning() != tc.longRunning {
				t.Errorf("declaration %+v, long-running %v", d, tc.tool.IsLongRunning())
			}
			schema, _ := d.ParametersJsonSchema.(map[string]any)
			req, _ := schema["required"].([]string)
			if diff := cmp.Diff(tc.wantRequired, req); diff != "" {
				t.Errorf("required (-want +got):\n%s", diff)
			}
		})
	}
}

// preload_memory is passive: it is never offered as a function, and it adds
// the user's matching memories to the system instruction.
func TestPreloadMemory(t *testing.T) {
	for _, tc := range []struct {
		name       string
		max        int
		mem        memory.Service
		user       string
		wantSystem string
	}{
		{"best hit only", 1, seedMemory(t), "any hiking tips for the alps?",
			"Be helpful.\n\nRelevant prior context:\n- user: I love hiking in the Alps"},
		{"several hits", 5, seedMemory(t), "any hiking tips for the alps?",
			"Be helpful.\n\nRelevant prior context:\n- user: I love hiking in the Alps\n- helper: Hiking boots matter."},
		{"no hits", 5, seedMemory(t), "what about sailing?", "Be helpful."},
		{"no memory service", 5, nil, "any hiking tips?", "Be helpful."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(textResp("ok"))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: "Be helpful.", Tools: []agentcore.Tool{agentcore.PreloadMemory(tc.max)}})
			var opts []harnessOpt
			if tc.mem != nil {
				opts = append(opts, withMemory(tc.mem))
			}
			newHarness(t, a, opts...).mustRun("s1", userText(tc.user), agentcore.RunConfig{})
			req := m.lastRequest(t)
			if diff := cmp.Diff(tc.wantSystem, sysText(req)); diff != "" {
				t.Errorf("system instruction (-want +got):\n%s", diff)
			}
			if names := declNames(req); len(names) != 0 {
				t.Errorf("functions offered: %v", names)
			}
		})
	}
}

// A tool saving an artifact records its version in the event's
// artifactDelta; {artifact.name} then reads the latest version.
func TestSaveArtifactFromTool(t *testing.T) {
	save := fnTool(t, "save_report", func(ctx context.Context, tc *agentcore.ToolContext, a struct {
		Text string `json:"text"`
	}) (map[string]any, error) {
		v, err := tc.SaveArtifact(ctx, "report", &genai.Part{Text: a.Text})
		if err != nil {
			return nil, err
		}
		back, err := tc.LoadArtifact(ctx, "report")
		if err != nil {
			return nil, err
		}
		return map[string]any{"version": v, "read_back": back.Text}, nil
	})
	m := perAgent(map[string][]*model.Response{"helper": {
		callResp("c1", "save_report", map[string]any{"text": "draft one"}), textResp("saved"),
		callResp("c2", "save_report", map[string]any{"text": "draft two"}), textResp("saved again"),
	}})
	a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: "Report: {artifact.report?}", Tools: []agentcore.Tool{save}})
	h := newHarness(t, a, withArtifacts(seedArtifacts(t, nil)))
	var deltas []map[string]int64
	for _, turn := range []string{"save", "save again"} {
		evs := h.mustRun("s1", userText(turn), agentcore.RunConfig{})
		deltas = append(deltas, evs[1].Actions.ArtifactDelta)
	}
	if diff := cmp.Diff([]map[string]int64{{"report": 1}, {"report": 2}}, deltas); diff != "" {
		t.Errorf("artifactDelta per turn (-want +got):\n%s", diff)
	}
	var systems []string
	for _, r := range m.requests() {
		systems = append(systems, sysText(r))
	}
	want := []string{"Report: ", "Report: draft one", "Report: draft one", "Report: draft two"}
	if diff := cmp.Diff(want, systems); diff != "" {
		t.Errorf("instructions (-want +got):\n%s", diff)
	}
	got := responses(h.session("s1").Events)
	if diff := cmp.Diff(map[string]any{"version": int64(2), "read_back": "draft two"}, got["c2"]); diff != "" {
		t.Errorf("second save result (-want +got):\n%s", diff)
	}
}
