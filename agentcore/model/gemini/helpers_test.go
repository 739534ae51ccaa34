package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

// testKey is the API key every test provider uses; no error may show it.
const testKey = "AIza-test-SECRET-0123456789abcdef"

func TestMain(m *testing.M) { providertest.Main(m) }

// harness runs the shared provider tests on Gemini.
var harness = providertest.Harness{
	Key:   testKey,
	Model: "gemini-test",
	New: func(t *testing.T, up *providertest.Upstream, s providertest.Settings) model.LLM {
		return provider(t, up, Config{Timeout: s.Timeout, MaxRetries: s.MaxRetries}).Model("gemini-test")
	},
	Partial:       func(w http.ResponseWriter, text string) { sse(w, chunk(textParts(text), "")) },
	Answer:        func(w http.ResponseWriter, text string) { sse(w, chunk(textParts(text), "STOP")) },
	ErrorBody:     func(msg string) string { return errorBody(500, msg, "INTERNAL") },
	MaxRetryDelay: model.MaxRetryDelay,
}

// provider returns a provider pointed at up; no retries unless cfg says so,
// and retries do not sleep (up records the delays).
func provider(t *testing.T, up *providertest.Upstream, cfg Config) *Provider {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = providertest.ProviderName
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = up.Server.URL
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = up.Client
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p.wait = up.Wait
	return p
}

// sse writes Gemini response chunks as server-sent events, one flush each.
// Gemini sends no [DONE]: the last chunk carries the finish reason.
func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(c)); err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "data: %s\r\n\r\n", compact.Bytes())
		w.(http.Flusher).Flush()
	}
}

// chunk builds one streamed GenerateContentResponse with the given parts
// (a JSON array) and finish reason.
func chunk(parts, finish string) string {
	f := ""
	if finish != "" {
		f = fmt.Sprintf(`,"finishReason":%q`, finish)
	}
	return fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":%s},"index":0%s}],"modelVersion":"gemini-test-001"}`, parts, f)
}

// textParts is the parts array of one text part.
func textParts(text string) string {
	b, _ := json.Marshal([]map[string]string{{"text": text}})
	return string(b)
}
