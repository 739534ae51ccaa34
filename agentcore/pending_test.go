package agentcore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// callEv is an event of invocation inv by author that calls each of ids
// (the function named after the id's prefix before "#", or the id), the
// ones in lr long-running.
func callEv(inv, author string, ids []string, lr ...string) *sessions.Event {
	ev := &sessions.Event{InvocationID: inv, Author: author, Content: &genai.Content{Role: genai.RoleModel}, LongRunningToolIDs: lr}
	for _, id := range ids {
		name, _, _ := strings.Cut(id, "#")
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name}})
	}
	return ev
}

// userEv is the user's message that starts invocation inv.
func userEv(inv string) *sessions.Event {
	return &sessions.Event{InvocationID: inv, Author: "user", Content: userText("hi")}
}

// respEv is an event of invocation inv by author that answers each of ids.
func respEv(inv, author string, ids ...string) *sessions.Event {
	ev := &sessions.Event{InvocationID: inv, Author: author, Content: &genai.Content{Role: genai.RoleUser}}
	for _, id := range ids {
		name, _, _ := strings.Cut(id, "#")
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{}}})
	}
	return ev
}

// openLines renders open calls as "session invocation author id [lr] [via id]".
func openLines(calls []agentcore.OpenCall) []string {
	out := []string{}
	for _, c := range calls {
		line := c.SessionID + " " + c.Event.InvocationID + " " + c.Event.Author + " " + c.Call.ID
		if c.LongRunning {
			line += " lr"
		}
		if c.Via != nil {
			line += " via " + c.Via.Call.ID
			if root := c.Root(); root != c.Via {
				line += " root " + root.Call.ID
			}
		}
		out = append(out, line)
	}
	return out
}

func TestOpenCallsIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		events  []*sessions.Event
		inv     string
		want    []string
		wantErr error
	}{
		{"answered by the tool", []*sessions.Event{userEv("e-1"), callEv("e-1", "a", []string{"echo"}), respEv("e-1", "a", "echo")}, "", []string{}, nil},
		{"a call still running", []*sessions.Event{userEv("e-1"), callEv("e-1", "a", []string{"echo"})}, "e-1",
			[]string{"s e-1 a echo"}, nil},
		{"long-running: the tool's interim reply does not answer", []*sessions.Event{
			userEv("e-1"), callEv("e-1", "a", []string{"ask"}, "ask"), respEv("e-1", "a", "ask")}, "",
			[]string{"s e-1 a ask lr"}, nil},
		{"long-running: the user's reply answers", []*sessions.Event{
			userEv("e-1"), callEv("e-1", "a", []string{"ask"}, "ask"), respEv("e-1", "a", "ask"), respEv("e-1", "user", "ask")}, "",
			[]string{}, nil},
		{"in the order made, some answered", []*sessions.Event{
			userEv("e-1"), callEv("e-1", "a", []string{"ask#1", "echo#1", "ask#2"}, "ask#1", "ask#2"), respEv("e-1", "a", "echo#1", "ask#1", "ask#2"),
			callEv("e-1", "b", []string{"ask#3"}, "ask#3")}, "",
			[]string{"s e-1 a ask#1 lr", "s e-1 a ask#2 lr", "s e-1 b ask#3 lr"}, nil},
		{"the user's own calls are not waited for", []*sessions.Event{callEv("e-1", "user", []string{"echo"})}, "", []string{}, nil},
		{"one invocation of several", []*sessions.Event{
			userEv("e-1"), callEv("e-1", "a", []string{"ask#old"}, "ask#old"),
			userEv("e-2"), callEv("e-2", "a", []string{"ask#new"}, "ask#new")}, "e-2",
			[]string{"s e-2 a ask#new lr"}, nil},
		{"every invocation", []*sessions.Event{
			userEv("e-1"), callEv("e-1", "a", []string{"ask#old"}, "ask#old"),
			userEv("e-2"), callEv("e-2", "a", []string{"ask#new"}, "ask#new")}, "",
			[]string{"s e-1 a ask#old lr", "s e-2 a ask#new lr"}, nil},
		{"an invocation of the session with nothing open", []*sessions.Event{userEv("e-1"), callEv("e-1", "a", []string{"ask"}, "ask")}, "e-2",
			nil, agentcore.ErrUnknownInvocation},
		{"unknown invocation", []*sessions.Event{userEv("e-1")}, "e-9", nil, agentcore.ErrUnknownInvocation},
		{"known invocation, nothing open", []*sessions.Event{userEv("e-1")}, "e-1", []string{}, nil},
		{"empty session", nil, "", []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := agentcore.OpenCallsIn(&sessions.Session{ID: "s", Events: tc.events}, tc.inv)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, openLines(got)); diff != "" {
				t.Errorf("open calls (-want +got):\n%s", diff)
			}
		})
	}
}

// seedSessions stores sessions by id (parents first) for user u1 of app.
func seedSessions(t *testing.T, svc sessions.Service, byID map[string][]*sessions.Event) {
	t.Helper()
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	// Parents (shorter ids) first.
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if len(ids[j]) < len(ids[i]) {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
	ctx := context.Background()
	for _, id := range ids {
		sess, err := svc.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u1", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range byID[id] {
			ev.ID = id + "#" + strconv.Itoa(i)
			if err := svc.AppendEvent(ctx, sess, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// failingGets is a store whose reads of sub-conversations fail.
type failingGets struct{ sessions.Service }

func (f failingGets) Get(ctx context.Context, req sessions.GetRequest) (*sessions.Session, error) {
	if strings.Contains(req.SessionID, "/") {
		return nil, errors.New("store down")
	}
	return f.Service.Get(ctx, req)
}

func TestOpenCallsFollowsSubConversations(t *testing.T) {
	// s1: planner (e-1) called the agent tools outer and helper and a
	// plain tool still running; outer (e-1.sub.outer) called inner, which
	// paused on ask#deep; helper paused on ask#mid, and an older,
	// abandoned invocation of helper (e-0.sub.helper) still has ask#stale
	// open. e-2 is a later, finished turn.
	byID := map[string][]*sessions.Event{
		"s1": {userEv("e-0"), callEv("e-0", "planner", []string{"helper#0"}),
			userEv("e-1"), callEv("e-1", "planner", []string{"outer", "helper", "slow"}),
			userEv("e-2"), callEv("e-2", "planner", []string{"echo"}), respEv("e-2", "planner", "echo")},
		"s1/outer": {userEv("e-1.sub.outer"), callEv("e-1.sub.outer", "outer", []string{"inner"})},
		"s1/outer/inner": {userEv("e-1.sub.outer.sub.inner"), callEv("e-1.sub.outer.sub.inner", "inner", []string{"ask#deep"}, "ask#deep"),
			respEv("e-1.sub.outer.sub.inner", "inner", "ask#deep")},
		"s1/helper": {userEv("e-0.sub.helper"), callEv("e-0.sub.helper", "helper", []string{"ask#stale"}, "ask#stale"),
			userEv("e-1.sub.helper"), callEv("e-1.sub.helper", "helper", []string{"ask#mid"}, "ask#mid")},
	}
	svc := sessions.NewMemoryService(sessions.MemoryConfig{})
	seedSessions(t, svc, byID)
	ctx := context.Background()
	s1, err := svc.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	e1 := []string{
		"s1 e-1 planner outer",
		"s1/outer e-1.sub.outer outer inner via outer",
		"s1/outer/inner e-1.sub.outer.sub.inner inner ask#deep lr via inner root outer",
		"s1 e-1 planner helper",
		"s1/helper e-1.sub.helper helper ask#mid lr via helper",
		"s1 e-1 planner slow",
	}
	for _, tc := range []struct {
		name    string
		svc     sessions.Service
		inv     string
		want    []string
		wantErr string
	}{
		{"one invocation, through two levels", svc, "e-1", e1, ""},
		{"every invocation: each call finds its own sub-invocation", svc, "", append([]string{
			"s1 e-0 planner helper#0",
			"s1/helper e-0.sub.helper helper ask#stale lr via helper#0",
		}, e1...), ""},
		{"a finished invocation", svc, "e-2", []string{}, ""},
		{"the store's error", failingGets{svc}, "e-1", nil, "store down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := agentcore.OpenCalls(ctx, tc.svc, s1, tc.inv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, openLines(got)); diff != "" {
				t.Errorf("open calls (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := agentcore.OpenCalls(ctx, svc, s1, "e-1.sub.outer"); !errors.Is(err, agentcore.ErrUnknownInvocation) {
		t.Errorf("a sub-invocation asked of the parent session: err = %v, want ErrUnknownInvocation", err)
	}
}

// A pause inside an agent called as a tool, made by a real run: the
// paused call is found through the parent session's agent-tool call, in
// the sub-invocation the runtime named, and a resume closes both.
func TestOpenCallsThroughAgentTools(t *testing.T) {
	m := perAgent(map[string][]*model.Response{
		"planner": {callResp("p1", "picker", map[string]any{"request": "pick a colour"}), textResp("Planner: done")},
		"picker":  {callResp("g1", agentcore.GetUserChoiceToolName, map[string]any{"options": []any{"red", "blue"}}), textResp("picked it")},
	})
	picker := mustLlm(t, agentcore.LlmConfig{Name: "picker", Model: m, Tools: []agentcore.Tool{agentcore.GetUserChoice()}})
	planner := mustLlm(t, agentcore.LlmConfig{Name: "planner", Model: m, Tools: []agentcore.Tool{agentTool(t, picker)}})
	h := newHarness(t, planner)
	ctx := context.Background()
	inv := h.mustRun("s1", userText("plan my room"), agentcore.RunConfig{})[0].InvocationID

	open, err := agentcore.OpenCalls(ctx, h.svc, h.session("s1"), inv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"s1 " + inv + " planner p1",
		"s1/picker " + inv + ".sub.picker picker g1 lr via p1",
	}
	if diff := cmp.Diff(want, openLines(open)); diff != "" {
		t.Fatalf("open calls (-want +got):\n%s", diff)
	}
	if root, chain, ok := agentcore.ParseInvocationID(open[1].Event.InvocationID); !ok || root != inv || !cmp.Equal(chain, []string{"picker"}) {
		t.Errorf("the runtime's sub-invocation %q parses as %q, %v, %v", open[1].Event.InvocationID, root, chain, ok)
	}
	own, err := agentcore.OpenCallsIn(h.session("s1"), inv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:1], openLines(own)); diff != "" {
		t.Errorf("the session's own open calls (-want +got):\n%s", diff)
	}

	h.mustRun("s1", funcResponse("g1", agentcore.GetUserChoiceToolName, map[string]any{"choice": "red"}), agentcore.RunConfig{})
	if open, err = agentcore.OpenCalls(ctx, h.svc, h.session("s1"), inv); err != nil || len(open) != 0 {
		t.Errorf("after the answer: open calls %v, err %v", openLines(open), err)
	}
}
