package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// heldUpstream is an OpenAI-compatible upstream that streams "a", then
// holds the call until release (then "b" and the end) or until the
// gateway aborts it; a call that is not streamed is held the same way,
// then answered "ab". Each call sends on started, and on aborted when it
// was aborted (up to 16 calls). It records the messages of each call, in
// the order the calls came.
type heldUpstream struct {
	started, aborted chan struct{}
	release          chan struct{}

	mu    sync.Mutex
	calls [][]string // per call, its messages as "<role>:<content>"
}

func newHeldUpstream() *heldUpstream {
	return &heldUpstream{started: make(chan struct{}, 16), aborted: make(chan struct{}, 16), release: make(chan struct{})}
}

func (u *heldUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream   bool
		Messages []struct{ Role, Content string }
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	var msgs []string
	for _, m := range req.Messages {
		msgs = append(msgs, m.Role+":"+m.Content)
	}
	u.mu.Lock()
	u.calls = append(u.calls, msgs)
	u.mu.Unlock()
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk(map[string]any{"role": "assistant", "content": "a"}, nil)
	}
	u.started <- struct{}{}
	select {
	case <-u.release:
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m",`+
				`"choices":[{"index":0,"message":{"role":"assistant","content":"ab"},"finish_reason":"stop"}]}`)
			return
		}
		chunk(map[string]any{"content": "b"}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	case <-r.Context().Done():
		u.aborted <- struct{}{}
	}
}

const runsReplicaConfig = `
sessions: {backend: memory}
log: {level: warn}
providers:
  - {name: up, type: openai, base_url: "%s/v1", api_key: k, max_retries: 0}
agents:
  - {name: desk, model: up/m}
models:
  - {id: desk, agent: desk}
`

// replicas is what the tests of gateway binaries on one private Redis and
// a held upstream share.
type replicas struct {
	up       *heldUpstream
	bin, cfg string
	// env puts a gateway on the private Redis; stopRedis stops it.
	env       []string
	stopRedis func()
}

// heldReplicas starts a private Redis and a held upstream (closed after
// the gateways the test starts are gone), builds the binary and writes
// runsReplicaConfig on that upstream, extra appended. It skips the test
// with -short.
func heldReplicas(t *testing.T, extra string) replicas {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	redisURL, stop := startRedis(t)
	up := newHeldUpstream()
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	r := replicas{up: up, bin: buildGateway(t), cfg: filepath.Join(t.TempDir(), "config.yaml"),
		env: []string{"REDIS_URL=" + redisURL, "AGENTGATE_CONFIG="}, stopRedis: stop}
	if err := os.WriteFile(r.cfg, []byte(fmt.Sprintf(runsReplicaConfig, upSrv.URL)+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// start starts a gateway on the replicas' config and Redis.
func (r replicas) start(t *testing.T) string {
	t.Helper()
	return startGateway(t, r.bin, r.cfg, r.env...)
}

// sseFrames reads "id data" pairs off an SSE body (the id of an id-only
// block carried to the data block after it), n at most (0: all).
func sseFrames(t *testing.T, br *bufio.Reader, n int) []string {
	t.Helper()
	var out []string
	id := ""
	for n == 0 || len(out) < n {
		line, err := br.ReadString('\n')
		if err != nil {
			return out
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, id+" "+strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

func do(t *testing.T, method, url, body string, header ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return http.DefaultClient.Do(req)
}

func mustRead(t *testing.T, method, url, body string, want int, header ...string) string {
	t.Helper()
	resp, err := do(t, method, url, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return string(b)
}

// turnBody is the body of a streamed run of user u1 on session with text;
// extra adds fields (",\"k\":v").
func turnBody(session, text, extra string) string {
	return `{"appName":"desk","userId":"u1","sessionId":"` + session + `","streaming":true,"newMessage":{"parts":[{"text":"` + text + `"}]}` + extra + `}`
}

// startRun posts a streamed run (of "hi" on s1) on base and returns its
// stream, read up to its first frame, and the run's invocation id.
func startRun(t *testing.T, base, extra string) (*http.Response, *bufio.Reader, string) {
	t.Helper()
	return startTurn(t, base, turnBody("s1", "hi", extra))
}

// startTurn posts a streamed run with body on base and returns its stream,
// read up to its first frame, and the run's invocation id.
func startTurn(t *testing.T, base, body string) (*http.Response, *bufio.Reader, string) {
	t.Helper()
	resp, err := do(t, http.MethodPost, base+"/run_sse", body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("/run_sse: %d", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	first := sseFrames(t, br, 1)
	if len(first) != 1 {
		t.Fatal("no first frame")
	}
	inv, _, _ := strings.Cut(first[0], ":")
	return resp, br, inv
}

// waitStatus polls base's runs list until run inv has status.
func waitStatus(t *testing.T, base, inv, status string) {
	t.Helper()
	waitRuns(t, base, "s1", func(list []listedRun) bool {
		return slices.Contains(list, listedRun{inv, status})
	})
}

// listedRun is a run as the runs list shows it.
type listedRun struct{ InvocationID, Status string }

// waitRuns polls base's list of session's runs until done says so, and
// returns it.
func waitRuns(t *testing.T, base, session string, done func([]listedRun) bool) []listedRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list []listedRun
		_ = json.Unmarshal([]byte(mustRead(t, http.MethodGet, base+"/apps/desk/users/u1/sessions/"+session+"/runs", "", 200)), &list)
		if done(list) {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runs of %s on %s: %v", session, base, list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two gateway binaries on one private Redis: a run started on A with
// onDisconnect continue finishes without its client and B serves a
// re-attach to it (exactly the frames after the cursor); a run running on
// A is cancelled on B (A's upstream call is aborted, the run ends
// cancelled with a CANCELLED frame).
func TestReplicasShareRuns(t *testing.T) {
	r := heldReplicas(t, "")
	up, a, b := r.up, r.start(t), r.start(t)
	mustRead(t, http.MethodPost, a+"/apps/desk/users/u1/sessions", `{"sessionId":"s1"}`, 200)
	runs := "/apps/desk/users/u1/sessions/s1/runs/"

	// onDisconnect continue on A; the client goes; the run finishes.
	resp, _, inv := startRun(t, a, `,"onDisconnect":"continue"`)
	<-up.started
	resp.Body.Close()
	up.release <- struct{}{}
	waitStatus(t, b, inv, "completed")
	attach := func(base, inv, cursor string) []string {
		resp, err := do(t, http.MethodGet, base+runs+inv+"/events", "", "Last-Event-ID", cursor)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("re-attach on %s: %d", base, resp.StatusCode)
		}
		return sseFrames(t, bufio.NewReader(resp.Body), 0)
	}
	all, onB := attach(a, inv, ""), attach(b, inv, inv+":0")
	if len(all) < 2 || !slices.Equal(all[1:], onB) {
		t.Errorf("re-attach on B after %s:0:\n%q\nall frames on A:\n%q", inv, onB, all)
	}
	for i, f := range onB {
		if !strings.HasPrefix(f, fmt.Sprintf("%s:%d ", inv, i+1)) {
			t.Errorf("frame %d on B: %s", i, f)
		}
	}

	// A run running on A, cancelled on B.
	resp, br, inv2 := startRun(t, a, "")
	defer resp.Body.Close()
	<-up.started
	var info struct{ Status string }
	if err := json.Unmarshal([]byte(mustRead(t, http.MethodPost, b+runs+inv2+"/cancel", "", 200)), &info); err != nil || info.Status != "cancelled" {
		t.Errorf("cancel on B: %+v %v", info, err)
	}
	select {
	case <-up.aborted:
	case <-time.After(30 * time.Second):
		t.Fatal("A's upstream call was not aborted")
	}
	if rest := sseFrames(t, br, 0); len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"error"`) {
		t.Errorf("A's client after the cancel: %q", rest)
	}
	frames := attach(b, inv2, "")
	if len(frames) == 0 || !strings.Contains(frames[len(frames)-1], `"errorCode":"CANCELLED"`) {
		t.Errorf("frames of the cancelled run on B: %q", frames)
	}
	waitStatus(t, a, inv2, "cancelled")
}
