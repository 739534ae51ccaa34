// Command loadtest measures what agentgate costs on top of its upstream.
//
// It starts a mock OpenAI-compatible upstream (in this process) and
// agentgate (the real binary, built from ./cmd/gateway, with a generated
// config whose openai provider points at the mock), then sends, in one run,
// the same workload twice: straight to the mock, and through agentgate. The
// difference is the gateway's own cost. The pass-through workloads also go
// through a bare net/http proxy (./loadtest/floorproxy), whose cost is that
// of one more HTTP hop on the machine: the floor under agentgate's. They
// then run one turn at a time (c=1) on the three paths, and the report
// gives agentgate's added latency and CPU per turn as ratios to the floor
// proxy's, beside their targets.
// Everything listens on loopback; every loop is bounded by the request
// count.
//
//	go run ./loadtest                       # every scenario, memory and redis sessions
//	go run ./loadtest -quick                # a short smoke run
//	go run ./loadtest -scenarios nonstream -sessions memory -rate 1000 -duration 20s
//
// Redis sessions use a private redis-server started on a free port (never
// the shared one on 6379). The report is Markdown on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	scenarios   []string
	sessions    []string
	rate        int
	streamRate  int
	duration    time.Duration
	warmup      time.Duration
	latency     time.Duration
	chunks      int
	interval    time.Duration
	openStreams int
	maxInFlight int
	block       time.Duration
	gatewayBin  string
	floorBin    string
	logLevel    string
	floor       bool
	// serial is how long each path runs one turn at a time (c=1) in the
	// pass-through scenarios, for the ratios to the floor proxy.
	serial time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	scen := fs.String("scenarios", "nonstream,stream,transfer,agenttool", "scenarios to run: nonstream, stream, transfer, agenttool")
	sess := fs.String("sessions", "memory,redis", "session setups: memory, redis (a private redis-server), stateless (no X-Session-Id)")
	fs.IntVar(&o.rate, "rate", 1000, "turns per second for the non-streaming scenario")
	fs.IntVar(&o.streamRate, "stream-rate", 200, "turns per second for the streaming scenarios")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per scenario and path")
	fs.DurationVar(&o.block, "block", time.Second, "the measured turns of the two paths run in alternating blocks of this length")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured time per scenario and path, before measuring")
	fs.DurationVar(&o.latency, "latency", 5*time.Millisecond, "mock upstream: time before the first byte of every answer")
	fs.IntVar(&o.chunks, "chunks", 20, "mock upstream: content deltas per streamed answer")
	fs.DurationVar(&o.interval, "interval", 5*time.Millisecond, "mock upstream: time between streamed deltas")
	fs.IntVar(&o.openStreams, "open-streams", 1000, "concurrent open streams for the memory-per-stream figure (0 skips it)")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 4096, "bound on turns in flight at once")
	fs.StringVar(&o.gatewayBin, "gateway-bin", "", "a prebuilt agentgate binary (default: build ./cmd/gateway)")
	fs.StringVar(&o.floorBin, "floor-bin", "", "with -floor: a prebuilt floor proxy binary (default: build ./loadtest/floorproxy)")
	fs.BoolVar(&o.floor, "floor", true, "also send the pass-through scenarios through a bare net/http proxy (loadtest/floorproxy): the cost of the hop alone")
	fs.DurationVar(&o.serial, "c1-duration", 5*time.Second, "with -floor: measured time per pass-through scenario and path with one turn at a time (c=1), for the ratios to the floor proxy (0 skips it)")
	fs.StringVar(&o.logLevel, "log-level", "info", "the gateway's log level (its logs go to a file in the run's temporary directory)")
	quick := fs.Bool("quick", false, "a short smoke run: 1s per phase at low rates, 100 open streams")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"rate": "100", "stream-rate": "50", "duration": "1s", "block": "500ms", "warmup": "200ms", "open-streams": "100", "c1-duration": "1s"} {
			if !set[name] {
				_ = fs.Set(name, v)
			}
		}
	}
	o.scenarios, o.sessions = strings.Split(*scen, ","), strings.Split(*sess, ",")
	for _, s := range o.scenarios {
		if scenarioByKey(s) == nil {
			return fmt.Errorf("unknown scenario %q", s)
		}
	}
	for _, s := range o.sessions {
		if s != "memory" && s != "redis" && s != "stateless" {
			return fmt.Errorf("unknown session setup %q", s)
		}
	}
	if o.rate <= 0 || o.streamRate <= 0 || o.duration <= 0 || o.block <= 0 {
		return errors.New("rates, duration and block must be positive")
	}
	if o.serial < 0 {
		return errors.New("c1-duration must not be negative")
	}

	tmp, err := os.MkdirTemp("", "agentgate-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, floorBin := o.gatewayBin, o.floorBin
	if bin == "" || (o.floor && floorBin == "") {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		if bin == "" {
			fmt.Fprintln(stderr, "building ./cmd/gateway ...")
			if bin, err = buildBinary(root, tmp, "./cmd/gateway", "agentgate"); err != nil {
				return err
			}
		}
		if o.floor && floorBin == "" {
			if floorBin, err = buildBinary(root, tmp, "./loadtest/floorproxy", "floorproxy"); err != nil {
				return err
			}
		}
	}
	up, err := StartUpstream(UpstreamConfig{Latency: o.latency, Chunks: o.chunks, Interval: o.interval})
	if err != nil {
		return err
	}
	defer up.Close()
	rep := &report{opts: o, machine: machineInfo(), started: time.Now()}
	c := newClient()
	var floor *Child
	if floorBin != "" {
		if floor, err = StartFloorProxy(floorBin, up.BaseURL(), tmp); err != nil {
			return err
		}
		defer func() { _ = floor.Stop() }()
		if rep.tcpRTT, err = roundTrips(floor.echo, "ping\n", "ping\n", 1000, time.Millisecond); err != nil {
			return fmt.Errorf("round trip to the floor proxy: %w", err)
		}
		if o.openStreams > 0 {
			fmt.Fprintf(stderr, "[net/http proxy] %d open streams ...\n", o.openStreams)
			r, err := openStreams(ctx, c, floor, up, o.openStreams, false)
			if err != nil {
				return fmt.Errorf("open streams through the floor proxy: %w", err)
			}
			r.Through, r.Setup = "net/http proxy", "–"
			rep.open = append(rep.open, r)
		}
	}

	for _, setup := range o.sessions {
		if err := runSetup(ctx, stderr, rep, c, up, floor, bin, tmp, setup); err != nil {
			return fmt.Errorf("%s sessions: %w", setup, err)
		}
	}
	rep.write(stdout, args)
	return nil
}

func scenarioByKey(k string) *Scenario {
	for i := range scenarios {
		if scenarios[i].Key == k {
			return &scenarios[i]
		}
	}
	return nil
}

// runSetup starts a gateway for one session setup and runs every
// scenario against it, then the open-streams measurement. floor, when not
// nil, is the floor proxy: the scenarios with one upstream call go through
// it too.
func runSetup(ctx context.Context, log io.Writer, rep *report, c *Client, up *Upstream, floor *Child, bin, tmp, setup string) error {
	backend, redisURL := "memory", ""
	if setup == "redis" {
		dir := filepath.Join(tmp, "redis")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		url, stop, err := startRedis(dir)
		if err != nil {
			return err
		}
		defer stop()
		backend, redisURL = "redis", url
		addr := strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")
		if rep.redisRTT, err = roundTrips(addr, "PING\r\n", "+PONG\r\n", 1000, time.Millisecond); err != nil {
			return fmt.Errorf("redis round trip: %w", err)
		}
	}
	cfgPath := filepath.Join(tmp, "config-"+setup+".yaml")
	if err := os.WriteFile(cfgPath, []byte(gatewayConfig(up.BaseURL(), backend, redisURL, rep.opts.logLevel)), 0o644); err != nil {
		return err
	}
	gw, err := StartGateway(bin, cfgPath)
	if err != nil {
		return err
	}
	defer func() { _ = gw.Stop() }()

	o := rep.opts
	if o.openStreams > 0 {
		fmt.Fprintf(log, "[%s] %d open streams ...\n", setup, o.openStreams)
		r, err := openStreams(ctx, c, gw, up, o.openStreams, setup != "stateless")
		if err != nil {
			return fmt.Errorf("open streams: %w", err)
		}
		r.Through, r.Setup = "agentgate", setup
		rep.open = append(rep.open, r)
	}
	for _, key := range o.scenarios {
		sc := *scenarioByKey(key)
		rate := o.streamRate
		if !sc.Stream {
			rate = o.rate
		}
		n := int(o.duration.Seconds() * float64(rate))
		warm := int(o.warmup.Seconds() * float64(rate))
		session := func(phase string, i int) string {
			if setup == "stateless" {
				return ""
			}
			return fmt.Sprintf("lt-%s-%s-%d", sc.Key, phase, i)
		}
		fmt.Fprintf(log, "[%s] %s: %d turns at %d/s on each path, in alternating blocks of %v ...\n", setup, sc.Name, n, rate, o.block)
		directDo := func(ctx context.Context, i int) Sample { return c.direct(ctx, up.BaseURL(), sc) }
		// The floor proxy passes one request on as it is: only a scenario
		// of one upstream call, whose turn is that call, goes through it.
		var floorDo func(ctx context.Context, i int) Sample
		if floor != nil && len(sc.Direct) == 1 && sc.Direct[0] == sc.Model {
			floorDo = func(ctx context.Context, i int) Sample { return c.direct(ctx, floor.base+"/v1", sc) }
		}
		// viaDo sends turn first+i of the phase through the gateway.
		viaDo := func(phase string, first int) turnFunc {
			return func(ctx context.Context, i int) Sample {
				return c.viaGateway(ctx, gw.base, sc, session(phase, first+i))
			}
		}
		runLoad(ctx, rate, warm, o.maxInFlight, directDo)
		if floorDo != nil {
			runLoad(ctx, rate, warm, o.maxInFlight, floorDo)
		}
		runLoad(ctx, rate, warm, o.maxInFlight, viaDo("warm", 0))
		m0, err := gw.Metrics(ctx)
		if err != nil {
			return err
		}
		var rated phase
		perBlock := max(1, int(o.block.Seconds()*float64(rate)))
		for done := 0; done < n && ctx.Err() == nil; done += perBlock {
			k := min(perBlock, n-done)
			load := func(do turnFunc) Result { return runLoad(ctx, rate, k, o.maxInFlight, do) }
			if err := rated.block(gw, floor, load, directDo, floorDo, viaDo("run", done)); err != nil {
				return err
			}
		}
		m1, err := gw.Metrics(ctx)
		if err != nil {
			return err
		}
		ops := sumPrefix(m1, "agentgate_session_store_operations_total") - sumPrefix(m0, "agentgate_session_store_operations_total")
		x := row{Scenario: sc, Setup: setup, Rate: rate, phase: rated, StoreOps: ops}
		if floorDo != nil && o.serial > 0 {
			fmt.Fprintf(log, "[%s] %s: one turn at a time for %v on each path ...\n", setup, sc.Name, o.serial)
			x.C1 = &phase{}
			for spent := time.Duration(0); spent < o.serial && ctx.Err() == nil; spent += o.block {
				d := min(o.block, o.serial-spent)
				serial := func(do turnFunc) Result { return runSerial(ctx, d, do) }
				if err := x.C1.block(gw, floor, serial, directDo, floorDo, viaDo("c1", x.C1.Via.N)); err != nil {
					return err
				}
			}
		}
		rep.rows = append(rep.rows, x)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// phase is the measured turns of one scenario on each path, with the CPU
// time the gateway and the floor proxy spent meanwhile.
type phase struct {
	Direct, Via Result
	// Floor is the same turns through the floor proxy (nil: not run).
	Floor *Result
	// CPU is the gateway process's CPU time while its turns ran; FloorCPU
	// the floor proxy's while its turns ran.
	CPU, FloorCPU time.Duration
}

// turnFunc sends turn i of a block.
type turnFunc func(ctx context.Context, i int) Sample

// block runs one block of turns with run on each path: direct, the floor
// proxy (when floorDo is not nil), then agentgate. The paths take turns, a
// block each, so that all see the same machine: on shared CPUs, whatever
// else runs meanwhile (builds, GC in the load generator) lands on all
// instead of on one.
func (ph *phase) block(gw, floor *Child, run func(turnFunc) Result, directDo, floorDo, viaDo turnFunc) error {
	ph.Direct.add(run(directDo))
	if floorDo != nil {
		if ph.Floor == nil {
			ph.Floor = &Result{}
		}
		t, err := cpuOf(floor, func() { ph.Floor.add(run(floorDo)) })
		if err != nil {
			return err
		}
		ph.FloorCPU += t
	}
	t, err := cpuOf(gw, func() { ph.Via.add(run(viaDo)) })
	if err != nil {
		return err
	}
	ph.CPU += t
	return nil
}

// cpuOf returns the CPU time the child process c spends while f runs.
func cpuOf(c *Child, f func()) (time.Duration, error) {
	p0, err := c.Proc()
	if err != nil {
		return 0, err
	}
	f()
	p1, err := c.Proc()
	if err != nil {
		return 0, err
	}
	return p1.CPU - p0.CPU, nil
}

// OpenResult is the memory taken by streams held open at once.
type OpenResult struct {
	Through              string // agentgate or the floor proxy
	Setup                string
	N                    int
	Open                 float64 // agentgate_open_streams while held
	RSSPer, HeapPer      float64 // bytes per stream
	StackPer             float64 // goroutine stacks, bytes per stream
	GoroutinesPer        float64
	OpenedIn             time.Duration
	RSSBefore, RSSDuring int64
}

// openStreams holds n streams open through the gateway at once (the mock
// holds each after its first delta) and measures the gateway's memory.
func openStreams(ctx context.Context, c *Client, gw *Child, up *Upstream, n int, withSession bool) (OpenResult, error) {
	// Warm the pools first, then take the baseline.
	if _, err := holdStreams(ctx, c, gw, up, min(n, 50), withSession, "warm", nil); err != nil {
		return OpenResult{}, err
	}
	time.Sleep(500 * time.Millisecond)
	m0, err := gw.Metrics(ctx)
	if err != nil {
		return OpenResult{}, err
	}
	p0, err := gw.Proc()
	if err != nil {
		return OpenResult{}, err
	}
	res := OpenResult{N: n, RSSBefore: p0.RSS}
	var measureErr error
	openedIn, err := holdStreams(ctx, c, gw, up, n, withSession, "open", func() {
		time.Sleep(500 * time.Millisecond)
		m1, err := gw.Metrics(ctx)
		if err != nil {
			measureErr = err
			return
		}
		p1, err := gw.Proc()
		if err != nil {
			measureErr = err
			return
		}
		res.RSSDuring = p1.RSS
		res.Open = m1[`agentgate_open_streams{route="/v1/chat/completions"}`]
		res.RSSPer = float64(p1.RSS-p0.RSS) / float64(n)
		res.HeapPer = (m1["go_memstats_heap_inuse_bytes"] - m0["go_memstats_heap_inuse_bytes"]) / float64(n)
		res.StackPer = (m1["go_memstats_stack_inuse_bytes"] - m0["go_memstats_stack_inuse_bytes"]) / float64(n)
		res.GoroutinesPer = (m1["go_goroutines"] - m0["go_goroutines"]) / float64(n)
	})
	if err != nil {
		return res, err
	}
	res.OpenedIn = openedIn
	return res, measureErr
}

// holdStreams opens n streams on the "hold" model, calls during() once all
// have their first delta, then releases them and waits for their ends.
func holdStreams(ctx context.Context, c *Client, gw *Child, up *Upstream, n int, withSession bool, phase string, during func()) (time.Duration, error) {
	var opened, done sync.WaitGroup
	opened.Add(n)
	done.Add(n)
	errs := make(chan error, n)
	dial := make(chan struct{}, 100) // bounds connection set-up, not open streams
	start := time.Now()
	for i := range n {
		go func() {
			defer done.Done()
			isOpen := sync.OnceFunc(opened.Done)
			defer isOpen()
			dial <- struct{}{}
			undial := sync.OnceFunc(func() { <-dial })
			defer undial()
			session := ""
			if withSession {
				session = fmt.Sprintf("lt-hold-%s-%d", phase, i)
			}
			err := c.holdOne(ctx, gw.base, session, func() { undial(); isOpen() })
			if err != nil {
				errs <- err
			}
		}()
	}
	waitCh := make(chan struct{})
	go func() { opened.Wait(); close(waitCh) }()
	select {
	case <-waitCh:
	case <-time.After(2 * time.Minute):
		up.Release()
		return 0, errors.New("streams did not all open within 2 minutes")
	}
	openedIn := time.Since(start)
	if during != nil {
		during()
	}
	up.Release()
	done.Wait()
	close(errs)
	for err := range errs {
		return openedIn, err
	}
	return openedIn, nil
}

// holdOne streams from the "hold" model; firstContent runs at the first
// content delta.
func (c *Client) holdOne(ctx context.Context, base, session string, firstContent func()) error {
	resp, err := c.post(ctx, base+"/v1/chat/completions", userBody("hold", true), session)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return readStream(resp.Body, firstContent, nil)
}

// machine describes where the figures come from.
type machine struct {
	CPUs    int
	CPU     string
	Go      string
	OS      string
	LoadAvg string
}

func machineInfo() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}
