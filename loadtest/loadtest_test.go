package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPct(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 90: 90, 99: 99, 100: 100, 0: 1} {
		if got := Pct(d, p); got != want {
			t.Errorf("Pct(%v) = %v, want %v", p, got, want)
		}
	}
	if Pct(nil, 50) != 0 {
		t.Error("Pct of nothing")
	}
}

func TestHasContent(t *testing.T) {
	for chunk, want := range map[string]bool{
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`: false,
		`{"choices":[{"delta":{"content":"tok0 "}}]}`:               true,
		`{"choices":[{"delta":{"tool_calls":[]}}]}`:                 false,
		`{"choices":[{"delta":{"content":"`:                         false,
	} {
		if got := hasContent([]byte(chunk)); got != want {
			t.Errorf("hasContent(%s) = %v", chunk, got)
		}
	}
}

// TestSmoke runs every scenario briefly through the real gateway binary and
// checks that no turn failed. It measures nothing.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway")
	}
	setups := "memory"
	if _, err := exec.LookPath("redis-server"); err == nil {
		setups += ",redis"
	}
	var out, errs strings.Builder
	args := []string{"-quick", "-sessions", setups, "-duration", "300ms", "-warmup", "0s", "-open-streams", "20", "-rate", "50", "-stream-rate", "20"}
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	report := out.String()
	if strings.Contains(setups, "redis") && !strings.Contains(report, "One Redis round trip") {
		t.Errorf("report lacks the Redis round trip:\n%s", report)
	}
	if strings.Contains(report, "agent tool | memory | net/http proxy") {
		t.Errorf("the floor proxy took the agent tool's turns:\n%s", report)
	}
	if strings.Contains(report, "Errors:") {
		t.Errorf("turns failed:\n%s", report)
	}
	for _, want := range []string{"non-streaming pass-through | memory | agentgate", "agent tool | memory | agentgate", "| agentgate | memory | 20 | 20 |", "| net/http proxy | – | 20 | – |",
		// The floor proxy takes the pass-through turns, and only those.
		"non-streaming pass-through | memory | net/http proxy", "streaming pass-through | memory | net/http proxy", "The hop alone", "one TCP round trip between two processes"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// flushHook records a response and calls onFlush with what each flush
// sends.
type flushHook struct {
	*httptest.ResponseRecorder
	sent    int
	onFlush func(chunk []byte)
}

func (f *flushHook) Flush() {
	f.ResponseRecorder.Flush()
	chunk := f.Body.Bytes()[f.sent:]
	f.sent += len(chunk)
	f.onFlush(chunk)
}

// A held stream ends once Release is called after its first delta, also
// when the call comes before the handler runs again after sending it (a
// client that sees the delta at once): the flush of the first delta calls
// Release itself.
func TestUpstreamReleaseRightAfterFirstDelta(t *testing.T) {
	up, err := StartUpstream(UpstreamConfig{Chunks: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	released := false
	w := &flushHook{ResponseRecorder: httptest.NewRecorder(), onFlush: func(chunk []byte) {
		if !released && hasContent(chunk) {
			released = true
			up.Release()
		}
	}}
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(userBody("hold", true)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		up.chat(w, r)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		up.Release() // let the handler go; the test has failed
		<-done
		t.Fatal("the held stream missed the Release that came right after its first delta")
	}
	if !released || !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
		t.Errorf("released %v; stream:\n%s", released, w.Body.String())
	}
}

// startRedis starts a server of its own each time (the one that answers
// reports the started process's pid), and stop ends it.
func TestStartRedisOwnServer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	pids := map[int]bool{}
	for range 2 {
		url, stop, err := startRedis(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		addr := strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")
		pid, err := redisPID(addr)
		if err != nil {
			stop()
			t.Fatalf("INFO from %s: %v", addr, err)
		}
		pids[pid] = true
		stop()
		if _, err := redisPID(addr); err == nil {
			t.Errorf("a server still answers on %s after stop", addr)
		}
	}
	if len(pids) != 2 {
		t.Errorf("two starts answered with pids %v, want two servers", pids)
	}
}
