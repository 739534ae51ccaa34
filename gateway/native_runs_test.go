package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/runs"
	sessionsredis "github.com/agentgate/agentgate/sessions/redis"
)

// sseClient reads an SSE response as EventSource does: blocks of lines,
// the id of an id-only block carried to the data block after it.
type sseClient struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
	id   string // the last id seen (EventSource's lastEventId)
}

func openSSE(t *testing.T, req *http.Request) *sseClient {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("%s %s: status %d", req.Method, req.URL, resp.StatusCode)
	}
	return &sseClient{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the next data payload and the id it carries; ok false at
// the end of the stream.
func (c *sseClient) next() (id, data string, ok bool) {
	for {
		line, err := c.br.ReadString('\n')
		if err != nil {
			return "", "", false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			c.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			return c.id, strings.TrimPrefix(line, "data: "), true
		}
	}
}

// rest reads every remaining frame as "<id> <data>".
func (c *sseClient) rest() []string {
	var out []string
	for {
		id, data, ok := c.next()
		if !ok {
			return out
		}
		out = append(out, id+" "+data)
	}
}

func (c *sseClient) close() { c.resp.Body.Close() }

// gatedModel streams "a", then waits for gate (or its context) before
// the final "ab"; each call sends on started once "a" went out, and on
// aborted when its context ended first (up to 16 calls).
type gatedModel struct {
	gate, started, aborted chan struct{}
}

func newGatedModel() *gatedModel {
	return &gatedModel{gate: make(chan struct{}), started: make(chan struct{}, 16), aborted: make(chan struct{}, 16)}
}

func (g *gatedModel) fn(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
	part := &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "a"}}}}
	if !yield(part, nil) {
		return
	}
	g.started <- struct{}{}
	select {
	case <-g.gate:
		yield(textFinal("ab"), nil)
	case <-ctx.Done():
		g.aborted <- struct{}{}
		yield(nil, ctx.Err())
	}
}

const runsBase = "/apps/fake/users/u1/sessions/s1/runs"

func sseBody(extra string) string {
	b := `{"appName":"fake","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"x"}]}`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

func (f *nativeFixture) sseRequest(method, path, body string, header ...string) *http.Request {
	var req *http.Request
	var err error
	if body != "" {
		req, err = http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	} else {
		req, err = http.NewRequest(method, f.srv.URL+path, nil)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// listRuns reads the session's runs.
func (f *nativeFixture) listRuns() []map[string]any {
	f.t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, runsBase, ""), &out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *nativeFixture) waitRunStatus(inv, status string) {
	f.t.Helper()
	waitFor(f.t, "run "+inv+" "+status, func() bool {
		for _, r := range f.listRuns() {
			if r["invocationId"] == inv && r["status"] == status {
				return true
			}
		}
		return false
	})
}

// A client that drops a run with onDisconnect: continue re-attaches after
// its cursor and gets exactly the frames it missed, with their ids; the
// run finished and stored its answer meanwhile.
func TestRunsContinueAndReattach(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	f := newNativeFixture(t, g.fn)
	f.createSession("fake", "s1")
	c := openSSE(t, f.sseRequest(http.MethodPost, "/run_sse", sseBody(`"onDisconnect":"continue"`)))
	id0, first, ok := c.next()
	if !ok {
		t.Fatal("no first frame")
	}
	inv, n, _ := strings.Cut(id0, ":")
	if n != "0" || !strings.Contains(first, `"invocationId":"`+inv+`"`) {
		t.Fatalf("first frame %s %s", id0, first)
	}
	c.close() // the phone changes networks
	<-g.started
	close(g.gate)
	f.waitRunStatus(inv, "completed")

	runsList := f.listRuns()
	if len(runsList) != 1 || runsList[0]["endTime"] == nil || runsList[0]["startTime"] == nil {
		t.Errorf("runs %v", runsList)
	}
	// Last-Event-ID and ?after= give the same frames after the cursor.
	a := openSSE(t, f.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events", "", "Last-Event-ID", id0))
	missed := a.rest()
	a.close()
	if len(missed) != 1 || !strings.HasPrefix(missed[0], inv+":1 ") || !strings.Contains(missed[0], `"text":"ab"`) {
		t.Errorf("after %s: %v", id0, missed)
	}
	b := openSSE(t, f.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events?after="+id0, ""))
	if got := b.rest(); fmt.Sprint(got) != fmt.Sprint(missed) {
		t.Errorf("?after= %v, Last-Event-ID %v", got, missed)
	}
	b.close()
	all := openSSE(t, f.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events", ""))
	if got := all.rest(); len(got) != 2 || got[0] != id0+" "+first {
		t.Errorf("without a cursor: %v", got)
	}
	all.close()
	// The answer was stored with nobody attached.
	sess := string(f.mustDo(http.StatusOK, http.MethodGet, "/apps/fake/users/u1/sessions/s1", ""))
	if !strings.Contains(sess, `"text":"ab"`) {
		t.Errorf("session without the answer: %s", sess)
	}
	// Bad cursors and unknown runs.
	for _, tc := range []struct {
		path, cursor string
		want         int
	}{
		{runsBase + "/" + inv + "/events", "nonsense", http.StatusBadRequest},
		{runsBase + "/" + inv + "/events", "other:0", http.StatusBadRequest},
		{runsBase + "/" + inv + "/events", inv + ":-1", http.StatusBadRequest},
		{runsBase + "/" + inv + "/events", inv + ":9", http.StatusBadRequest},
		{runsBase + "/nope/events", "", http.StatusNotFound},
		{"/apps/fake/users/u2/sessions/s1/runs/" + inv + "/events", "", http.StatusNotFound},
		{runsBase + "/" + inv + "/frames", "", http.StatusNotFound},
	} {
		req := f.sseRequest(http.MethodGet, tc.path, "", "Last-Event-ID", tc.cursor)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || body["error"] == nil {
			t.Errorf("%s (cursor %q): status %d, body %v; want %d with an error", tc.path, tc.cursor, resp.StatusCode, body, tc.want)
		}
	}
}

// A run cancelled by id from another connection: the upstream call is
// aborted, the client that started it and one attached to it both see it
// end, its log ends with errorCode CANCELLED, and a second cancel changes
// nothing.
func TestRunsCancelByID(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	f := newNativeFixture(t, g.fn)
	f.createSession("fake", "s1")
	c := openSSE(t, f.sseRequest(http.MethodPost, "/run_sse", sseBody("")))
	defer c.close()
	id0, _, _ := c.next()
	inv, _, _ := strings.Cut(id0, ":")
	<-g.started
	att := openSSE(t, f.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events", ""))
	defer att.close()
	if id, _, _ := att.next(); id != id0 {
		t.Fatalf("attached first frame %q", id)
	}
	var attached []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); attached = att.rest() }()

	var info map[string]any
	_ = json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, runsBase+"/"+inv+"/cancel", ""), &info)
	if info["status"] != "cancelled" || info["invocationId"] != inv || info["endTime"] == nil {
		t.Errorf("cancel answered %v", info)
	}
	select {
	case <-g.aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call was not aborted")
	}
	starter := c.rest()
	if len(starter) != 1 || !strings.HasPrefix(starter[0], inv+":1 {\"error\":") {
		t.Errorf("the starting client's last frames %v", starter)
	}
	wg.Wait()
	if len(attached) != 1 || !strings.HasPrefix(attached[0], inv+":1 ") || !strings.Contains(attached[0], `"errorCode":"CANCELLED"`) {
		t.Errorf("attached client's last frames %v", attached)
	}
	_ = json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, runsBase+"/"+inv+"/cancel", ""), &info)
	if info["status"] != "cancelled" {
		t.Errorf("second cancel %v", info)
	}
	f.mustDo(http.StatusNotFound, http.MethodPost, runsBase+"/nope/cancel", "")
	f.mustDo(http.StatusMethodNotAllowed, http.MethodGet, runsBase+"/"+inv+"/cancel", "")
}

// Without onDisconnect the run ends with its client (cancel is the
// default), logged as CANCELLED; after runs.retention its frames are gone
// (410) while the run is still listed.
func TestRunsDisconnectCancelsThenExpires(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	log := runs.NewMemoryLog(runs.MemoryLogConfig{Retention: time.Minute, Now: clock})
	f := newNativeFixture(t, g.fn, func(c *gateway.Config) { c.RunLog = log })
	f.createSession("fake", "s1")
	c := openSSE(t, f.sseRequest(http.MethodPost, "/run_sse", sseBody(`"onDisconnect":"cancel"`)))
	id0, _, _ := c.next()
	inv, _, _ := strings.Cut(id0, ":")
	c.close()
	<-g.aborted
	f.waitRunStatus(inv, "cancelled")
	all := openSSE(t, f.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events", ""))
	got := all.rest()
	all.close()
	if len(got) != 2 || !strings.Contains(got[1], `"errorCode":"CANCELLED"`) {
		t.Errorf("frames of a run whose client went away: %v", got)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	status, body := f.do(http.MethodGet, runsBase+"/"+inv+"/events", "")
	if status != http.StatusGone || !strings.Contains(string(body), `"error"`) {
		t.Errorf("after retention: %d %s", status, body)
	}
	f.mustDo(http.StatusBadRequest, http.MethodPost, "/run_sse", sseBody(`"onDisconnect":"linger"`))
	f.mustDo(http.StatusNotFound, http.MethodGet, "/apps/fake/users/u1/sessions/nope/runs", "")
}

// The run log's bound on ended runs (runs.max_ended): past it the oldest
// ended run's frames go, a re-attach to it answers 410 while the run is
// still listed, and the newer runs' frames stay.
func TestRunsLogBoundDropsOldest(t *testing.T) {
	verifyNoLeaks(t)
	answer := func(_ context.Context, _ *model.Request, _ bool, yield func(*model.Response, error) bool) {
		yield(textFinal("ok"), nil)
	}
	f := newNativeFixture(t, answer, func(c *gateway.Config) { c.RunMaxEnded = 2 })
	f.createSession("fake", "s1")
	var invs []string
	for range 3 {
		c := openSSE(t, f.sseRequest(http.MethodPost, "/run_sse", sseBody("")))
		frames := c.rest()
		c.close()
		if len(frames) == 0 {
			t.Fatal("a run with no frame")
		}
		inv, _, _ := strings.Cut(frames[0], ":")
		invs = append(invs, inv)
		f.waitRunStatus(inv, "completed")
	}
	for i, inv := range invs {
		want := http.StatusOK
		if i == 0 {
			want = http.StatusGone
		}
		status, body := f.do(http.MethodGet, runsBase+"/"+inv+"/events", "")
		if status != want {
			t.Errorf("run %d of 3 (bound 2): re-attach %d %s, want %d", i, status, body, want)
		}
	}
	status, body := f.do(http.MethodGet, runsBase, "")
	if status != http.StatusOK || !strings.Contains(string(body), invs[0]) {
		t.Errorf("the dropped run is no longer listed: %d %s", status, body)
	}
}

// countingLog counts the frames appended to a run log.
type countingLog struct {
	*runs.MemoryLog
	frames atomic.Int32
}

func (l *countingLog) Append(ctx context.Context, run string, f runs.Frame) (int64, error) {
	l.frames.Add(1)
	return l.MemoryLog.Append(ctx, run, f)
}

// A stateless turn's frames are kept nowhere: no route can name its
// session to re-attach; a turn on a named session keeps them.
func TestStatelessTurnsKeepNoFrames(t *testing.T) {
	log := &countingLog{MemoryLog: runs.NewMemoryLog(runs.MemoryLogConfig{})}
	f := newFixture(t, nil, func(c *gateway.Config) { c.RunLog = log })
	body := `{"model":"desk","user":"u1","messages":[{"role":"user","content":"hello"}]}`
	resp := f.post("/v1/chat/completions", body)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || log.frames.Load() != 0 {
		t.Fatalf("stateless turn: status %d, %d frames logged, want 200 and none", resp.StatusCode, log.frames.Load())
	}
	resp = f.post("/v1/chat/completions", body, "X-Session-Id", "s1")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || log.frames.Load() == 0 {
		t.Fatalf("turn on a session: status %d, %d frames logged, want 200 and some", resp.StatusCode, log.frames.Load())
	}
}

// redisReplicas are two native fixtures on g's model, replicas of one
// deployment on Redis (sessions, run log and run index), the first one's
// run log lingering runnerLinger (0: the default); shut down at the end of
// the test.
func redisReplicas(t *testing.T, g *gatedModel, runnerLinger time.Duration) (runner, other *nativeFixture) {
	t.Helper()
	prefix := redisPrefix()
	replica := func(linger time.Duration) fixtureOpt {
		st := redisStore(t, prefix)
		return func(c *gateway.Config) {
			c.Sessions, c.RunLog, c.RunIndex = st, st.RunLog(sessionsredis.RunLogConfig{Linger: linger}), st.RunIndex()
		}
	}
	runner, other = newNativeFixture(t, g.fn, replica(runnerLinger)), newNativeFixture(t, g.fn, replica(0))
	for _, f := range []*nativeFixture{runner, other} {
		t.Cleanup(func() {
			grace, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f.shutdown(grace)
		})
	}
	return runner, other
}

// A run's id is made by its first event, and its Redis log created by its
// first write (runs.FreshOpener): a client re-attaching on another
// replica in between (here the replica running the run writes only at
// its end) finds the run running in the run index and no log yet, and
// gets every frame once they are written, rather than a 410.
func TestRunsReattachElsewhereBeforeTheFirstWrite(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	runner, other := redisReplicas(t, g, time.Hour)
	runner.createSession("fake", "s1")
	c := openSSE(t, runner.sseRequest(http.MethodPost, "/run_sse", sseBody("")))
	defer c.close()
	id0, _, ok := c.next()
	if !ok {
		t.Fatal("no first frame")
	}
	inv, _, _ := strings.Cut(id0, ":")
	<-g.started
	a := openSSE(t, other.sseRequest(http.MethodGet, runsBase+"/"+inv+"/events", ""))
	defer a.close()
	close(g.gate)
	want := c.rest()
	got := a.rest()
	if len(got) != 2 || !strings.HasPrefix(got[0], id0+" ") || got[1] != want[0] {
		t.Errorf("re-attached on another replica: %q\nthe run's own client after %s: %q", got, id0, want)
	}
}

// A run answered whole at its end (/run, not streamed) writes its entry in
// the shared run index a second after it is named rather than at once
// (runs.Run.PutLater): another replica lists it running once that passed,
// and completed as soon as it ended.
func TestRunsWholeAnswerListedElsewhere(t *testing.T) {
	verifyNoLeaks(t)
	g := newGatedModel()
	runner, other := redisReplicas(t, g, 0)
	runner.createSession("fake", "s1")
	type answer struct {
		status int
		body   []byte
	}
	answered := make(chan answer, 1)
	go func() {
		status, b := runner.do(http.MethodPost, "/run", `{"appName":"fake","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`)
		answered <- answer{status, b}
	}()
	<-g.started
	var inv string
	waitFor(t, "the run listed running on the other replica", func() bool {
		for _, r := range other.listRuns() {
			if r["status"] == "running" {
				inv, _ = r["invocationId"].(string)
				return true
			}
		}
		return false
	})
	close(g.gate)
	a := <-answered
	var out []map[string]any
	if err := json.Unmarshal(a.body, &out); a.status != http.StatusOK || err != nil || len(out) == 0 || out[len(out)-1]["invocationId"] != inv {
		t.Fatalf("the answer (status %d): %s, not of run %q", a.status, a.body, inv)
	}
	list := other.listRuns()
	if len(list) != 1 || list[0]["invocationId"] != inv || list[0]["status"] != "completed" {
		t.Errorf("runs on the other replica once answered: %v, want %s completed", list, inv)
	}
}
