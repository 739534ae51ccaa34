package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// A sub-conversation (the session of an agent called as a tool) can be
// read but not run, on every surface: each refuses a turn on it in its own
// error format, and the sub-conversation keeps the events it had.
func TestSubConversationsAreReadOnly(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	f.mustRunSSE(runBody("s1", "summarize the news", ""))
	const sub = "s1/summarizer"
	subEvents := func() int {
		var n int
		sess, err := f.store.Get(t.Context(), sessions.GetRequest{AppName: "desk", UserID: "u1", SessionID: sub})
		if err == nil {
			n = len(sess.Events)
		}
		return n
	}
	before := subEvents()
	if before != 2 {
		t.Fatalf("the sub-conversation has %d events, want 2", before)
	}

	for _, tc := range []struct {
		surface, path, body string
		headers             []string
		// check judges the response of the refused turn.
		check func(status int, body map[string]any) bool
	}{
		{"openai", "/v1/chat/completions", `{"model":"desk","user":"u1","messages":[{"role":"user","content":"summarize again"}]}`,
			[]string{"X-Session-Id", sub},
			func(status int, b map[string]any) bool {
				return (status == http.StatusBadRequest || status == http.StatusNotFound) &&
					dig(b, "error", "param") == "X-Session-Id" && strings.Contains(str(dig(b, "error", "message")), "sub-conversation")
			}},
		{"openai stream", "/v1/chat/completions", `{"model":"desk","user":"u1","stream":true,"messages":[{"role":"user","content":"again"}]}`,
			[]string{"X-Session-Id", sub},
			func(status int, b map[string]any) bool {
				return status == http.StatusBadRequest && dig(b, "error", "type") == "invalid_request_error"
			}},
		{"responses", "/v1/responses", `{"model":"desk","user":"u1","input":"again","conversation":"` + sub + `"}`, nil,
			func(status int, b map[string]any) bool {
				return (status == http.StatusBadRequest || status == http.StatusNotFound) &&
					dig(b, "error", "type") == "invalid_request_error" && strings.Contains(str(dig(b, "error", "message")), "sub-conversation")
			}},
		{"responses stream", "/v1/responses", `{"model":"desk","user":"u1","input":"again","stream":true,"conversation":{"id":"` + sub + `"}}`, nil,
			func(status int, b map[string]any) bool {
				return (status == http.StatusBadRequest || status == http.StatusNotFound) && dig(b, "error", "type") == "invalid_request_error"
			}},
		{"native /run", "/run", runBody(sub, "again", ""), nil,
			func(status int, b map[string]any) bool {
				return status == http.StatusBadRequest && strings.Contains(str(b["error"]), "sub-conversation")
			}},
		{"native /run_sse", "/run_sse", runBody(sub, "again", ""), nil,
			func(status int, b map[string]any) bool {
				return status == http.StatusBadRequest && strings.Contains(str(b["error"]), "sub-conversation")
			}},
		{"a2a", "/a2a/desk", `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"metadata":{"user":"u1"},` +
			`"message":{"messageId":"m1","role":"user","contextId":"` + sub + `","parts":[{"kind":"text","text":"again"}]}}}`, nil,
			func(status int, b map[string]any) bool {
				return status == http.StatusOK && dig(b, "error", "code") == float64(-32602) &&
					strings.Contains(str(dig(b, "error", "message")), "sub-conversation") && dig(b, "result") == nil
			}},
		{"a2a stream", "/a2a/desk", `{"jsonrpc":"2.0","id":4,"method":"SendStreamingMessage","params":{"metadata":{"user":"u1"},` +
			`"message":{"messageId":"m2","role":"ROLE_USER","contextId":"` + sub + `","parts":[{"text":"again"}]}}}`, nil,
			func(status int, b map[string]any) bool {
				return status == http.StatusOK && dig(b, "error", "code") == float64(-32602)
			}},
	} {
		t.Run(tc.surface, func(t *testing.T) {
			resp := f.post(tc.path, tc.body, tc.headers...)
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			b := decode(t, strings.NewReader(string(raw)))
			if !tc.check(resp.StatusCode, b) {
				t.Errorf("a turn on %s: %d %s", sub, resp.StatusCode, raw)
			}
			if got := subEvents(); got != before {
				t.Errorf("the sub-conversation has %d events after the refused turn, want %d", got, before)
			}
		})
	}
}

// Shutdown ends every running turn, whichever surface started it and
// whether it streams or not: an answer not streamed is a 503
// shutting_down in the surface's format, not an empty response.
func TestShutdownEndsTurnsNotStreamed(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`},
		{"native /run", "/run", `{"appName":"fake","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{})
			f := newNativeFixture(t, partialThenWait(started, nil))
			f.createSession("fake", "s1")
			type answer struct {
				status int
				body   map[string]any
			}
			done := make(chan answer)
			go func() {
				resp := f.post(tc.path, tc.body)
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				var m map[string]any
				_ = json.Unmarshal(raw, &m)
				done <- answer{resp.StatusCode, m}
			}()
			<-started
			f.shutdownNow()
			select {
			case a := <-done:
				ok := a.status == http.StatusServiceUnavailable
				if tc.name == "openai" {
					ok = ok && dig(a.body, "error", "code") == "shutting_down"
				} else {
					ok = ok && strings.Contains(str(a.body["error"]), "shutting down")
				}
				if !ok {
					t.Errorf("answer %d %v, want 503 shutting_down", a.status, a.body)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the turn was not ended by Shutdown")
			}
		})
	}
}

// Every turn is a run in the registry while it goes on, found by its
// invocation id (the one clients see) and cancelled through it; an A2A
// task's run is kept after its end, with the task's context as session.
func TestTurnsAreRuns(t *testing.T) {
	verifyNoLeaks(t)
	started := make(chan struct{})
	f := newNativeFixture(t, partialThenWait(started, nil))
	t.Cleanup(f.shutdownNow) // a failed check leaves no run waiting
	reg := f.gw.RunRegistry()
	frames := make(chan []string)
	go func() {
		resp := f.post("/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			"X-Session-Id", "live")
		defer resp.Body.Close()
		data, _ := sseFrames(t, resp.Body)
		frames <- data
	}()
	<-started
	waitFor(t, "one live run", func() bool { return reg.Live() == 1 })
	// The first chunk went out (the partial "a"): the run is named.
	list, err := reg.List(t.Context(), "fake", "anonymous", "live")
	if err != nil {
		t.Fatal(err)
	}
	var inv string
	for _, in := range list {
		inv = in.ID
	}
	rec, err := reg.Get(t.Context(), inv)
	if err != nil || inv == "" {
		t.Fatalf("the live run by its id %q: %v (runs %+v)", inv, err, list)
	}
	if err := reg.Cancel(t.Context(), inv, nil); err != nil {
		t.Fatal(err)
	}
	<-rec.Done()
	data := <-frames
	if len(data) == 0 || !strings.Contains(data[0], `"invocation_id":"`+inv+`"`) || data[len(data)-1] == "[DONE]" {
		t.Errorf("frames of the cancelled run %v", data)
	}
	if got := rec.Info().Status; got != runs.StatusCancelled || reg.Live() != 0 {
		t.Errorf("after the cancel: status %s, %d live", got, reg.Live())
	}

	resp := f.post("/a2a/desk", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hello"}]}}}`)
	task := decode(t, resp.Body)
	resp.Body.Close()
	id, ctxID := str(dig(task, "result", "id")), str(dig(task, "result", "contextId"))
	rec, err = reg.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("the task's run %q: %v", id, err)
	}
	if in := rec.Info(); in.Status != runs.StatusCompleted || in.Session != ctxID || in.App != "desk" || in.Ended.IsZero() {
		t.Errorf("the task's run %+v (context %s)", in, ctxID)
	}
}
