package gateway_test

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/gateway"
	sessionsredis "github.com/agentgate/agentgate/sessions/redis"
)

// redisScripts follows the script calls (EVALSHA, EVAL) the Redis the
// tests share receives on keys under prefix, with MONITOR on a connection
// of its own (closed when the test ends).
type redisScripts struct {
	mu    sync.Mutex
	calls []string // each call's first key
}

func monitorScripts(t *testing.T, prefix string) *redisScripts {
	t.Helper()
	u, err := url.Parse(cmp.Or(os.Getenv("AGENTGATE_TEST_REDIS_URL"), "redis://127.0.0.1:6379/0"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Skipf("no Redis at %s: %v", u.Host, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, "MONITOR\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Skipf("MONITOR: %q, %v", line, err)
	}
	s := &redisScripts{}
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			// +<time> [<db> <client>] "evalsha" "<sha>" "<n>" "<key>" ...
			_, rest, _ := strings.Cut(line, "] ")
			f := strings.SplitN(rest, " ", 5)
			if len(f) < 5 || (f[0] != `"evalsha"` && f[0] != `"eval"`) || !strings.HasPrefix(f[3], `"`+prefix) {
				continue
			}
			s.mu.Lock()
			s.calls = append(s.calls, strings.Trim(f[3], `"`))
			s.mu.Unlock()
		}
	}()
	return s
}

// during returns the script calls fn makes, the last of them seen settle
// first (MONITOR reports them as they run; a run's end may follow its
// answer).
func (s *redisScripts) during(fn func()) []string {
	s.mu.Lock()
	n := len(s.calls)
	s.mu.Unlock()
	fn()
	for seen := -1; ; {
		time.Sleep(200 * time.Millisecond)
		s.mu.Lock()
		now := len(s.calls)
		s.mu.Unlock()
		if now == seen {
			break
		}
		seen = now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[n:]
}

// A non-streamed chat turn on a new Redis session, with the run log and
// index in the same Redis (cmd/gateway's wiring), makes two scripts: the
// lease, create and read, then the events, the lease's release and the
// run's end (its frames, its log's end and its index entry) together, as
// the turn ended well and nothing after it can fail. A turn that hands the
// client tool calls stores their refs after its events (which can fail),
// and a streamed turn fails its run when its context ends after its events:
// their runs end after, as before, in a third. Either way another replica
// lists the run completed and re-attaches to its frames.
func TestChatTurnEndsRunWithItsWrite(t *testing.T) {
	prefix := redisPrefix()
	replica := func() func(*gateway.Config) {
		st := redisStore(t, prefix)
		return func(c *gateway.Config) {
			// The frames wait for the run's end, however slow the turn.
			c.Sessions, c.RunLog, c.RunIndex = st, st.RunLog(sessionsredis.RunLogConfig{Linger: time.Hour}), st.RunIndex()
		}
	}
	f, other := newFixture(t, nil, replica()), newFixture(t, nil, replica())
	scripts := monitorScripts(t, prefix)
	const tools = `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}]`
	turn := func(session, text string, stream bool, extra string) (inv, body string) {
		t.Helper()
		req := `{"model":"desk","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
			`,"messages":[{"role":"user","content":"` + text + `"}]` + extra + `}`
		resp := f.post("/v1/chat/completions", req, "X-Session-Id", session)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", text, resp.StatusCode, b)
		}
		_, rest, ok := strings.Cut(string(b), `"invocation_id":"`)
		if !ok {
			t.Fatalf("no invocation id in %s", b)
		}
		inv, _, _ = strings.Cut(rest, `"`)
		return inv, string(b)
	}
	scripts.during(func() { // scripts loaded
		for i, s := range []string{"warm", "warm-stream", "warm-tools"} {
			turn(s, map[int]string{2: "what is the weather?"}[i]+"hello", i == 1, map[int]string{2: tools}[i])
		}
	})
	for _, tc := range []struct {
		name, session, text, extra string
		stream                     bool
		// want: the keys of the scripts called, after the prefix.
		want []string
	}{
		{name: "answer", session: "s1", text: "hello", want: []string{"{desk|anonymous}:meta:s1", "{desk|anonymous}:meta:s1"}},
		{name: "streamed", session: "s2", text: "hello", stream: true, want: []string{"{desk|anonymous}:meta:s2", "{desk|anonymous}:meta:s2", "{run|"}},
		{name: "client tool calls", session: "s3", text: "what is the weather?", extra: tools,
			want: []string{"{desk|anonymous}:meta:s3", "{desk|anonymous}:meta:s3", "{run|"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inv, body string
			got := scripts.during(func() { inv, body = turn(tc.session, tc.text, tc.stream, tc.extra) })
			if len(got) != len(tc.want) {
				t.Fatalf("scripts %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i, k := range got {
				if !strings.HasPrefix(strings.TrimPrefix(k, prefix), tc.want[i]) {
					t.Errorf("script %d on %q, want %q", i, k, tc.want[i])
				}
			}
			if tc.extra != "" && !strings.Contains(body, `"tool_calls"`) {
				t.Errorf("no tool calls in %s", body)
			}
			sess := "/apps/desk/users/anonymous/sessions/" + tc.session
			status, b := other.getRaw(sess + "/runs")
			var list []map[string]any
			if err := json.Unmarshal(b, &list); status != http.StatusOK || err != nil {
				t.Fatalf("runs on the other replica: %d %s", status, b)
			}
			if len(list) != 1 || list[0]["invocationId"] != inv || list[0]["status"] != "completed" {
				t.Errorf("runs on the other replica: %v, want %s completed", list, inv)
			}
			status, b = other.getRaw(sess + "/runs/" + inv + "/events")
			if status != http.StatusOK || !strings.Contains(string(b), "data: ") || !strings.Contains(string(b), `"invocationId":"`+inv+`"`) {
				t.Errorf("re-attached on the other replica: %d %q", status, b)
			}
			status, b = other.getRaw(sess)
			var stored struct{ Events []json.RawMessage }
			if err := json.Unmarshal(b, &stored); status != http.StatusOK || err != nil || len(stored.Events) < 2 {
				t.Errorf("session on the other replica: %d %s", status, b)
			}
		})
	}
}
