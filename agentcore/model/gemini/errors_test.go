package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentgate/agentgate/agentcore/model"
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

// assertNoKey fails if the key shows in any rendering of err or of the
// errors it wraps.
func assertNoKey(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, testKey) {
				t.Errorf("the API key leaks in an error: %s", s)
			}
		}
	}
}

func TestUpstreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   model.Error
	}{
		{
			name: "400", status: 400, body: errorBody(400, "Invalid JSON payload received.", "INVALID_ARGUMENT"),
			want: model.Error{Status: 400, Code: "bad_request", Message: "Invalid JSON payload received."},
		},
		{
			name: "401 echoing the key", status: 401, body: errorBody(401, "API key "+testKey+" not valid.", "UNAUTHENTICATED"),
			want: model.Error{Status: 401, Code: "unauthorized", Message: "API key [redacted] not valid."},
		},
		{
			name: "403", status: 403, body: errorBody(403, "Permission denied.", "PERMISSION_DENIED"),
			want: model.Error{Status: 403, Code: "forbidden", Message: "Permission denied."},
		},
		{
			name: "404", status: 404, body: errorBody(404, "models/nope is not found.", "NOT_FOUND"),
			want: model.Error{Status: 404, Code: "not_found", Message: "models/nope is not found."},
		},
		{
			name: "429 with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"},
			body: errorBody(429, "Resource has been exhausted.", "RESOURCE_EXHAUSTED"),
			want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 7 * time.Second, Message: "Resource has been exhausted."},
		},
		{
			name: "429 with RetryInfo", status: 429, body: errorBody(429, "Quota exceeded.", "RESOURCE_EXHAUSTED", retryInfo13s),
			want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 13 * time.Second, Message: "Quota exceeded."},
		},
		{
			name: "500", status: 500, body: errorBody(500, "Internal error.", "INTERNAL"),
			want: model.Error{Status: 500, Code: "upstream_error", Retryable: true, Message: "Internal error."},
		},
		{
			name: "503", status: 503, body: errorBody(503, "The model is overloaded.", "UNAVAILABLE"),
			want: model.Error{Status: 503, Code: "upstream_error", Retryable: true, Message: "The model is overloaded."},
		},
		{
			name: "502 HTML page from a proxy", status: 502, body: "<html>Bad Gateway</html>",
			want: model.Error{Status: 502, Code: "upstream_error", Retryable: true, Message: "<html>Bad Gateway</html>"},
		},
	} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(tc.body))
				})
				res := run(t, context.Background(), up.provider(t, Config{}).Model("gemini-test"), &model.Request{}, stream)
				me, ok := model.AsError(res.err)
				if !ok {
					t.Fatalf("err = %v, want a *model.Error", res.err)
				}
				assertNoKey(t, res.err)
				want := tc.want
				want.Provider, want.Model = "test", "gemini-test"
				if diff := cmp.Diff(&want, me, cmpopts.IgnoreFields(model.Error{}, "Err")); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestNetworkFailure(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p := up.provider(t, Config{})
	up.srv.Close()
	res := run(t, context.Background(), p.Model("gemini-test"), &model.Request{}, true)
	me, ok := model.AsError(res.err)
	if !ok || me.Code != "network" || me.Status != 0 || !me.Retryable || me.Err == nil {
		t.Fatalf("err = %#v, want a retryable network *model.Error wrapping the cause", res.err)
	}
	assertNoKey(t, res.err)
}

func TestTimeout(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, chunk(`[{"text":"slow"}]`, ""))
		<-r.Context().Done()
	})
	res := run(t, context.Background(), up.provider(t, Config{Timeout: 50 * time.Millisecond, MaxRetries: 2}).Model("gemini-test"), &model.Request{}, true)
	me, ok := model.AsError(res.err)
	if !ok || me.Code != "timeout" || !me.Retryable {
		t.Fatalf("err = %#v, want a retryable timeout *model.Error", res.err)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("a timed-out call was sent %d times, want 1", n)
	}
}

// TestRetries: failures before any output are retried with backoff, waiting
// what the upstream asked for; nothing is retried once a stream has
// produced output, nor a request the upstream refused for good.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		attempts  []string // per attempt: "ok", "cut" (a partial, then the end), or an HTTP status
		header    map[string]string
		body      string
		wantReqs  int
		wantWaits []time.Duration // -1: any backoff delay
		wantErr   string
	}{
		{name: "503 then success", attempts: []string{"503", "ok"}, wantReqs: 2, wantWaits: []time.Duration{-1}},
		{name: "429 with Retry-After, 500, then success", attempts: []string{"429", "500", "ok"}, header: map[string]string{"Retry-After": "3"},
			wantReqs: 3, wantWaits: []time.Duration{3 * time.Second, -1}},
		{name: "429 with RetryInfo", attempts: []string{"429", "ok"}, body: errorBody(429, "slow down", "RESOURCE_EXHAUSTED", retryInfo13s),
			wantReqs: 1, wantErr: "rate_limited"},
		{name: "three 503s exhaust two retries", attempts: []string{"503", "503", "503", "ok"}, wantReqs: 3, wantWaits: []time.Duration{-1, -1}, wantErr: "upstream_error"},
		{name: "400 is not retried", attempts: []string{"400", "ok"}, wantReqs: 1, wantErr: "bad_request"},
		{name: "a started stream is not retried", attempts: []string{"cut", "ok"}, wantReqs: 1, wantErr: "stream_cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempt := 0
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				a := tc.attempts[attempt]
				attempt++
				switch a {
				case "ok":
					sse(w, okChunk)
				case "cut":
					sse(w, chunk(`[{"text":"o"}]`, ""))
				default:
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(map[string]int{"400": 400, "429": 429, "500": 500, "503": 503}[a])
					body := tc.body
					if body == "" {
						body = errorBody(500, "no", "INTERNAL")
					}
					_, _ = w.Write([]byte(body))
				}
			})
			res := run(t, context.Background(), up.provider(t, Config{MaxRetries: 2}).Model("gemini-test"), &model.Request{}, true)
			if n := len(up.requests()); n != tc.wantReqs {
				t.Errorf("upstream got %d requests, want %d", n, tc.wantReqs)
			}
			if len(up.waits) != len(tc.wantWaits) {
				t.Errorf("waited %v, want %d waits", up.waits, len(tc.wantWaits))
			}
			for i, w := range tc.wantWaits {
				if i >= len(up.waits) {
					break
				}
				if got := up.waits[i]; (w >= 0 && got != w) || (w < 0 && (got <= 0 || got > maxRetryDelay)) {
					t.Errorf("wait %d = %v, want %v", i, got, w)
				}
			}
			if tc.wantErr == "" {
				if res.err != nil || text(res.final) != "ok" {
					t.Fatalf("got %v / %q, want the answer ok", res.err, text(res.final))
				}
				return
			}
			if me, ok := model.AsError(res.err); !ok || me.Code != tc.wantErr {
				t.Fatalf("err = %v, want code %q", res.err, tc.wantErr)
			}
		})
	}
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
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, okChunk) })
	p, err := New(Config{Name: "test", APIKey: testKey, BaseURL: up.srv.URL, HTTPClient: up.client, Headers: map[string]string{"X-Configured": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(t, context.Background(), p.Model("gemini-test"), &model.Request{}, true); res.err != nil {
		t.Fatal(res.err)
	}
	reqs := up.requests()
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
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg, "key", cfg.APIKey, "provider", p)
	encoded, _ := json.Marshal(cfg)
	out := strings.Join([]string{
		fmt.Sprintf("%v %+v %#v %s %q %x", cfg, cfg, cfg, cfg.APIKey, cfg.APIKey, cfg.APIKey),
		fmt.Sprintf("%v %+v %#v", p, p, *p),
		logged.String(), string(encoded),
	}, "\n")
	if strings.Contains(out, testKey) {
		t.Errorf("the key leaks:\n%s", out)
	}
}
