package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// lookupFrom is an environment of the variables in m.
func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// testGateway is the gateway run in the test process, as main runs it.
type testGateway struct {
	base           string // http://<the address it listens on>
	stdout, stderr syncBuffer
	cancel         context.CancelFunc
	done           chan int
}

// runGateway runs the gateway with the command line args in the
// environment env until stop (or the end of the test); it returns once the
// gateway listens.
func runGateway(t testing.TB, args []string, env map[string]string) *testGateway {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gw := &testGateway{cancel: cancel, done: make(chan int, 1)}
	t.Cleanup(func() { gw.stop(t) })
	ready := make(chan string, 1)
	go func() {
		gw.done <- run(ctx, args, lookupFrom(env), &gw.stdout, &gw.stderr, ready)
	}()
	select {
	case addr := <-ready:
		gw.base = "http://" + addr
	case code := <-gw.done:
		t.Fatalf("exited %d: %s", code, gw.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not ready")
	}
	return gw
}

// buildLikeImage builds the gateway into dir as the Dockerfile does
// (static, trimmed paths, no symbol table, version stamped), so that the
// tests that run the binary, and the load test, share one build cache entry
// and run what the image ships. It returns the binary's path.
func buildLikeImage(t *testing.T, dir, version string) string {
	t.Helper()
	bin := filepath.Join(dir, "agentgate")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, "./cmd/gateway")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runConfig writes cfg to a file and runs the gateway on it, on a free
// port of 127.0.0.1, like runGateway.
func runConfig(t testing.TB, cfg string, env map[string]string) *testGateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return runGateway(t, []string{"-config", path, "-addr", "127.0.0.1:0"}, env)
}

// stop cancels the run and checks that it ends with status 0.
func (gw *testGateway) stop(t testing.TB) {
	t.Helper()
	if gw.done == nil {
		return
	}
	gw.cancel()
	select {
	case code := <-gw.done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, gw.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Error("no exit after cancel")
	}
	gw.done = nil
}

// syncBuffer is a log sink safe for the logger and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
