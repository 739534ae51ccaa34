// Command gateway runs agentgate: it reads config.yaml, builds the agent
// trees, and serves them over HTTP until SIGTERM or SIGINT.
//
// Flags beat the environment, which beats the file:
//
//	-config PATH    (AGENTGATE_CONFIG, default ./config.yaml)
//	-addr HOST:PORT (AGENTGATE_ADDR, default server.addr)
//	-pprof HOST:PORT (AGENTGATE_PPROF_ADDR, default off): Go profiles
//
// REDIS_URL switches sessions to Redis. A bad config prints one line per
// problem on stderr and exits with status 2.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/net/netutil"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/gemini"
	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/config"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
	sessionsredis "github.com/agentgate/agentgate/sessions/redis"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	// Random ids (every event has one, every streamed delta is an event)
	// come from a pool refilled 16 at a time instead of one read of the
	// system's randomness and one allocation more each. Set before
	// anything makes an id: the switch is not safe for concurrent use.
	uuid.EnableRandPool()
	os.Exit(run(context.Background(), os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr, nil))
}

// run is main without the process: it returns the exit status. ready, when
// not nil, receives the listening address once the server accepts
// connections.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer, ready chan<- string) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "config file (env AGENTGATE_CONFIG, default ./config.yaml)")
	addr := fs.String("addr", "", "listen address HOST:PORT (env AGENTGATE_ADDR, default server.addr)")
	pprofAddr := fs.String("pprof", "", "serve Go profiles (net/http/pprof) on HOST:PORT, keep it on loopback (env AGENTGATE_PPROF_ADDR, default off)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	env := func(k string) string { v, _ := lookup(k); return v }
	path := firstNonEmpty(*configPath, env("AGENTGATE_CONFIG"), "config.yaml")

	cfg, err := config.Load(path, lookup)
	if err != nil {
		printProblems(stderr, path, err)
		return 2
	}
	adjust := func(c *config.Config) {
		c.Server.Addr = firstNonEmpty(*addr, env("AGENTGATE_ADDR"), c.Server.Addr)
		if u := env("REDIS_URL"); u != "" {
			c.Sessions.Backend, c.Sessions.RedisURL = "redis", u
		}
	}
	adjust(cfg)
	// Lines go out in batches (see logWriter); the deferred Close, the
	// last thing run does, writes those still gathered.
	logs := newLogWriter(stdout)
	defer logs.Close()
	log := newLogger(logs, cfg.Log, logs.Flush)
	tel, err := newTelemetry(cfg.Telemetry, env)
	if err != nil {
		printProblems(stderr, path, err)
		return 2
	}
	if tel != nil {
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tel.Shutdown(ctx) // exports the spans still buffered
		}()
	}
	clients := upstreamClients{tel: tel}

	tools := newToolMakers(log, lookup, filepath.Dir(path))
	tools.client = clients.tool()
	defer tools.Close() // after the server stopped: running calls finish first
	remotes := a2a.NewRemotes(a2a.NewClient(a2a.ClientConfig{UserAgent: "agentgate/" + version, HTTPClient: clients.tool()}), log)
	buildOpts := spec.BuildOptions{Factories: providerFactories(clients), Tools: tools.tool, Toolsets: tools.toolset, Remote: remotes.Build}
	catalog, err := spec.Build(cfg.Spec(), buildOpts)
	if err != nil {
		printProblems(stderr, path, err)
		return 2
	}
	authn, err := newAuthenticator(cfg.Auth, filepath.Dir(path), log)
	if err != nil {
		printProblems(stderr, path, err)
		return 2
	}
	if c, ok := authn.(io.Closer); ok {
		defer c.Close()
	}
	store, locker, closeStore, err := openSessions(cfg.Sessions)
	if err != nil {
		printProblems(stderr, path, err)
		return 2
	}
	defer closeStore()
	mx, err := metrics.New(metrics.Config{Spec: cfg.Spec()})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The limits, run log, run index and A2A task records are shared by
	// the replicas when the sessions are (Redis), else kept in this process
	// (gateway.Config's defaults).
	var limiter limits.Limiter
	var runLog runs.EventLog
	var runIndex runs.Index
	var tasks gateway.TaskStore
	if rs, ok := store.(*sessionsredis.Store); ok {
		limiter = rs.Limiter()
		runLog = rs.RunLog(sessionsredis.RunLogConfig{Retention: cmp.Or(cfg.Runs.Retention, gateway.DefaultRunRetention), JSONFrames: !*cfg.Runs.PackFrames,
			Failed: func(run string, err error) {
				mx.RunLogFailed()
				log.Warn("run log: writing the frames of a run failed; they wait, and are tried again", "invocation_id", run, "err", err)
			}})
		runIndex = rs.RunIndex()
		tasks = rs.TaskStore()
	}
	srv, err := gateway.New(gateway.Config{Catalog: catalog, Sessions: store, Locker: locker, Logger: log, LogJSON: jsonLogs(logs, cfg.Log), Metrics: mx,
		MaxBodyBytes: cfg.Server.MaxBodyBytes, BodyReadTimeout: cfg.Server.BodyReadTimeout, WriteTimeout: cfg.Server.WriteTimeout,
		KeepaliveInterval: cfg.Server.KeepaliveInterval, BusyWait: cfg.Sessions.BusyWait,
		MaxQueued: cfg.Sessions.MaxQueued, QueueWait: cfg.Sessions.QueueWait,
		CORSOrigins: cfg.Server.CORSOrigins, Version: version, Auth: authn, PublicPaths: cfg.Auth.PublicPaths,
		PublicURL: cfg.Server.PublicURL, Telemetry: tel, RunRetention: cfg.Runs.Retention,
		Limits: cfg.Limits.Values(), Limiter: limiter,
		RunMaxEnded: cfg.Runs.MaxEnded, RunMaxBytes: cfg.Runs.MaxBytes, RunLog: runLog, RunIndex: runIndex, Tasks: tasks})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	remotes.Apply(cfg.Spec())
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "listen %s: %v\n", cfg.Server.Addr, err)
		return 1
	}
	if a := firstNonEmpty(*pprofAddr, env("AGENTGATE_PPROF_ADDR")); a != "" {
		stopPprof, err := servePprof(a, log)
		if err != nil {
			fmt.Fprintf(stderr, "pprof %s: %v\n", a, err)
			return 1
		}
		defer stopPprof()
	}
	// The body read and write deadlines are set per request by the gateway
	// (they must spare event streams); the server bounds the headers and
	// idle keep-alive connections, and the listener the open connections.
	ln = netutil.LimitListener(ln, cfg.Server.MaxConnections)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cfg.Server.IdleTimeout}
	log.Info("agentgate listening", "addr", ln.Addr().String(), "models", len(catalog.Apps), "sessions", cfg.Sessions.Backend, "version", version)
	_ = logs.Flush() // whoever starts the gateway waits for this line: it goes out at once
	// Reloads: SIGHUP, and changes of the file unless server.watch_config
	// is false.
	reloads := &reloader{path: path, lookup: lookup, adjust: adjust, opts: buildOpts, srv: srv, remotes: remotes, log: log,
		tools: tools, metrics: mx}
	reloads.remember(cfg)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchEvery time.Duration
	if *cfg.Server.WatchConfig {
		watchEvery = cfg.Server.WatchInterval
	}
	reloads.watch(watchCtx, watchEvery)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	select {
	case err := <-serveErr:
		fmt.Fprintln(stderr, err)
		return 1
	case <-sigCtx.Done():
	}
	// Requests and runs (attached or not) get the grace, then the runs
	// still going end with SHUTDOWN (see gateway.Server.Shutdown).
	log.Info("shutting down", "grace", cfg.Server.ShutdownGrace.String())
	graceCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(graceCtx, hs); err != nil {
		log.Warn("shutdown cut short", "err", err)
	}
	log.Info("stopped")
	return 0
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// printProblems writes one line per problem.
func printProblems(w io.Writer, path string, err error) {
	fmt.Fprintf(w, "agentgate: invalid configuration in %s:\n", path)
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.TrimSpace(line) != "" {
			fmt.Fprintln(w, "  "+strings.TrimSpace(line))
		}
	}
}

// newLogger logs to w at c's level and format; flush, when not nil, is
// called after every record at warn level and above (see urgentLines).
func newLogger(w io.Writer, c config.Log, flush func() error) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if c.Format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	if flush != nil {
		h = urgentLines{h, flush}
	}
	return slog.New(agentcore.NewLogHandler(h))
}

// jsonLogs is the writer under newLogger's JSON handler, where the gateway
// writes its access lines by hand (gateway.Config.LogJSON); nil for text
// logs. The access line is at info level: urgentLines passes it on as it is.
func jsonLogs(w io.Writer, c config.Log) io.Writer {
	if c.Format == "text" {
		return nil
	}
	return w
}

// providerFactories registers the real providers by config type.
func providerFactories(clients upstreamClients) map[string]spec.ProviderFactory {
	retries := func(p spec.Provider) int {
		if p.MaxRetries == nil {
			return 0
		}
		if *p.MaxRetries == 0 {
			return -1
		}
		return *p.MaxRetries
	}
	return map[string]spec.ProviderFactory{
		"openai": func(p spec.Provider) (func(string) (model.LLM, error), error) {
			prov, err := openai.New(openai.Config{Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey, Timeout: p.Timeout,
				MaxRetries: retries(p), Headers: p.Headers, HTTPClient: clients.provider()})
			if err != nil {
				return nil, err
			}
			return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
		},
		"gemini": func(p spec.Provider) (func(string) (model.LLM, error), error) {
			prov, err := gemini.New(gemini.Config{Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey, Timeout: p.Timeout,
				MaxRetries: retries(p), Headers: p.Headers, HTTPClient: clients.provider()})
			if err != nil {
				return nil, err
			}
			return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
		},
	}
}

// openSessions opens the configured store. Redis is connected lazily: the
// gateway starts while Redis is down and /readyz reports it.
func openSessions(c config.Sessions) (sessions.Service, sessions.Locker, func(), error) {
	ttl := config.DefaultTTL
	if c.TTL != nil {
		ttl = *c.TTL
	}
	if c.Backend != "redis" {
		bound := config.DefaultMaxSessions
		if c.MaxSessions != nil {
			bound = *c.MaxSessions
		}
		st := sessions.NewMemoryService(sessions.MemoryConfig{TTL: ttl, MaxSessions: bound})
		return st, st, func() {}, nil // its own leases keep running sessions from eviction
	}
	st, err := sessionsredis.New(sessionsredis.Config{URL: c.RedisURL, KeyPrefix: c.KeyPrefix, TTL: ttl, LockTTL: c.LockTTL})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sessions.redis_url: %w", err)
	}
	return st, st, func() { _ = st.Close() }, nil
}
