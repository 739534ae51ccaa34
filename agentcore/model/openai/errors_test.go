package openai

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

// errorBody is an OpenAI error envelope.
func errorBody(msg, typ, code string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return string(b)
}

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
	retryDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    model.Error
		minWait time.Duration // RetryAfter lower bound when want.RetryAfter is a date
	}{
		{
			name: "400", status: 400, body: errorBody("Invalid value for 'temperature'", "invalid_request_error", ""),
			want: model.Error{Status: 400, Code: "bad_request", Message: "Invalid value for 'temperature'"},
		},
		{
			name: "401 echoing the key", status: 401, body: errorBody("Incorrect API key provided: "+testKey+".", "invalid_request_error", "invalid_api_key"),
			want: model.Error{Status: 401, Code: "unauthorized", Message: "Incorrect API key provided: [redacted]."},
		},
		{
			name: "403", status: 403, body: errorBody("Project does not have access", "permission_error", ""),
			want: model.Error{Status: 403, Code: "forbidden", Message: "Project does not have access"},
		},
		{
			name: "404", status: 404, body: errorBody("The model `nope` does not exist", "invalid_request_error", "model_not_found"),
			want: model.Error{Status: 404, Code: "not_found", Message: "The model `nope` does not exist"},
		},
		{
			name: "429 with Retry-After seconds", status: 429, header: map[string]string{"Retry-After": "7"},
			body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded"),
			want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 7 * time.Second, Message: "Rate limit reached"},
		},
		{
			name: "429 with Retry-After-Ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"},
			body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded"),
			want: model.Error{Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 1500 * time.Millisecond, Message: "Rate limit reached"},
		},
		{
			name: "429 quota exhausted", status: 429, body: errorBody("You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
			want: model.Error{Status: 429, Code: "quota_exceeded", Message: "You exceeded your current quota"},
		},
		{
			name: "429 x-should-retry false", status: 429, header: map[string]string{"X-Should-Retry": "false"},
			body: errorBody("slow down", "requests", ""),
			want: model.Error{Status: 429, Code: "rate_limited", Message: "slow down"},
		},
		{
			name: "500", status: 500, body: errorBody("The server had an error", "server_error", ""),
			want: model.Error{Status: 500, Code: "upstream_error", Retryable: true, Message: "The server had an error"},
		},
		{
			name: "503 with an HTTP-date Retry-After", status: 503, header: map[string]string{"Retry-After": retryDate},
			body: errorBody("Overloaded", "server_error", ""),
			want: model.Error{Status: 503, Code: "upstream_error", Retryable: true, Message: "Overloaded"}, minWait: 20 * time.Second,
		},
		{
			name: "502 HTML page from a proxy", status: 502, body: "<html>Bad Gateway</html>",
			want: model.Error{Status: 502, Code: "upstream_error", Retryable: true, Message: "Bad Gateway"},
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
				res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, stream)
				me, ok := model.AsError(res.err)
				if !ok {
					t.Fatalf("err = %v, want a *model.Error", res.err)
				}
				assertNoKey(t, res.err)
				want := tc.want
				want.Provider, want.Model = "test", "gpt-test"
				if tc.minWait > 0 {
					if me.RetryAfter < tc.minWait || me.RetryAfter > 31*time.Second {
						t.Errorf("RetryAfter = %v, want about 30s", me.RetryAfter)
					}
					want.RetryAfter = me.RetryAfter
				}
				if diff := cmp.Diff(&want, me, cmpopts.IgnoreFields(model.Error{}, "Err")); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if len(res.partials) != 0 {
					t.Errorf("%d partials before the error", len(res.partials))
				}
			})
		}
	}
}

func TestNetworkFailure(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p := up.provider(t, Config{})
	up.srv.Close() // nothing listens any more
	res := run(t, context.Background(), p.Model("gpt-test"), &model.Request{}, true)
	me, ok := model.AsError(res.err)
	if !ok || me.Code != "network" || me.Status != 0 || !me.Retryable || me.Err == nil {
		t.Fatalf("err = %#v, want a retryable network *model.Error wrapping the cause", res.err)
	}
	assertNoKey(t, res.err)
}

func TestTimeout(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, chunk(`{"content":"slow"}`, ""), "")
		<-r.Context().Done()
	})
	res := run(t, context.Background(), up.provider(t, Config{Timeout: 50 * time.Millisecond}).Model("gpt-test"), &model.Request{}, true)
	me, ok := model.AsError(res.err)
	if !ok || me.Code != "timeout" || !me.Retryable {
		t.Fatalf("err = %#v, want a retryable timeout *model.Error", res.err)
	}
}

// TestRetries: failures before any output are retried with backoff (and
// Retry-After); nothing is retried once a stream has started, nor a
// request the upstream refused for good.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int // per attempt; 200 streams a complete answer, 0 a cut stream
		header   map[string]string
		wantReqs int
		wantErr  string // expected Code, "" for success
	}{
		{name: "503 then success", statuses: []int{503, 200}, header: map[string]string{"Retry-After-Ms": "1"}, wantReqs: 2},
		{name: "429, 500 then success", statuses: []int{429, 500, 200}, header: map[string]string{"Retry-After-Ms": "1"}, wantReqs: 3},
		{name: "three 503s exhaust two retries", statuses: []int{503, 503, 503, 200}, header: map[string]string{"Retry-After-Ms": "1"}, wantReqs: 3, wantErr: "upstream_error"},
		{name: "400 is not retried", statuses: []int{400, 200}, wantReqs: 1, wantErr: "bad_request"},
		{name: "a started stream is not retried", statuses: []int{0, 200}, wantReqs: 1, wantErr: "stream_cut"},
		{name: "Retry-After beyond the cap is not waited for", statuses: []int{429, 200}, header: map[string]string{"Retry-After": "60"}, wantReqs: 1, wantErr: "rate_limited"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempt := 0
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				status := tc.statuses[attempt]
				attempt++
				switch status {
				case 200:
					sse(w, chunk(`{"content":"ok"}`, "stop"))
				case 0:
					sse(w, chunk(`{"content":"o"}`, ""), "")
				default:
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(status)
					_, _ = w.Write([]byte(errorBody("no", "server_error", "")))
				}
			})
			res := run(t, context.Background(), up.provider(t, Config{MaxRetries: 2}).Model("gpt-test"), &model.Request{}, true)
			if n := len(up.requests()); n != tc.wantReqs {
				t.Errorf("upstream got %d requests, want %d", n, tc.wantReqs)
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
				Name: "test", BaseURL: up.srv.URL + "/v1", APIKey: tc.key, HTTPClient: up.client,
				Headers: map[string]string{"X-Configured": "yes"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res := run(t, context.Background(), p.Model("gpt-test"), &model.Request{}, true); res.err != nil {
				t.Fatal(res.err)
			}
			reqs := up.requests()
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
	if got := p.keys.Redact("key " + testKey + " header " + header); got != "key [redacted] header [redacted]" {
		t.Errorf("redact = %q", got)
	}
}
