package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// summaryUpstream is a recording chat-completions upstream: the summarizer
// model answers "SUMMARY-<n>", any other model "re: <last message>".
// onSummary, when set, is called with the request and n before the
// summarizer's n-th answer (a test holds it there).
type summaryUpstream struct {
	mu        sync.Mutex
	reqs      []map[string]any
	sums      int
	onSummary func(r *http.Request, n int)
}

func (u *summaryUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	u.mu.Lock()
	u.reqs = append(u.reqs, req)
	answer := "re: " + lastText(req)
	n := 0
	if req["model"] == "summarizer-1" {
		u.sums++
		n = u.sums
		answer = fmt.Sprintf("SUMMARY-%d", n)
	}
	u.mu.Unlock()
	if n > 0 && u.onSummary != nil {
		u.onSummary(r, n)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": req["model"],
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop"}}})
}

// texts lists a request's messages as "role: text".
func texts(req map[string]any) []string {
	var out []string
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		out = append(out, fmt.Sprintf("%v: %v", msg["role"], contentText(msg["content"])))
	}
	return out
}

func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, p := range v {
			part, _ := p.(map[string]any)
			if s, ok := part["text"].(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

func lastText(req map[string]any) string {
	t := texts(req)
	if len(t) == 0 {
		return ""
	}
	_, text, _ := strings.Cut(t[len(t)-1], ": ")
	return text
}

func (u *summaryUpstream) byModel(model string) []map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []map[string]any
	for _, r := range u.reqs {
		if r["model"] == model {
			out = append(out, r)
		}
	}
	return out
}

const compactionConfig = `
providers:
  - {name: up, type: openai, base_url: "%s/v1", api_key: k, max_retries: 0}
agents:
  - {name: desk, model: up/agent-1, instruction: "Help."}
models:
  - id: desk
    agent: desk
    compaction: {interval: 2, overlap: 0, model: up/summarizer-1}
`

// getJSON decodes a GET's JSON answer.
func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, raw)
	}
}

type restSession struct {
	Events []struct {
		Author  string `json:"author"`
		Content *struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		Actions struct {
			Compaction *struct {
				StartTimestamp   float64 `json:"startTimestamp"`
				EndTimestamp     float64 `json:"endTimestamp"`
				CompactedContent struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"compactedContent"`
			} `json:"compaction"`
		} `json:"actions"`
	} `json:"events"`
}

// lines renders a session's events as "author: text" and
// "compaction: <summary>".
func (s restSession) lines() []string {
	var out []string
	for _, ev := range s.Events {
		switch {
		case ev.Actions.Compaction != nil:
			out = append(out, "compaction: "+ev.Actions.Compaction.CompactedContent.Parts[0].Text)
		case ev.Content != nil && len(ev.Content.Parts) > 0:
			out = append(out, ev.Author+": "+ev.Content.Parts[0].Text)
		}
	}
	return out
}

// A user's view of compaction: after two turns the summarizer is called
// with them; the next request carries the summary instead; the session's
// REST view keeps every original event; imported compaction events count
// like the gateway's own; /metrics counts the compactions.
func TestCompactionEndToEnd(t *testing.T) {
	up := &summaryUpstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	gw := runConfig(t, fmt.Sprintf(compactionConfig, srv.URL), nil)
	sessURL := gw.base + "/apps/desk/users/anonymous/sessions/"

	toolsChat(t, gw.base, "desk", "s1", "my name is Ada", nil)
	toolsChat(t, gw.base, "desk", "s1", "I like tea", nil)
	var sess restSession
	eventually(t, "the compaction event", func() bool {
		getJSON(t, sessURL+"s1", &sess)
		return len(sess.Events) == 5
	})
	sums := up.byModel("summarizer-1")
	if len(sums) != 1 {
		t.Fatalf("summarizer calls = %d, want 1", len(sums))
	}
	if got := lastText(sums[0]); !strings.Contains(got, "[user] said: my name is Ada") || !strings.Contains(got, "[desk] said: re: I like tea") {
		t.Errorf("summarization request lacks the turns:\n%s", got)
	}

	toolsChat(t, gw.base, "desk", "s1", "what do I drink?", nil)
	agent := up.byModel("agent-1")
	want := []string{"system: Help.", "user: Summary of the conversation so far:\nSUMMARY-1", "user: what do I drink?"}
	if diff := cmp.Diff(want, texts(agent[len(agent)-1])); diff != "" {
		t.Errorf("request after the compaction (-want +got):\n%s", diff)
	}
	getJSON(t, sessURL+"s1", &sess)
	want = []string{"user: my name is Ada", "desk: re: my name is Ada", "user: I like tea", "desk: re: I like tea",
		"compaction: SUMMARY-1", "user: what do I drink?", "desk: re: what do I drink?"}
	if diff := cmp.Diff(want, sess.lines()); diff != "" {
		t.Errorf("GET of the session (-want +got):\n%s", diff)
	}

	// Imported at create: the compaction event stands for what it covers.
	body := `{"sessionId": "imported", "events": [
	  {"author": "user", "timestamp": 100, "content": {"role": "user", "parts": [{"text": "old question"}]}},
	  {"author": "desk", "timestamp": 101, "content": {"role": "model", "parts": [{"text": "old answer"}]}},
	  {"author": "user", "timestamp": 102, "actions": {"compaction": {"startTimestamp": 100, "endTimestamp": 101,
	    "compactedContent": {"role": "model", "parts": [{"text": "IMPORTED SUMMARY"}]}}}}]}`
	resp, err := http.Post(gw.base+"/apps/desk/users/anonymous/sessions", "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("create with events: %d %s", resp.StatusCode, raw)
	}
	toolsChat(t, gw.base, "desk", "imported", "and now?", nil)
	agent = up.byModel("agent-1")
	want = []string{"system: Help.", "user: Summary of the conversation so far:\nIMPORTED SUMMARY", "user: and now?"}
	if diff := cmp.Diff(want, texts(agent[len(agent)-1])); diff != "" {
		t.Errorf("request on an imported compacted session (-want +got):\n%s", diff)
	}

	if metrics := metricsText(t, gw.base); !strings.Contains(metrics, `agentgate_compactions_total{model="desk",outcome="stored"} 1`) {
		t.Errorf("/metrics lacks the stored compaction:\n%s", grepLines(metrics, "compaction"))
	}
}

// metricsText is a gateway's /metrics page.
func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Bad compaction settings stop start-up, each naming its key.
func TestBadCompactionConfigExitsTwo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := `
providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]
agents: [{name: desk, model: demo/x}]
models:
  - {id: a, agent: desk, compaction: {interval: 0, overlap: -1, model: demo/x}}
  - {id: b, agent: desk, compaction: {interval: 3, model: nowhere/x}}
  - {id: c, agent: desk, compaction: {interval: 3}}
  - {id: d, agent: desk, compaction: {interval: 3, model: demo/x, overlap: 1, every: 2}}
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"every"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	// Without the unknown key, the values are checked.
	if err := os.WriteFile(path, []byte(strings.Replace(bad, ", every: 2", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, want := range []string{"models[0].compaction.interval: must be at least 1", "models[0].compaction.overlap: must not be negative",
		`models[1].compaction.model: unknown provider "nowhere"`, "models[2].compaction.model: required"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// heldSummaryUpstream serves a summaryUpstream whose first summary waits
// for release (called at the latest when the test ends, before the server
// closes), or for its caller to give up; summarizing receives once it
// waits.
func heldSummaryUpstream(t *testing.T) (up *summaryUpstream, url string, summarizing <-chan struct{}, release func()) {
	t.Helper()
	held, free := make(chan struct{}, 1), make(chan struct{})
	up = &summaryUpstream{onSummary: func(r *http.Request, n int) {
		if n == 1 {
			held <- struct{}{}
			select {
			case <-free:
			case <-r.Context().Done():
			}
		}
	}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	release = sync.OnceFunc(func() { close(free) })
	t.Cleanup(release)
	return up, srv.URL, held, release
}

// Back-to-back turns on one session while the summary is being written:
// they start no compaction of their own (skipped: one runs); the
// compaction is stored all the same, after those turns, and covers only
// the turns it was asked about. The next request carries the summary,
// then the turns that came meanwhile; they are summarized next. GET of
// the session keeps every event, in the order stored. In memory and in
// Redis.
//
// A turn's compaction is decided in the background after its response,
// so the test waits for the outcomes on /metrics: for the two turns'
// skips before it releases the summary (decided later, they would find
// the summary stored and their turns due, and summarize them at once),
// and for the store before the next turn (whose compaction would
// otherwise find the first one's lease still held).
func TestCompactionOfABusySession(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			var env map[string]string
			if backend == "redis" {
				url, _ := startRedis(t)
				env = map[string]string{"REDIS_URL": url}
			}
			up, upURL, summarizing, release := heldSummaryUpstream(t)
			gw := runConfig(t, fmt.Sprintf(compactionConfig, upURL), env)

			toolsChat(t, gw.base, "desk", "s1", "my name is Ada", nil)
			toolsChat(t, gw.base, "desk", "s1", "I like tea", nil)
			<-summarizing // of the first two turns; held there
			toolsChat(t, gw.base, "desk", "s1", "I live in Paris", nil)
			toolsChat(t, gw.base, "desk", "s1", "I code in Go", nil)
			eventually(t, "the two turns' compactions, skipped", func() bool {
				return strings.Contains(metricsText(t, gw.base), `agentgate_compactions_total{model="desk",outcome="skipped"} 2`)
			})
			release()
			eventually(t, "the compaction, stored", func() bool {
				return strings.Contains(metricsText(t, gw.base), `agentgate_compactions_total{model="desk",outcome="stored"} 1`)
			})
			var sess restSession
			getJSON(t, gw.base+"/apps/desk/users/anonymous/sessions/s1", &sess)
			if len(sess.Events) != 9 {
				t.Fatalf("the session after the compaction has %d events, want 9: %v", len(sess.Events), sess.lines())
			}

			toolsChat(t, gw.base, "desk", "s1", "what do I drink?", nil)
			agent := up.byModel("agent-1")
			want := []string{"system: Help.", "user: Summary of the conversation so far:\nSUMMARY-1",
				"user: I live in Paris", "assistant: re: I live in Paris", "user: I code in Go", "assistant: re: I code in Go",
				"user: what do I drink?"}
			if diff := cmp.Diff(want, texts(agent[len(agent)-1])); diff != "" {
				t.Errorf("request after the compaction (-want +got):\n%s", diff)
			}
			eventually(t, "the second compaction", func() bool { return len(up.byModel("summarizer-1")) == 2 })
			sums := up.byModel("summarizer-1")
			if got := lastText(sums[1]); !strings.HasPrefix(got, "Previous summary:\nSUMMARY-1") ||
				strings.Contains(got, "Ada") || !strings.Contains(got, "[user] said: I live in Paris") ||
				!strings.Contains(got, "[desk] said: re: what do I drink?") {
				t.Errorf("second summarization request, want the previous summary and the three turns after it:\n%s", got)
			}
			eventually(t, "the second compaction event", func() bool {
				getJSON(t, gw.base+"/apps/desk/users/anonymous/sessions/s1", &sess)
				return len(sess.Events) == 12
			})
			toolsChat(t, gw.base, "desk", "s1", "and where do I live?", nil)
			agent = up.byModel("agent-1")
			want = []string{"system: Help.", "user: Summary of the conversation so far:\nSUMMARY-2", "user: and where do I live?"}
			if diff := cmp.Diff(want, texts(agent[len(agent)-1])); diff != "" {
				t.Errorf("request after the second compaction (-want +got):\n%s", diff)
			}
			getJSON(t, gw.base+"/apps/desk/users/anonymous/sessions/s1", &sess)
			want = []string{"user: my name is Ada", "desk: re: my name is Ada", "user: I like tea", "desk: re: I like tea",
				"user: I live in Paris", "desk: re: I live in Paris", "user: I code in Go", "desk: re: I code in Go",
				"compaction: SUMMARY-1", "user: what do I drink?", "desk: re: what do I drink?", "compaction: SUMMARY-2",
				"user: and where do I live?", "desk: re: and where do I live?"}
			if diff := cmp.Diff(want, sess.lines()); diff != "" {
				t.Errorf("GET of the session (-want +got):\n%s", diff)
			}
		})
	}
}

// On shutdown the gateway waits for a compaction under way, within
// server.shutdown_grace: the summary its last turns asked for is stored
// before the process exits, and served by the next replica.
func TestShutdownWaitsForCompaction(t *testing.T) {
	url, _ := startRedis(t)
	env := map[string]string{"REDIS_URL": url}
	_, upURL, summarizing, release := heldSummaryUpstream(t)
	cfg := fmt.Sprintf(compactionConfig, upURL)
	gw := runConfig(t, cfg, env)
	toolsChat(t, gw.base, "desk", "s1", "my name is Ada", nil)
	toolsChat(t, gw.base, "desk", "s1", "I like tea", nil)
	<-summarizing
	gw.cancel() // SIGTERM
	eventually(t, "the wait for the compaction", func() bool {
		return strings.Contains(gw.stdout.String(), `"msg":"waiting for compactions","running":1`)
	})
	select {
	case code := <-gw.done:
		t.Fatalf("exited (%d) while the compaction ran", code)
	default:
	}
	release()
	gw.stop(t) // exits 0
	if strings.Contains(gw.stdout.String(), "compaction stopped") {
		t.Errorf("the compaction was stopped:\n%s", gw.stdout.String())
	}

	next := runConfig(t, cfg, env)
	var sess restSession
	getJSON(t, next.base+"/apps/desk/users/anonymous/sessions/s1", &sess)
	want := []string{"user: my name is Ada", "desk: re: my name is Ada", "user: I like tea", "desk: re: I like tea", "compaction: SUMMARY-1"}
	if diff := cmp.Diff(want, sess.lines()); diff != "" {
		t.Errorf("the session after the shutdown (-want +got):\n%s", diff)
	}
}

// A compaction still running at the end of server.shutdown_grace is
// stopped (its upstream call cancelled), the process exits 0, nothing of
// it is stored, and the session's next turn runs it again.
func TestShutdownStopsCompactionAfterGrace(t *testing.T) {
	url, _ := startRedis(t)
	env := map[string]string{"REDIS_URL": url}
	_, upURL, summarizing, _ := heldSummaryUpstream(t) // never released: the gateway gives up
	cfg := "server: {shutdown_grace: 200ms}\n" + fmt.Sprintf(compactionConfig, upURL)
	gw := runConfig(t, cfg, env)
	toolsChat(t, gw.base, "desk", "s1", "my name is Ada", nil)
	toolsChat(t, gw.base, "desk", "s1", "I like tea", nil)
	<-summarizing
	gw.stop(t) // SIGTERM; exits 0
	for _, want := range []string{`"msg":"compactions still running at the end of the grace period are stopped"`,
		`"msg":"compaction stopped by the shutdown; the next turn runs it again"`} {
		if !strings.Contains(gw.stdout.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, gw.stdout.String())
		}
	}

	next := runConfig(t, cfg, env)
	var sess restSession
	getJSON(t, next.base+"/apps/desk/users/anonymous/sessions/s1", &sess)
	if n := len(sess.Events); n != 4 {
		t.Fatalf("the session after the shutdown has %d events, want the 4 of its turns: %v", n, sess.lines())
	}
	toolsChat(t, next.base, "desk", "s1", "what do I drink?", nil)
	eventually(t, "the compaction, run again", func() bool {
		getJSON(t, next.base+"/apps/desk/users/anonymous/sessions/s1", &sess)
		return len(sess.Events) == 7
	})
	if got := sess.lines()[6]; got != "compaction: SUMMARY-2" {
		t.Errorf("last event %q, want the compaction", got)
	}
}
