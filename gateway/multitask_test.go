package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
)

// heldTurns is a model whose calls each stream a partial "…" (when
// streamed), then hold
// until the test releases one (then answer "re:<the user's last text>") or
// the call's context ends. started gets each call's user text as it
// holds, aborted that of each call stopped by its context.
type heldTurns struct {
	started, aborted chan string
	release          chan struct{}
}

func newHeldTurns() *heldTurns {
	return &heldTurns{started: make(chan string, 16), aborted: make(chan string, 16), release: make(chan struct{}, 16)}
}

func (m *heldTurns) fn(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
	last := lastUserText(req.Contents)
	part := &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "…"}}}}
	if stream && !yield(part, nil) {
		return
	}
	m.started <- last
	select {
	case <-m.release:
		yield(textFinal("re:"+last), nil)
	case <-ctx.Done():
		m.aborted <- last
		yield(nil, ctx.Err())
	}
}

// next waits for the next value of c (a call started or aborted).
func next(t *testing.T, c chan string, what string) string {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		return ""
	}
}

func lastUserText(contents []*genai.Content) string {
	for i := len(contents) - 1; i >= 0; i-- {
		if c := contents[i]; c.Role == genai.RoleUser {
			for _, p := range c.Parts {
				if p.Text != "" {
					return p.Text
				}
			}
		}
	}
	return ""
}

// transcript is the texts a model request carries, "<role>:<text>".
func transcript(req *model.Request) []string {
	var out []string
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.Text != "" {
				out = append(out, c.Role+":"+p.Text)
			}
		}
	}
	return out
}

// multitaskFixture serves app "fake": one agent on m, with
// models[].multitask mt; session s1 of user u1 exists.
func multitaskFixture(t *testing.T, m *heldTurns, mt spec.Multitask, opts ...fixtureOpt) *nativeFixture {
	t.Helper()
	set := spec.Set{
		Providers: []spec.Provider{{Name: "fk", Type: "fake"}},
		Agents:    []spec.Agent{{Name: "solo", Model: "fk/solo", Description: "A single agent on a held model."}},
		Models:    []spec.VirtualModel{{ID: "fake", Agent: "solo", Multitask: mt}},
	}
	f := &nativeFixture{fixture: newFixtureWith(t, set, m.fn, opts...)}
	t.Cleanup(func() { // the run registry's listener of a shared index stops with it
		grace, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.shutdown(grace)
	})
	f.createSession("fake", "s1")
	return f
}

// onStores runs test with sessions (and the run log and index) in memory
// and in Redis (skipped when none answers on 127.0.0.1:6379), the store
// given as a fixture option.
func onStores(t *testing.T, test func(t *testing.T, store fixtureOpt)) {
	t.Run("memory", func(t *testing.T) { test(t, func(*gateway.Config) {}) })
	t.Run("redis", func(t *testing.T) { test(t, redisSessions(t, true)) })
}

// busySession is a multitaskFixture whose session s1 has a run going: a
// first turn ("x1") whose model call holds; first gives its answer.
func busySession(t *testing.T, mt spec.Multitask, opts ...fixtureOpt) (f *nativeFixture, m *heldTurns, first <-chan turnResult) {
	t.Helper()
	verifyNoLeaks(t)
	m = newHeldTurns()
	f = multitaskFixture(t, m, mt, opts...)
	first = f.sendTurn(t.Context(), "x1", "")
	next(t, m.started, "first call")
	return f, m, first
}

// turnResult is what the client of one /run_sse got.
type turnResult struct {
	status int
	frames []string // "<id> <data>"
	body   string   // the body of a status other than 200
	header http.Header
}

// sendTurn posts a streamed turn with text on s1 and reads its answer on
// another goroutine; extra are more body fields. ctx ends the request.
func (f *nativeFixture) sendTurn(ctx context.Context, text, extra string) <-chan turnResult {
	body := `{"appName":"fake","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"` + text + `"}]}`
	if extra != "" {
		body += "," + extra
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/run_sse", strings.NewReader(body+"}"))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	out := make(chan turnResult, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- turnResult{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		r := turnResult{status: resp.StatusCode, header: resp.Header}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			r.body = string(b)
		} else {
			r.frames = (&sseClient{resp: resp, br: bufio.NewReader(resp.Body)}).rest()
		}
		out <- r
	}()
	return out
}

// result waits for a turn's answer.
func result(t *testing.T, c <-chan turnResult) turnResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return turnResult{}
	}
}

// runsNow lists the session's runs as "<status>" in start order, and their
// invocation ids.
func (f *nativeFixture) runsNow() (statuses, ids []string) {
	for _, r := range f.listRuns() {
		statuses = append(statuses, r["status"].(string))
		ids = append(ids, r["invocationId"].(string))
	}
	return statuses, ids
}

// waitRuns waits until the session's runs have these statuses, in start
// order, and returns their ids.
func (f *nativeFixture) waitRuns(want ...string) []string {
	f.t.Helper()
	var ids []string
	waitFor(f.t, "runs "+strings.Join(want, ", "), func() bool {
		var got []string
		got, ids = f.runsNow()
		return slices.Equal(got, want)
	})
	return ids
}

// lastFrame is the data of a turn's last frame.
func (r turnResult) lastFrame() string {
	if len(r.frames) == 0 {
		return ""
	}
	_, data, _ := strings.Cut(r.frames[len(r.frames)-1], " ")
	return data
}

// runFrames reads run inv's frames from the events route.
func (f *nativeFixture) runFrames(inv string) []string {
	c := openSSE(f.t, f.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events", ""))
	defer c.close()
	return c.rest()
}

// sessionTexts are the texts of the stored events of s1, "<author>:<text>".
func (f *nativeFixture) sessionTexts() []string {
	f.t.Helper()
	var sess struct {
		Events []struct {
			Author  string
			Partial bool
			Content *genai.Content
		}
	}
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/apps/fake/users/u1/sessions/s1", ""), &sess); err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, ev := range sess.Events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Text != "" {
				out = append(out, ev.Author+":"+p.Text)
			}
		}
	}
	return out
}

// Two turns sent while one runs, with enqueue (the model's, and the
// request's): both wait, listed queued in the order they came, then run
// in that order, each after the previous one ended; each model call sees
// the turns before it.
func TestMultitaskEnqueueRunsInArrivalOrder(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		ctx := t.Context()
		second := f.sendTurn(ctx, "x2", "")
		f.waitRuns("running", "queued")
		third := f.sendTurn(ctx, "x3", `"multitaskStrategy":"enqueue"`)
		ids := f.waitRuns("running", "queued", "queued")
		for range 3 {
			m.release <- struct{}{}
		}
		for i, c := range []<-chan turnResult{first, second, third} {
			r := result(t, c)
			want := "x" + string(rune('1'+i))
			if r.status != http.StatusOK || !strings.Contains(r.lastFrame(), `"text":"re:`+want+`"`) {
				t.Errorf("turn %d: %d %s %v", i+1, r.status, r.body, r.frames)
			}
			// The frames are the run's, numbered from 0 under its listed id.
			if len(r.frames) == 0 || !strings.HasPrefix(r.frames[0], ids[i]+":0 ") {
				t.Errorf("turn %d's frames %v, want them under %s", i+1, r.frames, ids[i])
			}
		}
		if i := next(t, m.started, "second call"); i != "x2" {
			t.Errorf("the second call answered %q, want x2", i)
		}
		if i := next(t, m.started, "third call"); i != "x3" {
			t.Errorf("the third call answered %q, want x3", i)
		}
		f.waitRuns("completed", "completed", "completed")
		reqs := f.fakes["solo"].requests()
		want := [][]string{
			{"user:x1"},
			{"user:x1", "model:re:x1", "user:x2"},
			{"user:x1", "model:re:x1", "user:x2", "model:re:x2", "user:x3"},
		}
		if len(reqs) != len(want) {
			t.Fatalf("%d model calls, want %d", len(reqs), len(want))
		}
		for i, req := range reqs {
			if got := transcript(req); !slices.Equal(got, want[i]) {
				t.Errorf("model call %d was sent %q, want %q", i+1, got, want[i])
			}
		}
	})
}

// A turn sent with interrupt while one runs: the running one is cancelled
// (its model call aborted, its client told), keeps its user message and
// ends with CANCELLED, its frames readable; the new one then runs on the
// session as the first left it.
func TestMultitaskInterruptKeepsTheFirstTurn(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskReject, store)
		ctx := t.Context()
		ids := f.waitRuns("running")
		second := f.sendTurn(ctx, "x2", `"multitaskStrategy":"interrupt"`)
		if got := next(t, m.aborted, "the first call's abort"); got != "x1" {
			t.Errorf("aborted the call of %q", got)
		}
		r1 := result(t, first)
		if r1.status != http.StatusOK || !strings.Contains(r1.lastFrame(), `"error"`) {
			t.Errorf("the first turn's client: %d %v", r1.status, r1.frames)
		}
		if got := next(t, m.started, "second call"); got != "x2" {
			t.Errorf("the second call answered %q", got)
		}
		m.release <- struct{}{}
		r2 := result(t, second)
		if r2.status != http.StatusOK || !strings.Contains(r2.lastFrame(), `"text":"re:x2"`) {
			t.Errorf("the second turn: %d %s %v", r2.status, r2.body, r2.frames)
		}
		f.waitRuns("cancelled", "completed")
		frames := f.runFrames(ids[0])
		if len(frames) != 2 || !strings.Contains(frames[0], `"partial":true`) || !strings.Contains(frames[1], `"errorCode":"CANCELLED"`) {
			t.Errorf("the interrupted run's frames %v", frames)
		}
		// Its user message stays; text streamed only as partials does not.
		if got, want := f.sessionTexts(), []string{"user:x1", "user:x2", "solo:re:x2"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
		reqs := f.fakes["solo"].requests()
		if got := transcript(reqs[len(reqs)-1]); !slices.Equal(got, []string{"user:x1", "user:x2"}) {
			t.Errorf("the second call was sent %q", got)
		}
	})
}

// An interrupt cancels the queued turns ahead of it too: their clients
// get 409, their runs end cancelled with a CANCELLED frame, their
// messages never reach the session.
func TestMultitaskInterruptCancelsQueuedTurns(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		ctx := t.Context()
		queued := f.sendTurn(ctx, "x2", "")
		ids := f.waitRuns("running", "queued")
		third := f.sendTurn(ctx, "x3", `"multitaskStrategy":"interrupt"`)
		r2 := result(t, queued)
		if r2.status != http.StatusConflict || !strings.Contains(r2.body, `"error"`) {
			t.Errorf("the queued turn's client: %d %s", r2.status, r2.body)
		}
		if got := next(t, m.started, "third call"); got != "x3" {
			t.Errorf("the call after the interrupt answered %q", got)
		}
		m.release <- struct{}{}
		if r := result(t, third); !strings.Contains(r.lastFrame(), `"text":"re:x3"`) {
			t.Errorf("the interrupting turn: %d %s %v", r.status, r.body, r.frames)
		}
		if r := result(t, first); !strings.Contains(r.lastFrame(), `"error"`) {
			t.Errorf("the first turn: %v", r.frames)
		}
		f.waitRuns("cancelled", "cancelled", "completed")
		if frames := f.runFrames(ids[1]); len(frames) != 1 || !strings.Contains(frames[0], `"errorCode":"CANCELLED"`) {
			t.Errorf("the queued run's frames %v", frames)
		}
		if got, want := f.sessionTexts(), []string{"user:x1", "user:x3", "solo:re:x3"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
	})
}

// reject (the default) refuses a turn on a busy session, as before.
func TestMultitaskRejectIsTheDefault(t *testing.T) {
	f, m, first := busySession(t, "")
	for _, extra := range []string{"", `"multitaskStrategy":"reject"`} {
		if r := result(t, f.sendTurn(t.Context(), "x2", extra)); r.status != http.StatusConflict || !strings.Contains(r.body, "busy") {
			t.Errorf("a second turn (%s): %d %s", extra, r.status, r.body)
		}
	}
	m.release <- struct{}{}
	result(t, first)
	f.waitRuns("completed")
}

// The line's bounds: beyond sessions.max_queued a turn is refused (429,
// Retry-After), unless it interrupts; one that waited sessions.queue_wait
// is refused (409), its run failed with SESSION_BUSY; the line is then
// empty.
func TestMultitaskLineBounds(t *testing.T) {
	t.Run("max_queued", func(t *testing.T) {
		onStores(t, func(t *testing.T, store fixtureOpt) {
			f, m, first := busySession(t, spec.MultitaskEnqueue, store, func(c *gateway.Config) { c.MaxQueued = 1 })
			ctx := t.Context()
			queued := f.sendTurn(ctx, "x2", "")
			f.waitRuns("running", "queued")
			r := result(t, f.sendTurn(ctx, "x3", ""))
			if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, `"error"`) {
				t.Errorf("a turn beyond max_queued: %d %v %s", r.status, r.header, r.body)
			}
			// An interrupt is not refused for a full line: it empties it.
			interrupting := f.sendTurn(ctx, "x4", `"multitaskStrategy":"interrupt"`)
			if r := result(t, queued); r.status != http.StatusConflict {
				t.Errorf("the queued turn, interrupted: %d %s", r.status, r.body)
			}
			if r := result(t, first); !strings.Contains(r.lastFrame(), `"error"`) {
				t.Errorf("the first turn, interrupted: %v", r.frames)
			}
			next(t, m.started, "the interrupting turn's call")
			m.release <- struct{}{}
			if r := result(t, interrupting); !strings.Contains(r.lastFrame(), `"text":"re:x4"`) {
				t.Errorf("the interrupting turn: %d %s %v", r.status, r.body, r.frames)
			}
			f.waitRuns("cancelled", "cancelled", "completed")
		})
	})
	t.Run("queue_wait", func(t *testing.T) {
		onStores(t, func(t *testing.T, store fixtureOpt) {
			f, m, first := busySession(t, spec.MultitaskEnqueue, store, func(c *gateway.Config) { c.QueueWait = 100 * time.Millisecond })
			ctx := t.Context()
			r := result(t, f.sendTurn(ctx, "x2", ""))
			if r.status != http.StatusConflict || !strings.Contains(r.body, "busy") {
				t.Errorf("a turn past queue_wait: %d %s", r.status, r.body)
			}
			ids := f.waitRuns("running", "failed")
			if frames := f.runFrames(ids[1]); len(frames) != 1 || !strings.Contains(frames[0], `"errorCode":"SESSION_BUSY"`) {
				t.Errorf("the timed-out run's frames %v", frames)
			}
			m.release <- struct{}{}
			result(t, first)
			// Nobody waits: the next turn runs at once, with reject too.
			m.release <- struct{}{}
			if r := result(t, f.sendTurn(ctx, "x3", `"multitaskStrategy":"reject"`)); r.status != http.StatusOK {
				t.Errorf("a turn once the line emptied: %d %s", r.status, r.body)
			}
		})
	})
}

// A queued turn whose client leaves is out of the line: its run ends
// cancelled (no ghost "queued"), no goroutine stays, and the session is
// free once the running turn ends. A queued run cancelled by id ends the
// same way, its client told 409.
func TestMultitaskQueuedTurnLeaves(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		leave, cancel := context.WithCancel(t.Context())
		gone := f.sendTurn(leave, "x2", "")
		f.waitRuns("running", "queued")
		cancel()
		if r := result(t, gone); r.status != 0 {
			t.Errorf("the client that left got %d", r.status)
		}
		f.waitRuns("running", "cancelled")
		byID := f.sendTurn(t.Context(), "x3", "")
		ids := f.waitRuns("running", "cancelled", "queued")
		var info map[string]any
		_ = json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, runsBase+"/"+ids[2]+"/cancel", ""), &info)
		if info["status"] != "cancelled" {
			t.Errorf("cancel of a queued run answered %v", info)
		}
		if r := result(t, byID); r.status != http.StatusConflict {
			t.Errorf("the client of a queued run cancelled by id: %d %s", r.status, r.body)
		}
		m.release <- struct{}{}
		result(t, first)
		m.release <- struct{}{}
		if r := result(t, f.sendTurn(t.Context(), "x4", `"multitaskStrategy":"reject"`)); r.status != http.StatusOK {
			t.Errorf("a turn after the queued ones left: %d %s", r.status, r.body)
		}
		f.waitRuns("completed", "cancelled", "cancelled", "completed")
		if got, want := f.sessionTexts(), []string{"user:x1", "solo:re:x1", "user:x4", "solo:re:x4"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
	})
}

// A strategy that is not one is a client's mistake on every surface: 400
// in the surface's own error format, naming the field.
func TestMultitaskBadValues(t *testing.T) {
	verifyNoLeaks(t)
	f := multitaskFixture(t, newHeldTurns(), "")
	if r := result(t, f.sendTurn(t.Context(), "x", `"multitaskStrategy":"later"`)); r.status != http.StatusBadRequest ||
		!strings.Contains(r.body, `{"error":"multitaskStrategy must be reject, enqueue or interrupt`) {
		t.Errorf("/run_sse: %d %s", r.status, r.body)
	}
	status, body := f.do(http.MethodPost, "/run", `{"appName":"fake","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]},"multitaskStrategy":"Enqueue"}`)
	if status != http.StatusBadRequest || !strings.Contains(string(body), `"error"`) {
		t.Errorf("/run: %d %s", status, body)
	}
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		body := `{"model":"fake","messages":[{"role":"user","content":"x"}]}`
		if path == "/v1/responses" {
			body = `{"model":"fake","input":"x"}`
		}
		resp := f.post(path, body, "X-Agentgate-Multitask", "whenever")
		got := decode(t, resp.Body)
		resp.Body.Close()
		e, _ := got["error"].(map[string]any)
		if resp.StatusCode != http.StatusBadRequest || e["param"] != "X-Agentgate-Multitask" || e["type"] != "invalid_request_error" {
			t.Errorf("%s: %d %v", path, resp.StatusCode, got)
		}
	}
}

// The /v1 surfaces choose with the header X-Agentgate-Multitask: a chat
// turn with enqueue waits for the native run on its session and sees it;
// a Responses turn with interrupt cancels the one going.
func TestMultitaskOpenAIHeader(t *testing.T) {
	f, m, first := busySession(t, spec.MultitaskReject)
	chat := make(chan *http.Response, 1)
	go func() {
		chat <- f.post("/v1/chat/completions", `{"model":"fake","user":"u1","messages":[{"role":"user","content":"c2"}]}`,
			"X-Session-Id", "s1", "X-Agentgate-Multitask", "enqueue")
	}()
	f.waitRuns("running", "queued")
	m.release <- struct{}{}
	result(t, first)
	if got := next(t, m.started, "the chat turn's call"); got != "c2" {
		t.Errorf("the chat turn's call answered %q", got)
	}
	m.release <- struct{}{}
	resp := <-chat
	got := decode(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(mustJSON(t, got), `"content":"re:c2"`) {
		t.Errorf("the queued chat turn: %d %v", resp.StatusCode, got)
	}
	reqs := f.fakes["solo"].requests()
	if got := transcript(reqs[len(reqs)-1]); !slices.Equal(got, []string{"user:x1", "model:re:x1", "user:c2"}) {
		t.Errorf("the chat turn's call was sent %q", got)
	}

	third := f.sendTurn(t.Context(), "x3", "")
	next(t, m.started, "third call")
	responses := make(chan *http.Response, 1)
	go func() {
		responses <- f.post("/v1/responses", `{"model":"fake","user":"u1","conversation":"s1","input":"r4"}`, "X-Agentgate-Multitask", "interrupt")
	}()
	if got := next(t, m.aborted, "the abort of the third call"); got != "x3" {
		t.Errorf("aborted %q", got)
	}
	if got := next(t, m.started, "the Responses turn's call"); got != "r4" {
		t.Errorf("the Responses turn's call answered %q", got)
	}
	m.release <- struct{}{}
	resp = <-responses
	got = decode(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || got["status"] != "completed" || !strings.Contains(mustJSON(t, got), `"text":"re:r4"`) {
		t.Errorf("the interrupting Responses turn: %d %v", resp.StatusCode, got)
	}
	if r := result(t, third); !strings.Contains(r.lastFrame(), `"error"`) {
		t.Errorf("the interrupted native turn: %v", r.frames)
	}
	f.waitRuns("completed", "completed", "cancelled", "completed")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// a2a sends a JSON-RPC request with method and a message saying text in
// context s1 of u1 to the A2A route of app "fake"; ctx ends the request.
func (f *nativeFixture) a2a(ctx context.Context, method, text string) (*http.Response, error) {
	return f.a2aCall(ctx, method, a2aMessage(text, ""))
}

// a2aMessage is the params of a message saying text in context s1 of u1,
// with a configuration when config is not empty.
func a2aMessage(text, config string) string {
	p := `{"message":{"messageId":"m-` + text + `","role":"user","contextId":"s1","parts":[{"kind":"text","text":"` + text +
		`"}]},"metadata":{"user":"u1"}`
	if config != "" {
		p += `,"configuration":` + config
	}
	return p + "}"
}

// a2aCall sends a JSON-RPC request with method and params to the A2A route
// of app "fake"; ctx ends the request.
func (f *nativeFixture) a2aCall(ctx context.Context, method, params string) (*http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/a2a/fake", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// A2A turns follow the model's multitask on their context (the session):
// with enqueue a message/send on a busy context waits, listed queued, and
// runs after the run going, seeing it; with interrupt a message/stream
// cancels the run going (its client told), then runs.
func TestMultitaskA2A(t *testing.T) {
	t.Run("enqueue", func(t *testing.T) {
		onStores(t, func(t *testing.T, store fixtureOpt) {
			f, m, first := busySession(t, spec.MultitaskEnqueue, store)
			sent := make(chan []byte, 1)
			go func() {
				var body []byte
				if resp, err := f.a2a(t.Context(), "message/send", "a2"); err == nil {
					body, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				sent <- body
			}()
			ids := f.waitRuns("running", "queued")
			m.release <- struct{}{}
			result(t, first)
			if got := next(t, m.started, "the A2A turn's call"); got != "a2" {
				t.Errorf("the call after the first answered %q", got)
			}
			m.release <- struct{}{}
			var res map[string]any
			select {
			case body := <-sent:
				_ = json.Unmarshal(body, &res)
			case <-time.After(10 * time.Second):
				t.Fatal("message/send did not answer")
			}
			if dig(res, "result", "status", "state") != "completed" || dig(res, "result", "id") != ids[1] ||
				dig(res, "result", "artifacts", 0, "parts", 0, "text") != "re:a2" {
				t.Errorf("message/send answered %v, want task %s completed", res, ids[1])
			}
			f.waitRuns("completed", "completed")
			reqs := f.fakes["solo"].requests()
			if got := transcript(reqs[len(reqs)-1]); !slices.Equal(got, []string{"user:x1", "model:re:x1", "user:a2"}) {
				t.Errorf("the A2A turn's call was sent %q", got)
			}
		})
	})
	t.Run("interrupt", func(t *testing.T) {
		onStores(t, func(t *testing.T, store fixtureOpt) {
			f, m, first := busySession(t, spec.MultitaskInterrupt, store)
			streamed := make(chan []byte, 1)
			go func() {
				var body []byte
				if resp, err := f.a2a(t.Context(), "message/stream", "a2"); err == nil {
					body, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				streamed <- body
			}()
			if got := next(t, m.aborted, "the first call's abort"); got != "x1" {
				t.Errorf("aborted the call of %q", got)
			}
			if r := result(t, first); !strings.Contains(r.lastFrame(), `"error"`) {
				t.Errorf("the interrupted turn's client: %v", r.frames)
			}
			if got := next(t, m.started, "the A2A turn's call"); got != "a2" {
				t.Errorf("the call after the interrupt answered %q", got)
			}
			m.release <- struct{}{}
			select {
			case body := <-streamed:
				frames := sseResults(t, &http.Response{Body: io.NopCloser(bytes.NewReader(body))})
				if len(frames) == 0 || dig(frames[len(frames)-1], "status", "state") != "completed" {
					t.Errorf("message/stream sent %v", frames)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("message/stream did not end")
			}
			f.waitRuns("cancelled", "completed")
			if got, want := f.sessionTexts(), []string{"user:x1", "user:a2", "solo:re:a2"}; !slices.Equal(got, want) {
				t.Errorf("session %q, want %q", got, want)
			}
		})
	})
}

// a2aResult posts a JSON-RPC request to the A2A route of app "fake" and
// returns its result (the test fails on an error, or with no answer within
// 10 s).
func (f *nativeFixture) a2aResult(method, params string) map[string]any {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 10*time.Second)
	defer cancel()
	resp, err := f.a2aCall(ctx, method, params)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var res map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		f.t.Fatal(err)
	}
	out, ok := res["result"].(map[string]any)
	if !ok {
		f.t.Fatalf("%s answered %v", method, res)
	}
	return out
}

// A message/send that returns immediately on a busy context (enqueue) is
// answered at once, while the run going still holds the session: its task
// submitted, which tasks/get shows as it is (submitted while it waits,
// completed once it ran after the first, with its answer); its model call
// saw the first turn's answer.
func TestMultitaskA2AReturnImmediately(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		// The first turn holds until released below: an answer now is one
		// that did not wait for its turn.
		task := f.a2aResult("message/send", a2aMessage("a2", `{"returnImmediately":true}`))
		id, _ := task["id"].(string)
		if dig(task, "status", "state") != "submitted" || id == "" || dig(task, "contextId") != "s1" {
			t.Fatalf("message/send answered %v, want a task submitted", task)
		}
		f.waitRuns("running", "queued")
		get := `{"id":"` + id + `","metadata":{"user":"u1"}}`
		if got := f.a2aResult("tasks/get", get); dig(got, "status", "state") != "submitted" {
			t.Errorf("tasks/get of the queued task: %v", got)
		}
		m.release <- struct{}{}
		result(t, first)
		if got := next(t, m.started, "the A2A turn's call"); got != "a2" {
			t.Errorf("the call after the first answered %q", got)
		}
		if got := f.a2aResult("tasks/get", get); dig(got, "status", "state") != "working" {
			t.Errorf("tasks/get of the running task: %v", got)
		}
		m.release <- struct{}{}
		var got map[string]any
		waitFor(t, "the task completed", func() bool {
			got = f.a2aResult("tasks/get", get)
			return dig(got, "status", "state") == "completed"
		})
		if dig(got, "artifacts", 0, "parts", 0, "text") != "re:a2" {
			t.Errorf("the completed task: %v", got)
		}
		if ids := f.waitRuns("completed", "completed"); ids[1] != id {
			t.Errorf("the queued run is %s, the task %s", ids[1], id)
		}
		reqs := f.fakes["solo"].requests()
		if got := transcript(reqs[len(reqs)-1]); !slices.Equal(got, []string{"user:x1", "model:re:x1", "user:a2"}) {
			t.Errorf("the A2A turn's call was sent %q", got)
		}
	})
}

// A task answered submitted at once (returnImmediately) and canceled over
// tasks/cancel while it waits in its busy context's line ends canceled
// before its run does: tasks/cancel answers it canceled, and so does a
// tasks/get right after it. It never runs: the session is free once the
// run ahead ends, without its message.
func TestMultitaskA2AReturnImmediatelyCanceledInLine(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		task := f.a2aResult("message/send", a2aMessage("a2", `{"returnImmediately":true}`))
		ids := f.waitRuns("running", "queued")
		query := `{"id":"` + ids[1] + `","metadata":{"user":"u1"}}`
		if got := f.a2aResult("tasks/cancel", query); dig(got, "status", "state") != "canceled" || dig(got, "id") != dig(task, "id") {
			t.Errorf("tasks/cancel of the queued task %v answered %v", dig(task, "id"), got)
		}
		if got := f.a2aResult("tasks/get", query); dig(got, "status", "state") != "canceled" {
			t.Errorf("tasks/get right after the cancel: %v", got)
		}
		m.release <- struct{}{}
		result(t, first)
		f.waitRuns("completed", "cancelled")
		if got, want := f.sessionTexts(), []string{"user:x1", "solo:re:x1"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
	})
}

// A message/stream on a busy context (enqueue) starts its stream as its
// turn joins the line: the task, submitted, then keepalives every
// server.keepalive_interval while it waits; once it runs, a working
// status, its answer and the final completed status. One cancelled over
// tasks/cancel while it waits ends its stream with the final canceled
// status.
func TestMultitaskA2AQueuedStream(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store, func(c *gateway.Config) { c.KeepaliveInterval = 20 * time.Millisecond })
		waiting := f.openStreamAt("/a2a/fake", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":`+a2aMessage("a2", "")+`}`)
		cancelled := f.openStreamAt("/a2a/fake", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":`+a2aMessage("a3", "")+`}`)
		f.waitRuns("running", "queued", "queued")
		var ids []string
		for _, q := range []*queuedStream{waiting, cancelled} {
			read := q.until("data: ")
			var first map[string]any
			_ = json.Unmarshal([]byte(strings.TrimPrefix(read[len(read)-1], "data: ")), &first)
			if dig(first, "result", "kind") != "task" || dig(first, "result", "status", "state") != "submitted" {
				t.Fatalf("a queued stream began with %q, want the task submitted", read)
			}
			ids = append(ids, dig(first, "result", "id").(string))
			if read := q.until(":"); read[len(read)-1] != ": keepalive" {
				t.Errorf("a queued stream went on with %q, want a keepalive", read)
			}
		}
		if got := f.a2aResult("tasks/cancel", `{"id":"`+ids[1]+`","metadata":{"user":"u1"}}`); dig(got, "status", "state") != "canceled" {
			t.Errorf("tasks/cancel of the queued task answered %v", got)
		}
		if frames := a2aFrames(t, cancelled.rest()); len(frames) != 1 || dig(frames[0], "status", "state") != "canceled" ||
			dig(frames[0], "final") != true {
			t.Errorf("the cancelled queued stream ended with %v", frames)
		}
		m.release <- struct{}{}
		result(t, first)
		next(t, m.started, "the queued turn's call")
		m.release <- struct{}{}
		frames := a2aFrames(t, waiting.rest())
		if len(frames) < 3 || dig(frames[0], "kind") != "status-update" || dig(frames[0], "status", "state") != "working" ||
			dig(frames[len(frames)-1], "status", "state") != "completed" {
			t.Errorf("the queued stream, once it ran: %v", frames)
		}
		if got := f.a2aResult("tasks/get", `{"id":"`+ids[0]+`","metadata":{"user":"u1"}}`); dig(got, "artifacts", 0, "parts", 0, "text") != "re:a2" {
			t.Errorf("the queued stream's task: %v", got)
		}
		f.waitRuns("completed", "completed", "cancelled")
	})
}

// a2aFrames are the results of an A2A stream's data lines.
func a2aFrames(t *testing.T, lines []string) []any {
	t.Helper()
	var out []any
	for _, l := range lines {
		if data, ok := strings.CutPrefix(l, "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("frame %q: %v", data, err)
			}
			out = append(out, m["result"])
		}
	}
	return out
}

// queuedStream is a /run_sse request whose lines are read as they come.
type queuedStream struct {
	t     *testing.T
	resp  *http.Response
	lines chan string // closed at the end of the body
}

// openQueuedStream posts a streamed /run_sse turn with text on s1 and
// returns once the response's headers came (the test fails if they do
// not).
func (f *nativeFixture) openQueuedStream(text string) *queuedStream {
	f.t.Helper()
	return f.openStreamAt("/run_sse", `{"appName":"fake","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"`+text+`"}]}}`)
}

// openStreamAt is openQueuedStream for a body posted to path, with
// headers.
func (f *nativeFixture) openStreamAt(path, body string, header ...string) *queuedStream {
	f.t.Helper()
	req := f.sseRequest(http.MethodPost, path, body, header...)
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			resp = nil
		}
		got <- resp
	}()
	var resp *http.Response
	select {
	case resp = <-got:
	case <-time.After(10 * time.Second):
		f.t.Fatal("the queued stream sent no headers")
	}
	if resp == nil {
		f.t.Fatal("the request failed")
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	q := &queuedStream{t: f.t, resp: resp, lines: make(chan string, 64)}
	go func() {
		defer close(q.lines)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			q.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	return q
}

// until reads lines up to the first one starting with prefix, and returns
// the lines read (with it); it fails the test at the end of the body.
func (q *queuedStream) until(prefix string) []string {
	q.t.Helper()
	return q.read(prefix)
}

// rest reads the lines left, to the end of the body.
func (q *queuedStream) rest() []string {
	q.t.Helper()
	return q.read("")
}

// read reads lines up to the first one starting with prefix, or with
// prefix empty to the end of the body.
func (q *queuedStream) read(prefix string) []string {
	q.t.Helper()
	var read []string
	for {
		select {
		case line, ok := <-q.lines:
			switch {
			case !ok && prefix == "":
				return read
			case !ok:
				q.t.Fatalf("the stream ended without %q: %q", prefix, read)
			}
			read = append(read, line)
			if prefix != "" && strings.HasPrefix(line, prefix) {
				return read
			}
		case <-time.After(10 * time.Second):
			q.t.Fatalf("the stream sent no %q and did not end: %q", prefix, read)
		}
	}
}

// keptAlive checks that the stream started as an SSE stream whose first
// line is a keepalive.
func (q *queuedStream) keptAlive() {
	q.t.Helper()
	if q.resp.StatusCode != http.StatusOK || q.resp.Header.Get("Content-Type") != "text/event-stream" {
		q.t.Fatalf("a queued stream answered %d %v", q.resp.StatusCode, q.resp.Header)
	}
	if read := q.until(":"); len(read) != 1 || read[0] != ": keepalive" {
		q.t.Errorf("a queued stream began with %q, want a keepalive", read)
	}
}

// withoutKeepalives is an SSE stream's lines without its keepalives and
// blank lines: its frames' id and data lines.
func withoutKeepalives(lines []string) []string {
	return slices.DeleteFunc(lines, func(l string) bool { return l == "" || l == ": keepalive" })
}

// A queued /run_sse turn keeps its connection alive, so that a proxy's
// idle timeout does not cut it: once it waited server.keepalive_interval
// its stream starts (200, the SSE headers) and gets a keepalive comment
// every interval, then streams its run as any other. One that leaves the
// line without running once its stream started (cancelled by id here)
// ends with the error frame, numbered as its run's CANCELLED event.
func TestMultitaskQueuedStreamKeepsAlive(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store, func(c *gateway.Config) { c.KeepaliveInterval = 20 * time.Millisecond })
		waiting := f.openQueuedStream("x2")
		cancelled := f.openQueuedStream("x3")
		ids := f.waitRuns("running", "queued", "queued")
		waiting.keptAlive()
		cancelled.keptAlive()
		f.mustDo(http.StatusOK, http.MethodPost, runsBase+"/"+ids[2]+"/cancel", "")
		frames := withoutKeepalives(cancelled.rest())
		if want := []string{"id: " + ids[2] + ":0", `data: {"error":"The run was cancelled."}`}; !slices.Equal(frames, want) {
			t.Errorf("the cancelled queued stream ended with %q, want %q", frames, want)
		}
		m.release <- struct{}{}
		result(t, first)
		next(t, m.started, "the queued turn's call")
		m.release <- struct{}{}
		// Keepalives go on until the stream ends, after its run's last
		// event too (while the turn is stored).
		read := withoutKeepalives(waiting.rest())
		if len(read) == 0 || read[0] != "id: "+ids[1]+":0" || !strings.Contains(read[len(read)-1], `"text":"re:x2"`) {
			t.Errorf("the queued stream, once it ran: %q", read)
		}
		f.waitRuns("completed", "completed", "cancelled")
	})
}

// The /v1 streams keep a queued turn's connection alive as /run_sse does:
// a chat completion's stream starts (200, X-Session-Id) and gets
// keepalives while it waits, then its chunks and [DONE]; a Responses
// stream cancelled while it waits, after its keepalives, is a whole
// response that failed cancelled.
func TestMultitaskQueuedOpenAIStreamsKeepAlive(t *testing.T) {
	f, m, first := busySession(t, spec.MultitaskEnqueue, func(c *gateway.Config) { c.KeepaliveInterval = 20 * time.Millisecond })
	chat := f.openStreamAt("/v1/chat/completions", `{"model":"fake","user":"u1","stream":true,"messages":[{"role":"user","content":"c2"}]}`, "X-Session-Id", "s1")
	responses := f.openStreamAt("/v1/responses", `{"model":"fake","user":"u1","conversation":"s1","stream":true,"input":"r3"}`)
	ids := f.waitRuns("running", "queued", "queued")
	chat.keptAlive()
	responses.keptAlive()
	if got := chat.resp.Header.Get("X-Session-Id"); got != "s1" {
		t.Errorf("the queued chat stream's X-Session-Id %q", got)
	}
	f.mustDo(http.StatusOK, http.MethodPost, runsBase+"/"+ids[2]+"/cancel", "")
	body := strings.Join(responses.rest(), "\n")
	if err := responsescheck.Stream([]byte(body)); err != nil {
		t.Errorf("the cancelled queued Responses stream against the specification: %v\n%s", err, body)
	}
	if frames := responsescheck.Frames([]byte(body)); len(frames) != 3 || frames[2].Event != "response.failed" ||
		!strings.Contains(string(frames[2].Data), `"status":"cancelled"`) {
		t.Errorf("the cancelled queued Responses stream: %s", body)
	}
	m.release <- struct{}{}
	result(t, first)
	if got := next(t, m.started, "the chat turn's call"); got != "c2" {
		t.Errorf("the call after the first answered %q", got)
	}
	m.release <- struct{}{}
	read := chat.rest()
	if len(read) < 2 || read[len(read)-2] != "data: [DONE]" || !strings.Contains(strings.Join(read, "\n"), `"role":"assistant"`) {
		t.Errorf("the queued chat stream, once it ran: %q", read)
	}
	f.waitRuns("completed", "completed", "cancelled")
}
