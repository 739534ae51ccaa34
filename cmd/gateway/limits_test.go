package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdUpstream is a chat-completions upstream that answers with 15 tokens
// of usage; a message containing "hold" is answered only once release is
// closed (or its request is gone), after held was signalled.
type holdUpstream struct {
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHoldUpstream(t *testing.T) (*holdUpstream, string) {
	u := &holdUpstream{held: make(chan struct{}, 4), release: make(chan struct{})}
	srv := httptest.NewServer(u)
	t.Cleanup(srv.Close)
	t.Cleanup(u.unblock) // before the server's Close
	return u, srv.URL
}

func (u *holdUpstream) unblock() { u.once.Do(func() { close(u.release) }) }

func (u *holdUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	if strings.Contains(lastText(req), "hold") {
		u.held <- struct{}{}
		select {
		case <-u.release:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": req["model"],
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

const limitsConfig = `
log: {level: warn}
sessions: {lock_ttl: %[2]s}
limits: {requests_per_minute: 3, concurrent_turns: 1}
providers:
  - {name: up, type: openai, base_url: "%[1]s/v1", api_key: k, max_retries: 0}
agents:
  - {name: desk, model: up/agent-1}
models:
  - {id: desk, agent: desk, limits: {tokens_per_day: 20}}
  - {id: plain, agent: desk}
`

// limitedChat runs a turn of user on model in session over /v1; it returns
// the status, the refusal's param and Retry-After.
func limitedChat(t *testing.T, base, model, user, session, text string) (status int, param, retry string) {
	t.Helper()
	resp, b := postChat(t, base, session, fmt.Sprintf(`{"model":%q,"user":%q,"messages":[{"role":"user","content":%q}]}`, model, user, text))
	var e struct{ Error struct{ Param string } }
	_ = json.Unmarshal(b, &e)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s on %s: %d %s", text, base, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Error.Param, resp.Header.Get("Retry-After")
}

func limitsReplicas(t *testing.T, lockTTL string) (upstream *holdUpstream, bin, cfg string, env []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	redisURL, _ := startRedis(t)
	upstream, upURL := newHoldUpstream(t)
	bin = buildGateway(t)
	cfg = filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(limitsConfig, upURL, lockTTL)), 0o644); err != nil {
		t.Fatal(err)
	}
	return upstream, bin, cfg, []string{"REDIS_URL=" + redisURL, "AGENTGATE_CONFIG="}
}

// Two gateway processes on one Redis hold each user to one set of counts:
// a turn running on one replica takes the user's only concurrent slot on
// the other, tokens used on one refuse the next turn on the other, and the
// requests of a minute are counted across both.
func TestLimitsHeldAcrossReplicas(t *testing.T) {
	up, bin, cfg, env := limitsReplicas(t, "30s")
	a := startGateway(t, bin, cfg, env...)
	b := startGateway(t, bin, cfg, env...)

	first := make(chan int, 1)
	go func() {
		status, _, _ := limitedChat(t, a, "desk", "ann", "ann-1", "hold on")
		first <- status
	}()
	<-up.held
	if status, param, retry := limitedChat(t, b, "desk", "ann", "ann-2", "meanwhile"); status != 429 || param != "concurrent_turns" || retry != "1" {
		t.Errorf("a second turn on the other replica: %d %q Retry-After %q, want 429 concurrent_turns after 1", status, param, retry)
	}
	if status, _, _ := limitedChat(t, b, "plain", "bob", "bob-1", "hi"); status != 200 {
		t.Errorf("another user meanwhile: %d", status)
	}
	up.unblock()
	if status := <-first; status != 200 {
		t.Fatalf("the held turn: %d", status)
	}
	// ann used 15 tokens of desk's 20 on a: b still admits her (15 < 20),
	// and then a refuses her (30).
	if status, _, _ := limitedChat(t, b, "desk", "ann", "ann-2", "again"); status != 200 {
		t.Errorf("ann under her tokens: %d", status)
	}
	if status, param, _ := limitedChat(t, a, "desk", "ann", "ann-3", "more"); status != 429 || param != "tokens_per_day" {
		t.Errorf("ann over her tokens: %d %q, want 429 tokens_per_day", status, param)
	}
	// bob's minute: one turn on b above, one on a, one on b, then none.
	for i, base := range []string{a, b} {
		if status, _, _ := limitedChat(t, base, "plain", "bob", "bob-1", fmt.Sprint("turn ", i)); status != 200 {
			t.Fatalf("bob's turn %d: %d", i+2, status)
		}
	}
	status, param, retry := limitedChat(t, a, "plain", "bob", "bob-1", "one more")
	if n, err := strconv.Atoi(retry); status != 429 || param != "requests_per_minute" || err != nil || n < 1 || n > 60 {
		t.Errorf("bob's fourth turn of the minute: %d %q Retry-After %q, want 429 requests_per_minute", status, param, retry)
	}
	metrics := metricsText(t, a)
	for _, want := range []string{`agentgate_limit_refusals_total{limit="tokens_per_day",model="desk"} 1`,
		`agentgate_limit_refusals_total{limit="requests_per_minute",model="plain"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("a's /metrics lacks %s", want)
		}
	}
}

// A replica killed in the middle of a turn does not keep the user's
// concurrent slot: its lease (sessions.lock_ttl, 1s here) is no longer
// renewed, and the other replica admits the user once it lapsed.
func TestLimitsDeadReplicaFreesItsTurn(t *testing.T) {
	up, bin, cfg, env := limitsReplicas(t, "1s")
	a, proc := startGatewayProcess(t, bin, cfg, env...)
	b := startGateway(t, bin, cfg, env...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a+"/v1/chat/completions",
			strings.NewReader(`{"model":"plain","user":"ann","messages":[{"role":"user","content":"hold on"}]}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-up.held
	if status, param, _ := limitedChat(t, b, "plain", "ann", "ann-b", "meanwhile"); status != 429 || param != "concurrent_turns" {
		t.Fatalf("while a runs ann's turn: %d %q, want 429 concurrent_turns", status, param)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = proc.Wait()
	deadline := time.Now().Add(30 * time.Second) // far beyond the lease: a slot kept forever fails here
	for {
		status, _, _ := limitedChat(t, b, "plain", "ann", "ann-b", "after the crash")
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead replica's turn still holds ann's only concurrent slot")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A limit under 1 stops start-up, naming its key, globally and per model.
func TestBadLimitsStopStartUp(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{"limits: {concurrent_turns: 0}\n", "limits.concurrent_turns: must be at least 1"},
		{"limits:\n  tokens_per_day: lots\n", "limits.tokens_per_day"},
		{"", "models[0].limits.requests_per_minute: must be at least 1"},
	} {
		model := "{id: desk, agent: desk}"
		if tc.cfg == "" {
			model = "{id: desk, agent: desk, limits: {requests_per_minute: -1}}"
		}
		path := filepath.Join(t.TempDir(), "bad.yaml")
		cfg := tc.cfg + "providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]\nagents: [{name: desk, model: demo/x}]\nmodels: [" + model + "]\n"
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %s; want 2 naming %s", tc.cfg, code, stderr.String(), tc.want)
		}
	}
}
