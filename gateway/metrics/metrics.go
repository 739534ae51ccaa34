// Package metrics holds agentgate's Prometheus collectors: HTTP traffic,
// streams, model and tool calls, tokens, transfers and session-store
// operations. It is the only package that imports client_golang.
//
// Every label value comes from a closed set: route templates, status
// classes, and the virtual models, agents, providers and tools named in the
// configuration. Anything else is counted under "other", so no client or
// model can grow a series without bound.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/sessions"
)

// Other is the label value of anything outside the configured sets.
const Other = "other"

// Config configures the collectors. Zero fields mean the defaults.
type Config struct {
	// Registry receives the collectors. nil means a new registry (never
	// the global default) that also holds the Go runtime and process
	// collectors.
	Registry *prometheus.Registry
	// Spec is the configuration's agent set: it names the virtual models,
	// agents, providers and tools that may appear as label values.
	Spec spec.Set
}

// Metrics records agentgate's measurements. It implements
// agentcore.Observer for the runtime's hooks. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	firstToken   *prometheus.HistogramVec
	openStreams  *prometheus.GaugeVec

	modelCalls    *prometheus.CounterVec
	modelDuration *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	transfers     *prometheus.CounterVec
	compactions   *prometheus.CounterVec
	refusals      *prometheus.CounterVec

	storeOps      *prometheus.CounterVec
	storeDuration *prometheus.HistogramVec
	runLogFailed  prometheus.Counter
	// bounded are the stores that evict (see Sessions and Refs).
	bounded boundedStores

	// names holds the label values the configuration allows; a reload
	// swaps it (SetSpec).
	names atomic.Pointer[names]

	// What every turn observes, by label values (see memo).
	requests *memo[requestKey, requestMetrics]
	// routes are the request series of each route template, by method
	// and status class (see ObserveRequest).
	routes      *memo[string, *routeRequests]
	firstTokens *memo[firstTokenKey, prometheus.Observer]
	streams     *memo[string, prometheus.Gauge] // by route
	calls       *memo[callKey, callMetrics]
	tokenCounts *memo[tokenKey, prometheus.Counter]
	tools       *memo[toolKey, callMetrics] // a tool call's, as a model call's
	ops         *memo[opKey, opMetrics]
	// okOps are the store operations that succeeded, by operation
	// (see handle).
	okOps [numStoreOps]atomic.Pointer[opMetrics]
}

type requestKey struct{ method, route, class string }

type requestMetrics struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// routeRequests are the handles (see handle) of one route template's
// request series, by method and status class (methodLabels, classLabels):
// a request finds its own by the template alone, one string, rather than
// by hashing and comparing its three label values.
type routeRequests [len(methodLabels)][len(classLabels)]atomic.Pointer[requestMetrics]

type firstTokenKey struct{ route, model string }

type callKey struct{ provider, model, outcome string }

type callMetrics struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type tokenKey struct{ provider, model, agent, kind string }

type toolKey struct{ tool, outcome string }

type opKey struct{ op, outcome string }

type opMetrics struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// names are the configured virtual models and agents.
type names struct {
	models map[string]bool
	agents map[string]agentInfo
}

// agentInfo is what the configuration says of one agent.
type agentInfo struct {
	provider, model string
	tools           map[string]bool
	// calls is what ModelCall observes of the agent (nil for Other).
	calls *agentCalls
}

// agentCalls are the handles (see handle) of one configured agent's
// model calls that succeeded, and of its tokens by kind (tokenKinds).
type agentCalls struct {
	ok     atomic.Pointer[callMetrics]
	tokens [len(tokenKinds)]atomic.Pointer[prometheus.Counter]
}

// tokenKinds are the kinds of tokens counted, the label values of
// tokens_total.
var tokenKinds = [...]string{"prompt", "completion", "reasoning", "cached"}

var _ agentcore.Observer = (*Metrics)(nil)

// Buckets, in seconds. The gateway's own work is sub-millisecond; model
// calls and streams last seconds to minutes.
var (
	fastBuckets  = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	httpBuckets  = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	modelBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160}
)

// New creates and registers the collectors.
func New(cfg Config) (*Metrics, error) {
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, err
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, err
		}
	}
	const ns = "agentgate"
	m := &Metrics{
		reg: reg,
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "http_requests_total",
			Help: "HTTP requests by method, route template and status class."}, []string{"method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "http_request_duration_seconds",
			Help: "Time from a request's arrival to the end of its response (a stream's whole life).", Buckets: httpBuckets},
			[]string{"method", "route"}),
		firstToken: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "time_to_first_token_seconds",
			Help: "Time from a streaming request's arrival to its first event frame, by route and virtual model.", Buckets: httpBuckets},
			[]string{"route", "model"}),
		openStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "open_streams",
			Help: "Event streams (SSE responses) open now."}, []string{"route"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "model_calls_total",
			Help: "Calls to upstream models by provider, model and outcome."}, []string{"provider", "model", "outcome"}),
		modelDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "model_call_duration_seconds",
			Help: "Duration of upstream model calls, to the end of the response.", Buckets: modelBuckets},
			[]string{"provider", "model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tokens_total",
			Help: "Tokens reported by upstream models, by provider, model, agent and kind (prompt, completion, reasoning, cached)."},
			[]string{"provider", "model", "agent", "kind"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tool_calls_total",
			Help: "Tool calls run by agents, by tool and outcome."}, []string{"tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "tool_call_duration_seconds",
			Help: "Duration of tool calls (an agent tool's whole sub-conversation included).", Buckets: httpBuckets}, []string{"tool"}),
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "transfers_total",
			Help: "Transfers of control between agents."}, []string{"from", "to"}),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "compactions_total",
			Help: "Session compactions by virtual model and outcome: stored, failed (retried after the next turn), skipped."}, []string{"model", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "limit_refusals_total",
			Help: "Turns refused by a user's limits (429), by limit (concurrent_turns, requests_per_minute, tokens_per_day) and virtual model."},
			[]string{"limit", "model"}),
		storeOps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "session_store_operations_total",
			Help: "Session-store operations by operation and outcome (ok, not_found, exists, conflict, invalid, unavailable, canceled, error)."},
			[]string{"op", "outcome"}),
		storeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "session_store_operation_duration_seconds",
			Help: "Duration of session-store operations.", Buckets: fastBuckets}, []string{"op"}),
		runLogFailed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "run_log_failures_total",
			Help: "Runs whose frames could not be written to the shared run log (Redis), counted each time a run's writes start failing."}),
	}
	for _, c := range []prometheus.Collector{m.httpRequests, m.httpDuration, m.firstToken, m.openStreams, m.modelCalls,
		m.modelDuration, m.tokens, m.toolCalls, m.toolDuration, m.transfers, m.compactions, m.refusals, m.storeOps, m.storeDuration,
		m.runLogFailed,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "sessions_held",
			Help: "Top-level sessions (each with its sub-conversations) held by the in-memory store, bounded by sessions.max_sessions."},
			m.bounded.sum(func(st sessions.StoreStats) uint64 { return uint64(st.Sessions) }, true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "sessions_evicted_total",
			Help: "Top-level sessions (each with its sub-conversations) evicted, least recently used first, to stay within sessions.max_sessions."},
			m.bounded.sum(func(st sessions.StoreStats) uint64 { return st.EvictedSessions }, true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "session_refs_evicted_total",
			Help: "Refs (client tool calls of paused turns) evicted, least recently used first, to stay within their bound."},
			m.bounded.sum(func(st sessions.StoreStats) uint64 { return st.EvictedRefs }, false)),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.requests = newMemo(func(k requestKey) requestMetrics {
		return requestMetrics{m.httpRequests.WithLabelValues(k.method, k.route, k.class), m.httpDuration.WithLabelValues(k.method, k.route)}
	})
	m.routes = newMemo(func(string) *routeRequests { return new(routeRequests) })
	m.firstTokens = newMemo(func(k firstTokenKey) prometheus.Observer {
		return m.firstToken.WithLabelValues(k.route, k.model)
	})
	m.streams = newMemo(func(route string) prometheus.Gauge { return m.openStreams.WithLabelValues(route) })
	m.calls = newMemo(func(k callKey) callMetrics {
		return callMetrics{m.modelCalls.WithLabelValues(k.provider, k.model, k.outcome), m.modelDuration.WithLabelValues(k.provider, k.model)}
	})
	m.tokenCounts = newMemo(func(k tokenKey) prometheus.Counter {
		return m.tokens.WithLabelValues(k.provider, k.model, k.agent, k.kind)
	})
	m.tools = newMemo(func(k toolKey) callMetrics {
		return callMetrics{m.toolCalls.WithLabelValues(k.tool, k.outcome), m.toolDuration.WithLabelValues(k.tool)}
	})
	m.ops = newMemo(func(k opKey) opMetrics {
		return opMetrics{m.storeOps.WithLabelValues(k.op, k.outcome), m.storeDuration.WithLabelValues(k.op)}
	})
	m.SetSpec(cfg.Spec)
	return m, nil
}

// SetSpec replaces the names allowed as label values with those of set:
// call it when a reloaded configuration takes effect. Series already
// recorded stay.
func (m *Metrics) SetSpec(set spec.Set) {
	n := &names{models: map[string]bool{}, agents: map[string]agentInfo{}}
	for _, vm := range set.Models {
		n.models[vm.ID] = true
	}
	for _, a := range set.Agents {
		info := agentInfo{provider: Other, model: Other, tools: map[string]bool{}, calls: new(agentCalls)}
		if p, id, ok := strings.Cut(a.Model, "/"); ok {
			info.provider, info.model = p, id
		}
		for _, t := range a.Tools {
			for _, n := range []string{t.Builtin, t.Name} {
				if n != "" {
					info.tools[n] = true
				}
			}
		}
		for _, n := range a.AgentTools {
			info.tools[n] = true
		}
		if len(a.SubAgents) > 0 && !a.DisableTransfer {
			info.tools[agentcore.TransferToolName] = true
		}
		n.agents[a.Name] = info
	}
	m.names.Store(n)
}

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gatherer returns the registry, for tests and for embedding in another
// exposition.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Model returns id when it names a configured virtual model, else Other.
func (m *Metrics) Model(id string) string {
	if m.names.Load().models[id] {
		return id
	}
	return Other
}

func (m *Metrics) agent(name string) string {
	if _, ok := m.names.Load().agents[name]; ok {
		return name
	}
	return Other
}

// ObserveRequest records one finished HTTP request. route is the matched
// route template ("" when none matched).
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	route = routeLabel(route)
	mi, ci := methodIndex(method), classIndex(status)
	r := handle(&m.routes.get(route)[mi][ci], m.requests, requestKey{methodLabels[mi], route, classLabels[ci]})
	r.count.Inc()
	r.duration.Observe(d.Seconds())
}

// ObserveFirstToken records the time from a streaming request's arrival to
// its first event frame.
func (m *Metrics) ObserveFirstToken(route, modelID string, d time.Duration) {
	m.firstTokens.get(firstTokenKey{routeLabel(route), m.Model(modelID)}).Observe(d.Seconds())
}

// StreamOpened counts an event stream as open on route until
// StreamClosed(route) is called (once).
func (m *Metrics) StreamOpened(route string) { m.streams.get(routeLabel(route)).Inc() }

// StreamClosed counts an event stream StreamOpened counted on route as
// closed.
func (m *Metrics) StreamClosed(route string) { m.streams.get(routeLabel(route)).Dec() }

// ModelCall implements agentcore.Observer.
func (m *Metrics) ModelCall(agent, _ string, d time.Duration, usage *genai.GenerateContentResponseUsageMetadata, err error) {
	info, ok := m.names.Load().agents[agent]
	if !ok {
		info = agentInfo{provider: Other, model: Other}
		agent = Other
	}
	var c callMetrics
	if err == nil && info.calls != nil {
		c = handle(&info.calls.ok, m.calls, callKey{info.provider, info.model, outcomeOK})
	} else {
		c = m.calls.get(callKey{info.provider, info.model, modelOutcome(err)})
	}
	c.count.Inc()
	c.duration.Observe(d.Seconds())
	if usage == nil {
		return
	}
	for i, n := range [len(tokenKinds)]int32{usage.PromptTokenCount, usage.CandidatesTokenCount, usage.ThoughtsTokenCount,
		usage.CachedContentTokenCount} {
		if n <= 0 {
			continue
		}
		k := tokenKey{info.provider, info.model, agent, tokenKinds[i]}
		if info.calls != nil {
			handle(&info.calls.tokens[i], m.tokenCounts, k).Add(float64(n))
		} else {
			m.tokenCounts.get(k).Add(float64(n))
		}
	}
}

// ToolCall implements agentcore.Observer. Tools the configuration does not
// declare on the agent (request-supplied client tools, toolset tools, names
// a model made up) count as Other.
func (m *Metrics) ToolCall(agent, tool string, d time.Duration, err error) {
	if !m.names.Load().agents[agent].tools[tool] {
		tool = Other
	}
	outcome := outcomeOK
	if err != nil {
		outcome = "error"
	}
	t := m.tools.get(toolKey{tool, outcome})
	t.count.Inc()
	t.duration.Observe(d.Seconds())
}

// Transfer implements agentcore.Observer.
func (m *Metrics) Transfer(from, to string) {
	m.transfers.WithLabelValues(m.agent(from), m.agent(to)).Inc()
}

// Compaction implements agentcore.CompactionObserver.
func (m *Metrics) Compaction(app, outcome string) {
	switch outcome {
	case agentcore.CompactionStored, agentcore.CompactionFailed, agentcore.CompactionSkipped:
	default:
		outcome = Other
	}
	m.compactions.WithLabelValues(m.Model(app), outcome).Inc()
}

// LimitRefused counts a turn on the virtual model app refused by the
// user's limit (limits.ConcurrentTurns, RequestsPerMinute, TokensPerDay).
func (m *Metrics) LimitRefused(limit, app string) {
	switch limit {
	case limits.ConcurrentTurns, limits.RequestsPerMinute, limits.TokensPerDay:
	default:
		limit = Other
	}
	m.refusals.WithLabelValues(limit, m.Model(app)).Inc()
}

// RunLogFailed counts a run whose frames could not be written to the
// shared run log (sessions/redis RunLogConfig.Failed).
func (m *Metrics) RunLogFailed() { m.runLogFailed.Inc() }

// modelOutcome names how a model call ended: ok, canceled, or the
// provider's error code.
// outcomeOK is the outcome label of what succeeded: a model call, a store
// operation, a tool call.
const outcomeOK = "ok"

func modelOutcome(err error) string {
	if err == nil {
		return outcomeOK
	}
	if me, ok := model.AsError(err); ok {
		switch me.Code {
		case "rate_limited", "timeout", "upstream_error", "stream_cut", "network", "bad_request",
			"unauthorized", "forbidden", "not_found", "conflict":
			return me.Code
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// classLabels are the status classes, the status label's values,
// indexed by classIndex.
var classLabels = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// classIndex is the index in classLabels of code's class.
func classIndex(code int) int {
	switch {
	case code >= 500:
		return 4
	case code >= 400:
		return 3
	case code >= 300:
		return 2
	case code >= 200:
		return 1
	}
	return 0
}

// methodLabels are the method label's values, indexed by methodIndex:
// the methods routes are served on, and Other.
var methodLabels = [...]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodHead, http.MethodOptions, Other}

// methodIndex is the index in methodLabels of method's label.
func methodIndex(method string) int {
	switch method {
	case http.MethodGet:
		return 0
	case http.MethodPost:
		return 1
	case http.MethodPut:
		return 2
	case http.MethodPatch:
		return 3
	case http.MethodDelete:
		return 4
	case http.MethodHead:
		return 5
	case http.MethodOptions:
		return 6
	}
	return len(methodLabels) - 1
}

func routeLabel(route string) string {
	if route == "" {
		return "unmatched"
	}
	return route
}
