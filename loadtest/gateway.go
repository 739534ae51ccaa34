package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// gatewayConfig is the generated config.yaml: one openai-type provider
// pointing at the mock upstream, and the scenarios' trees.
func gatewayConfig(upstreamURL, sessionsBackend, redisURL, logLevel string) string {
	sess := "sessions: {backend: memory}"
	if sessionsBackend == "redis" {
		sess = fmt.Sprintf("sessions: {backend: redis, redis_url: %q, key_prefix: \"loadtest:\", ttl: 1h}", redisURL)
	}
	return fmt.Sprintf(`server: {addr: "127.0.0.1:0", shutdown_grace: 5s}
%s
log: {level: %s}
providers:
  - {name: mock, type: openai, base_url: %q, api_key: mock-key, max_retries: 0, timeout: 60s}
agents:
  - {name: pass, model: mock/pass, description: Answers directly., instruction: Answer.}
  - {name: router, model: mock/router, description: Routes., instruction: Route., sub_agents: [worker]}
  - {name: worker, model: mock/worker, description: Does the work., instruction: Work.}
  - {name: caller, model: mock/caller, description: Calls a helper., instruction: Use the helper., agent_tools: [helper]}
  - {name: helper, model: mock/helper, description: Looks things up., instruction: Look it up.}
  - {name: hold, model: mock/hold, description: Streams slowly., instruction: Stream.}
models:
  - {id: pass, agent: pass}
  - {id: transfer, agent: router, route_next_turn: root}
  - {id: agent-tool, agent: caller}
  - {id: hold, agent: hold}
`, sess, logLevel, upstreamURL)
}

// Child is a server the load test runs as a child process: agentgate, or
// the floor proxy.
type Child struct {
	cmd  *exec.Cmd
	base string
	echo string // the floor proxy's TCP echo address
	done chan error
}

// buildBinary compiles the main package pkg ("./cmd/gateway") of the
// module in root into dir/name, static and with trimmed paths as the
// Dockerfile builds the image's binary: the figures are that binary's.
func buildBinary(root, dir, pkg, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// moduleRoot finds the directory holding go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the agentgate module: run from the repository")
	}
	return filepath.Dir(mod), nil
}

// StartGateway runs the agentgate binary bin on config and waits until it
// listens. extraArgs are appended to the command line.
func StartGateway(bin, config string, extraArgs ...string) (*Child, error) {
	return startChild(bin, append([]string{"-config", config}, extraArgs...), filepath.Dir(config), "agentgate listening")
}

// StartFloorProxy runs the floorproxy binary bin in front of upstream (the
// API root) and waits until it listens; its output goes to a file in dir.
func StartFloorProxy(bin, upstream, dir string) (*Child, error) {
	return startChild(bin, []string{"-upstream", upstream}, dir, "floorproxy listening")
}

// startChild runs bin with args and waits for its JSON log line whose msg
// is ready and whose addr is where it listens. The child's output goes to
// a file in dir, not through this process: at a thousand requests a
// second, reading it here would take CPU from the load generator and the
// mock on one path only.
func startChild(bin string, args []string, dir, ready string) (*Child, error) {
	cmd := exec.Command(bin, args...)
	// A clean environment (REDIS_URL would switch the sessions), except
	// the Go runtime's knobs and a pprof address, for experiments.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GOGC" || k == "GOMEMLIMIT" || k == "GOMAXPROCS" || k == "GODEBUG" || k == "AGENTGATE_PPROF_ADDR" || k == "FLOORPROXY_PPROF_ADDR" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs, err := os.CreateTemp(dir, filepath.Base(bin)+"-*.log")
	if err != nil {
		return nil, err
	}
	defer logs.Close() // the child has its own descriptor
	cmd.Stdout = logs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Child{cmd: cmd, done: make(chan error, 1)}
	go func() { g.done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		if a, echo := listeningAddr(logs.Name(), ready); a != "" {
			g.base, g.echo = "http://"+a, echo
			return g, nil
		}
		select {
		case err := <-g.done:
			return nil, fmt.Errorf("%s exited: %v\n%s", filepath.Base(bin), err, stderr.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			return nil, fmt.Errorf("%s did not start within 60s", filepath.Base(bin))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// listeningAddr returns the addresses in the log line whose msg is ready
// (addr, and echo if the line has it), once the log file at path holds it.
func listeningAddr(path, ready string) (addr, echo string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct{ Msg, Addr, Echo string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == ready {
			return rec.Addr, rec.Echo
		}
	}
	return "", ""
}

// Stop sends SIGTERM and waits for the exit.
func (g *Child) Stop() error {
	_ = g.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-g.done:
		return err
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		return errors.New("the child process did not stop")
	}
}

// Proc reads the child's CPU time and resident memory from /proc.
type Proc struct {
	CPU time.Duration
	RSS int64
}

func (g *Child) Proc() (Proc, error) {
	pid := strconv.Itoa(g.cmd.Process.Pid)
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return Proc{}, err
	}
	// Fields after the command name (which is in parentheses).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	p := Proc{CPU: time.Duration(utime+stime) * time.Second / ticks}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return p, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			p.RSS = kb << 10
		}
	}
	return p, nil
}

// Metrics scrapes the gateway's /metrics into name{labels} -> value.
func (g *Child) Metrics(ctx context.Context) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.base+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// sumPrefix adds the series whose key starts with prefix.
func sumPrefix(m map[string]float64, prefix string) float64 {
	var s float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// startRedis runs a private redis-server on a free loopback port, without
// persistence, in dir. It never touches a Redis it did not start: the port
// is picked free, but another process (a test's own server) may take it
// before this server binds, so the server that answers must report this
// process's pid; if not, another port is tried (three in all).
func startRedis(dir string) (url string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New("redis-server not found (apt-get install redis-server)")
	}
	for range 3 {
		url, stop, err = startRedisOnce(bin, dir)
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	return url, stop, err
}

// errPortTaken: the port picked for redis-server was taken before it bound.
var errPortTaken = errors.New("the port was taken by another server")

func startRedisOnce(bin, dir string) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--maxclients", "10000")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop = func() { _ = cmd.Process.Kill(); <-exited }
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		pid, err := redisPID(addr)
		switch {
		case err == nil && pid == cmd.Process.Pid:
			return "redis://" + addr + "/0", stop, nil
		case err == nil:
			stop()
			return "", nil, fmt.Errorf("redis-server on %s: %w (pid %d answers)", addr, errPortTaken, pid)
		}
		select {
		case <-exited:
			return "", nil, fmt.Errorf("redis-server on %s exited: %w", addr, errPortTaken)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not start: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// roundTrips sends msg to the server on addr n times, one at a time on one
// connection, gap apart, reads reply each time, and returns the round-trip
// times, sorted.
func roundTrips(addr, msg, reply string, n int, gap time.Duration) ([]time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	rtt := make([]time.Duration, 0, n)
	for range n {
		time.Sleep(gap)
		start := time.Now()
		_ = c.SetDeadline(start.Add(2 * time.Second))
		if _, err := io.WriteString(c, msg); err != nil {
			return nil, err
		}
		if line, err := r.ReadString('\n'); err != nil || line != reply {
			return nil, fmt.Errorf("round trip: %q, %v", line, err)
		}
		rtt = append(rtt, time.Since(start))
	}
	slices.Sort(rtt)
	return rtt, nil
}

// redisPID asks the Redis server on addr for its process id (INFO server).
func redisPID(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "INFO server\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO reply %q", head) // a server still loading answers -LOADING
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO reply without process_id")
}
