// Package gateway serves agent trees over HTTP (gin): the OpenAI-compatible
// surface under /v1, the ADK-compatible native surface, and the operational
// routes. Errors are mapped to statuses in one place (errors.go).
package gateway

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/agentgate/agentgate/internal/randbatch"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/agentcore/memory"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
	"github.com/agentgate/agentgate/telemetry"
)

// Config wires a Server. Catalog and Sessions are required; zero fields
// mean the defaults.
type Config struct {
	Catalog  *spec.Catalog
	Sessions sessions.Service
	// Locker serialises runs on one session; default: Sessions, when it is
	// a sessions.Locker (both stores are: the in-memory store's leases
	// also keep a running session from being evicted), else an in-process
	// lock, enough for one replica.
	Locker sessions.Locker
	// Refs indexes the client tool calls of paused turns (see callrefs.go);
	// default: Sessions, when it is a sessions.Refs (both stores are),
	// else an in-process index, enough for one replica.
	Refs      sessions.Refs
	Artifacts artifact.Service
	Memory    memory.Service
	Logger    *slog.Logger
	// LogJSON, when not nil, is the writer under Logger's handler, when
	// that handler is slog.NewJSONHandler(LogJSON, opts) with neither
	// AddSource nor ReplaceAttr set, no attributes or groups added, and
	// wrapped only by handlers that change nothing on an info record
	// (agentcore's log handler, cmd/gateway's urgentLines): the access
	// log line is then written by hand into it, the same bytes slog
	// writes, without slog's record (see accesslog.go). Logger's level
	// still decides whether it is written. Its Write must be safe for
	// concurrent use; each call is one line.
	LogJSON  io.Writer
	Observer agentcore.Observer
	// Metrics, when set, records Prometheus metrics (served on /metrics):
	// it instruments the routes, the runtime (as an Observer beside
	// Observer) and the session store and locker.
	Metrics *metrics.Metrics
	// MaxBodyBytes limits request bodies (default 4 MiB).
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long a request body may take to arrive
	// (default 30s); a late body is answered 408 (see deadlines.go).
	BodyReadTimeout time.Duration
	// WriteTimeout bounds how long a non-streamed response may take to be
	// written, from its first byte (default 60s); streams are not bounded.
	WriteTimeout time.Duration
	// KeepaliveInterval spaces SSE keepalive comments (default 15s).
	KeepaliveInterval time.Duration
	// BusyWait is how long a run waits for a busy session before 409.
	BusyWait time.Duration
	// MaxQueued bounds the turns waiting in one session's line (multitask
	// enqueue and interrupt; default DefaultMaxQueued); beyond it a turn is
	// refused (429). QueueWait bounds how long one waits there (default
	// DefaultQueueWait). The line is the Locker's, when it is a
	// sessions.Queue (both stores are); with a Locker that is not, every
	// turn is handled as multitask reject.
	MaxQueued int
	QueueWait time.Duration
	// RunLog keeps the frames of every run for clients to re-attach to
	// (default: a runs.MemoryLog keeping them RunRetention); a shared log
	// (Redis) lets any replica serve a re-attach.
	RunLog runs.EventLog
	// RunIndex, when set, is the run index every replica shares (Redis):
	// runs listed, re-attached to and cancelled from any replica. With
	// it RunLog must be shared too.
	RunIndex runs.Index
	// Tasks, when set, keeps the A2A task records every replica reads
	// (Redis): tasks/get and tasks/cancel on any replica. Without it a
	// task is known to the process that ran it. With it RunIndex must be
	// set too (a task running elsewhere is canceled through it).
	Tasks TaskStore
	// RunRetention is how long a run's frames are kept after it ended
	// (runs.retention, default 1h).
	RunRetention time.Duration
	// RunMaxEnded and RunMaxBytes bound the default run log (see
	// runs.MemoryLogConfig; runs.max_ended, runs.max_bytes).
	RunMaxEnded int
	RunMaxBytes int64
	// CORSOrigins lists the origins browsers may call from ("*" for any).
	CORSOrigins []string
	// Version is reported by /version.
	Version string
	// PublicURL is how clients reach the gateway, for absolute URLs (A2A
	// agent cards); empty means the scheme and host of each request.
	PublicURL string
	// Auth, when set, requires a bearer token on every route but
	// PublicPaths (auth.mode: jwt); see auth.go.
	Auth Authenticator
	// PublicPaths need no token (default DefaultPublicPaths); an entry
	// ending in "/*" covers everything below it.
	PublicPaths []string
	// Telemetry, when set, traces every turn (OpenTelemetry spans), takes
	// the trace context of incoming requests and serves the recent spans on
	// ADK's debug routes; see trace.go.
	Telemetry *telemetry.Telemetry
	// Limits are each user's limits over all models (a model's own are in
	// its catalog entry); zero: none.
	Limits limits.Values
	// Limiter counts the turns against the limits; default: an
	// in-process one (limits.NewMemory), enough for one replica.
	Limiter limits.Limiter
	// Now and NewID replace the clock and id generator (tests).
	Now   func() time.Time
	NewID func() string
}

// Server is the gateway's http.Handler.
type Server struct {
	cfg    Config
	engine *gin.Engine
	// snap is the catalog served now (see catalog.go); Reload swaps it.
	snap atomic.Pointer[snapshot]
	log  *slog.Logger
	// runs are the turns running in this process (see turn.go), and the
	// A2A tasks kept after their runs (see a2a_tasks.go).
	runs *runs.Registry
	// stopping is closed when a shutdown begins (see Shutdown).
	stopping chan struct{}
	stopOnce sync.Once
	// background runs the compactions of every runner the server has had
	// (a reload replaces runners whose compactions still run).
	background agentcore.Background

	// lockGet takes a session's run lock with its read in one round trip,
	// when the store is also the locker and can (nil otherwise).
	lockGet sessions.LockingGetter
	// queue is the Locker's line for a busy session's lease (see
	// multitask.go); nil when the Locker has none.
	queue sessions.Queue
	// refs is cfg.Refs (instrumented with Metrics).
	refs sessions.Refs
}

// app is one virtual model with its runner.
type app struct {
	*spec.App
	runner *agentcore.Runner
	// clientNames maps runtime action names to the names clients see.
	clientNames map[string]string
	// encoderTools is the chunk encoder's ClientTools for a turn without
	// request tools (see initEncoder); never modified.
	encoderTools map[string]string
}

// New validates cfg and builds the server and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.Catalog == nil || cfg.Sessions == nil {
		return nil, errors.New("gateway: catalog and sessions are required")
	}
	if cfg.Locker == nil {
		cfg.Locker, _ = cfg.Sessions.(sessions.Locker)
	}
	if cfg.Locker == nil {
		cfg.Locker = sessions.NewMemoryLocker()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = slog.New(agentcore.NewLogHandler(cfg.Logger.Handler()))
	lockGet, _ := cfg.Sessions.(sessions.LockingGetter)
	queue, _ := cfg.Locker.(sessions.Queue) // before the metrics wrap the Locker
	if any(cfg.Locker) != any(cfg.Sessions) {
		lockGet = nil // the lock must be the store's own
	}
	if cfg.Refs == nil {
		cfg.Refs, _ = cfg.Sessions.(sessions.Refs)
	}
	if cfg.Refs == nil {
		cfg.Refs = sessions.NewMemoryService(sessions.MemoryConfig{Now: cfg.Now})
	}
	refs := cfg.Refs
	if cfg.Metrics != nil {
		refs = cfg.Metrics.Refs(refs)
		if lockGet != nil {
			lockGet = cfg.Metrics.LockingGetter(lockGet)
		}
		cfg.Sessions, cfg.Locker = cfg.Metrics.Sessions(cfg.Sessions), cfg.Metrics.Locker(cfg.Locker)
		if cfg.Observer == nil {
			cfg.Observer = cfg.Metrics
		} else {
			cfg.Observer = observers{cfg.Observer, cfg.Metrics}
		}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.KeepaliveInterval <= 0 {
		cfg.KeepaliveInterval = 15 * time.Second
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Limiter == nil {
		cfg.Limiter = limits.NewMemory(nil)
	}
	if cfg.Memory == nil {
		cfg.Memory = memory.NewInMemory()
	}
	if cfg.Artifacts == nil {
		cfg.Artifacts = artifact.NewInMemory()
	}
	// The run registry keeps the wall clock: cfg.Now's readings are the
	// events' (a test's clock that ticks per reading stays golden).
	if cfg.RunRetention <= 0 {
		cfg.RunRetention = DefaultRunRetention
	}
	if cfg.RunLog == nil {
		cfg.RunLog = runs.NewMemoryLog(runs.MemoryLogConfig{Retention: cfg.RunRetention, MaxEndedRuns: cfg.RunMaxEnded,
			MaxBytes: cfg.RunMaxBytes})
	}
	s := &Server{cfg: cfg, log: cfg.Logger, runs: runs.NewRegistry(runs.Config{Log: cfg.RunLog, Index: cfg.RunIndex}), lockGet: lockGet, queue: queue, refs: refs,
		stopping: make(chan struct{})}
	if err := s.Reload(cfg.Catalog); err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.ContextWithFallback = true
	e.HandleMethodNotAllowed = true
	// serveRequest begins and ends every request: its id and context,
	// writer (deadlines, metrics), body limits, panic recovery, access log
	// and metrics. The CORS and authentication layers are there only when
	// configured: a layer costs every request a call, whatever it does.
	layers := []gin.HandlerFunc{s.serveRequest}
	if len(cfg.CORSOrigins) > 0 {
		layers = append(layers, s.cors)
	}
	if cfg.Auth != nil {
		layers = append(layers, s.authenticate)
	}
	e.Use(layers...)
	s.routes(e)
	s.engine = e
	return s, nil
}

func (s *Server) routes(e *gin.Engine) {
	e.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/readyz", s.readyz)
	if s.cfg.Metrics != nil {
		e.GET("/metrics", gin.WrapH(s.cfg.Metrics.Handler()))
	}

	v1 := e.Group("/v1")
	v1.GET("/models", s.listModels)
	v1.GET("/models/*id", s.getModel)
	v1.POST("/chat/completions", s.chatCompletions)
	v1.POST("/responses", s.createResponse)
	v1.GET("/responses/:id", s.getResponse)
	v1.DELETE("/responses/:id", s.deleteResponse)
	v1.GET("/responses/:id/input_items", s.listInputItems)
	v1.POST("/responses/:id/cancel", s.cancelResponse)
	s.nativeRoutes(e)
	s.a2aRoutes(e)

	e.NoRoute(func(c *gin.Context) {
		if isOpenAIPath(c.Request.URL.Path) {
			writeOpenAIError(c, notFound("Unknown request URL: "+c.Request.Method+" "+c.Request.URL.Path+"."))
			return
		}
		c.JSON(http.StatusNotFound, gin.H{"error": "Not Found"})
	})
	e.NoMethod(func(c *gin.Context) {
		if isOpenAIPath(c.Request.URL.Path) {
			writeOpenAIError(c, &apiError{status: http.StatusMethodNotAllowed, kind: "invalid_request_error", code: "method_not_allowed",
				message: "Method " + c.Request.Method + " is not allowed on " + c.Request.URL.Path + "."})
			return
		}
		c.JSON(http.StatusMethodNotAllowed, gin.H{"error": "Method Not Allowed"})
	})
}

func isOpenAIPath(p string) bool { return p == "/v1" || strings.HasPrefix(p, "/v1/") }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

func (s *Server) readyz(c *gin.Context) {
	if p, ok := s.cfg.Sessions.(sessions.Pinger); ok {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		if err := p.Ping(ctx); err != nil {
			s.log.WarnContext(ctx, "readiness check failed", "err", err)
			c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unavailable", "error": "session store unreachable"})
			return
		}
	}
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// serveRequest is the first layer of every request, all the gateway does
// around its handler in one: begin gives the request its id, its context,
// its writer (deadlines, metrics) and its body's limits; end turns a
// handler's panic into a 500 in the surface's format (recovered), writes
// the request's access log line (logRequest) and records its metrics.
//
// This middleware and the others keep their work in functions of their own
// and only call c.Next themselves: the frame of a function that calls
// c.Next stays on the request goroutine's stack under the handler, for a
// stream as long as it is open (see docs/benchmarks-memory.md).
func (s *Server) serveRequest(c *gin.Context) {
	rq := s.begin(c)
	defer s.end(c, rq)
	c.Next()
}

// requestState is what serveRequest keeps of a request, in one
// allocation: its writer, its body's wrapper, its copy of the request
// (with the request's context), its log attribute set, and the bytes of
// the id it was given.
type requestState struct {
	w    requestWriter
	body timedBody
	req  http.Request
	set  *agentcore.LogAttrSet
	// id holds a request id made here ("req_" and 24 hex digits), written
	// once before its string is made and never after; idHeader is the
	// X-Request-Id header's value.
	id       [4 + 2*requestIDBytes]byte
	idHeader [1]string
}

// requestIDBytes is how many random bytes a request id the gateway makes
// holds.
const requestIDBytes = 12

// begin begins a request: it reads or assigns x-request-id and echoes it;
// with telemetry continues the caller's trace (the W3C traceparent, and
// tracestate, baggage, of every request on every surface goes into the
// request's context, where the turn's spans find their parent); bounds the
// body's arrival time and size; and wraps the writer, which sets the
// write deadline (see deadlines.go) and watches the response for the
// metrics. The caller's trace and the request's log attributes go into one
// copy of the request; the attributes live in one set, which annotate
// adds to: one new context per request, not one per attribute.
//
//go:noinline
func (s *Server) begin(c *gin.Context) *requestState {
	now := time.Now()
	rq := new(requestState)
	r := c.Request
	id := ""
	// What r.Header.Get does with its key canonical already.
	if v := r.Header["X-Request-Id"]; len(v) > 0 {
		id = v[0]
	}
	if id == "" || len(id) > 128 {
		id = rq.newID()
	}
	ctx := r.Context()
	if s.cfg.Telemetry != nil {
		ctx = s.cfg.Telemetry.Extract(ctx, r.Header)
	}
	ctx, rq.set = agentcore.WithLogAttrSet(ctx)
	rq.set.Add(slog.String("request_id", id))
	// The header's key as net/http writes it (canonical already): what
	// c.Header does, without checking the key's form on every request.
	rq.idHeader[0] = id
	c.Writer.Header()["X-Request-Id"] = rq.idHeader[:]
	rq.w = requestWriter{ResponseWriter: c.Writer, conn: connOf(c.Writer), timeout: s.cfg.WriteTimeout,
		c: c, m: s.cfg.Metrics, start: now}
	c.Writer = &rq.w
	// The body is wrapped in the request net/http gave (its response
	// looks at that request's body once the handler writes), then the
	// copy is made.
	s.limitBody(r, rq, now)
	rq.req = *r.WithContext(ctx)
	c.Request = &rq.req
	return rq
}

// newID makes a new request id in rq.id, from randbatch's bytes: as
// random and as unique as a read of crypto/rand each, which was a system
// call (or the kernel's vDSO) on every request.
func (rq *requestState) newID() string {
	var raw [requestIDBytes]byte
	randbatch.Fill(raw[:])
	copy(rq.id[:], "req_")
	hex.Encode(rq.id[4:], raw[:])
	return unsafe.String(&rq.id[0], len(rq.id))
}

// end, deferred by serveRequest, ends the request: a handler's panic
// becomes a 500 (recovered; no access log line is written for it, and
// http.ErrAbortHandler goes on up once the metrics recorded the request),
// else the access log line is written; then the metrics record the
// request.
func (s *Server) end(c *gin.Context, rq *requestState) {
	p := recover()
	now := time.Now()
	switch {
	case p == nil:
		s.logRequest(c, rq, now)
	case p != http.ErrAbortHandler:
		s.recovered(c, p)
	}
	if rq.w.m != nil {
		rq.w.observe(c, now)
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
}

// recovered turns p, a handler's panic, into a 500 in the surface's
// format.
func (s *Server) recovered(c *gin.Context, p any) {
	s.log.ErrorContext(c.Request.Context(), "handler panic", "panic", fmt.Sprint(p))
	if c.Writer.Written() {
		c.Abort()
		return
	}
	err := &apiError{status: http.StatusInternalServerError, kind: "server_error", code: "internal_error", message: "internal error"}
	if isOpenAIPath(c.Request.URL.Path) {
		writeOpenAIError(c, err)
	} else {
		writeNativeError(c, err)
	}
	c.Abort()
}

// logRequest writes the request's access log line, at now. The record
// goes straight to the handler: Logger.LogAttrs would first walk the stack
// for the caller's program counter (runtime.Callers, on every request),
// which the access log, always written from here, does not need.
//
//go:noinline
func (s *Server) logRequest(c *gin.Context, rq *requestState, now time.Time) {
	ctx, h := c.Request.Context(), s.log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	line := accessLine{time: now, method: c.Request.Method, route: c.FullPath(), status: c.Writer.Status(),
		ms: float64(now.Sub(rq.w.start).Microseconds()) / 1000}
	if w := s.cfg.LogJSON; w != nil {
		// The request's context, while it is begin's, is its set's:
		// agentcore.LogAttrs(ctx) without looking it up.
		var attrs []slog.Attr
		if c.Request == &rq.req {
			attrs = rq.set.Attrs()
		} else {
			attrs = agentcore.LogAttrs(ctx)
		}
		if line.write(w, attrs) {
			return
		}
	}
	_ = h.Handle(ctx, line.record())
}

func (s *Server) cors(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if origin == "" || len(s.cfg.CORSOrigins) == 0 {
		c.Next()
		return
	}
	allowed := false
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || o == origin {
			allowed = true
			break
		}
	}
	if !allowed {
		c.Next()
		return
	}
	h := c.Writer.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "X-Session-Id, X-Request-Id")
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Session-Id, X-Request-Id, X-Stainless-Retry-Count, X-Stainless-Timeout, X-Stainless-Lang, X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Runtime, X-Stainless-Runtime-Version")
		h.Set("Access-Control-Max-Age", "600")
		c.AbortWithStatus(http.StatusNoContent)
		return
	}
	c.Next()
}
