package agentcore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/sessions"
)

func transferSchema(enum ...string) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"agent_name": map[string]any{"type": "string", "description": "The name of the agent to transfer to.", "enum": enum},
		},
		"required": []string{"agent_name"},
	}
}

// The transfer tool and the sub-agent roster are offered exactly when the
// agent has sub-agents and transfer is enabled; the enum lists the
// sub-agents first, then the rest of the tree.
func TestRequestOffersTransfer(t *testing.T) {
	const roster = "Route it.\n\nYou can hand the conversation to another agent by calling the transfer_to_agent function with its name " +
		"when that agent is better suited to answer. Do not answer for it.\n\nAgents you can transfer to:\n" +
		"- greeter: Greets the user warmly.\n- task_executor: Executes user tasks step by step."
	for _, tc := range []struct {
		name       string
		disable    bool
		wantSystem string
		wantSchema map[string]any // nil: no transfer tool
	}{
		{"with sub-agents", false, roster, transferSchema("greeter", "task_executor")},
		{"disable_transfer", true, "Route it.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(textResp("ok"))
			greeter := mustLlm(t, agentcore.LlmConfig{Name: "greeter", Model: m, Description: "Greets the user warmly."})
			exec := mustLlm(t, agentcore.LlmConfig{Name: "task_executor", Model: m, Description: "Executes user tasks step by step."})
			root := mustLlm(t, agentcore.LlmConfig{Name: "coordinator", Model: m, Instruction: "Route it.", DisableTransfer: tc.disable,
				SubAgents: []agentcore.Agent{greeter, exec}})
			newHarness(t, root).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			req := m.lastRequest(t)
			if diff := cmp.Diff(tc.wantSystem, sysText(req)); diff != "" {
				t.Errorf("system instruction (-want +got):\n%s", diff)
			}
			d := decl(req, agentcore.TransferToolName)
			switch {
			case tc.wantSchema == nil && d != nil:
				t.Errorf("transfer tool offered: %+v", d)
			case tc.wantSchema != nil && d == nil:
				t.Fatalf("no transfer tool among %v", declNames(req))
			case d != nil:
				if diff := cmp.Diff(tc.wantSchema, d.ParametersJsonSchema); diff != "" {
					t.Errorf("transfer parameters (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestTransferEnumListsReachableAgents(t *testing.T) {
	m := perAgent(map[string][]*model.Response{"root": {transferResp("t1", "mid")}, "mid": {textResp("mid here")}, "leaf": {textResp("leaf")}})
	leaf := mustLlm(t, agentcore.LlmConfig{Name: "leaf", Model: m})
	mid := mustLlm(t, agentcore.LlmConfig{Name: "mid", Model: m, SubAgents: []agentcore.Agent{leaf}})
	other := mustLlm(t, agentcore.LlmConfig{Name: "other", Model: m})
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: m, SubAgents: []agentcore.Agent{mid, other}})
	newHarness(t, root).mustRun("s1", userText("hi"), agentcore.RunConfig{})
	for agent, want := range map[string][]string{"root": {"mid", "other", "leaf"}, "mid": {"leaf", "root", "other"}} {
		reqs := m.requestsBy(agent)
		if len(reqs) == 0 {
			t.Fatalf("%s never called the model", agent)
		}
		d := decl(reqs[0], agentcore.TransferToolName)
		if d == nil {
			t.Fatalf("%s: no transfer tool", agent)
		}
		if diff := cmp.Diff(transferSchema(want...), d.ParametersJsonSchema); diff != "" {
			t.Errorf("%s transfer parameters (-want +got):\n%s", agent, diff)
		}
	}
	if reqs := m.requestsBy("leaf"); len(reqs) != 0 {
		t.Errorf("leaf was called %d times", len(reqs))
	}
}

func TestOutputSchemaRequest(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}}
	m := replies(textResp(`{"summary":"ok"}`))
	a := mustLlm(t, agentcore.LlmConfig{Name: "extractor", Model: m, OutputSchema: schema,
		GenerateConfig: &genai.GenerateContentConfig{Temperature: genai.Ptr[float32](0.2)}})
	newHarness(t, a).mustRun("s1", userText("hi"), agentcore.RunConfig{})
	cfg := m.lastRequest(t).Config
	if diff := cmp.Diff(schema, cfg.ResponseJsonSchema); diff != "" {
		t.Errorf("ResponseJsonSchema (-want +got):\n%s", diff)
	}
	if cfg.ResponseMIMEType != "application/json" {
		t.Errorf("ResponseMIMEType = %q, want application/json", cfg.ResponseMIMEType)
	}
	if cfg.Temperature == nil || *cfg.Temperature != 0.2 {
		t.Errorf("GenerateConfig not copied: temperature %v", cfg.Temperature)
	}
	if a.Config().GenerateConfig.ResponseMIMEType != "" {
		t.Errorf("the agent's GenerateConfig was mutated")
	}
}

func TestIncludeContents(t *testing.T) {
	for _, tc := range []struct {
		mode agentcore.IncludeContents
		want [][]string // the requests of the second turn
	}{
		{agentcore.IncludeDefault, [][]string{
			{"user: one", "model: first answer", "user: two"},
			{"user: one", "model: first answer", "user: two", `model: call echo {"x":1}`, `user: resp echo {"echo":{"x":1}}`},
		}},
		{agentcore.IncludeNone, [][]string{
			{"user: two"},
			{"user: two", `model: call echo {"x":1}`, `user: resp echo {"echo":{"x":1}}`},
		}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			m := replies(textResp("first answer"), callResp("c1", "echo", map[string]any{"x": 1}), textResp("second answer"))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, IncludeContents: tc.mode, Tools: []agentcore.Tool{echoTool(t, "echo")}})
			h := newHarness(t, a)
			h.mustRun("s1", userText("one"), agentcore.RunConfig{})
			h.mustRun("s1", userText("two"), agentcore.RunConfig{})
			reqs := m.requests()
			var got [][]string
			for _, r := range reqs[1:] {
				got = append(got, render(r.Contents))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("second-turn contents (-want +got):\n%s", diff)
			}
		})
	}
}

// The static instruction is sent byte-identical every turn while the
// templated dynamic part changes at the end of the contents.
func TestStaticInstructionStableAcrossTurns(t *testing.T) {
	m := replies(textResp("noted"))
	a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, StaticInstruction: "You are a cache-friendly helper. {not_templated}",
		Instruction: "Mood: {mood}"})
	h := newHarness(t, a)
	for _, mood := range []string{"calm", "busy", "calm"} {
		if _, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s1", NewMessage: userText("turn"),
			StateDelta: map[string]any{"mood": mood}}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := m.requests()
	first, err := json.Marshal(reqs[0].Config.SystemInstruction)
	if err != nil {
		t.Fatal(err)
	}
	var tails []string
	for i, r := range reqs {
		b, _ := json.Marshal(r.Config.SystemInstruction)
		if string(b) != string(first) {
			t.Errorf("turn %d system instruction %s differs from turn 1's %s", i+1, b, first)
		}
		lines := render(r.Contents)
		tails = append(tails, lines[len(lines)-1])
		// The dynamic part of earlier turns is not left in the history.
		if n := strings.Count(strings.Join(lines, "\n"), "Mood:"); n != 1 {
			t.Errorf("turn %d: %d dynamic parts in contents %q", i+1, n, lines)
		}
	}
	if diff := cmp.Diff([]string{"user: Mood: calm", "user: Mood: busy", "user: Mood: calm"}, tails); diff != "" {
		t.Errorf("dynamic part per turn (-want +got):\n%s", diff)
	}
}

func TestOutputKey(t *testing.T) {
	schema := map[string]any{"type": "object"}
	for _, tc := range []struct {
		name   string
		schema map[string]any
		reply  string
		want   any
	}{
		{"text", nil, "hello there", "hello there"},
		{"JSON text without a schema stays text", nil, `{"a":1}`, `{"a":1}`},
		{"parsed JSON with output_schema", schema, `{"summary":"s","severity":"high"}`, map[string]any{"summary": "s", "severity": "high"}},
		{"unparsable JSON with output_schema stays text", schema, "not json", "not json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(callResp("c1", "echo", nil), textResp(tc.reply))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, OutputKey: "answer", OutputSchema: tc.schema,
				Tools: []agentcore.Tool{echoTool(t, "echo")}})
			h := newHarness(t, a)
			evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{})
			for _, e := range evs[:len(evs)-1] {
				if _, ok := e.Actions.StateDelta["answer"]; ok {
					t.Errorf("non-final event %s carries the output key", e.ID)
				}
			}
			if diff := cmp.Diff(map[string]any{"answer": tc.want}, last(t, evs).Actions.StateDelta); diff != "" {
				t.Errorf("final stateDelta (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, h.session("s1").State["answer"]); diff != "" {
				t.Errorf("session state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaxIterations(t *testing.T) {
	m := replies(callResp("", "echo", nil)) // calls the tool forever
	a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, MaxIterations: 3, OutputKey: "out", Tools: []agentcore.Tool{echoTool(t, "echo")}})
	h := newHarness(t, a)
	evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{})
	if n := len(m.requests()); n != 3 {
		t.Errorf("model called %d times, want 3", n)
	}
	end := last(t, evs)
	if end.ErrorCode != "MAX_ITERATIONS" || !strings.Contains(end.ErrorMessage, "max_iterations (3)") {
		t.Errorf("last event code %q message %q, want MAX_ITERATIONS", end.ErrorCode, end.ErrorMessage)
	}
	if len(evs) != 7 {
		t.Errorf("got %d events (%v), want 3 calls, 3 responses and the error", len(evs), authors(evs))
	}
	stored := h.session("s1").Events
	if got := stored[len(stored)-1].ErrorCode; got != agentcore.CodeMaxIterations {
		t.Errorf("stored last event code %q", got)
	}
}

func TestMaxLLMCalls(t *testing.T) {
	for _, tc := range []struct {
		name           string
		limit          int
		maxIter        int
		withChild      bool
		wantCalls      int
		wantCode       string
		wantChildError bool
	}{
		{name: "top level", limit: 2, wantCalls: 2, wantCode: agentcore.CodeMaxLLMCalls},
		{name: "no limit", limit: -1, maxIter: 5, wantCalls: 5, wantCode: agentcore.CodeMaxIterations},
		{name: "default limit", limit: 0, maxIter: 5, wantCalls: 5, wantCode: agentcore.CodeMaxIterations},
		// parent(1) child(2) parent(3): the fourth call, the child's, is over.
		{name: "shared with an agent tool", limit: 3, withChild: true, wantCalls: 3, wantCode: agentcore.CodeMaxLLMCalls, wantChildError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{
				"parent": {callResp("", "child", map[string]any{"request": "go"})},
				"solo":   {callResp("", "echo", nil)},
				"child":  {textResp("child says hi")},
			})
			var root *agentcore.LlmAgent
			if tc.withChild {
				child := mustLlm(t, agentcore.LlmConfig{Name: "child", Model: m})
				root = mustLlm(t, agentcore.LlmConfig{Name: "parent", Model: m, MaxIterations: tc.maxIter, Tools: []agentcore.Tool{agentTool(t, child)}})
			} else {
				root = mustLlm(t, agentcore.LlmConfig{Name: "solo", Model: m, MaxIterations: tc.maxIter, Tools: []agentcore.Tool{echoTool(t, "echo")}})
			}
			evs := newHarness(t, root).mustRun("s1", userText("hi"), agentcore.RunConfig{MaxLLMCalls: tc.limit})
			if n := len(m.requests()); n != tc.wantCalls {
				t.Errorf("model called %d times, want %d", n, tc.wantCalls)
			}
			if got := last(t, evs).ErrorCode; got != tc.wantCode {
				t.Errorf("last event code %q, want %q", got, tc.wantCode)
			}
			if tc.wantChildError {
				var childErr []string
				for _, r := range responses(evs) {
					if e, ok := r["error"].(string); ok {
						childErr = append(childErr, e)
					}
				}
				if diff := cmp.Diff([]string{"the invocation reached max_llm_calls (3)"}, childErr); diff != "" {
					t.Errorf("agent tool errors (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// A streamed model turn is a series of partial events carrying deltas,
// then exactly one aggregated non-partial event; partial events are never
// stored.
func TestStreamingPartialsAndOneFinal(t *testing.T) {
	m, err := scripted.New("demo", scripted.Config{ChunkSize: 4, Rules: []scripted.Rule{{Reply: "Hello there, friend!"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "whole"}[stream], func(t *testing.T) {
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m}))
			evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{Streaming: stream})
			var deltas []string
			var finals []*sessions.Event
			for _, e := range evs {
				if e.InvocationID != evs[0].InvocationID || e.Author != "helper" {
					t.Errorf("event %s: invocation %s author %s", e.ID, e.InvocationID, e.Author)
				}
				if e.Partial {
					deltas = append(deltas, e.Text())
				} else {
					finals = append(finals, e)
				}
			}
			wantDeltas := []string{"Hell", "o th", "ere,", " fri", "end!"}
			if !stream {
				wantDeltas = nil
			}
			if diff := cmp.Diff(wantDeltas, deltas); diff != "" {
				t.Errorf("partial deltas (-want +got):\n%s", diff)
			}
			if len(finals) != 1 || finals[0].Text() != "Hello there, friend!" || !finals[0].TurnComplete {
				t.Fatalf("final events %v, want one complete turn", texts(finals))
			}
			stored := h.session("s1").Events
			if diff := cmp.Diff([]string{"user", "helper"}, authors(stored)); diff != "" {
				t.Errorf("stored events (-want +got):\n%s", diff)
			}
		})
	}
}

// A partial event has an id of its own, as every event: from
// RunnerConfig.NewID when set, else a random canonical version 4 UUID; and
// the invocation, author and time NewEvent gives.
func TestStreamingPartialIDs(t *testing.T) {
	m, err := scripted.New("demo", scripted.Config{ChunkSize: 4, Rules: []scripted.Rule{{Reply: "Hello there, friend!"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, random := range []bool{true, false} {
		t.Run(map[bool]string{true: "random", false: "NewID"}[random], func(t *testing.T) {
			var opts []harnessOpt
			if random {
				opts = append(opts, func(c *agentcore.RunnerConfig) { c.NewID = nil })
			}
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m}), opts...)
			evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{Streaming: true})
			seen := map[string]bool{}
			partials := 0
			for _, e := range evs {
				if seen[e.ID] {
					t.Errorf("id %q twice", e.ID)
				}
				seen[e.ID] = true
				if !e.Partial {
					continue
				}
				partials++
				if e.InvocationID != evs[0].InvocationID || e.Author != "helper" || e.Timestamp.IsZero() {
					t.Errorf("partial %s: invocation %s author %s time %v", e.ID, e.InvocationID, e.Author, e.Timestamp)
				}
				if random {
					if u, err := uuid.Parse(e.ID); err != nil || u.String() != e.ID || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
						t.Errorf("partial id %q is not a canonical v4 UUID (%v)", e.ID, err)
					}
				} else if !strings.HasPrefix(e.ID, "id-") {
					t.Errorf("partial id %q is not NewID's", e.ID)
				}
			}
			if partials != 5 {
				t.Errorf("%d partial events, want 5", partials)
			}
		})
	}
}
