package gateway_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/internal/benchenv"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
	sessionsredis "github.com/agentgate/agentgate/sessions/redis"
)

// What one /v1/chat/completions turn costs inside the gateway: the real
// server with metrics and JSON info logs (to io.Discard), in-memory
// sessions, and the openai provider whose HTTP client answers from memory
// the way loadtest's mock upstream does (no network, no latency). The
// request goes straight to ServeHTTP. Run with
//
//	go test -run '^$' -bench ChatTurn -benchmem ./gateway/

// cannedTransport answers every chat completion with a text answer:
// non-streamed in one JSON body, streamed as a role chunk, n content
// deltas, a finish chunk, a usage chunk and [DONE].
type cannedTransport struct {
	complete, stream []byte
	// waiting, when set, runs as each request arrives: what the upstream's
	// wait does to the caller (BenchmarkChatTurnColdWaited).
	waiting func()
}

func newCannedTransport(n int) *cannedTransport {
	words := make([]string, n)
	for i := range words {
		words[i] = "tok" + strconv.Itoa(i) + " "
	}
	const usage = `{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}`
	complete := `{"id":"chatcmpl-mock","object":"chat.completion","created":1700000000,"model":"pass","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"` + strings.Join(words, "") + `"},"finish_reason":"stop"}],"usage":` + usage + `}`
	var s bytes.Buffer
	head := `data: {"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"pass","choices":`
	frame := func(choices string) { s.WriteString(head + choices + "}\n\n") }
	frame(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`)
	for _, w := range words {
		frame(`[{"index":0,"delta":{"content":"` + w + `"},"finish_reason":null}]`)
	}
	frame(`[{"index":0,"delta":{},"finish_reason":"stop"}]`)
	frame(`[],"usage":` + usage)
	s.WriteString("data: [DONE]\n\n")
	return &cannedTransport{complete: []byte(complete), stream: s.Bytes()}
}

func (t *cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.waiting != nil {
		t.waiting()
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	out, ct := t.complete, "application/json"
	if bytes.Contains(body, []byte(`"stream":true`)) {
		out, ct = t.stream, "text/event-stream"
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out)),
		Request: r}, nil
}

// newBenchGateway is newProviderGateway's server for the benchmarks: the
// pass-through agent on the canned upstream (20 deltas when streamed);
// with, when not nil, changes its Config (another session store).
func newBenchGateway(b *testing.B, with func(*gateway.Config)) http.Handler {
	b.Helper()
	return newBenchGatewayOn(b, newCannedTransport(20), with)
}

// newBenchGatewayOn is newBenchGateway on the canned upstream t.
func newBenchGatewayOn(b *testing.B, t *cannedTransport, with func(*gateway.Config)) http.Handler {
	b.Helper()
	hc := &http.Client{Transport: t}
	return newProviderGateway(b, spec.Agent{Name: "pass", Description: "Answers directly.", Instruction: "Answer."},
		openai.Config{BaseURL: "http://mock.invalid/v1", HTTPClient: hc}, with)
}

// redisSessions makes a gateway keep its sessions in the Redis at
// 127.0.0.1:6379 (skipping the benchmark or test when none answers), under
// a key prefix of its own, expiring after ten minutes; with runs, also its
// run log and run index, as cmd/gateway wires them.
func redisSessions(b testing.TB, runs bool) func(*gateway.Config) {
	b.Helper()
	return redisSessionsLog(b, runs, sessionsredis.RunLogConfig{})
}

// redisSessionsLog is redisSessions with the run log configured as cfg.
func redisSessionsLog(b testing.TB, runs bool, cfg sessionsredis.RunLogConfig) func(*gateway.Config) {
	b.Helper()
	st := redisStore(b, redisPrefix())
	return func(c *gateway.Config) {
		c.Sessions = st
		if runs {
			c.RunLog, c.RunIndex = st.RunLog(cfg), st.RunIndex()
		}
	}
}

// redisPrefix is a key prefix of its own for a test's stores.
func redisPrefix() string { return fmt.Sprintf("gateway-%d-%d:", os.Getpid(), time.Now().UnixNano()) }

// redisStore is a store on the Redis at 127.0.0.1:6379, or at
// $AGENTGATE_TEST_REDIS_URL when set (a private redis-server keeps a
// profile or a benchmark off the shared one; skipping the benchmark or
// test when none answers), under prefix, expiring sessions after ten
// minutes, closed when tb ends; stores on one prefix are the replicas of
// one deployment.
func redisStore(tb testing.TB, prefix string) *sessionsredis.Store {
	tb.Helper()
	url := cmp.Or(os.Getenv("AGENTGATE_TEST_REDIS_URL"), "redis://127.0.0.1:6379/0")
	st, err := sessionsredis.New(sessionsredis.Config{URL: url, KeyPrefix: prefix, TTL: 10 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	if err := st.Ping(tb.Context()); err != nil {
		tb.Skipf("no Redis at %s: %v", url, err)
	}
	return st
}

// newProviderGateway is the real server, with metrics, JSON info logs (to
// io.Discard) and in-memory sessions, serving agent as the virtual model
// of its name on the openai provider pc ("mock", no retries); with, when
// not nil, changes its Config before it is built.
func newProviderGateway(tb testing.TB, agent spec.Agent, pc openai.Config, with func(*gateway.Config)) *gateway.Server {
	tb.Helper()
	return newAgentGateway(tb, agent, spec.Provider{Name: "mock", Type: "openai"},
		func(p spec.Provider) (func(string) (model.LLM, error), error) {
			pc.Name, pc.APIKey, pc.MaxRetries = p.Name, "mock-key", -1
			prov, err := openai.New(pc)
			if err != nil {
				return nil, err
			}
			return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
		}, with)
}

// newAgentGateway is newProviderGateway's server with agent on provider p,
// made by factory; with, when not nil, changes its Config.
func newAgentGateway(tb testing.TB, agent spec.Agent, p spec.Provider, factory spec.ProviderFactory, with func(*gateway.Config)) *gateway.Server {
	tb.Helper()
	agent.Model = p.Name + "/" + agent.Name
	set := spec.Set{
		Providers: []spec.Provider{p},
		Agents:    []spec.Agent{agent},
		Models:    []spec.VirtualModel{{ID: agent.Name, Agent: agent.Name}},
	}
	cat, err := spec.Build(set, spec.BuildOptions{Factories: map[string]spec.ProviderFactory{p.Type: factory}})
	if err != nil {
		tb.Fatal(err)
	}
	mx, err := metrics.New(metrics.Config{Spec: set})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := gateway.Config{Catalog: cat, Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}), Metrics: mx,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})), LogJSON: io.Discard}
	if with != nil {
		with(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return gw
}

// benchHistory is the JSON of rounds past exchanges, four messages each: a
// user question, an assistant tool call, the tool's answer and the
// assistant's reply.
func benchHistory(rounds int) string {
	msgs := make([]string, 0, 4*rounds)
	for i := range rounds {
		id := `"call_` + strconv.Itoa(i) + `"`
		msgs = append(msgs,
			`{"role":"user","content":"What is the weather in city `+strconv.Itoa(i)+`?"}`,
			`{"role":"assistant","content":null,"tool_calls":[{"id":`+id+
				`,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"city `+strconv.Itoa(i)+`\"}"}}]}`,
			`{"role":"tool","tool_call_id":`+id+`,"content":"{\"temperature\":21,\"sky\":\"clear\"}"}`,
			`{"role":"assistant","content":"It is 21 degrees and clear."}`)
	}
	return strings.Join(msgs, ",")
}

// connRecorder is an httptest.ResponseRecorder that takes read and write
// deadlines as a server connection does (it ignores them). The gateway
// sets them on every request through http.ResponseController, which
// builds an error for each on a writer that cannot take them: a cost the
// real server does not pay, and which would hide its own.
type connRecorder struct{ *httptest.ResponseRecorder }

func newConnRecorder() connRecorder { return connRecorder{httptest.NewRecorder()} }

func (connRecorder) SetReadDeadline(time.Time) error  { return nil }
func (connRecorder) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkResponsesTurn is BenchmarkChatTurn's turn on /v1/responses: the
// same gateway and upstream, a new conversation (stored, as the default
// store true does) or none (store false) per turn.
func BenchmarkResponsesTurn(b *testing.B) {
	for _, tc := range []struct {
		name   string
		stream bool
		store  bool
	}{
		{"nonstream/store", false, true},
		{"stream/store", true, true},
		{"nonstream/stateless", false, false},
		{"stream/stateless", true, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			gw := newBenchGateway(b, nil)
			body := []byte(fmt.Sprintf(`{"model":"pass","stream":%v,"store":%v,"input":"Hello, how are you?"}`, tc.stream, tc.store))
			postTurns(b, gw, "/v1/responses", body, []byte(`"status":"completed"`))
		})
	}
}

// postTurns posts body to path on gw once per iteration, each answer 200
// with want in it, and reports the process's CPU time per turn.
func postTurns(b *testing.B, gw http.Handler, path string, body, want []byte) {
	b.Helper()
	b.ReportAllocs()
	cpu0 := benchenv.CPU()
	for b.Loop() {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := newConnRecorder()
		gw.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), want) {
			b.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
		}
	}
	b.ReportMetric(float64(benchenv.CPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkChatTurn(b *testing.B) {
	const hello = `{"role":"user","content":"Hello, how are you?"}`
	for _, tc := range []struct {
		name      string
		stream    bool
		stateless bool
		messages  string // the JSON array's elements
		// redis keeps the sessions in Redis, and with runs the run log
		// and index too (cmd/gateway's wiring for sessions.backend redis).
		redis, runs bool
		// history is how many past turns (two events each) every session
		// holds when the first turn reads it: the sessions are a
		// thousand, each used again every thousand turns (a benchmark of
		// 3000 turns reads from 38 events to 44).
		history int
	}{
		{name: "nonstream/session", messages: hello},
		{name: "stream/session", stream: true, messages: hello},
		{name: "nonstream/stateless", stateless: true, messages: hello},
		{name: "stream/stateless", stream: true, stateless: true, messages: hello},
		// A stateless client resends the whole conversation every turn.
		{name: "nonstream/stateless-history40", stateless: true, messages: benchHistory(10) + "," + hello},
		// A session's client sends the new message alone: the store reads
		// back the conversation, 40 events or so.
		{name: "nonstream/session-history40", messages: hello, history: 19},
		// Every turn a new session in Redis: its lease, create and read,
		// then its write.
		{name: "nonstream/redis", messages: hello, redis: true},
		{name: "stream/redis", stream: true, messages: hello, redis: true},
		{name: "nonstream/redis-runs", messages: hello, redis: true, runs: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var with func(*gateway.Config)
			if tc.redis {
				with = redisSessions(b, tc.runs)
			}
			gw, session := newBenchGateway(b, with), newSession
			switch {
			case tc.stateless:
				session = nil
			case tc.history > 0:
				session = func(i int) string { return "history-" + strconv.Itoa(i%1000) }
				body := []byte(fmt.Sprintf(`{"model":"pass","stream":%v,"messages":[%s]}`, tc.stream, tc.messages))
				for i := range 1000 * tc.history {
					postChatTurn(b, gw, body, session(i))
				}
			}
			chatTurns(b, gw, tc.stream, session, tc.messages)
		})
	}
}

// BenchmarkChatTurnCold is BenchmarkChatTurn's turn on a new session with
// the processor's caches emptied before each turn (untimed), as they are in
// production between two turns of a lightly loaded gateway: in the load
// test's one-turn-at-a-time runs the load generator, the upstream and the
// other servers run between two turns and take the caches over. What a
// turn costs then is mostly fetching its code and data from memory, not
// executing it; BenchmarkChatTurn, whose loop keeps everything cached,
// does not show that part. Under cachegrind (testing/cachegrind-turn.sh)
// the same benchmark counts, exactly and on any machine, the instructions
// and the cache lines a turn fetches.
func BenchmarkChatTurnCold(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "nonstream", true: "stream"}[stream]+"/session", func(b *testing.B) {
			chatTurnColdLoop(b, newBenchGateway(b, nil), stream)
		})
	}
}

// chatTurnColdLoop runs b's turns through gw, each on a new session with
// the caches emptied before it, untimed. (Its name holds "TurnCold":
// testing/cachegrind-turn.sh leaves the emptying out of its counts.)
func chatTurnColdLoop(b *testing.B, gw http.Handler, stream bool) {
	const hello = `{"role":"user","content":"Hello, how are you?"}`
	body := []byte(fmt.Sprintf(`{"model":"pass","stream":%v,"messages":[%s]}`, stream, hello))
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		benchenv.EvictCachesUntimed(b)
		i++
		postChatTurn(b, gw, body, newSession(i))
	}
}

// BenchmarkChatTurnColdWaited is BenchmarkChatTurnCold's non-streamed
// turn with the caches emptied a second time, untimed, while the upstream
// answers. In the load test's one-at-a-time runs the machine idles while a
// turn waits for the upstream, and what the turn touches after the wait
// comes from memory again (testing/coldcost measures what a line costs
// then): code and data the turn uses both before and after the call are
// fetched twice, which BenchmarkChatTurnCold counts once. Under cachegrind
// (testing/cachegrind-turn.sh nonstream-waited) it counts the lines as the
// live turn fetches them; the floor proxy's BenchmarkProxyTurnColdWaited
// is its match.
func BenchmarkChatTurnColdWaited(b *testing.B) {
	t := newCannedTransport(20)
	t.waiting = func() { benchenv.EvictCachesUntimed(b) }
	chatTurnColdLoop(b, newBenchGatewayOn(b, t, nil), false)
}

// newSession names a new session for each turn.
func newSession(i int) string { return "bench-" + strconv.Itoa(i) }

// chatTurns runs b.N chat completions of messages (the JSON array's
// elements) through gw, the i-th on the session session(i) names (none
// when session is nil: stateless).
// Beside ns/op it reports the process's CPU time per turn (with and
// without the collector's idle marking: busy-cpu-ns/op), and what each
// turn left live on the heap once collected (objects and bytes: what
// every later collection marks, the sessions and the run log kept).
func chatTurns(b *testing.B, gw http.Handler, stream bool, session func(i int) string, messages string) {
	b.Helper()
	body := []byte(fmt.Sprintf(`{"model":"pass","stream":%v,"messages":[%s]}`, stream, messages))
	i := 0
	b.ReportAllocs()
	before := liveHeap()
	cpu0, idle0 := benchenv.CPU(), benchenv.IdleGC()
	for b.Loop() {
		i++
		id := ""
		if session != nil {
			id = session(i)
		}
		postChatTurn(b, gw, body, id)
	}
	// The process's CPU time (GC workers included) per turn: on a
	// shared machine it varies less than ns/op.
	cpu, idle := benchenv.CPU()-cpu0, benchenv.IdleGC()-idle0
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	// The same without the collector's idle marking (see benchenv.IdleGC),
	// which fills the processor the turn leaves idle while it waits.
	b.ReportMetric(float64(cpu-idle)/float64(b.N), "busy-cpu-ns/op")
	after := liveHeap()
	b.ReportMetric(float64(int64(after.HeapObjects-before.HeapObjects))/float64(b.N), "live-objs/op")
	b.ReportMetric(float64(int64(after.HeapAlloc-before.HeapAlloc))/float64(b.N), "live-B/op")
	// Of those bytes, the ones the collector scans for pointers.
	b.ReportMetric(float64(int64(after.scan-before.scan))/float64(b.N), "live-scan-B/op")
}

// collected is the heap once collected: its MemStats, and scan, the bytes
// of it the collector scans for pointers.
type collected struct {
	runtime.MemStats
	scan uint64
}

// postChatTurn posts a chat completion of body to gw on the session
// sessionID ("": none), which must finish.
func postChatTurn(b *testing.B, gw http.Handler, body []byte, sessionID string) {
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if sessionID != "" {
		req.Header.Set("X-Session-Id", sessionID)
	}
	w := newConnRecorder()
	gw.ServeHTTP(w, req)
	if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"finish_reason":"stop"`)) {
		b.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
	}
}

// liveHeap is the heap once collected.
func liveHeap() collected {
	var c collected
	runtime.GC()
	runtime.ReadMemStats(&c.MemStats)
	m := []rtmetrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	rtmetrics.Read(m)
	c.scan = m[0].Value.Uint64()
	return c
}

// BenchmarkChatTurnRunLog is BenchmarkChatTurn's turn on a new session,
// with the sessions and the run log in memory or in Redis (redisSessions:
// the store's run log and run index, as cmd/gateway wires them), and each
// with its run log ("log") or with none ("nolog": a log that keeps
// nothing), to show what logging a run's frames costs a client that stays
// connected; "redis" keeps frames packed (runs.pack_frames, the default),
// "redis-json" as their JSON.
func BenchmarkChatTurnRunLog(b *testing.B) {
	const hello = `{"role":"user","content":"Hello, how are you?"}`
	for _, store := range []string{"memory", "redis", "redis-json"} {
		for _, stream := range []bool{false, true} {
			for _, logged := range []bool{true, false} {
				if store == "redis-json" && !logged {
					continue // the same as redis/nolog
				}
				name := map[bool]string{false: "nonstream", true: "stream"}[stream] + "/" + store + "/" +
					map[bool]string{true: "log", false: "nolog"}[logged]
				b.Run(name, func(b *testing.B) {
					with := func(*gateway.Config) {}
					switch store {
					case "redis":
						with = redisSessions(b, true)
					case "redis-json": // runs.pack_frames: false
						with = redisSessionsLog(b, true, sessionsredis.RunLogConfig{JSONFrames: true})
					}
					if !logged {
						keep := with
						with = func(c *gateway.Config) {
							keep(c)
							c.RunLog = noRunLog{}
						}
					}
					chatTurns(b, newBenchGateway(b, with), stream, newSession, hello)
				})
			}
		}
	}
}

// noRunLog is a run log that keeps nothing.
type noRunLog struct{}

var _ runs.EventLog = noRunLog{}

func (noRunLog) Open(context.Context, string) error { return nil }
func (noRunLog) Append(context.Context, string, runs.Frame) (int64, error) {
	return 0, nil
}
func (noRunLog) End(context.Context, string) error { return nil }
func (noRunLog) Read(context.Context, string, int64, int) ([]runs.Frame, bool, error) {
	return nil, false, runs.ErrNotFound
}
func (noRunLog) Follow(context.Context, string, int64) iter.Seq2[runs.Frame, error] {
	return func(yield func(runs.Frame, error) bool) { yield(runs.Frame{}, runs.ErrNotFound) }
}

// countingListener counts what the server does on the connections it
// accepts: its writes (over TCP each is a system call and, on loopback, a
// wake-up of the reader) and its deadline changes (net/http's and the
// gateway's; each is a change of the connection's timers in the runtime).
type countingListener struct {
	net.Listener
	n *connCounts
}

type connCounts struct{ writes, deadlines atomic.Int64 }

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *connCounts
}

func (c countingConn) Write(b []byte) (int, error) {
	c.n.writes.Add(1)
	return c.Conn.Write(b)
}

func (c countingConn) SetReadDeadline(t time.Time) error {
	c.n.deadlines.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c countingConn) SetWriteDeadline(t time.Time) error {
	c.n.deadlines.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// BenchmarkChatTurnConn is BenchmarkChatTurn's turns over a real loopback
// connection the client keeps alive, so that what the gateway does on the
// connection (its deadlines) is paid as in production: it reports the
// connection's deadline changes per turn (deadlines/op, net/http's
// included) and the process's CPU time per turn (cpu-ns/op, the client's
// included).
func BenchmarkChatTurnConn(b *testing.B) {
	const hello = `{"role":"user","content":"Hello, how are you?"}`
	for _, tc := range []struct {
		name              string
		stream, stateless bool
	}{
		{"nonstream/session", false, false},
		{"stream/session", true, false},
		{"nonstream/stateless", false, true},
		{"stream/stateless", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var n connCounts
			srv := httptest.NewUnstartedServer(newBenchGateway(b, nil))
			srv.Listener = countingListener{Listener: srv.Listener, n: &n}
			srv.Start()
			defer srv.Close()
			body := []byte(fmt.Sprintf(`{"model":"pass","stream":%v,"messages":[%s]}`, tc.stream, hello))
			want := []byte(`"finish_reason":"stop"`)
			client, i := srv.Client(), 0
			b.ReportAllocs()
			n.deadlines.Store(0)
			cpu0 := benchenv.CPU()
			for b.Loop() {
				i++
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if !tc.stateless {
					req.Header.Set("X-Session-Id", "bench-"+strconv.Itoa(i))
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(got, want) {
					b.Fatalf("status %d, %v: %s", resp.StatusCode, err, got)
				}
			}
			b.ReportMetric(float64(benchenv.CPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(n.deadlines.Load())/float64(b.N), "deadlines/op")
		})
	}
}

// BenchmarkStreamBurst is a streamed chat turn over real connections
// (loopback TCP: client, gateway and upstream in this process) whose
// upstream sends its 20 deltas in one write, on each streaming provider:
// what the pacing of flushes (model.Pacer) saves shows as the gateway's
// writes to its client per turn (writes/op), and in the CPU the turn
// costs the process (cpu-ns/op, the client's and the upstream's included,
// which pacing does not change).
func BenchmarkStreamBurst(b *testing.B) {
	const deltas = 20
	for _, p := range paceProviders {
		b.Run(p.name, func(b *testing.B) {
			var body strings.Builder
			for i := range deltas {
				body.WriteString(p.delta("tok" + strconv.Itoa(i) + " "))
			}
			body.WriteString(p.tail)
			answer := body.String()
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				streamUpstream(w, r)
				_, _ = io.WriteString(w, answer)
			}))
			defer up.Close()
			gw := newAgentGateway(b, spec.Agent{Name: "pace", Instruction: "Answer."},
				spec.Provider{Name: "up", Type: p.name, BaseURL: up.URL, APIKey: "sk-test"}, p.factory, nil)
			var n connCounts
			srv := httptest.NewUnstartedServer(gw)
			srv.Listener = countingListener{Listener: srv.Listener, n: &n}
			srv.Start()
			defer srv.Close()
			req := []byte(`{"model":"pace","stream":true,"messages":[{"role":"user","content":"Hello, how are you?"}]}`)
			client := srv.Client()
			b.ReportAllocs()
			n.writes.Store(0)
			cpu0 := benchenv.CPU()
			for b.Loop() {
				resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(req))
				if err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !bytes.HasSuffix(got, []byte("data: [DONE]\n\n")) {
					b.Fatalf("status %d, %v: %s", resp.StatusCode, err, got)
				}
			}
			b.ReportMetric(float64(benchenv.CPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(n.writes.Load())/float64(b.N), "writes/op")
		})
	}
}
