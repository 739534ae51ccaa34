package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shutdownConfig serves two streaming models on a slow scripted provider:
// "quick" finishes its reply well within the grace period, "slow" does not.
var shutdownConfig = `
server: {shutdown_grace: 2s, keepalive_interval: 1h}
log: {level: info}
providers:
  - name: demo
    type: scripted
    chunk_size: 4
    chunk_delay: 25ms
    rules:
      - {agent: quick, reply: "a short reply."}
      - {agent: slow, reply: "` + slowReply + `"}
agents:
  - {name: quick, model: demo/quick-v1}
  - {name: slow, model: demo/slow-v1}
models:
  - {id: quick, agent: quick}
  - {id: slow, agent: slow}
`

// slowReply streams for about 10 s (400 chunks of 4 characters, 25 ms apart).
var slowReply = strings.Repeat("slow", 400)

// TestSIGTERM runs the real binary: on SIGTERM it stops accepting, lets a
// running stream finish within server.shutdown_grace, ends the stream still
// open after the grace with an error frame, and exits 0.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildLikeImage(t, dir, "test")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(shutdownConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfg, "-addr", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	// An io.Pipe rather than StdoutPipe: Wait then waits for every line to
	// be copied instead of closing the pipe under the reader.
	stdout, stdoutW := io.Pipe()
	cmd.Stdout = stdoutW
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The first log line names the address; the rest are kept.
	logs := make(chan map[string]any, 1024)
	addrCh := make(chan string, 1)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			if rec["msg"] == "agentgate listening" {
				addrCh <- rec["addr"].(string)
			}
			logs <- rec
		}
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(30 * time.Second):
		t.Fatalf("gateway did not start: %s", stderr.String())
	}
	base := "http://" + addr

	quick, slow := openStream(t, base, "quick"), openStream(t, base, "slow")
	const probes = 3 // access lines logged just before the signal
	for range probes {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		stdoutW.Close()
		exited <- err
	}()

	// The listener closes at once: new connections are refused while the
	// streams still run.
	refused := false
	for i := 0; i < 250 && !refused; i++ {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			refused = true
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	if !refused {
		t.Error("new connections still accepted after SIGTERM")
	}

	q := quick.rest(t)
	if !strings.Contains(q.text, "a short reply.") || q.last != "[DONE]" || q.err != "" {
		t.Errorf("quick stream did not finish normally: text %q, error %q, last %q", q.text, q.err, q.last)
	}
	s := slow.rest(t)
	if !strings.Contains(s.err, `"code":"shutting_down"`) || s.last != "[DONE]" {
		t.Errorf("slow stream not ended with an error frame then [DONE]: error %q, last %q", s.err, s.last)
	}
	if len(s.text) == 0 || len(s.text) >= len(slowReply) {
		t.Errorf("slow stream sent %d of %d characters; want part of it", len(s.text), len(slowReply))
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v (want status 0); stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gateway did not exit")
	}
	// Every line reached stdout (the logs go out in batches: the last
	// ones when the gateway stops): the access lines of the probes and of
	// both streams, the slow one's logged as the grace ended.
	var msgs []string
	routes := map[string]int{}
	for rec := range logs {
		msgs = append(msgs, rec["msg"].(string))
		if rec["msg"] == "request" {
			routes[rec["route"].(string)]++
		}
	}
	if !containsInOrder(msgs, "agentgate listening", "shutting down", "request", "stopped") {
		t.Errorf("log messages %q", msgs)
	}
	if want := map[string]int{"/healthz": probes, "/v1/chat/completions": 2}; !cmp.Equal(routes, want) {
		t.Errorf("access lines by route %v, want %v", routes, want)
	}
}

// sseStream is a streaming chat completion being read.
type sseStream struct {
	resp *http.Response
	sc   *bufio.Scanner
	text string
}

type streamEnd struct{ text, err, last string }

// openStream starts a streaming completion and reads until its first
// content delta, so the stream is known to be running.
func openStream(t *testing.T, base, model string) *sseStream {
	t.Helper()
	body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"go"}]}`
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", model, resp.StatusCode, b)
	}
	s := &sseStream{resp: resp, sc: bufio.NewScanner(resp.Body)}
	s.sc.Buffer(make([]byte, 1<<20), 1<<20)
	for s.sc.Scan() {
		if d, ok := strings.CutPrefix(s.sc.Text(), "data: "); ok && s.add(d) != "" {
			return s
		}
	}
	t.Fatalf("%s: stream ended before any content", model)
	return nil
}

// add records a data frame; it returns the frame's content delta.
func (s *sseStream) add(data string) string {
	var chunk struct {
		Choices []struct {
			Delta struct{ Content string } `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal([]byte(data), &chunk) != nil || len(chunk.Choices) == 0 {
		return ""
	}
	s.text += chunk.Choices[0].Delta.Content
	return chunk.Choices[0].Delta.Content
}

// rest reads the stream to its end.
func (s *sseStream) rest(t *testing.T) streamEnd {
	t.Helper()
	var end streamEnd
	for s.sc.Scan() {
		d, ok := strings.CutPrefix(s.sc.Text(), "data: ")
		if !ok {
			continue
		}
		end.last = d
		if strings.HasPrefix(d, `{"error"`) {
			end.err = d
			continue
		}
		s.add(d)
	}
	end.text = s.text
	return end
}

func containsInOrder(have []string, want ...string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && h == want[i] {
			i++
		}
	}
	return i == len(want)
}

// lastFrame says how a stream of "id data" frames (sseFrames) ended: the
// errorCode of a native event, "<type> <error code>" of a Responses event,
// "error" for a connection's trailing error frame, else the last data.
func lastFrame(frames []string) string {
	if len(frames) == 0 {
		return "no frame"
	}
	_, data, _ := strings.Cut(frames[len(frames)-1], " ")
	var ev struct {
		ErrorCode string          `json:"errorCode"`
		Type      string          `json:"type"`
		Error     json.RawMessage `json:"error"`
		Response  struct {
			Error struct{ Code string } `json:"error"`
		} `json:"response"`
	}
	_ = json.Unmarshal([]byte(data), &ev)
	switch {
	case ev.ErrorCode != "":
		return ev.ErrorCode
	case ev.Type != "":
		return ev.Type + " " + ev.Response.Error.Code
	case ev.Error != nil:
		return "error"
	}
	return data
}

// taskState is the state of the task of an A2A answer, and its status
// message's text.
func taskState(body string) string {
	var res struct {
		Result struct {
			Task struct {
				Status struct {
					State   string
					Message struct{ Parts []struct{ Text string } }
				}
			}
		}
	}
	_ = json.Unmarshal([]byte(body), &res)
	st := res.Result.Task.Status
	if len(st.Message.Parts) > 0 {
		return st.State + ": " + st.Message.Parts[0].Text
	}
	return st.State
}

// runClients are the clients of runs a test stops a gateway under: each
// reads its answer in the background, and says how it ended.
type runClients struct {
	t   *testing.T
	wg  sync.WaitGroup
	mu  sync.Mutex
	got map[string]string
}

func newRunClients(t *testing.T) *runClients { return &runClients{t: t, got: map[string]string{}} }

// open sends a request and returns its body, read up to nothing yet.
func (rc *runClients) open(method, url, body string) (*bufio.Reader, io.Closer) {
	rc.t.Helper()
	resp, err := do(rc.t, method, url, body)
	if err != nil {
		rc.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rc.t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return bufio.NewReader(resp.Body), resp.Body
}

// follow reads the rest of a stream in the background; how it ended
// (lastFrame) is got[name].
func (rc *runClients) follow(name string, br *bufio.Reader, body io.Closer) {
	rc.do(name, func() string {
		defer body.Close()
		return lastFrame(sseFrames(rc.t, br, 0))
	})
}

// follows opens a stream and follows it.
func (rc *runClients) follows(name, url string) {
	rc.t.Helper()
	br, body := rc.open(http.MethodGet, url, "")
	rc.follow(name, br, body)
}

// do runs a client in the background; what it returns is got[name].
func (rc *runClients) do(name string, client func() string) {
	rc.wg.Add(1)
	go func() {
		defer rc.wg.Done()
		end := client()
		rc.mu.Lock()
		rc.got[name] = end
		rc.mu.Unlock()
	}()
}

// ends waits for every client to end (at most a minute) and returns how
// each ended.
func (rc *runClients) ends() map[string]string {
	rc.t.Helper()
	done := make(chan struct{})
	go func() { rc.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.t.Fatalf("clients still waiting; those that ended: %v", rc.got)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.got
}

// a2aSend sends an A2A message to model on base, in context (a new
// session of user u1) and returns the answer; immediately asks for the
// task at once (returnImmediately).
func a2aSend(t *testing.T, base, model, context string, immediately bool) string {
	t.Helper()
	return mustRead(t, http.MethodPost, base+"/a2a/"+model, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{
		"message":{"messageId":"m-%s","role":"user","contextId":"%s","parts":[{"kind":"text","text":"hi"}]},
		"configuration":{"returnImmediately":%t},"metadata":{"user":"u1"}}}`, context, context, immediately), 200)
}

// a2aTaskID is the id of the task of an A2A answer.
func a2aTaskID(t *testing.T, body string) string {
	t.Helper()
	var sent struct {
		Result struct{ Task struct{ ID string } }
	}
	_ = json.Unmarshal([]byte(body), &sent)
	if sent.Result.Task.ID == "" {
		t.Fatalf("no task in %s", body)
	}
	return sent.Result.Task.ID
}

// backgroundResponse creates a background response of model on base and
// returns its id.
func backgroundResponse(t *testing.T, base, model string) string {
	t.Helper()
	var created struct{ ID, Status string }
	_ = json.Unmarshal([]byte(mustRead(t, http.MethodPost, base+"/v1/responses", `{"model":"`+model+`","input":"hi","background":true}`, 200)), &created)
	if created.ID == "" || created.Status != "in_progress" {
		t.Fatalf("background response created %+v", created)
	}
	return created.ID
}

// runsOf is the runs route of a session of user u1.
func runsOf(base, model, session string) string {
	return base + "/apps/" + model + "/users/u1/sessions/" + session + "/runs"
}

// await receives n signals from ch (calls an upstream started or saw
// aborted), failing the test if they take more than half a minute.
func await(t *testing.T, ch <-chan struct{}, n int, what string) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: %d of %d", what, i, n)
		}
	}
}

// waitExit waits for a gateway process to exit and fails unless it did
// with status 0.
func waitExit(t *testing.T, proc *os.Process) {
	t.Helper()
	exited := make(chan *os.ProcessState, 1)
	go func() { st, _ := proc.Wait(); exited <- st }()
	select {
	case st := <-exited:
		if st == nil || !st.Success() {
			t.Fatalf("exit after SIGTERM: %v", st)
		}
	case <-time.After(time.Minute):
		t.Fatal("no exit after SIGTERM")
	}
}

// TestSIGTERMEndsEveryKindOfRun stops the real binary with SIGTERM while
// one run of each kind waits on the upstream: a /run_sse run with its
// client attached, one whose client left (onDisconnect: continue), a
// background response, one streamed to its client, an A2A task answered
// at once (returnImmediately) and one whose client waits for it. Clients
// attached to them again follow them, on the same replica (memory) or on
// another (Redis). After server.shutdown_grace every upstream call is
// aborted and every run ends with SHUTDOWN, as each of their clients sees
// it, and the process exits 0. With Redis, a replica started after the
// stop (a restart) lists the runs failed, re-attaches to SHUTDOWN as
// their last frame, answers the response failed with shutting_down (also
// replayed), holds the sessions whole (the user's message, nothing of an
// answer only streamed) and free: a new turn runs on one at once.
func TestSIGTERMEndsEveryKindOfRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildGateway(t)
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			up := newHeldUpstream()
			upSrv := httptest.NewServer(up)
			defer upSrv.Close()
			cfg := filepath.Join(t.TempDir(), "config.yaml")
			conf := fmt.Sprintf(runsReplicaConfig, upSrv.URL) + "server: {shutdown_grace: 300ms}\n"
			if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			var env []string
			if backend == "redis" {
				redisURL, _ := startRedis(t)
				env = []string{"REDIS_URL=" + redisURL, "AGENTGATE_CONFIG="}
			}
			a, proc := startGatewayProcess(t, bin, cfg, env...)
			watch := a // where clients attach again while A runs
			if backend == "redis" {
				watch = startGateway(t, bin, cfg, env...)
			}
			for _, s := range []string{"s-att", "s-cont"} {
				mustRead(t, http.MethodPost, a+"/apps/desk/users/u1/sessions", `{"sessionId":"`+s+`"}`, 200)
			}
			rc := newRunClients(t)
			runSSE := func(session, extra string) (string, *bufio.Reader, io.Closer) {
				br, body := rc.open(http.MethodPost, a+"/run_sse", `{"appName":"desk","userId":"u1","sessionId":"`+session+
					`","streaming":true,"newMessage":{"parts":[{"text":"hi"}]}`+extra+`}`)
				first := sseFrames(t, br, 1)
				if len(first) != 1 {
					t.Fatalf("no first frame on %s", session)
				}
				inv, _, _ := strings.Cut(first[0], ":")
				return inv, br, body
			}
			attachedInv, br, body := runSSE("s-att", "")
			rc.follow("native attached", br, body)
			contInv, _, body := runSSE("s-cont", `,"onDisconnect":"continue"`)
			body.Close() // the client leaves; the run goes on
			resp := backgroundResponse(t, a, "desk")
			br, body = rc.open(http.MethodPost, a+"/v1/responses", `{"model":"desk","input":"hi","background":true,"stream":true}`)
			rc.follow("response streamed", br, body)
			task := a2aTaskID(t, a2aSend(t, a, "desk", "c-task", true))
			rc.do("task waited for", func() string { return taskState(a2aSend(t, a, "desk", "c-block", false)) })
			await(t, up.started, 6, "the runs that called the upstream")
			rc.follows("native continued, re-attached", runsOf(watch, "desk", "s-cont")+"/"+contInv+"/events")
			rc.follows("task, re-attached", runsOf(watch, "desk", "c-task")+"/"+task+"/events")
			rc.follows("response, re-attached", watch+"/v1/responses/"+resp+"?stream=true")

			if err := proc.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitExit(t, proc)
			want := map[string]string{
				"native attached":               "error",
				"native continued, re-attached": "SHUTDOWN",
				"response streamed":             "response.failed shutting_down",
				"response, re-attached":         "response.failed shutting_down",
				"task, re-attached":             "SHUTDOWN",
				"task waited for":               "TASK_STATE_FAILED: The server is shutting down; retry the request.",
			}
			if d := cmp.Diff(want, rc.ends()); d != "" {
				t.Errorf("what the clients saw of the runs SIGTERM ended (-want +got):\n%s", d)
			}
			await(t, up.aborted, 6, "the upstream calls aborted")
			if backend != "redis" {
				return
			}

			// The restart: a replica started after the stop.
			c := startGateway(t, bin, cfg, env...)
			after := map[string]string{}
			for session, inv := range map[string]string{"s-att": attachedInv, "s-cont": contInv, "c-task": task} {
				var list []struct{ InvocationID, Status string }
				_ = json.Unmarshal([]byte(mustRead(t, http.MethodGet, runsOf(c, "desk", session), "", 200)), &list)
				br, body := rc.open(http.MethodGet, runsOf(c, "desk", session)+"/"+inv+"/events", "")
				after[session] = fmt.Sprintf("%+v %s", list, lastFrame(sseFrames(t, br, 0)))
				body.Close()
			}
			var stored struct {
				Status string
				Error  struct{ Code string }
			}
			_ = json.Unmarshal([]byte(mustRead(t, http.MethodGet, c+"/v1/responses/"+resp, "", 200)), &stored)
			after["response"] = stored.Status + " " + stored.Error.Code
			br, body = rc.open(http.MethodGet, c+"/v1/responses/"+resp+"?stream=true", "")
			after["response replayed"] = lastFrame(sseFrames(t, br, 0))
			body.Close()
			wantAfter := map[string]string{
				"s-att":             "[{InvocationID:" + attachedInv + " Status:failed}] SHUTDOWN",
				"s-cont":            "[{InvocationID:" + contInv + " Status:failed}] SHUTDOWN",
				"c-task":            "[{InvocationID:" + task + " Status:failed}] SHUTDOWN",
				"response":          "failed shutting_down",
				"response replayed": "response.failed shutting_down",
			}
			if d := cmp.Diff(wantAfter, after); d != "" {
				t.Errorf("the runs on a replica started after the stop (-want +got):\n%s", d)
			}
			var sess struct {
				Events []struct {
					Author  string
					Partial bool
					Content struct{ Parts []struct{ Text string } }
				}
			}
			_ = json.Unmarshal([]byte(mustRead(t, http.MethodGet, c+"/apps/desk/users/u1/sessions/s-cont", "", 200)), &sess)
			if len(sess.Events) != 1 || sess.Events[0].Author != "user" || sess.Events[0].Partial ||
				len(sess.Events[0].Content.Parts) != 1 || sess.Events[0].Content.Parts[0].Text != "hi" {
				t.Errorf("the session of a run SIGTERM ended: %+v", sess.Events)
			}
			close(up.release)
			br, body = rc.open(http.MethodPost, c+"/run_sse", `{"appName":"desk","userId":"u1","sessionId":"s-cont","streaming":true,"newMessage":{"parts":[{"text":"again"}]}}`)
			if frames := sseFrames(t, br, 0); !strings.Contains(lastFrame(frames), `"text":"ab"`) {
				t.Errorf("a new turn on the session after the stop: %q", frames)
			}
			body.Close()
		})
	}
}

// twoUpstreamsConfig serves "desk" on one upstream and "slow" on another.
const twoUpstreamsConfig = `
log: {level: warn}
server: {shutdown_grace: %s}
providers:
  - {name: up, type: openai, base_url: "%s/v1", api_key: k, max_retries: 0}
  - {name: slowup, type: openai, base_url: "%s/v1", api_key: k, max_retries: 0}
agents:
  - {name: desk, model: up/m}
  - {name: slow, model: slowup/m}
models:
  - {id: desk, agent: desk}
  - {id: slow, agent: slow}
`

// SIGTERM on a replica that holds no request open, only runs that go on
// without one (background responses, A2A tasks answered at once), and a
// client following a run of another replica: the replica stops accepting
// at once and ends that client's stream (after a whole frame: it
// re-attaches to the other replica after its cursor and misses nothing),
// but stays for server.shutdown_grace; the runs that finish within it
// complete, the others then end with SHUTDOWN, as clients following them
// from another replica see; then it exits 0.
func TestSIGTERMGraceCoversRunsWithoutARequest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	redisURL, _ := startRedis(t)
	quick, slow := newHeldUpstream(), newHeldUpstream()
	quickSrv, slowSrv := httptest.NewServer(quick), httptest.NewServer(slow)
	defer quickSrv.Close()
	defer slowSrv.Close()
	defer close(slow.release)
	bin := buildGateway(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(twoUpstreamsConfig, "5s", quickSrv.URL, slowSrv.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_URL=" + redisURL, "AGENTGATE_CONFIG="}
	a, proc := startGatewayProcess(t, bin, cfg, env...)
	b := startGateway(t, bin, cfg, env...)
	rc := newRunClients(t)
	for _, model := range []string{"desk", "slow"} {
		resp := backgroundResponse(t, a, model)
		task := a2aTaskID(t, a2aSend(t, a, model, "c-"+model, true))
		rc.follows(model+" response", b+"/v1/responses/"+resp+"?stream=true")
		rc.follows(model+" task", runsOf(b, model, "c-"+model)+"/"+task+"/events")
	}
	// A run on B (its client gone), followed on A.
	mustRead(t, http.MethodPost, b+"/apps/slow/users/u1/sessions", `{"sessionId":"s-b"}`, 200)
	br, body := rc.open(http.MethodPost, b+"/run_sse", `{"appName":"slow","userId":"u1","sessionId":"s-b","streaming":true,`+
		`"newMessage":{"parts":[{"text":"hi"}]},"onDisconnect":"continue"}`)
	first := sseFrames(t, br, 1)
	body.Close()
	if len(first) != 1 {
		t.Fatal("no first frame of the run on B")
	}
	inv, _, _ := strings.Cut(first[0], ":")
	await(t, quick.started, 2, "the runs that called the quick upstream")
	await(t, slow.started, 3, "the runs that called the slow upstream")
	br, body = rc.open(http.MethodGet, runsOf(a, "slow", "s-b")+"/"+inv+"/events", "")
	onA := sseFrames(t, br, 1)
	followed := make(chan []string, 1)
	go func() { defer body.Close(); followed <- sseFrames(t, br, 0) }()

	if err := proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The shutdown began once A refuses connections, and it ended the
	// stream following B's run; the quick runs then finish within the
	// grace.
	addr := strings.TrimPrefix(a, "http://")
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case rest := <-followed:
		onA = append(onA, rest...)
	case <-time.After(time.Minute):
		t.Fatal("the stream following B's run on A was not ended")
	}
	close(quick.release)
	waitExit(t, proc)
	want := map[string]string{
		"desk response": "response.completed ",
		"desk task":     "ab",
		"slow response": "response.failed shutting_down",
		"slow task":     "SHUTDOWN",
	}
	got := rc.ends()
	if strings.Contains(got["desk task"], `"text":"ab"`) && !strings.Contains(got["desk task"], `"partial":true`) {
		got["desk task"] = "ab" // the task's last frame: its answer
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("how the runs ended, seen from another replica (-want +got):\n%s", d)
	}
	await(t, slow.aborted, 2, "the slow upstream calls of A aborted")

	// The client that followed B's run on A re-attaches on B after its
	// cursor: the frames go on from there, to the end (a cancel).
	cursor, _, _ := strings.Cut(onA[len(onA)-1], " ")
	if end := lastFrame(onA); end == "SHUTDOWN" || end == "CANCELLED" || !strings.HasPrefix(cursor, inv+":") {
		t.Fatalf("the frames of B's run followed on A: %q", onA)
	}
	resp, err := do(t, http.MethodGet, runsOf(b, "slow", "s-b")+"/"+inv+"/events", "", "Last-Event-ID", cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	mustRead(t, http.MethodPost, runsOf(b, "slow", "s-b")+"/"+inv+"/cancel", "", 200)
	rest := sseFrames(t, bufio.NewReader(resp.Body), 0)
	n, _ := strconv.Atoi(strings.TrimPrefix(cursor, inv+":"))
	if len(rest) == 0 || !strings.HasPrefix(rest[0], fmt.Sprintf("%s:%d ", inv, n+1)) || lastFrame(rest) != "CANCELLED" {
		t.Errorf("re-attached on B after %s: %q", cursor, rest)
	}
}
