package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

// errorBody is a Google API error envelope.
func errorBody(code int, msg, status string, details ...map[string]any) string {
	e := map[string]any{"code": code, "message": msg, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return string(b)
}

var retryInfo13s = map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}

func TestUpstreamErrors(t *testing.T) {
	providertest.UpstreamErrors(t, harness, []providertest.ErrorCase{
		{
			Name: "400", Status: 400, Body: errorBody(400, "Invalid JSON payload received.", "INVALID_ARGUMENT"),
			Want: model.Error{Status: 400, Code: "bad_request", Message: "Invalid JSON payload received."},
		},
		{
			Name: "401 echoing the key", Status: 401, Body: errorBody(401, "API key "+testKey+" not valid.", "UNAUTHENTICATED"),
			Want: model.Error{Status: 401, Code: "unauthorized", Message: "API key [redacted] not valid."},
		},
		{
			Name: "403", Status: 403, Body: errorBody(403, "Permission denied.", "PERMISSION_DENIED"),
			Want: model.Error{Status: 403, Code: "forbidden", Message: "Permission denied."},
		},
		{
			Name: "404", Status: 404, Body: errorBody(404, "models/nope is not found.", "NOT_FOUND"),
			Want: model.Error{Status: 404, Code: "not_found", Message: "models/nope is not found."},
		},
		{
			Name: "429 with Retry-After", Status: 429, Header: map[string]string{"Retry-After": "7"},
			Body: errorBody(429, "Resource has been exhausted.", "RESOURCE_EXHAUSTED"),
			Want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 7 * time.Second, Message: "Resource has been exhausted."},
		},
		{
			Name: "429 with RetryInfo", Status: 429, Body: errorBody(429, "Quota exceeded.", "RESOURCE_EXHAUSTED", retryInfo13s),
			Want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 13 * time.Second, Message: "Quota exceeded."},
		},
		{
			Name: "500", Status: 500, Body: errorBody(500, "Internal error.", "INTERNAL"),
			Want: model.Error{Status: 500, Code: "upstream_error", Retryable: true, Message: "Internal error."},
		},
		{
			Name: "503", Status: 503, Body: errorBody(503, "The model is overloaded.", "UNAVAILABLE"),
			Want: model.Error{Status: 503, Code: "upstream_error", Retryable: true, Message: "The model is overloaded."},
		},
		{
			Name: "502 HTML page from a proxy", Status: 502, Body: "<html>Bad Gateway</html>",
			Want: model.Error{Status: 502, Code: "upstream_error", Retryable: true, Message: "<html>Bad Gateway</html>"},
		},
	})
}

func TestNetworkFailure(t *testing.T) { providertest.NetworkFailure(t, harness) }

func TestTimeout(t *testing.T) { providertest.Timeout(t, harness) }

// TestRetries: failures before any output are retried with backoff, waiting
// what the upstream asked for; nothing is retried once a stream has
// produced output, nor a request the upstream refused for good.
func TestRetries(t *testing.T) {
	providertest.Retries(t, harness, []providertest.RetryCase{
		{Name: "503 then success", Attempts: []string{"503", "ok"}, WantReqs: 2, WantWaits: []time.Duration{-1}},
		{Name: "429 with Retry-After, 500, then success", Attempts: []string{"429", "500", "ok"}, Header: map[string]string{"Retry-After": "3"},
			WantReqs: 3, WantWaits: []time.Duration{3 * time.Second, -1}},
		{Name: "429 with RetryInfo", Attempts: []string{"429", "ok"}, Body: errorBody(429, "slow down", "RESOURCE_EXHAUSTED", retryInfo13s),
			WantReqs: 1, WantErr: "rate_limited"},
		{Name: "three 503s exhaust two retries", Attempts: []string{"503", "503", "503", "ok"}, WantReqs: 3, WantWaits: []time.Duration{-1, -1}, WantErr: "upstream_error"},
		{Name: "400 is not retried", Attempts: []string{"400", "ok"}, WantReqs: 1, WantErr: "bad_request"},
		{Name: "a started stream is not retried", Attempts: []string{"cut", "ok"}, WantReqs: 1, WantErr: "stream_cut"},
	})
}

// TestEnvironmentIgnored: genai reads GOOGLE_API_KEY, GEMINI_API_KEY,
// GOOGLE_GEMINI_BASE_URL and the Vertex switches by itself; the provider
// must not let it.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("GOOGLE_API_KEY", "env-google-key")
	t.Setenv("GEMINI_API_KEY", "env-gemini-key")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1/bogus")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "env-project")
	t.Setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, okChunk) })
	p, err := New(Config{Name: "test", APIKey: testKey, BaseURL: up.Server.URL, HTTPClient: up.Client, Headers: map[string]string{"X-Configured": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := providertest.Run(t, context.Background(), p.Model("gemini-test"), &model.Request{}, true); res.Err != nil {
		t.Fatal(res.Err)
	}
	reqs := up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the configured upstream got %d requests, want 1", len(reqs))
	}
	got := map[string]string{
		"path": reqs[0].Path, "key": reqs[0].Header.Get("X-Goog-Api-Key"), "X-Configured": reqs[0].Header.Get("X-Configured"),
	}
	want := map[string]string{"path": "/v1beta/models/gemini-test:streamGenerateContent", "key": testKey, "X-Configured": "yes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if _, err := New(Config{Name: "test"}); err == nil || !strings.Contains(err.Error(), "api_key is required") {
		t.Errorf("New without a key = %v; the key in the environment must not be used", err)
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no name", Config{APIKey: "k"}, "name is required"},
		{"no key", Config{Name: "x"}, "api_key is required"},
		{"relative base URL", Config{Name: "x", APIKey: "k", BaseURL: "localhost:8000"}, "base_url"},
		{"negative timeout", Config{Name: "x", APIKey: "k", Timeout: -time.Second}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestSecretsStayHidden: printing, logging or encoding the config or the
// provider never shows the key.
func TestSecretsStayHidden(t *testing.T) {
	cfg := Config{Name: "x", APIKey: testKey}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	providertest.AssertHidden(t, []string{testKey}, cfg, cfg.APIKey, p, *p)
}
