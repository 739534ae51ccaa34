package gateway_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/gemini"
	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/agentcore/spec"
)

// flushCounter counts the flushes of the response it wraps.
type flushCounter struct {
	http.ResponseWriter
	n *atomic.Int32
}

func (w flushCounter) FlushError() error {
	w.n.Add(1)
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w flushCounter) Flush() { _ = w.FlushError() }

func (w flushCounter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// paceProvider is a streaming provider the pacing tests run against: its
// factory, and its upstream's frames (a text delta, and the end of an
// answer).
type paceProvider struct {
	name    string
	factory spec.ProviderFactory
	delta   func(text string) string
	tail    string
}

var paceProviders = []paceProvider{{
	name: "openai",
	factory: func(p spec.Provider) (func(string) (model.LLM, error), error) {
		prov, err := openai.New(openai.Config{Name: p.Name, BaseURL: p.BaseURL + "/v1", APIKey: p.APIKey, MaxRetries: -1})
		if err != nil {
			return nil, err
		}
		return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
	},
	delta: func(text string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + text + `"}}]}` + "\n\n"
	},
	tail: `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
}, {
	name: "gemini",
	factory: func(p spec.Provider) (func(string) (model.LLM, error), error) {
		prov, err := gemini.New(gemini.Config{Name: p.Name, BaseURL: p.BaseURL, APIKey: model.Secret(p.APIKey), MaxRetries: -1})
		if err != nil {
			return nil, err
		}
		return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
	},
	delta: func(text string) string {
		return `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"` + text + `"}]}}]}` + "\n\n"
	},
	tail: `data: {"candidates":[{"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3}}` + "\n\n",
}}

// paceFixture serves model "pace" (one agent on provider p) against
// upstream, and counts the flushes of each response in flushes.
func paceFixture(t *testing.T, p paceProvider, upstream http.HandlerFunc) (srv *httptest.Server, flushes *atomic.Int32) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	set := spec.Set{
		Providers: []spec.Provider{{Name: "up", Type: p.name, BaseURL: up.URL, APIKey: "sk-test"}},
		Agents:    []spec.Agent{{Name: "solo", Model: "up/m", Instruction: "Answer."}},
		Models:    []spec.VirtualModel{{ID: "pace", Agent: "solo"}},
	}
	f := serveSet(t, set, map[string]spec.ProviderFactory{p.name: p.factory}, &toolLog{})
	flushes = new(atomic.Int32)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.gw.ServeHTTP(flushCounter{ResponseWriter: w, n: flushes}, r)
	}))
	t.Cleanup(srv.Close)
	return srv, flushes
}

func streamUpstream(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
}

func postStream(t *testing.T, srv *httptest.Server) *http.Response {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"pace","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return resp
}

// A delta that arrived alone reaches the client before the upstream sends
// anything more: the upstream holds the rest of its answer until the
// client has seen the first delta (and gives up after a long while, which
// fails the test). Also when part of the next frame came with the delta:
// the gateway holds the flush only until the provider must read on.
func TestStreamFlushesALoneDelta(t *testing.T) {
	for _, p := range paceProviders {
		for name, after := range map[string]string{"alone": "", "part of the next frame after it": `data: {"c`} {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				verifyNoLeaks(t)
				seen := make(chan struct{})
				var gaveUp atomic.Bool
				srv, _ := paceFixture(t, p, func(w http.ResponseWriter, r *http.Request) {
					streamUpstream(w, r)
					_, _ = io.WriteString(w, p.delta("first")+after)
					w.(http.Flusher).Flush()
					select {
					case <-seen:
					case <-time.After(10 * time.Second):
						gaveUp.Store(true)
					case <-r.Context().Done():
						return
					}
					rest := p.delta("second")
					if after != "" {
						rest = strings.TrimPrefix(rest, after)
					}
					_, _ = io.WriteString(w, rest+p.tail)
				})
				resp := postStream(t, srv)
				defer resp.Body.Close()
				var text strings.Builder
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					line := sc.Text()
					if strings.Contains(line, `"content":"first"`) {
						close(seen)
					}
					text.WriteString(contentOf(line))
				}
				if err := sc.Err(); err != nil {
					t.Fatal(err)
				}
				if gaveUp.Load() {
					t.Error("the first delta did not reach the client until the upstream sent more")
				}
				if text.String() != "firstsecond" {
					t.Errorf("deltas %q, want firstsecond", text.String())
				}
			})
		}
	}
}

// contentOf is the content delta of a chunk's line, if it has one.
func contentOf(line string) string {
	if i := strings.Index(line, `"content":"`); i >= 0 {
		return strings.SplitN(line[i+len(`"content":"`):], `"`, 2)[0]
	}
	return ""
}

// A burst of deltas the upstream sends in one write reaches the client in
// fewer flushes than deltas, every delta intact and in order.
func TestStreamCoalescesABurst(t *testing.T) {
	for _, p := range paceProviders {
		t.Run(p.name, func(t *testing.T) {
			verifyNoLeaks(t)
			const n = 10
			srv, flushes := paceFixture(t, p, func(w http.ResponseWriter, r *http.Request) {
				streamUpstream(w, r)
				var b strings.Builder
				for i := range n {
					b.WriteString(p.delta(string(rune('a' + i))))
				}
				b.WriteString(p.tail)
				_, _ = io.WriteString(w, b.String())
			})
			resp := postStream(t, srv)
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, line := range strings.Split(string(body), "\n") {
				text.WriteString(contentOf(line))
			}
			if text.String() != "abcdefghij" || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
				t.Fatalf("body:\n%s", body)
			}
			if got := flushes.Load(); got >= n/2 {
				t.Errorf("%d flushes for a burst of %d deltas, want fewer than %d", got, n, n/2)
			}
		})
	}
}
