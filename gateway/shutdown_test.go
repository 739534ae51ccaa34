package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runKinds are the runs that go on without a request driving them to a
// client: a /run_sse run whose client left (onDisconnect: continue), a
// background response, and an A2A task answered at once
// (returnImmediately). Its start methods start one of a kind each.
type runKinds struct {
	f *nativeFixture
	// inv is the native run, resp the background response, task and
	// taskContext the A2A task; empty for a kind not started.
	inv, resp, task, taskContext string
	started                      int
	// The re-attached clients' frames, once their streams ended, by the
	// route that re-attaches: the native run's and the task's on the runs
	// route, the response's as GET /v1/responses/{id}?stream=true replays
	// it.
	frames map[string]chan []string
}

func newRunKinds(f *nativeFixture) *runKinds {
	return &runKinds{f: f, frames: map[string]chan []string{}}
}

func (k *runKinds) startNative(t *testing.T) {
	t.Helper()
	k.f.createSession("fake", "s1")
	c := openSSE(t, k.f.sseRequest(http.MethodPost, "/run_sse", sseBody(`"onDisconnect":"continue"`)))
	id0, _, _ := c.next()
	k.inv, _, _ = strings.Cut(id0, ":")
	c.close()
	k.started++
}

func (k *runKinds) startResponse(t *testing.T) {
	t.Helper()
	var created map[string]any
	_ = json.Unmarshal(k.f.mustDo(http.StatusOK, http.MethodPost, "/v1/responses", `{"model":"fake","input":"x","background":true}`), &created)
	k.resp = str(created["id"])
	if created["status"] != "in_progress" && created["status"] != "queued" {
		t.Fatalf("background response created %v", created)
	}
	k.started++
}

func (k *runKinds) startTask(t *testing.T) {
	t.Helper()
	var sent map[string]any
	_ = json.Unmarshal(k.f.mustDo(http.StatusOK, http.MethodPost, "/a2a/fake", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{
		"message":{"messageId":"m1","role":"user","contextId":"s3","parts":[{"kind":"text","text":"x"}]},
		"configuration":{"returnImmediately":true},"metadata":{"user":"u1"}}}`), &sent)
	k.task, k.taskContext = str(dig(sent, "result", "task", "id")), str(dig(sent, "result", "task", "contextId"))
	if k.task == "" || k.taskContext != "s3" {
		t.Fatalf("task answered %v", sent)
	}
	k.started++
}

// called waits until every run started called the model g.
func (k *runKinds) called(t *testing.T, g *gatedModel) {
	t.Helper()
	for range k.started {
		select {
		case <-g.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the runs did not all call the model")
		}
	}
}

// attach attaches a client again to every run started, reading until its
// stream ends.
func (k *runKinds) attach(t *testing.T) {
	t.Helper()
	for _, path := range k.streams() {
		s := openSSE(t, k.f.sseRequest(http.MethodGet, path, ""))
		into := make(chan []string, 1)
		k.frames[path] = into
		go func() { defer s.close(); into <- s.rest() }()
	}
}

// streams lists the routes that re-attach to the runs started.
func (k *runKinds) streams() []string {
	var out []string
	if k.inv != "" {
		out = append(out, "/apps/fake/users/u1/sessions/s1/runs/"+k.inv+"/events")
	}
	if k.task != "" {
		out = append(out, "/apps/fake/users/u1/sessions/"+k.taskContext+"/runs/"+k.task+"/events")
	}
	if k.resp != "" {
		out = append(out, "/v1/responses/"+k.resp+"?stream=true")
	}
	return out
}

// serve answers a request on the server's handler itself: once Shutdown
// began, its listener takes no connection.
func (k *runKinds) serve(t *testing.T, method, path, body string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	k.f.gw.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// get is serve for a JSON answer, as the "v" of an object.
func (k *runKinds) get(t *testing.T, method, path, body string) map[string]any {
	t.Helper()
	raw := k.serve(t, method, path, body)
	var out map[string]any
	if err := json.Unmarshal([]byte(`{"v":`+raw+`}`), &out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return out
}

// reattach re-attaches to every run started through the handler (their
// logs have ended: each stream is whole).
func (k *runKinds) reattach(t *testing.T) {
	t.Helper()
	for _, path := range k.streams() {
		c := &sseClient{t: t, br: bufio.NewReader(strings.NewReader(k.serve(t, http.MethodGet, path, "")))}
		k.frames[path] = make(chan []string, 1)
		k.frames[path] <- c.rest()
	}
}

// ends reads how each run started ended: the last frame its re-attached
// client got (a response's last event type and its error code), the
// status the runs route lists, the stored response and the task's state.
func (k *runKinds) ends(t *testing.T) map[string]string {
	t.Helper()
	last := func(path string) string {
		var frames []string
		select {
		case frames = <-k.frames[path]:
		case <-time.After(10 * time.Second):
			t.Fatalf("the client re-attached on %s was not ended", path)
		}
		if len(frames) == 0 {
			return ""
		}
		_, data, _ := strings.Cut(frames[len(frames)-1], " ")
		var ev map[string]any
		_ = json.Unmarshal([]byte(data), &ev)
		if code := str(ev["errorCode"]); code != "" {
			return code
		}
		if ev["type"] != nil {
			return str(ev["type"]) + " " + str(dig(ev, "response", "error", "code"))
		}
		return str(dig(ev, "content", "parts", 0, "text"))
	}
	status := func(session, inv string) string {
		list, _ := k.get(t, http.MethodGet, "/apps/fake/users/u1/sessions/"+session+"/runs", "")["v"].([]any)
		for _, r := range list {
			if dig(r, "invocationId") == inv {
				return str(dig(r, "status"))
			}
		}
		return "unlisted"
	}
	got := map[string]string{}
	paths := k.streams()
	if k.inv != "" {
		got["native frame"], got["native run"] = last(paths[0]), status("s1", k.inv)
		paths = paths[1:]
	}
	if k.task != "" {
		task := k.get(t, http.MethodPost, "/a2a/fake", `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+k.task+`","metadata":{"user":"u1"}}}`)["v"]
		got["task frame"], got["task run"] = last(paths[0]), status(k.taskContext, k.task)
		got["task"] = str(dig(task, "result", "status", "state")) + " " + str(dig(task, "result", "status", "message", "parts", 0, "text"))
		paths = paths[1:]
	}
	if k.resp != "" {
		resp := k.get(t, http.MethodGet, "/v1/responses/"+k.resp, "")["v"]
		got["response event"] = last(paths[0])
		got["response"] = str(dig(resp, "status")) + " " + str(dig(resp, "error", "code"))
	}
	return got
}

// Shutdown gives the runs the grace, also those no request holds open (a
// background response, an A2A task answered at once): it returns only
// once they finished, they complete as they would have, and a re-attach
// then gets each one whole.
func TestShutdownGraceCoversRunsWithoutARequest(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	f := newNativeFixture(t, g.fn)
	k := newRunKinds(f)
	k.startResponse(t)
	k.startTask(t)
	k.called(t, g)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		grace, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		f.shutdown(grace)
	}()
	select {
	case <-stopped:
		t.Fatal("Shutdown returned while runs were going on")
	case <-time.After(100 * time.Millisecond):
	}
	close(g.gate)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return once the runs finished")
	}
	k.reattach(t)
	want := map[string]string{
		"task frame": "ab", "task run": "completed", "task": "TASK_STATE_COMPLETED ",
		"response event": "response.completed ", "response": "completed ",
	}
	if d := cmp.Diff(want, k.ends(t)); d != "" {
		t.Errorf("how the runs ended (-want +got):\n%s", d)
	}
}

// Runs still going when the grace is over end with SHUTDOWN, whatever
// their kind: the upstream calls are aborted, the last frame of each run's
// log is errorCode SHUTDOWN and the clients attached to them again see it,
// the runs are listed failed, the background response is failed with code
// shutting_down, the A2A task failed saying why; the session holds the
// user's message whole and nothing of the answer that was only streamed.
func TestShutdownEndsEveryKindOfRun(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	f := newNativeFixture(t, g.fn)
	k := newRunKinds(f)
	k.startNative(t)
	k.startResponse(t)
	k.startTask(t)
	k.called(t, g)
	k.attach(t)
	grace, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f.shutdown(grace)
	for range 3 {
		select {
		case <-g.aborted:
		case <-time.After(10 * time.Second):
			t.Fatal("the upstream calls were not all aborted")
		}
	}
	want := map[string]string{
		"native frame": "SHUTDOWN", "native run": "failed",
		"task frame": "SHUTDOWN", "task run": "failed", "task": "TASK_STATE_FAILED The server is shutting down; retry the request.",
		"response event": "response.failed shutting_down", "response": "failed shutting_down",
	}
	if d := cmp.Diff(want, k.ends(t)); d != "" {
		t.Errorf("how the runs ended (-want +got):\n%s", d)
	}
	sess := k.get(t, http.MethodGet, "/apps/fake/users/u1/sessions/s1", "")["v"]
	events, _ := dig(sess, "events").([]any)
	if len(events) != 1 || dig(events[0], "author") != "user" || dig(events[0], "content", "parts", 0, "text") != "x" || dig(events[0], "partial") == true {
		t.Errorf("session after the shutdown: %v", events)
	}
}
