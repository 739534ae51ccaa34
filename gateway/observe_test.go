package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/sessions"
)

// obsFixture serves the demo desk and a fake-model app with metrics on
// and JSON logs captured.
type obsFixture struct {
	*fixture
	logs *syncBuffer
}

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

// lines decodes the captured JSON log records.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func newObsFixture(t *testing.T, fake fakeFn, opts ...fixtureOpt) *obsFixture {
	t.Helper()
	logs := &syncBuffer{}
	set := spec.Set{
		Providers: []spec.Provider{{Name: "demo", Type: "scripted", ChunkSize: 4, Rules: demoRules}, {Name: "fk", Type: "fake"}},
		Agents: []spec.Agent{
			{Name: "coordinator", Model: "demo/coord", Description: "Routes.", Instruction: "Route.", SubAgents: []string{"greeter", "billing"}, AgentTools: []string{"summarizer"}},
			{Name: "greeter", Model: "demo/greeter", Description: "Greets."},
			{Name: "billing", Model: "demo/billing", Description: "Refunds.", Tools: []spec.Tool{{Name: "issue_refund", Kind: "client", Description: "Refund in the client's system"}}},
			{Name: "summarizer", Model: "demo/summ", Description: "Summarizes."},
			{Name: "solo", Model: "fk/solo", Description: "A single agent on a fake model.", Parameters: []spec.Parameter{{Name: "account"}}},
		},
		Models: []spec.VirtualModel{{ID: "desk", Agent: "coordinator", RouteNextTurn: "root"}, {ID: "fake", Agent: "solo"}},
	}
	m, err := metrics.New(metrics.Config{Spec: set})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, set, fake, append(opts, func(c *gateway.Config) {
		c.Metrics = m
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})...)
	return &obsFixture{fixture: f, logs: logs}
}

// scrape reads /metrics into "name{labels}" -> value.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
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
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func TestMetricsAfterTraffic(t *testing.T) {
	f := newObsFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		yield(nil, &model.Error{Provider: "fk", Model: "solo", Status: 429, Code: "rate_limited", Message: "slow down"})
	})
	chat := func(body string, headers ...string) (int, string) {
		resp := f.post("/v1/chat/completions", body, headers...)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// A streamed transfer, on a session.
	if code, body := chat(`{"model":"desk","stream":true,"messages":[{"role":"user","content":"hi there"}]}`, "X-Session-Id", "sess-secret-1"); code != 200 || !strings.Contains(body, "[DONE]") {
		t.Fatalf("stream: %d %s", code, body)
	}
	// An agent tool, not streamed, stateless.
	if code, body := chat(`{"model":"desk","messages":[{"role":"user","content":"summarize the moon"}]}`); code != 200 {
		t.Fatalf("agent tool: %d %s", code, body)
	}
	// A client tool from the request: its name is the client's, not a label.
	if code, body := chat(`{"model":"desk","user":"user-secret-1","messages":[{"role":"user","content":"weather?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`); code != 200 || !strings.Contains(body, "tool_calls") {
		t.Fatalf("client tool: %d %s", code, body)
	}
	// An upstream failure.
	if code, _ := chat(`{"model":"fake","messages":[{"role":"user","content":"x"}]}`); code != 429 {
		t.Fatalf("rate limited: %d", code)
	}
	// Unknown routes and models.
	resp, err := http.Get(f.srv.URL + "/no/such/route-secret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _ := chat(`{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}`); code != 404 {
		t.Fatalf("unknown model: %d", code)
	}

	got := scrape(t, f.srv.URL)
	const cc = `route="/v1/chat/completions"`
	for _, want := range []struct {
		key string
		min float64
	}{
		{`agentgate_http_requests_total{method="POST",` + cc + `,status="2xx"}`, 3},
		{`agentgate_http_requests_total{method="POST",` + cc + `,status="4xx"}`, 2},
		{`agentgate_http_requests_total{method="GET",route="unmatched",status="4xx"}`, 1},
		{`agentgate_http_request_duration_seconds_count{method="POST",` + cc + `}`, 5},
		{`agentgate_time_to_first_token_seconds_count{model="desk",` + cc + `}`, 1},
		{`agentgate_model_calls_total{model="coord",outcome="ok",provider="demo"}`, 3},
		{`agentgate_model_calls_total{model="greeter",outcome="ok",provider="demo"}`, 1},
		{`agentgate_model_calls_total{model="summ",outcome="ok",provider="demo"}`, 1},
		{`agentgate_model_calls_total{model="solo",outcome="rate_limited",provider="fk"}`, 1},
		{`agentgate_model_call_duration_seconds_count{model="coord",provider="demo"}`, 3},
		{`agentgate_tokens_total{agent="coordinator",kind="prompt",model="coord",provider="demo"}`, 1},
		{`agentgate_tokens_total{agent="greeter",kind="completion",model="greeter",provider="demo"}`, 1},
		{`agentgate_tool_calls_total{outcome="ok",tool="summarizer"}`, 1},
		{`agentgate_tool_calls_total{outcome="ok",tool="transfer_to_agent"}`, 1},
		{`agentgate_tool_calls_total{outcome="ok",tool="other"}`, 1},
		{`agentgate_tool_call_duration_seconds_count{tool="summarizer"}`, 1},
		{`agentgate_transfers_total{from="coordinator",to="greeter"}`, 1},
		{`agentgate_session_store_operations_total{op="get_or_create",outcome="ok"}`, 1},
		{`agentgate_session_store_operations_total{op="create",outcome="ok"}`, 1},
		{`agentgate_session_store_operations_total{op="append_event",outcome="ok"}`, 2},
		{`agentgate_session_store_operations_total{op="lock",outcome="ok"}`, 1},
		{`agentgate_session_store_operations_total{op="unlock",outcome="ok"}`, 1},
		{`agentgate_session_store_operation_duration_seconds_count{op="append_event"}`, 2},
		{`go_goroutines`, 1},
	} {
		if v, ok := got[want.key]; !ok || v < want.min {
			t.Errorf("%s = %v (present %v), want >= %v", want.key, v, ok, want.min)
		}
	}
	if v, ok := got[`agentgate_open_streams{`+cc+`}`]; !ok || v != 0 {
		t.Errorf("open streams after traffic = %v (present %v), want 0", v, ok)
	}
	// Label values come from closed sets only.
	for k := range got {
		for _, leak := range []string{"sess-secret", "user-secret", "route-secret", "get_weather", "no-such-model"} {
			if strings.Contains(k, leak) {
				t.Errorf("series %s carries a request value (%s)", k, leak)
			}
		}
	}
}

func TestMetricsOpenStreamGauge(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	f := newObsFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		part := &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "a"}}}}
		if !yield(part, nil) {
			return
		}
		close(started)
		<-release
		yield(textFinal("ab"), nil)
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := f.post("/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	<-started
	key := `agentgate_open_streams{route="/v1/chat/completions"}`
	waitFor(t, "the first frame", func() bool {
		return scrape(t, f.srv.URL)[`agentgate_time_to_first_token_seconds_count{model="fake",route="/v1/chat/completions"}`] == 1
	})
	if v := scrape(t, f.srv.URL)[key]; v != 1 {
		t.Errorf("while streaming: %s = %v, want 1", key, v)
	}
	close(release)
	<-done
	waitFor(t, "the stream to close", func() bool { return scrape(t, f.srv.URL)[key] == 0 })
}

func TestLogsCarryIDsAndNoSecrets(t *testing.T) {
	t.Run("slog", func(t *testing.T) { testLogsCarryIDsAndNoSecrets(t, false) })
	// The access line written by hand (Config.LogJSON), here to a buffer
	// of its own, to see that it went there.
	t.Run("LogJSON", func(t *testing.T) { testLogsCarryIDsAndNoSecrets(t, true) })
}

func testLogsCarryIDsAndNoSecrets(t *testing.T, logJSON bool) {
	hand := &syncBuffer{}
	var opts []fixtureOpt
	if logJSON {
		opts = append(opts, func(c *gateway.Config) { c.LogJSON = hand })
	}
	inner := &syncBuffer{}
	innerLog := slog.New(agentcore.NewLogHandler(slog.NewJSONHandler(inner, nil)))
	f := newObsFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		// A provider (or tool) logging with its context gets the ids.
		innerLog.InfoContext(ctx, "inside the model")
		yield(nil, &model.Error{Provider: "fk", Model: "solo", Status: 500, Code: "upstream_error", Message: "boom"})
	}, opts...)
	resp := f.post("/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"my password is hunter2"}],
		"metadata":{"param.account":"acct-secret-42"}}`,
		"Authorization", "Bearer sk-live-secret-token", "X-Session-Id", "s-logs", "X-Request-Id", "req-fixed-1")
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := map[string]string{"request_id": "req-fixed-1", "model": "fake", "session_id": "s-logs", "agent": "solo"}
	check := func(name string, rec map[string]any) {
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("%s: %s = %v, want %q (record %v)", name, k, rec[k], v, rec)
			}
		}
		if id, _ := rec["invocation_id"].(string); id == "" {
			t.Errorf("%s: no invocation_id in %v", name, rec)
		}
	}
	var sawAccess, sawWarn bool
	lines := f.logs.lines(t)
	if logJSON {
		for _, rec := range lines {
			if rec["msg"] == "request" {
				t.Errorf("the access line went through slog: %v", rec)
			}
		}
		lines = append(lines, hand.lines(t)...)
	}
	for _, rec := range lines {
		switch rec["msg"] {
		case "request":
			sawAccess = true
			check("access log", rec)
			if rec["route"] != "/v1/chat/completions" || rec["status"] != float64(502) {
				t.Errorf("access log %v", rec)
			}
		case "chat completion failed":
			sawWarn = true
			check("failure log", rec)
		}
	}
	if !sawAccess || !sawWarn {
		t.Errorf("missing records in %s", f.logs.String())
	}
	inside := inner.lines(t)
	if len(inside) != 1 {
		t.Fatalf("inner log: %s", inner.String())
	}
	check("runtime log", inside[0])
	for _, out := range []string{f.logs.String(), inner.String(), hand.String()} {
		for _, secret := range []string{"sk-live-secret-token", "hunter2", "acct-secret-42"} {
			if strings.Contains(out, secret) {
				t.Errorf("logs carry %q:\n%s", secret, out)
			}
		}
	}
}

// The metrics wrapper keeps the store's readiness probe and outcomes.
func TestMetricsStoreWrapper(t *testing.T) {
	m, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := m.Sessions(sessions.NewMemoryService(sessions.MemoryConfig{}))
	if _, ok := store.(sessions.Pinger); !ok {
		t.Fatal("wrapped store is not a Pinger")
	}
	if _, ok := store.(sessions.BatchAppender); !ok {
		t.Fatal("wrapped store is not a BatchAppender")
	}
	ctx := context.Background()
	if _, err := store.Create(ctx, sessions.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, sessions.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"}); err == nil {
		t.Fatal("duplicate create succeeded")
	}
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	got := scrape(t, srv.URL)
	for _, k := range []string{`agentgate_session_store_operations_total{op="create",outcome="ok"}`,
		`agentgate_session_store_operations_total{op="create",outcome="exists"}`} {
		if got[k] != 1 {
			t.Errorf("%s = %v, want 1", k, got[k])
		}
	}
}

// A turn on a session reads it from the store once: the runner uses the
// session the gateway read under the run lock, and a new session is made by
// that read. Per turn, with the in-memory store and locker: lock, get or
// create, one append of the whole turn, unlock. With a store that takes the
// lock with its read (and creates a new session in it), as Redis does:
// that one "lock" and the append (the write releases the lease).
func TestSessionTurnStoreOperations(t *testing.T) {
	locking := &lockingMemory{sessions.NewMemoryService(sessions.MemoryConfig{})}
	tests := []struct {
		name  string
		opts  []fixtureOpt
		store func(f *obsFixture) sessions.Service
		want  map[string]float64
	}{
		{"memory store and locker", nil, func(f *obsFixture) sessions.Service { return f.store }, map[string]float64{
			`op="lock",outcome="ok"`: 2, `op="unlock",outcome="ok"`: 2,
			`op="get_or_create",outcome="ok"`: 2,
			`op="append_event",outcome="ok"`:  2, // the user's message and the answer in one batch, twice
		}},
		{"a store that locks with its read", []fixtureOpt{withStoreLocker(locking)}, func(*obsFixture) sessions.Service { return locking }, map[string]float64{
			`op="lock",outcome="ok"`: 2, `op="append_event",outcome="ok"`: 2,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newObsFixture(t, nil, tt.opts...)
			for i := range 2 {
				resp := f.post("/v1/chat/completions", `{"model":"fake","metadata":{"param.account":"a-1"},"messages":[{"role":"user","content":"x"}]}`,
					"X-Session-Id", "s-ops")
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("turn %d: status %d", i, resp.StatusCode)
				}
			}
			if diff := cmp.Diff(tt.want, storeOps(t, f)); diff != "" {
				t.Errorf("store operations of two turns (-want +got):\n%s", diff)
			}
			sess, err := tt.store(f).Get(t.Context(), sessions.GetRequest{AppName: "fake", UserID: "anonymous", SessionID: "s-ops"})
			if err != nil {
				t.Fatal(err)
			}
			if len(sess.Events) != 4 {
				t.Errorf("%d events stored, want 4", len(sess.Events))
			}
			// The session was created with the conversation's parameters.
			if got := agentcore.ParamsFromState(sess.State[agentcore.ParamsStateKey]); got.Len() != 1 {
				t.Errorf("stored parameters %v, want the request's account", sess.State[agentcore.ParamsStateKey])
			}
		})
	}
}

// storeOps scrapes the session-store operations counted so far, by their
// labels ("op=\"lock\",outcome=\"ok\"").
func storeOps(t *testing.T, f *obsFixture) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	const prefix = "agentgate_session_store_operations_total{"
	for k, v := range scrape(t, f.srv.URL) {
		if labels, ok := strings.CutPrefix(k, prefix); ok && v != 0 {
			got[strings.TrimSuffix(labels, "}")] = v
		}
	}
	return got
}

// A native run reads its session under the run lock, once: with a store
// that locks with its read, the lock and the turn's write are all.
func TestNativeRunStoreOperations(t *testing.T) {
	locking := &lockingMemory{sessions.NewMemoryService(sessions.MemoryConfig{})}
	for _, tt := range []struct {
		name string
		opts []fixtureOpt
		want map[string]float64
	}{
		{"memory store and locker", nil, map[string]float64{
			`op="lock",outcome="ok"`: 1, `op="get",outcome="ok"`: 1, `op="append_event",outcome="ok"`: 1, `op="unlock",outcome="ok"`: 1,
		}},
		{"a store that locks with its read", []fixtureOpt{withStoreLocker(locking)}, map[string]float64{
			`op="lock",outcome="ok"`: 1, `op="append_event",outcome="ok"`: 1,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newObsFixture(t, nil, tt.opts...)
			resp := f.post("/apps/fake/users/u/sessions/s-native", `{}`)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("create: status %d", resp.StatusCode)
			}
			before := storeOps(t, f)
			resp = f.post("/run", `{"appName":"fake","userId":"u","sessionId":"s-native","newMessage":{"parts":[{"text":"x"}]}}`)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("run: status %d", resp.StatusCode)
			}
			got := storeOps(t, f)
			for k, v := range before {
				if got[k] -= v; got[k] == 0 {
					delete(got, k)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("store operations of a run (-want +got):\n%s", diff)
			}
			// A missing session is still 404, and leaves its lock free.
			resp = f.post("/run", `{"appName":"fake","userId":"u","sessionId":"nope","newMessage":{"parts":[{"text":"x"}]}}`)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("run on a missing session: status %d, want 404", resp.StatusCode)
			}
			resp = f.post("/apps/fake/users/u/sessions/nope", `{}`)
			resp.Body.Close()
			resp = f.post("/run", `{"appName":"fake","userId":"u","sessionId":"nope","newMessage":{"parts":[{"text":"x"}]}}`)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("run after the 404 and a create: status %d, want 200 (the lock was let go)", resp.StatusCode)
			}
		})
	}
}

// lockingMemory is a store that takes a session's run lock with its read,
// and creates a new session in the same step, as the Redis store does:
// here the in-memory store's lock and read, one after the other.
type lockingMemory struct {
	*sessions.MemoryService
}

func (m *lockingMemory) AcquireGet(ctx context.Context, req sessions.GetRequest, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	release, err := m.Acquire(ctx, req.AppName, req.UserID, req.SessionID, wait)
	if err != nil {
		return nil, nil, err
	}
	sess, err := m.Get(ctx, req)
	return sess, release, err
}

func (m *lockingMemory) AcquireGetOrCreate(ctx context.Context, req sessions.CreateRequest, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	release, err := m.Acquire(ctx, req.AppName, req.UserID, req.SessionID, wait)
	if err != nil {
		return nil, nil, err
	}
	sess, err := m.GetOrCreate(ctx, req)
	if err != nil {
		release.Release()
		return nil, nil, err
	}
	return sess, release, nil
}

// withStoreLocker makes s the gateway's store and its locker.
func withStoreLocker(s *lockingMemory) fixtureOpt {
	return func(c *gateway.Config) { c.Sessions, c.Locker = s, s }
}

// heldLog holds the access log's record (message "request") until release
// is closed, and notes when it gave up waiting.
type heldLog struct {
	release chan struct{}
	gaveUp  chan struct{}
}

func (h *heldLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *heldLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		select {
		case <-h.release:
		case <-time.After(10 * time.Second):
			close(h.gaveUp)
		}
	}
	return nil
}

func (h *heldLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *heldLog) WithGroup(string) slog.Handler      { return h }

// A whole answer reaches the client before the request's bookkeeping
// after it (the run's end, the access log, the metrics): the access log
// here waits until the client has read the whole answer, which it could
// not if the answer went out only when the handler returned.
func TestAnswerBeforeBookkeeping(t *testing.T) {
	verifyNoLeaks(t)
	log := &heldLog{release: make(chan struct{}), gaveUp: make(chan struct{})}
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		yield(textFinal("fake answer"), nil)
	}, func(c *gateway.Config) { c.Logger = slog.New(log) })
	resp := f.post("/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`)
	body, err := io.ReadAll(resp.Body) // until Content-Length: the body's end
	resp.Body.Close()
	close(log.release)
	select {
	case <-log.gaveUp:
		t.Fatal("the answer reached the client only after the access log")
	default:
	}
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"content":"fake answer"`)) {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, body)
	}
	if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
		t.Errorf("Content-Length %d, transfer encoding %v, for a body of %d bytes", resp.ContentLength, resp.TransferEncoding, len(body))
	}
}
