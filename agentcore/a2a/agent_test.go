package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/sessions"
)

// fakeServer is a v0.3 A2A server whose answers a test scripts. Its card
// is only at the origin's old name (/.well-known/agent.json), naming the
// JSON-RPC URL /rpc.
type fakeServer struct {
	t         *testing.T
	srv       *httptest.Server
	streaming bool
	noCard    bool
	// answer returns the result of one call, or writes the response itself
	// (returning nil).
	answer func(w http.ResponseWriter, method string, params map[string]any) any

	mu        sync.Mutex
	calls     []call
	cardFetch int
}

type call struct {
	method string
	params map[string]any
	auth   string
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, method string, params map[string]any) any) *fakeServer {
	f := &fakeServer{t: t, answer: answer}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/.well-known/agent.json" && !f.noCard:
		f.mu.Lock()
		f.cardFetch++
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "fake", "description": "d", "url": f.srv.URL + "/rpc", "version": "1",
			"protocolVersion": "0.3.0", "capabilities": map[string]any{"streaming": f.streaming}, "defaultInputModes": []string{"text/plain"},
			"defaultOutputModes": []string{"text/plain"}, "skills": []any{}})
	case r.Method == http.MethodPost && (r.URL.Path == "/rpc" || (f.noCard && r.URL.Path == "/agent")):
		var req struct {
			ID     json.RawMessage
			Method string
			Params map[string]any
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			f.t.Errorf("fake: bad request: %v", err)
		}
		f.mu.Lock()
		f.calls = append(f.calls, call{method: req.Method, params: req.Params, auth: r.Header.Get("Authorization")})
		f.mu.Unlock()
		res := f.answer(w, req.Method, req.Params)
		if res == nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if e, ok := res.(*a2a.RPCError); ok {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": e})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeServer) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.method)
	}
	return out
}

func (f *fakeServer) lastSend() call {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if strings.HasPrefix(f.calls[i].method, "message/") {
			return f.calls[i]
		}
	}
	f.t.Fatal("no message was sent")
	return call{}
}

func task(id, state, text string) map[string]any {
	t := map[string]any{"kind": "task", "id": id, "contextId": "ctx-" + id, "status": map[string]any{"state": state}}
	if text != "" {
		t["artifacts"] = []any{map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": text}}}}
	}
	return t
}

func statusMsg(t map[string]any, text string) map[string]any {
	t["status"].(map[string]any)["message"] = map[string]any{"kind": "message", "messageId": "s", "role": "agent",
		"parts": []any{map[string]any{"kind": "text", "text": text}}}
	return t
}

func sentText(c call) string {
	msg, _ := c.params["message"].(map[string]any)
	var b strings.Builder
	parts, _ := msg["parts"].([]any)
	for _, p := range parts {
		if s, ok := p.(map[string]any)["text"].(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// harness runs the remote agent as the root of a runner.
type harness struct {
	t      *testing.T
	runner *agentcore.Runner
	store  *sessions.MemoryService
}

func newHarness(t *testing.T, ep a2a.Endpoint, client *a2a.Client, resolver a2a.Resolver) *harness {
	t.Helper()
	if client == nil {
		client = a2a.NewClient(a2a.ClientConfig{})
	}
	ag, err := a2a.NewAgent(a2a.AgentConfig{Name: "remote", Description: "A remote agent.", Endpoint: ep, Client: client, Resolver: resolver})
	if err != nil {
		t.Fatal(err)
	}
	store := sessions.NewMemoryService(sessions.MemoryConfig{})
	r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: ag, Sessions: store, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, runner: r, store: store}
}

func (h *harness) run(ctx context.Context, msg *genai.Content, streaming bool) ([]*sessions.Event, error) {
	var out []*sessions.Event
	for ev, err := range h.runner.Run(ctx, agentcore.RunRequest{UserID: "u", SessionID: "s", NewMessage: msg, Config: agentcore.RunConfig{Streaming: streaming}}).Events() {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func (h *harness) mustRun(msg *genai.Content, streaming bool) []*sessions.Event {
	h.t.Helper()
	evs, err := h.run(context.Background(), msg, streaming)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	if len(evs) == 0 {
		h.t.Fatal("no events")
	}
	return evs
}

func text(s string) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: s}}}
}

func TestPollsUntilDoneAndKeepsTheContext(t *testing.T) {
	var mu sync.Mutex
	polls := map[string]int{}
	n := 0
	f := newFake(t, func(_ http.ResponseWriter, method string, params map[string]any) any {
		mu.Lock()
		defer mu.Unlock()
		switch method {
		case "message/send":
			if cfg, _ := params["configuration"].(map[string]any); cfg["blocking"] != false {
				t.Errorf("polling sends must not block: %v", params)
			}
			n++
			return task(fmt.Sprint("t", n), "submitted", "")
		case "tasks/get":
			id := params["id"].(string)
			polls[id]++
			if polls[id] < 2 {
				return task(id, "working", "")
			}
			return task(id, "completed", "done: "+id)
		}
		return &a2a.RPCError{Code: a2a.CodeMethodNotFound, Message: method}
	})
	h := newHarness(t, a2a.Endpoint{URL: f.srv.URL + "/agent", PollInterval: time.Millisecond}, nil, nil)
	evs := h.mustRun(text("first"), false)
	last := evs[len(evs)-1]
	if last.Text() != "done: t1" || last.CustomMetadata[a2a.MetaTaskID] != "t1" || last.CustomMetadata[a2a.MetaContextID] != "ctx-t1" {
		t.Fatalf("final event %q %v", last.Text(), last.CustomMetadata)
	}
	if got, want := f.methods(), []string{"message/send", "tasks/get", "tasks/get"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	h.mustRun(text("second"), false)
	msg := f.lastSend().params["message"].(map[string]any)
	if msg["contextId"] != "ctx-t1" || sentText(f.lastSend()) != "second" {
		t.Errorf("second message %v: want the first task's context and only the new text", msg)
	}
	if f.cardFetch != 1 {
		t.Errorf("card fetched %d times, want once (cached)", f.cardFetch)
	}
}

func TestStreamsPartialsThenPollsWhenTheStreamEndsEarly(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, method string, params map[string]any) any {
		switch method {
		case "message/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, ev := range []any{task("t1", "working", ""),
				map[string]any{"kind": "artifact-update", "taskId": "t1", "contextId": "ctx-t1", "artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "Hel"}}}},
				map[string]any{"kind": "artifact-update", "taskId": "t1", "contextId": "ctx-t1", "append": true, "artifact": map[string]any{"artifactId": "a", "parts": []any{map[string]any{"kind": "text", "text": "lo"}}}},
			} {
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "result": ev})
				// A multi-line data field is one event.
				fmt.Fprintf(w, ": keepalive\n\ndata: %s\ndata: \n\n", b)
			}
			return nil
		case "tasks/get":
			return task("t1", "completed", "Hello")
		}
		return &a2a.RPCError{Code: a2a.CodeMethodNotFound, Message: method}
	})
	f.streaming = true
	h := newHarness(t, a2a.Endpoint{URL: f.srv.URL, PollInterval: time.Millisecond}, nil, nil)
	evs := h.mustRun(text("hi"), true)
	var partials []string
	for _, ev := range evs {
		if ev.Partial {
			partials = append(partials, ev.Text())
		}
	}
	if !slices.Equal(partials, []string{"Hel", "lo"}) || evs[len(evs)-1].Text() != "Hello" {
		t.Fatalf("partials %q, final %q", partials, evs[len(evs)-1].Text())
	}
	if got, want := f.methods(), []string{"message/stream", "tasks/get"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestInputRequiredPausesAndTheAnswerContinuesTheTask(t *testing.T) {
	f := newFake(t, func(_ http.ResponseWriter, method string, params map[string]any) any {
		msg, _ := params["message"].(map[string]any)
		if msg["taskId"] == "t1" {
			return task("t1", "completed", "booked for "+sentText(call{params: params}))
		}
		return statusMsg(task("t1", "input-required", ""), "Which date?")
	})
	h := newHarness(t, a2a.Endpoint{URL: f.srv.URL}, nil, nil)
	evs := h.mustRun(text("book it"), false)
	pause := evs[len(evs)-1]
	calls := pause.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != a2a.InputRequiredToolName || !slices.Equal(pause.LongRunningToolIDs, []string{calls[0].ID}) {
		t.Fatalf("want a pause on %s, got %+v", a2a.InputRequiredToolName, pause)
	}
	if calls[0].Args["message"] != "Which date?" || calls[0].Args["task_id"] != "t1" || pause.Text() != "Which date?" {
		t.Errorf("pause %v / %q", calls[0].Args, pause.Text())
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: calls[0].ID, Name: calls[0].Name,
		Response: map[string]any{"result": "tomorrow"}}}}}
	evs = h.mustRun(answer, false)
	if got := evs[len(evs)-1].Text(); got != "booked for tomorrow" {
		t.Errorf("after the answer: %q", got)
	}
	msg := f.lastSend().params["message"].(map[string]any)
	if msg["taskId"] != "t1" || msg["contextId"] != "ctx-t1" {
		t.Errorf("the answer went as %v, want task t1 in ctx-t1", msg)
	}
}

func TestFailuresBecomeErrorEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter) any
		code   string
		msg    string
	}{
		{"failed", func(http.ResponseWriter) any { return statusMsg(task("t", "failed", ""), "out of coffee") }, a2a.CodeFailed, "remote agent remote: task failed: out of coffee"},
		{"rejected", func(http.ResponseWriter) any { return task("t", "rejected", "") }, a2a.CodeFailed, "task rejected: no reason given"},
		{"canceled", func(http.ResponseWriter) any { return task("t", "canceled", "") }, a2a.CodeCanceled, "task canceled"},
		{"rpc error", func(http.ResponseWriter) any { return &a2a.RPCError{Code: -32602, Message: "bad"} }, a2a.CodeError, "answered with error -32602: bad"},
		{"401", func(w http.ResponseWriter) any { w.WriteHeader(401); return nil }, a2a.CodeError, "refused our credentials (HTTP 401)"},
		{"not json-rpc", func(w http.ResponseWriter) any { fmt.Fprint(w, "<html>"); return nil }, a2a.CodeError, "answered outside the A2A protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ string, _ map[string]any) any { return tc.answer(w) })
			h := newHarness(t, a2a.Endpoint{URL: f.srv.URL, Token: "s3cret"}, nil, nil)
			evs := h.mustRun(text("go"), false)
			last := evs[len(evs)-1]
			if last.ErrorCode != tc.code || !strings.Contains(last.ErrorMessage, tc.msg) {
				t.Errorf("got %s %q, want %s containing %q", last.ErrorCode, last.ErrorMessage, tc.code, tc.msg)
			}
			if got := f.lastSend().auth; got != "Bearer s3cret" {
				t.Errorf("Authorization %q: the token goes to a loopback http endpoint", got)
			}
		})
	}
}

// A task that outlives the endpoint's timeout is canceled on the remote;
// cancelling our run cancels it too.
func TestTimeoutAndCancelCancelTheRemoteTask(t *testing.T) {
	newSlow := func() *fakeServer {
		return newFake(t, func(_ http.ResponseWriter, method string, _ map[string]any) any {
			if method == "tasks/cancel" {
				return task("t", "canceled", "")
			}
			return task("t", "working", "")
		})
	}
	// The timeout leaves time for the task to be created first, on a
	// loaded machine too: there is no task to cancel before.
	f := newSlow()
	h := newHarness(t, a2a.Endpoint{URL: f.srv.URL, Timeout: time.Second, PollInterval: 10 * time.Millisecond}, nil, nil)
	evs := h.mustRun(text("go"), false)
	if last := evs[len(evs)-1]; last.ErrorCode != a2a.CodeTimeout {
		t.Errorf("got %s %q, want %s", last.ErrorCode, last.ErrorMessage, a2a.CodeTimeout)
	}
	if !slices.Contains(f.methods(), "tasks/cancel") {
		t.Errorf("calls %v: want tasks/cancel", f.methods())
	}

	f = newSlow()
	h = newHarness(t, a2a.Endpoint{URL: f.srv.URL, PollInterval: time.Millisecond}, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for !slices.Contains(f.methods(), "tasks/get") {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := h.run(ctx, text("go"), false); err == nil {
		t.Error("a canceled run ended without error")
	}
	if !slices.Contains(f.methods(), "tasks/cancel") {
		t.Errorf("calls %v: want tasks/cancel", f.methods())
	}
}

// The endpoint is looked up when the agent is called: a resolver change
// applies to the next call, without rebuilding the agent.
func TestResolvedWhenCalled(t *testing.T) {
	answer := func(name string) func(http.ResponseWriter, string, map[string]any) any {
		return func(http.ResponseWriter, string, map[string]any) any { return task("t", "completed", "from "+name) }
	}
	a, b := newFake(t, answer("a")), newFake(t, answer("b"))
	dir := a2a.NewDirectory(map[string]a2a.Endpoint{"remote": {URL: a.srv.URL}})
	h := newHarness(t, a2a.Endpoint{URL: "http://127.0.0.1:1/never"}, nil, dir)
	if got := h.mustRun(text("one"), false); got[len(got)-1].Text() != "from a" {
		t.Fatalf("first call: %q", got[len(got)-1].Text())
	}
	dir.Set(map[string]a2a.Endpoint{"remote": {URL: b.srv.URL}})
	evs := h.mustRun(text("two"), false)
	if got := evs[len(evs)-1].Text(); got != "from b" {
		t.Fatalf("after the switch: %q", got)
	}
	// The context of the first server is not sent to the second.
	if msg := b.lastSend().params["message"].(map[string]any); msg["contextId"] != nil {
		t.Errorf("the new endpoint got the old context id: %v", msg)
	}
}

// A server without a card is called at the endpoint itself, in v0.3.
func TestNoCard(t *testing.T) {
	f := newFake(t, func(http.ResponseWriter, string, map[string]any) any {
		return map[string]any{"kind": "message", "messageId": "m", "role": "agent", "contextId": "c", "parts": []any{map[string]any{"kind": "text", "text": "direct"}}}
	})
	f.noCard = true
	h := newHarness(t, a2a.Endpoint{URL: f.srv.URL + "/agent"}, nil, nil)
	evs := h.mustRun(text("hi"), false)
	if last := evs[len(evs)-1]; last.Text() != "direct" || last.CustomMetadata[a2a.MetaContextID] != "c" {
		t.Errorf("final %q %v", last.Text(), last.CustomMetadata)
	}
}

func TestValidateEndpoint(t *testing.T) {
	for _, tc := range []struct {
		ep   a2a.Endpoint
		want string
	}{
		{a2a.Endpoint{URL: "https://x.example/a", Token: "t"}, ""},
		{a2a.Endpoint{URL: "http://127.0.0.1:9/a", Token: "t"}, ""},
		{a2a.Endpoint{URL: "http://x.example/a", Token: "t"}, "a bearer token may only be sent over https"},
		{a2a.Endpoint{URL: "x.example"}, "not an absolute http(s) URL"},
		{a2a.Endpoint{URL: "https://x", Timeout: -1}, "timeout must not be negative"},
	} {
		err := a2a.ValidateEndpoint(tc.ep)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.ep, err, tc.want)
		}
	}
}

// Through spec, every problem of an endpoint is one line naming the key.
func TestRemotesBuildErrorsNameTheKey(t *testing.T) {
	set := spec.Set{
		Providers: []spec.Provider{{Name: "p", Type: "scripted", Rules: []scripted.Rule{{Reply: "ok"}}}},
		Agents: []spec.Agent{{Name: "front", Model: "p/m", SubAgents: []string{"far"}},
			{Name: "far", Endpoint: &spec.Endpoint{A2A: "http://far.example/a2a/x", BearerToken: "t"}}},
		Models: []spec.VirtualModel{{ID: "m", Agent: "front"}},
	}
	r := a2a.NewRemotes(a2a.NewClient(a2a.ClientConfig{}), nil)
	_, err := spec.Build(set, spec.BuildOptions{Remote: r.Build})
	if err == nil || err.Error() != `agents[1].endpoint: a bearer token may only be sent over https (or plain http to the loopback interface), not to "http://far.example/a2a/x"` {
		t.Errorf("got %v", err)
	}
}
