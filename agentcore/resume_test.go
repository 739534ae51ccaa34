package agentcore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

var openURL = &genai.FunctionDeclaration{Name: "open_url", Description: "Opens a page in the user's browser.",
	ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}}}

// resumeRun runs a turn carrying one function response (on session s1,
// with the client tools) and returns its events and the run.
func (h *harness) resume(callID, name string, resp map[string]any, clientTools ...*genai.FunctionDeclaration) ([]*sessions.Event, *agentcore.Run, error) {
	h.t.Helper()
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: funcResponse(callID, name, resp),
		ClientTools: clientTools})
	evs, err := collect(run)
	return evs, run, err
}

// A long-running call pauses the invocation; the function response sent in
// a later run resumes the same invocation where it stopped.
func TestPauseAndResume(t *testing.T) {
	choice := callResp("c1", agentcore.GetUserChoiceToolName, map[string]any{"prompt": "Which plan?", "options": []any{"basic", "pro"}})
	openCall := callResp("c1", "open_url", map[string]any{"url": "https://example.com"})
	for _, tc := range []struct {
		name         string
		call         *model.Response
		tools        []agentcore.Tool
		clientTools  []*genai.FunctionDeclaration
		wantPauseEvs []string                  // authors of the first run's events
		wantPauseRes map[string]map[string]any // responses yielded by the first run
		answer       map[string]any
	}{
		{name: "get_user_choice", call: choice, tools: []agentcore.Tool{agentcore.GetUserChoice()},
			wantPauseEvs: []string{"helper", "helper"},
			wantPauseRes: map[string]map[string]any{"c1": {"status": "awaiting_user", "prompt": "Which plan?", "options": []any{"basic", "pro"}}},
			answer:       map[string]any{"choice": "pro"}},
		{name: "client tool in the agent's config", call: openCall, tools: []agentcore.Tool{&agentcore.ClientTool{Decl: openURL}},
			wantPauseEvs: []string{"helper"}, wantPauseRes: map[string]map[string]any{}, answer: map[string]any{"opened": true}},
		{name: "client tool of the request", call: openCall, clientTools: []*genai.FunctionDeclaration{openURL},
			wantPauseEvs: []string{"helper"}, wantPauseRes: map[string]map[string]any{}, answer: map[string]any{"opened": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(tc.call, textResp("Thanks, done."))
			a := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: tc.tools})
			h := newHarness(t, a)
			run1 := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("sign me up"),
				ClientTools: tc.clientTools})
			paused, err := collect(run1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPauseEvs, authors(paused)); diff != "" {
				t.Fatalf("paused run events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"c1"}, paused[0].LongRunningToolIDs); diff != "" {
				t.Errorf("longRunningToolIds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPauseRes, responses(paused)); diff != "" {
				t.Errorf("paused run responses (-want +got):\n%s", diff)
			}
			if d := decl(m.lastRequest(t), tc.call.Content.Parts[0].FunctionCall.Name); d == nil {
				t.Errorf("the paused tool was not offered: %v", declNames(m.lastRequest(t)))
			}
			if n := len(m.requests()); n != 1 {
				t.Fatalf("model called %d times before the answer", n)
			}

			resumed, run2, err := h.resume("c1", tc.call.Content.Parts[0].FunctionCall.Name, tc.answer, tc.clientTools...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"helper: Thanks, done."}, texts(resumed)); diff != "" {
				t.Errorf("resumed texts (-want +got):\n%s", diff)
			}
			for _, e := range resumed {
				if e.InvocationID != paused[0].InvocationID {
					t.Errorf("resumed event in invocation %s, want %s", e.InvocationID, paused[0].InvocationID)
				}
			}
			if run2.InvocationID() != run1.InvocationID() || run2.StartAgent() != "helper" {
				t.Errorf("run 2 invocation %q agent %q; run 1 invocation %q", run2.InvocationID(), run2.StartAgent(), run1.InvocationID())
			}
			if !run1.NewInvocation() || run2.NewInvocation() {
				t.Errorf("NewInvocation: run 1 %v, the resuming run 2 %v; want true, false", run1.NewInvocation(), run2.NewInvocation())
			}
			// The model saw the user's answer right after its call.
			lines := render(m.lastRequest(t).Contents)
			if diff := cmp.Diff("user: resp "+tc.call.Content.Parts[0].FunctionCall.Name+" "+jsonString(tc.answer), lines[len(lines)-1]); diff != "" {
				t.Errorf("last content (-want +got):\n%s", diff)
			}
			stored := h.session("s1").Events
			if got := stored[len(stored)-2]; got.Author != "user" || got.InvocationID != run1.InvocationID() {
				t.Errorf("stored answer: author %s invocation %s", got.Author, got.InvocationID)
			}
		})
	}
}

// The model event of a pause carries longRunningToolIds on the wire.
func TestPauseEventWireFormat(t *testing.T) {
	m := replies(callResp("c1", agentcore.GetUserChoiceToolName, map[string]any{"options": []any{"a"}}))
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{agentcore.GetUserChoice()}}))
	evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{})
	var wire struct {
		LongRunningToolIDs []string `json:"longRunningToolIds"`
	}
	b, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1"}, wire.LongRunningToolIDs); diff != "" {
		t.Errorf("longRunningToolIds (-want +got):\n%s", diff)
	}
}

// A pause inside an agent called as a tool pauses the caller too: the
// child's pausing event reaches the client, and the answer, sent to the
// parent session, continues the child and then the parent.
func TestPauseInsideAgentTool(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tool         agentcore.Tool
		call         *model.Response
		childStored  []string // the child's session after the pause
		childResumed []string // and after the answer
	}{
		{name: "get_user_choice", tool: agentcore.GetUserChoice(),
			call:         callResp("g1", agentcore.GetUserChoiceToolName, map[string]any{"options": []any{"red", "blue"}}),
			childStored:  []string{"user", "picker", "picker"},
			childResumed: []string{"user", "picker", "picker", "user", "picker"}},
		{name: "client tool", tool: &agentcore.ClientTool{Decl: openURL},
			call:         callResp("g1", "open_url", map[string]any{"url": "https://example.com"}),
			childStored:  []string{"user", "picker"},
			childResumed: []string{"user", "picker", "user", "picker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{
				"planner": {callResp("p1", "picker", map[string]any{"request": "pick a colour"}), textResp("Planner: done")},
				"picker":  {tc.call, textResp("picked it")},
			})
			picker := mustLlm(t, agentcore.LlmConfig{Name: "picker", Model: m, Tools: []agentcore.Tool{tc.tool}})
			planner := mustLlm(t, agentcore.LlmConfig{Name: "planner", Model: m, Tools: []agentcore.Tool{agentTool(t, picker)}})
			h := newHarness(t, planner)
			paused := h.mustRun("s1", userText("plan my room"), agentcore.RunConfig{})
			invID := paused[0].InvocationID

			if diff := cmp.Diff([]string{"planner", "picker"}, authors(paused)); diff != "" {
				t.Fatalf("paused events (-want +got):\n%s", diff)
			}
			fwd := paused[1]
			if fwd.InvocationID != invID+".sub.picker" || len(fwd.LongRunningToolIDs) != 1 || fwd.LongRunningToolIDs[0] != "g1" {
				t.Errorf("forwarded event: invocation %s longRunningToolIds %v", fwd.InvocationID, fwd.LongRunningToolIDs)
			}
			if diff := cmp.Diff([]string{"user", "planner"}, authors(h.session("s1").Events)); diff != "" {
				t.Errorf("parent session while paused (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.childStored, authors(h.session("s1/picker").Events)); diff != "" {
				t.Errorf("child session while paused (-want +got):\n%s", diff)
			}

			resumed, _, err := h.resume("g1", tc.call.Content.Parts[0].FunctionCall.Name, map[string]any{"choice": "blue"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"planner", "planner"}, authors(resumed)); diff != "" {
				t.Fatalf("resumed events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]map[string]any{"p1": {"text": "picked it"}}, responses(resumed)); diff != "" {
				t.Errorf("agent tool result (-want +got):\n%s", diff)
			}
			for _, e := range resumed {
				if e.InvocationID != invID {
					t.Errorf("resumed parent event in invocation %s, want %s", e.InvocationID, invID)
				}
			}
			child := h.session("s1/picker").Events
			if diff := cmp.Diff(tc.childResumed, authors(child)); diff != "" {
				t.Errorf("child session after the answer (-want +got):\n%s", diff)
			}
			if got := last(t, child).InvocationID; got != invID+".sub.picker" {
				t.Errorf("child resumed in invocation %s", got)
			}
			lines := render(m.requestsBy("picker")[1].Contents)
			if diff := cmp.Diff("user: resp "+tc.call.Content.Parts[0].FunctionCall.Name+` {"choice":"blue"}`, lines[len(lines)-1]); diff != "" {
				t.Errorf("child's last content (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"user", "planner", "planner", "planner"}, authors(h.session("s1").Events)); diff != "" {
				t.Errorf("parent session after the answer (-want +got):\n%s", diff)
			}
		})
	}
}

// Two levels down: top calls middle calls bottom, which pauses.
func TestPauseTwoAgentToolsDeep(t *testing.T) {
	m := perAgent(map[string][]*model.Response{
		"top":    {callResp("t1", "middle", map[string]any{"request": "go"}), textResp("top done")},
		"middle": {callResp("m1", "bottom", map[string]any{"request": "go"}), textResp("middle done")},
		"bottom": {callResp("b1", "open_url", map[string]any{"url": "u"}), textResp("bottom done")},
	})
	bottom := mustLlm(t, agentcore.LlmConfig{Name: "bottom", Model: m, Tools: []agentcore.Tool{&agentcore.ClientTool{Decl: openURL}}})
	middle := mustLlm(t, agentcore.LlmConfig{Name: "middle", Model: m, Tools: []agentcore.Tool{agentTool(t, bottom)}})
	top := mustLlm(t, agentcore.LlmConfig{Name: "top", Model: m, Tools: []agentcore.Tool{agentTool(t, middle)}})
	h := newHarness(t, top)
	paused := h.mustRun("s1", userText("start"), agentcore.RunConfig{})
	if diff := cmp.Diff([]string{"top", "bottom"}, authors(paused)); diff != "" {
		t.Fatalf("paused events (-want +got):\n%s", diff)
	}
	resumed, _, err := h.resume("b1", "open_url", map[string]any{"ok": true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"top: top done"}, texts(resumed)); diff != "" {
		t.Errorf("resumed texts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]map[string]any{"t1": {"text": "middle done"}}, responses(resumed)); diff != "" {
		t.Errorf("top's agent tool result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user: go", "bottom: bottom done"}, texts(h.session("s1/middle/bottom").Events)); diff != "" {
		t.Errorf("bottom's texts (-want +got):\n%s", diff)
	}
}

// A function response must answer a call that is still open: an unknown
// id, or a call already answered, is an *UnknownCallError and stores nothing.
func TestResumeUnknownCall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answered bool // answer c1 once before
		id       string
	}{
		{"unknown id", false, "c404"},
		{"already answered", true, "c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(callResp("c1", agentcore.GetUserChoiceToolName, map[string]any{"options": []any{"a"}}), textResp("ok"))
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{agentcore.GetUserChoice()}}))
			h.mustRun("s1", userText("hi"), agentcore.RunConfig{})
			if tc.answered {
				if _, _, err := h.resume("c1", agentcore.GetUserChoiceToolName, map[string]any{"choice": "a"}); err != nil {
					t.Fatal(err)
				}
			}
			before, calls := len(h.session("s1").Events), len(m.requests())
			_, _, err := h.resume(tc.id, agentcore.GetUserChoiceToolName, map[string]any{"choice": "a"})
			var unknown *agentcore.UnknownCallError
			if !errors.As(err, &unknown) || unknown.ID != tc.id {
				t.Fatalf("err = %v, want *UnknownCallError for %s", err, tc.id)
			}
			if after := len(h.session("s1").Events); after != before {
				t.Errorf("a rejected answer stored %d events", after-before)
			}
			if n := len(m.requests()); n != calls {
				t.Errorf("model called %d more times", n-calls)
			}
		})
	}
}
