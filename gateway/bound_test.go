package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/sessions"
)

// newBoundedFixture serves the native fixture on an in-memory store of at
// most max sessions, with metrics.
func newBoundedFixture(t *testing.T, max int, fake fakeFn) *nativeFixture {
	t.Helper()
	m, err := metrics.New(metrics.Config{Spec: spec.Set{}})
	if err != nil {
		t.Fatal(err)
	}
	store := sessions.NewMemoryService(sessions.MemoryConfig{MaxSessions: max})
	return newNativeFixture(t, fake, func(c *gateway.Config) { c.Sessions, c.Metrics = store, m })
}

// boundMetrics reads the store's gauge and eviction counters.
func boundMetrics(t *testing.T, f *nativeFixture) (held, evicted, refsEvicted float64) {
	t.Helper()
	m := scrape(t, f.srv.URL)
	return m["agentgate_sessions_held"], m["agentgate_sessions_evicted_total"], m["agentgate_session_refs_evicted_total"]
}

// With sessions.max_sessions reached, a new session evicts the least
// recently used one with its sub-conversations: reading it answers 404 on
// the sessions REST routes, and /metrics counts the eviction.
func TestBoundedStoreEvictsOverREST(t *testing.T) {
	f := newBoundedFixture(t, 2, nil)
	session := func(id string) string { return "/apps/desk/users/u1/sessions/" + id }
	f.createSession("desk", "s1")
	f.createSession("desk", "s2")
	f.mustRunSSE(runBody("s1", "summarize the news", "")) // s1 used last, with a sub-conversation
	f.mustDo(http.StatusOK, http.MethodGet, session("s1/summarizer"), "")

	f.createSession("desk", "s3")
	status, body := f.do(http.MethodGet, session("s2"), "")
	if status != http.StatusNotFound {
		t.Fatalf("GET the evicted s2: status %d, want 404; body %s", status, body)
	}
	errorBody(t, body)
	for _, id := range []string{"s1", "s1/summarizer", "s3"} {
		f.mustDo(http.StatusOK, http.MethodGet, session(id), "")
	}
	if held, evicted, _ := boundMetrics(t, f); held != 2 || evicted != 1 {
		t.Errorf("after one eviction: agentgate_sessions_held %v, agentgate_sessions_evicted_total %v; want 2 and 1", held, evicted)
	}

	f.mustDo(http.StatusOK, http.MethodGet, session("s3"), "") // a read is a use: s1 is the oldest now
	f.createSession("desk", "s4")
	for _, id := range []string{"s1", "s1/summarizer"} {
		if status, body := f.do(http.MethodGet, session(id), ""); status != http.StatusNotFound {
			t.Errorf("GET %s of the evicted tree: status %d, want 404; body %s", id, status, body)
		}
	}
	if status, body := f.do(http.MethodPost, "/run", runBody("s1", "hello", "")); status != http.StatusNotFound {
		t.Errorf("run on the evicted s1: status %d, want 404; body %s", status, body)
	}
	for _, id := range []string{"s3", "s4"} {
		f.mustDo(http.StatusOK, http.MethodGet, session(id), "")
	}
	if held, evicted, refs := boundMetrics(t, f); held != 2 || evicted != 2 || refs != 0 {
		t.Errorf("after two evictions: held %v, evicted %v, refs evicted %v; want 2, 2, 0", held, evicted, refs)
	}
}

// A session whose turn is running holds the run lease, and the store does
// not evict it, however many sessions are created meanwhile: the turn
// stores its events and the session is there afterwards.
func TestBoundedStoreKeepsRunningSession(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	f := newBoundedFixture(t, 2, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		yield(&model.Response{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
	})
	f.createSession("fake", "busy")
	done := make(chan int)
	go func() {
		status, _ := f.do(http.MethodPost, "/run", `{"appName":"fake","userId":"u1","sessionId":"busy","newMessage":{"role":"user","parts":[{"text":"x"}]}}`)
		done <- status
	}()
	<-started
	for _, id := range []string{"s1", "s2", "s3"} {
		f.createSession("fake", id)
	}
	close(release)
	if status := <-done; status != http.StatusOK {
		t.Fatalf("the running turn: status %d", status)
	}
	sess := jsonOf(t, f.mustDo(http.StatusOK, http.MethodGet, "/apps/fake/users/u1/sessions/busy", "")).(map[string]any)
	if evs, _ := sess["events"].([]any); len(evs) != 2 {
		t.Errorf("the running session kept %d events, want the turn's 2", len(evs))
	}
	f.mustDo(http.StatusOK, http.MethodGet, "/apps/fake/users/u1/sessions/s3", "")
	for _, id := range []string{"s1", "s2"} {
		if status, _ := f.do(http.MethodGet, "/apps/fake/users/u1/sessions/"+id, ""); status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404 (evicted while busy was pinned)", id, status)
		}
	}
	if _, evicted, _ := boundMetrics(t, f); evicted != 2 {
		t.Errorf("agentgate_sessions_evicted_total %v, want 2", evicted)
	}
}
