package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/sessions"
	sessionsredis "github.com/agentgate/agentgate/sessions/redis"
)

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a private redis-server on a free port for this test.
func startRedis(t testing.TB) (url string, stop func()) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	port := freePort(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	}
	t.Cleanup(stop)
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port))
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port), stop
}

func waitTCP(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never came up: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// buildGateway compiles the gateway binary once per test.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agentgate")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startGateway runs the binary on a free port with env and returns its URL.
func startGateway(t *testing.T, bin, config string, env ...string) string {
	t.Helper()
	url, _ := startGatewayProcess(t, bin, config, env...)
	return url
}

// startGatewayProcess is startGateway that also returns the process, for a
// test to kill.
func startGatewayProcess(t *testing.T, bin, config string, env ...string) (string, *os.Process) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "-config", config, "-addr", addr)
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	waitTCP(t, addr)
	return "http://" + addr, cmd.Process
}

const replicaConfig = `
sessions: {backend: memory}
log: {level: warn}
providers:
  - name: demo
    type: scripted
    rules:
      - {agent: desk, reply: "ack {last}"}
agents:
  - {name: desk, model: demo/desk-v1}
models:
  - {id: desk, agent: desk}
`

func chat(t *testing.T, base, session, text string) (int, string) {
	t.Helper()
	resp, body := postChat(t, base, session, fmt.Sprintf(`{"model":"desk","messages":[{"role":"user","content":%q}]}`, text))
	return resp.StatusCode, string(body)
}

// postChat posts a chat completion on session; it returns the response
// (its body read and closed) and the body.
func postChat(t *testing.T, base, session, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// Two gateway processes sharing one Redis serve one session alternately;
// after 100 turns the stored events are exactly the 200 expected, in order.
func TestReplicasShareRedisSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	redisURL, _ := startRedis(t)
	bin := buildGateway(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(replicaConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_URL=" + redisURL, "AGENTGATE_CONFIG="}
	a := startGateway(t, bin, cfg, env...)
	b := startGateway(t, bin, cfg, env...)

	const turns = 100
	for i := range turns {
		base := a
		if i%2 == 1 {
			base = b
		}
		status, body := chat(t, base, "shared-1", fmt.Sprintf("turn %d", i))
		if status != 200 || !strings.Contains(body, fmt.Sprintf("ack turn %d", i)) {
			t.Fatalf("turn %d on %s: %d %s", i, base, status, body)
		}
	}

	store, err := sessionsredis.New(sessionsredis.Config{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sess, err := store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: "shared-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.Events) != 2*turns {
		t.Fatalf("stored %d events, want %d", len(sess.Events), 2*turns)
	}
	for i := range turns {
		u, r := sess.Events[2*i], sess.Events[2*i+1]
		if u.Author != "user" || u.Text() != fmt.Sprintf("turn %d", i) || r.Author != "desk" || r.Text() != fmt.Sprintf("ack turn %d", i) {
			t.Fatalf("turn %d stored as %s:%q %s:%q", i, u.Author, u.Text(), r.Author, r.Text())
		}
	}
}

// With Redis down at start the gateway starts and /readyz answers 503; a
// turn gets a clear 503; once Redis is back it recovers without a restart.
func TestRedisOutageAndRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	port := freePort(t)
	redisURL := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	bin := buildGateway(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(replicaConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	gw := startGateway(t, bin, cfg, "REDIS_URL="+redisURL)

	resp, err := http.Get(gw + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("/readyz with Redis down: %d, want 503", resp.StatusCode)
	}
	status, body := chat(t, gw, "s-out", "hello")
	if status != 503 || !strings.Contains(body, "session_store_unavailable") {
		t.Errorf("turn with Redis down: %d %s", status, body)
	}

	// Redis comes up on the configured port.
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	waitTCP(t, fmt.Sprintf("127.0.0.1:%d", port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(gw + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz never recovered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status, body := chat(t, gw, "s-out", "hello again"); status != 200 {
		t.Errorf("turn after recovery: %d %s", status, body)
	}
}
