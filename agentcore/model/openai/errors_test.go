package openai

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

// errorBody is an OpenAI error envelope.
func errorBody(msg, typ, code string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return string(b)
}

func TestUpstreamErrors(t *testing.T) {
	retryDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	providertest.UpstreamErrors(t, harness, []providertest.ErrorCase{
		{
			Name: "400", Status: 400, Body: errorBody("Invalid value for 'temperature'", "invalid_request_error", ""),
			Want: model.Error{Status: 400, Code: "bad_request", Message: "Invalid value for 'temperature'"},
		},
		{
			Name: "401 echoing the key", Status: 401, Body: errorBody("Incorrect API key provided: "+testKey+".", "invalid_request_error", "invalid_api_key"),
			Want: model.Error{Status: 401, Code: "unauthorized", Message: "Incorrect API key provided: [redacted]."},
		},
		{
			Name: "403", Status: 403, Body: errorBody("Project does not have access", "permission_error", ""),
			Want: model.Error{Status: 403, Code: "forbidden", Message: "Project does not have access"},
		},
		{
			Name: "404", Status: 404, Body: errorBody("The model `nope` does not exist", "invalid_request_error", "model_not_found"),
			Want: model.Error{Status: 404, Code: "not_found", Message: "The model `nope` does not exist"},
		},
		{
			Name: "429 with Retry-After seconds", Status: 429, Header: map[string]string{"Retry-After": "7"},
			Body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded"),
			Want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 7 * time.Second, Message: "Rate limit reached"},
		},
		{
			Name: "429 with Retry-After-Ms", Status: 429, Header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
			Body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded"),
			Want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 1500 * time.Millisecond, Message: "Rate limit reached"},
		},
		{
			Name: "429 quota exhausted", Status: 429, Body: errorBody("You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
			Want: model.Error{Status: 429, Code: "quota_exceeded", Message: "You exceeded your current quota"},
		},
		{
			Name: "429 x-should-retry false", Status: 429, Header: map[string]string{"X-Should-Retry": "false"},
			Body: errorBody("slow down", "requests", ""),
			Want: model.Error{Status: 429, Code: "rate_limited", Message: "slow down"},
		},
		{
			Name: "500", Status: 500, Body: errorBody("The server had an error", "server_error", ""),
			Want: model.Error{Status: 500, Code: "upstream_error", Retryable: true, Message: "The server had an error"},
		},
		{
			Name: "503 with an HTTP-date Retry-After", Status: 503, Header: map[string]string{"Retry-After": retryDate},
			Body: errorBody("Overloaded", "server_error", ""),
			Want: model.Error{Status: 503, Code: "upstream_error", Retryable: true, Message: "Overloaded"}, MinWait: 20 * time.Second, MaxWait: 31 * time.Second,
		},
		{
			Name: "502 HTML page from a proxy", Status: 502, Body: "<html>Bad Gateway</html>",
			Want: model.Error{Status: 502, Code: "upstream_error", Retryable: true, Message: "Bad Gateway"},
		},
	})
}

func TestNetworkFailure(t *testing.T) { providertest.NetworkFailure(t, harness) }

func TestTimeout(t *testing.T) { providertest.Timeout(t, harness) }

// TestRetries: failures before any output are retried with backoff (and
// Retry-After); nothing is retried once a stream has started, nor a
// request the upstream refused for good.
func TestRetries(t *testing.T) {
	providertest.Retries(t, harness, []providertest.RetryCase{
		{Name: "503 then success", Attempts: []string{"503", "ok"}, WantReqs: 2, WantWaits: []time.Duration{-1}},
		{Name: "429 with Retry-After-Ms, 500 then success", Attempts: []string{"429", "500", "ok"}, Header: map[string]string{"Retry-After-Ms": "1500"},
			WantReqs: 3, WantWaits: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}},
		{Name: "three 503s exhaust two retries", Attempts: []string{"503", "503", "503", "ok"}, WantReqs: 3, WantWaits: []time.Duration{-1, -1}, WantErr: "upstream_error"},
		{Name: "400 is not retried", Attempts: []string{"400", "ok"}, WantReqs: 1, WantErr: "bad_request"},
		{Name: "x-should-retry false is not retried", Attempts: []string{"503", "ok"}, Header: map[string]string{"X-Should-Retry": "false"}, WantReqs: 1, WantErr: "upstream_error"},
		{Name: "x-should-retry true retries a 400", Attempts: []string{"400", "ok"}, Header: map[string]string{"X-Should-Retry": "true"}, WantReqs: 2, WantWaits: []time.Duration{-1}},
		{Name: "a started stream is not retried", Attempts: []string{"cut", "ok"}, WantReqs: 1, WantErr: "stream_cut"},
		{Name: "Retry-After beyond the cap is not waited for", Attempts: []string{"429", "ok"}, Header: map[string]string{"Retry-After": "60"}, WantReqs: 1, WantErr: "rate_limited"},
	})
}

// TestEnvironmentIgnored: openai-go's NewClient reads OPENAI_* by itself;
// the provider must not.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/bogus")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")
	for _, tc := range []struct {
		name     string
		key      model.Secret
		wantAuth string
	}{
		{"configured key", testKey, "Bearer " + testKey},
		{"no key configured", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunk(`{"content":"ok"}`, "stop")) })
			p, err := New(Config{
				Name: "test", BaseURL: up.Server.URL + "/v1", APIKey: tc.key, HTTPClient: up.Client,
				Headers: map[string]string{"X-Configured": "yes"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res := run(t, context.Background(), p.Model("gpt-test"), &model.Request{}, true); res.err != nil {
				t.Fatal(res.err)
			}
			reqs := up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the configured upstream got %d requests, want 1", len(reqs))
			}
			h := reqs[0].Header
			got := map[string]string{
				"Authorization": h.Get("Authorization"), "OpenAI-Organization": h.Get("OpenAI-Organization"),
				"OpenAI-Project": h.Get("OpenAI-Project"), "X-From-Env": h.Get("X-From-Env"), "X-Configured": h.Get("X-Configured"),
			}
			want := map[string]string{
				"Authorization": tc.wantAuth, "OpenAI-Organization": "", "OpenAI-Project": "", "X-From-Env": "", "X-Configured": "yes",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no name", Config{}, "name is required"},
		{"relative base URL", Config{Name: "x", BaseURL: "localhost:8000/v1"}, "base_url"},
		{"negative timeout", Config{Name: "x", Timeout: -time.Second}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestSecretsStayHidden: printing, logging or encoding the config or the
// provider never shows the key or a secret header.
func TestSecretsStayHidden(t *testing.T) {
	const header = "azure-SECRET-header-value"
	cfg := Config{Name: "x", APIKey: testKey, Headers: map[string]string{"Api-Key": header}}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	providertest.AssertHidden(t, []string{testKey}, cfg, cfg.APIKey, p, *p)
	if got := p.keys.Redact("key " + testKey + " header " + header); got != "key [redacted] header [redacted]" {
		t.Errorf("redact = %q", got)
	}
}
