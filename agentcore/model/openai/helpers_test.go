package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
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
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testKey is the API key every test provider uses; no error may show it.
const testKey = "sk-test-SECRET-0123456789abcdef"

// TestMain fails the package if any test leaves a goroutine behind. The one
// ignored is started by an init function of a genai dependency.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// recorded is one request the fake upstream received.
type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// upstream is an httptest server that records every request before handing
// it to the test's handler.
type upstream struct {
	srv    *httptest.Server
	client *http.Client
	mu     sync.Mutex
	reqs   []recorded
}

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		u.mu.Unlock()
		h(w, r)
	}))
	u.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		u.client.CloseIdleConnections()
		u.srv.Close()
	})
	return u
}

func (u *upstream) requests() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recorded(nil), u.reqs...)
}

// provider returns a provider pointed at u; no retries unless cfg says so.
func (u *upstream) provider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = u.srv.URL + "/v1"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = u.client
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// sse writes chat-completion chunks as server-sent events, one flush each,
// then "data: [DONE]" unless the last chunk is "" (a cut stream).
func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		if c == "" {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(c)); err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "data: %s\n\n", compact.Bytes())
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// chunk builds one chat.completion.chunk with the given choice delta JSON.
func chunk(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test-0125","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, delta, f)
}

// result is everything one GenerateContent call produced.
type result struct {
	partials []*model.Response
	final    *model.Response
	err      error
}

// run drains one call and checks the LLM contract: partials first, then at
// most one final response, and nothing after an error.
func run(t *testing.T, ctx context.Context, llm model.LLM, req *model.Request, stream bool) result {
	t.Helper()
	var res result
	for r, err := range llm.GenerateContent(ctx, req, stream) {
		if res.err != nil || res.final != nil {
			t.Fatalf("item after the end of the sequence: %+v, %v", r, err)
		}
		switch {
		case err != nil:
			res.err = err
		case r.Partial:
			res.partials = append(res.partials, r)
		default:
			res.final = r
		}
	}
	if res.err == nil && res.final == nil {
		t.Fatalf("the sequence ended without a final response or an error")
	}
	return res
}

// loadRequest reads testdata/<name>.json: {"contents": [...], "config": {...}}.
func loadRequest(t *testing.T, name string) *model.Request {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Contents []*genai.Content             `json:"contents"`
		Config   *genai.GenerateContentConfig `json:"config"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &model.Request{Contents: in.Contents, Config: in.Config}
}

// checkGolden compares got (JSON) with testdata/<name>.golden.json as
// decoded values; -update rewrites the file.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.json")
	var gotV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if *update {
		pretty, _ := json.MarshalIndent(gotV, "", "  ")
		if err := os.WriteFile(path, append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
	}
}

// text joins the text parts of r (thoughts excluded).
func text(r *model.Response) string {
	if r == nil || r.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Content.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// calls returns the function calls of r.
func calls(r *model.Response) []*genai.FunctionCall {
	var out []*genai.FunctionCall
	if r == nil || r.Content == nil {
		return nil
	}
	for _, p := range r.Content.Parts {
		if p.FunctionCall != nil {
			out = append(out, p.FunctionCall)
		}
	}
	return out
}
