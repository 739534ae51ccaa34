package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

// testKey is the API key every test provider uses; no error may show it.
const testKey = "sk-test-SECRET-0123456789abcdef"

func TestMain(m *testing.M) { providertest.Main(m) }

// harness runs the shared provider tests on OpenAI's chat completions.
var harness = providertest.Harness{
	Key:   testKey,
	Model: "gpt-test",
	New: func(t *testing.T, up *providertest.Upstream, s providertest.Settings) model.LLM {
		return (&upstream{up}).provider(t, Config{Timeout: s.Timeout, MaxRetries: s.MaxRetries}).Model("gpt-test")
	},
	Partial:       func(w http.ResponseWriter, text string) { sse(w, chunk(content(text), ""), "") },
	Answer:        func(w http.ResponseWriter, text string) { sse(w, chunk(content(text), "stop")) },
	ErrorBody:     func(msg string) string { return errorBody(msg, "server_error", "") },
	MaxRetryDelay: model.MaxRetryDelay,
}

// upstream is a fake upstream that builds the providers pointed at it.
type upstream struct{ *providertest.Upstream }

func newUpstream(t *testing.T, h http.HandlerFunc) *upstream {
	t.Helper()
	return &upstream{providertest.NewUpstream(t, h)}
}

// provider returns a provider pointed at u; no retries unless cfg says so,
// and retries do not sleep (u records the delays).
func (u *upstream) provider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = providertest.ProviderName
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = u.Server.URL + "/v1"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = u.Client
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p.up.wait = u.Wait
	return p
}

// result is everything one GenerateContent call produced.
type result struct {
	partials []*model.Response
	final    *model.Response
	err      error
}

// run drains one call with providertest.Run.
func run(t *testing.T, ctx context.Context, llm model.LLM, req *model.Request, stream bool) result {
	t.Helper()
	res := providertest.Run(t, ctx, llm, req, stream)
	return result{partials: res.Partials, final: res.Final, err: res.Err}
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

// content is a delta with the given text.
func content(text string) string {
	b, _ := json.Marshal(map[string]string{"content": text})
	return string(b)
}

// text joins the text parts of r (thoughts excluded).
func text(r *model.Response) string { return providertest.Text(r) }

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
