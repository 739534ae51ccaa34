package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/limits"
)

// limitSurface is one public route a turn runs through: send runs a turn of
// user (named "" without a token) on the model "fake" and returns the
// response; refused checks a 429 body in the surface's own format.
type limitSurface struct {
	name    string
	send    func(f *fixture, user, token string, n int) *http.Response
	refused func(t *testing.T, body []byte, limit string)
}

func authHeaders(token string) []string {
	if token == "" {
		return nil
	}
	return []string{"Authorization", "Bearer " + token}
}

// nativeSession creates the session a native run runs on.
func nativeSession(f *fixture, user, token string, n int) string {
	id := fmt.Sprintf("s-%s-%d", user, n)
	if token != "" {
		user = "me"
	}
	resp := f.post("/apps/fake/users/"+user+"/sessions/"+id, `{}`, authHeaders(token)...)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("create session %s: %d", id, resp.StatusCode)
	}
	return id
}

func nativeRunBody(f *fixture, user, token string, n int) string {
	id := nativeSession(f, user, token, n)
	if token != "" {
		user = "me"
	}
	return fmt.Sprintf(`{"appName":"fake","userId":%q,"sessionId":%q,"newMessage":{"role":"user","parts":[{"text":"hi"}]}}`, user, id)
}

func openAIRefused(t *testing.T, body []byte, limit string) {
	t.Helper()
	var e struct {
		Error struct{ Type, Code, Param, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != "rate_limit_exceeded" || e.Error.Param != limit ||
		e.Error.Type != "rate_limit_error" || !strings.Contains(e.Error.Message, limit) {
		t.Errorf("OpenAI refusal %s, want code rate_limit_exceeded, param %s", body, limit)
	}
}

var limitSurfaces = []limitSurface{
	{name: "chat", send: func(f *fixture, user, token string, n int) *http.Response {
		return f.post("/v1/chat/completions", fmt.Sprintf(`{"model":"fake","user":%q,"messages":[{"role":"user","content":"hi %d"}]}`, user, n), authHeaders(token)...)
	}, refused: openAIRefused},
	{name: "chat stream", send: func(f *fixture, user, token string, n int) *http.Response {
		return f.post("/v1/chat/completions", fmt.Sprintf(`{"model":"fake","stream":true,"user":%q,"messages":[{"role":"user","content":"hi %d"}]}`, user, n), authHeaders(token)...)
	}, refused: openAIRefused},
	{name: "run", send: func(f *fixture, user, token string, n int) *http.Response {
		return f.post("/run", nativeRunBody(f, user, token, n), authHeaders(token)...)
	}, refused: nativeRefused},
	{name: "run_sse", send: func(f *fixture, user, token string, n int) *http.Response {
		return f.post("/run_sse", nativeRunBody(f, user, token, n), authHeaders(token)...)
	}, refused: nativeRefused},
	{name: "a2a", send: func(f *fixture, user, token string, n int) *http.Response {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"metadata":{"user":%q},"message":{"messageId":"m%d","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`, user, n)
		return f.post("/a2a/fake", body, authHeaders(token)...)
	}, refused: func(t *testing.T, body []byte, limit string) {
		t.Helper()
		var r struct {
			ID    int
			Error struct {
				Code    int
				Message string
				Data    map[string]any
			}
		}
		if err := json.Unmarshal(body, &r); err != nil || r.ID != 7 || r.Error.Code != -32029 || r.Error.Data["param"] != limit ||
			r.Error.Data["code"] != "rate_limit_exceeded" || !strings.Contains(r.Error.Message, limit) {
			t.Errorf("A2A refusal %s, want a JSON-RPC error -32029 naming %s", body, limit)
		}
	}},
	{name: "responses", send: func(f *fixture, user, token string, n int) *http.Response {
		return f.post("/v1/responses", fmt.Sprintf(`{"model":"fake","user":%q,"input":"hi %d"}`, user, n), authHeaders(token)...)
	}, refused: openAIRefused},
	{name: "responses stream", send: func(f *fixture, user, token string, n int) *http.Response {
		return f.post("/v1/responses", fmt.Sprintf(`{"model":"fake","stream":true,"user":%q,"input":"hi %d"}`, user, n), authHeaders(token)...)
	}, refused: openAIRefused},
}

func nativeRefused(t *testing.T, body []byte, limit string) {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(body, &e); err != nil || len(e) != 1 || !strings.Contains(fmt.Sprint(e["error"]), limit) {
		t.Errorf("native refusal %s, want {\"error\": ...} naming %s", body, limit)
	}
}

// failedTurn finds an error in a 200 answer: an error object or message
// (chat and native error frames), or a failed response (not the Responses
// object's "error": null).
var failedTurn = regexp.MustCompile(`"error":\s*[{"]|response\.failed`)

// ok reads a response that must have run its turn.
func ok(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || failedTurn.Match(body) {
		t.Fatalf("%s: %d %s", what, resp.StatusCode, body)
	}
}

// refusedBy checks a 429 with Retry-After in [1, most] seconds.
func refusedBy(t *testing.T, s limitSurface, resp *http.Response, limit string, most int) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d %s, want 429", resp.StatusCode, body)
	}
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n < 1 || n > most {
		t.Errorf("Retry-After %q, want 1..%d seconds", resp.Header.Get("Retry-After"), most)
	}
	s.refused(t, body, limit)
}

func withLimits(global limits.Values) fixtureOpt {
	return func(c *gateway.Config) { c.Limits = global }
}

// limitsFixture serves "fake" with the model's own limits.
func limitsFixture(t *testing.T, fake fakeFn, perModel *limits.Limits, opts ...fixtureOpt) *fixture {
	set := spec.Set{
		Providers: []spec.Provider{{Name: "fk", Type: "fake"}},
		Agents:    []spec.Agent{{Name: "solo", Model: "fk/solo"}},
		Models:    []spec.VirtualModel{{ID: "fake", Agent: "solo", Limits: perModel}},
	}
	return newFixtureWith(t, set, fake, opts...)
}

func ptr(n int64) *int64 { return &n }

// Each limit refuses the turn it exceeds, on every surface, with 429 and
// Retry-After in the surface's format; another user is counted apart.
func TestLimitsOnEverySurface(t *testing.T) {
	for _, s := range limitSurfaces {
		t.Run(s.name+"/requests_per_minute", func(t *testing.T) {
			f := limitsFixture(t, nil, nil, withLimits(limits.Values{RequestsPerMinute: 2}))
			ok(t, "first", s.send(f, "ann", "", 1))
			ok(t, "second", s.send(f, "ann", "", 2))
			refusedBy(t, s, s.send(f, "ann", "", 3), limits.RequestsPerMinute, 60)
			ok(t, "another user", s.send(f, "bob", "", 4))
		})
		t.Run(s.name+"/tokens_per_day", func(t *testing.T) {
			// The model's own limit: each turn reports 15 tokens.
			f := limitsFixture(t, nil, &limits.Limits{TokensPerDay: ptr(20)})
			ok(t, "first", s.send(f, "ann", "", 1))
			ok(t, "second (14 < 20 when it began)", s.send(f, "ann", "", 2))
			refusedBy(t, s, s.send(f, "ann", "", 3), limits.TokensPerDay, 24*60*60)
			ok(t, "another user", s.send(f, "bob", "", 4))
		})
		t.Run(s.name+"/concurrent_turns", func(t *testing.T) {
			started, release := make(chan struct{}, 1), make(chan struct{})
			var calls atomic.Int32
			f := limitsFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
				if calls.Add(1) == 1 {
					started <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				yield(textFinal("done"), nil)
			}, nil, withLimits(limits.Values{ConcurrentTurns: 1}))
			unblock := sync.OnceFunc(func() { close(release) })
			t.Cleanup(unblock) // registered after the server's Close: runs before it
			first := make(chan *http.Response, 1)
			go func() { first <- s.send(f, "ann", "", 1) }()
			<-started
			refusedBy(t, s, s.send(f, "ann", "", 2), limits.ConcurrentTurns, 1)
			ok(t, "another user", s.send(f, "bob", "", 3))
			unblock()
			ok(t, "the running turn", <-first)
			ok(t, "after it ended", s.send(f, "ann", "", 4))
		})
	}
}

// The turn counted tokens from before tokens_per_day; a turn under the
// limit when it began still ran.
func TestTokensCountedWhenTheTurnEnds(t *testing.T) {
	f := limitsFixture(t, nil, nil, withLimits(limits.Values{TokensPerDay: 31}))
	for i := range 3 { // 0, 15, 30 tokens used when each begins
		ok(t, fmt.Sprint("turn ", i), limitSurfaces[0].send(f, "ann", "", i))
	}
	refusedBy(t, limitSurfaces[0], limitSurfaces[0].send(f, "ann", "", 4), limits.TokensPerDay, 24*60*60)
}

// With a token the user is the token's: the request's user field does not
// escape the count.
func TestLimitsCountTheTokensUser(t *testing.T) {
	models := map[string]any{"models": []string{"fake"}}
	ann := token(t, "ann", models)
	for _, s := range []limitSurface{limitSurfaces[0], limitSurfaces[2]} {
		t.Run(s.name, func(t *testing.T) {
			f := limitsFixture(t, nil, nil, withJWT(t), withLimits(limits.Values{RequestsPerMinute: 1}))
			ok(t, "first", s.send(f, "ann", ann, 1))
			refusedBy(t, s, s.send(f, "someone-else", ann, 2), limits.RequestsPerMinute, 60)
			ok(t, "another token", s.send(f, "ann", token(t, "bob", models), 3))
		})
	}
}

// The stricter of the global and the model's limits applies, and /metrics
// counts the refusals by limit and model.
func TestLimitsStricterAppliesAndMetricsCount(t *testing.T) {
	set := spec.Set{
		Providers: []spec.Provider{{Name: "fk", Type: "fake"}},
		Agents:    []spec.Agent{{Name: "solo", Model: "fk/solo"}},
		Models: []spec.VirtualModel{{ID: "fake", Agent: "solo", Limits: &limits.Limits{RequestsPerMinute: ptr(1)}},
			{ID: "other", Agent: "solo"}},
	}
	mx, err := metrics.New(metrics.Config{Spec: set})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, set, nil, withLimits(limits.Values{RequestsPerMinute: 3}), func(c *gateway.Config) { c.Metrics = mx })
	chat := func(model string) *http.Response {
		return f.post("/v1/chat/completions", `{"model":"`+model+`","user":"ann","messages":[{"role":"user","content":"hi"}]}`)
	}
	ok(t, "fake", chat("fake"))
	refusedBy(t, limitSurfaces[0], chat("fake"), limits.RequestsPerMinute, 60) // the model's 1
	ok(t, "other", chat("other"))
	ok(t, "other", chat("other"))
	refusedBy(t, limitSurfaces[0], chat("other"), limits.RequestsPerMinute, 60) // the global 3
	resp, err := http.Get(f.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentgate_limit_refusals_total{limit="requests_per_minute",model="fake"} 1`,
		`agentgate_limit_refusals_total{limit="requests_per_minute",model="other"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
