package redis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer is a private redis-server on a free loopback port, started and
// stopped by the test; it never touches the machine's shared Redis.
type testServer struct {
	t    testing.TB
	port int
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
	// exited closes when cmd's process has been waited for.
	exited chan struct{}
	log    *lockedBuffer
}

// lockedBuffer is the server's output: written by exec's copier, read by
// the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// errPortTaken reports a server that lost its port (or cluster port) to
// another process between freePort and its bind.
var errPortTaken = errors.New("port taken")

// needBinary skips the test when name is not installed, except under CI
// (.ci/run installs redis), where a missing binary is a failure.
func needBinary(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: %v", name, err)
		}
		t.Skipf("%s is not installed", name)
	}
}

// startServer starts redis-server on a free port with no persistence unless
// extra says otherwise (extra options are appended to the command line).
// A port taken by another process before the server binds it is replaced
// by a new one, up to three times.
func startServer(t testing.TB, extra ...string) *testServer {
	t.Helper()
	return startServerWith(t, func() []string { return extra })
}

// startServerWith is startServer with options made afresh for each
// attempt (options that name ports of their own).
func startServerWith(t testing.TB, extra func() []string) *testServer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, err := tryStartServerOn(t, freePort(t), extra()...)
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatal(err)
		}
	}
}

// startServerOn is startServer on a given port.
func startServerOn(t testing.TB, port int, extra ...string) *testServer {
	t.Helper()
	s, err := tryStartServerOn(t, port, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryStartServerOn(t testing.TB, port int, extra ...string) (*testServer, error) {
	t.Helper()
	needBinary(t, "redis-server")
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}
	s := &testServer{t: t, port: port, args: append(args, extra...)}
	if err := s.start(); err != nil {
		return nil, err
	}
	t.Cleanup(s.Stop)
	return s, nil
}

// URL is the server's address as a Config.URL; query is added as is.
func (s *testServer) URL(query string) string {
	u := "redis://" + s.Addr() + "/0"
	if query != "" {
		u += "?" + query
	}
	return u
}

// Addr is host:port.
func (s *testServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Start (re)starts the server on its port and waits until it answers.
func (s *testServer) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *testServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	s.log = &lockedBuffer{}
	cmd := exec.Command("redis-server", s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %v", err)
	}
	s.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.exited = exited
	if err := waitPing(s.Addr(), 10*time.Second); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		s.cmd = nil
		log := s.log.String()
		if strings.Contains(log, "Address already in use") {
			return fmt.Errorf("redis-server on %d: %w\n%s", s.port, errPortTaken, log)
		}
		return fmt.Errorf("redis-server on %d did not come up: %v\n%s", s.port, err, log)
	}
	return nil
}

// Stop kills the server (SIGKILL: a crash, not a shutdown) and waits for it.
func (s *testServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitPing waits until addr answers PING.
func waitPing(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		last = ping(addr)
		if last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return last
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// startCluster starts a 3-master Redis Cluster (no replicas) on free ports
// and returns a Config.URL for it.
func startCluster(t *testing.T) string {
	t.Helper()
	needBinary(t, "redis-server")
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed; cannot form a cluster")
	}
	dir := t.TempDir()
	var addrs []string
	for i := range 3 {
		s := startServerWith(t, func() []string {
			return []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(freePort(t)),
				"--cluster-config-file", fmt.Sprintf("%s/nodes-%d-%d.conf", dir, i, time.Now().UnixNano()), "--cluster-node-timeout", "2000"}
		})
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		if err := waitClusterOK(a, 15*time.Second); err != nil {
			t.Fatalf("cluster node %s: %v", a, err)
		}
	}
	return "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
}

func waitClusterOK(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strings.TrimPrefix(addr, "127.0.0.1:"),
			"cluster", "info").Output()
		if err == nil && bytes.Contains(out, []byte("cluster_state:ok")) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cluster_state not ok after %v", within)
}

func itoa(n int) string { return strconv.Itoa(n) }

// startSentinel starts a master and one Sentinel watching it as "mymaster"
// and returns a Config.URL that reaches the master through the Sentinel.
func startSentinel(t *testing.T) string {
	t.Helper()
	master := startServer(t)
	port := freePort(t)
	conf := fmt.Sprintf("%s/sentinel.conf", t.TempDir())
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\nsentinel monitor mymaster %s %d 1\n", port, "127.0.0.1", master.port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, port: port, args: []string{conf, "--sentinel"}}
	s.Start()
	t.Cleanup(s.Stop)
	return fmt.Sprintf("redis://%s?master_name=mymaster", s.Addr())
}
