package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/config"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseDefaultsAndExpansion(t *testing.T) {
	cfg, err := config.Parse([]byte(`
server:
  addr: ${ADDR}
  max_body_bytes: ${MAX_BODY:-1024}
  shutdown_grace: 5s
sessions:
  redis_url: redis://${REDIS_HOST:-localhost}:6379/1
providers:
  - name: openai
    type: openai
    api_key: ${OPENAI_API_KEY}
    base_url: "${OPENAI_BASE_URL}"
`), env(map[string]string{"ADDR": ":9999", "OPENAI_API_KEY": "sk-test", "REDIS_HOST": "cache"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != ":9999" || cfg.Server.MaxBodyBytes != 1024 || cfg.Server.ShutdownGrace != 5*time.Second {
		t.Errorf("server = %+v", cfg.Server)
	}
	if cfg.Sessions.RedisURL != "redis://cache:6379/1" || cfg.Sessions.Backend != "memory" || cfg.Sessions.KeyPrefix != "agentgate:" {
		t.Errorf("sessions = %+v", cfg.Sessions)
	}
	if cfg.Providers[0].APIKey.Reveal() != "sk-test" || cfg.Providers[0].BaseURL != "" {
		t.Errorf("provider = %+v", cfg.Providers[0])
	}
	if s := cfg.Server; s.BodyReadTimeout != 30*time.Second || s.IdleTimeout != 60*time.Second || s.WriteTimeout != 60*time.Second ||
		s.MaxConnections != 10000 {
		t.Errorf("server timeouts and connections = %+v, want the contract's defaults", s)
	}
	if cfg.Server.KeepaliveInterval != config.DefaultKeepaliveInterval || cfg.Auth.Mode != "none" || cfg.Log.Format != "json" {
		t.Errorf("defaults not applied: %+v %+v", cfg.Server, cfg.Auth)
	}
}

// runs.pack_frames is on unless the file turns it off (a rolling upgrade
// from a version that did not read packed frames).
func TestRunsPackFrames(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want bool
	}{
		{"", true},
		{"runs:\n  pack_frames: false\n", false},
		{"runs:\n  pack_frames: true\n", true},
	} {
		cfg, err := config.Parse([]byte(tc.yaml), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Runs.PackFrames; got == nil || *got != tc.want {
			t.Errorf("%q: pack_frames %v, want %v", tc.yaml, got, tc.want)
		}
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "server:\n  adress: x\n", []string{"field adress not found"}},
		{"unknown top-level key", "servers: {}\n", []string{"field servers not found"}},
		{"wrong type", "server:\n  max_body_bytes: lots\n", []string{"max_body_bytes", "lots"}},
		{"bad backend", "sessions:\n  backend: mongo\n", []string{`sessions.backend: must be memory or redis, not "mongo"`}},
		{"bad auth", "auth:\n  mode: jwt\n", []string{"auth.jwt: mode jwt needs"}},
		{"several problems", "sessions:\n  backend: x\nlog:\n  level: loud\n", []string{"sessions.backend", "log.level"}},
		{"negative body read timeout", "server:\n  body_read_timeout: -1s\n", []string{"server.body_read_timeout: must be positive"}},
		{"negative idle timeout", "server:\n  idle_timeout: -5s\n", []string{"server.idle_timeout: must be positive"}},
		{"negative write timeout", "server:\n  write_timeout: -1m\n", []string{"server.write_timeout: must be positive"}},
		{"negative max connections", "server:\n  max_connections: -3\n", []string{"server.max_connections: must be positive"}},
		{"timeout not a duration", "server:\n  idle_timeout: soon\n", []string{"server.idle_timeout", "soon"}},
		{"bad jwks url", "auth:\n  mode: jwt\n  jwt:\n    jwks_url: ftp://idp/keys\n", []string{"auth.jwt.jwks_url: must be an absolute http(s) URL"}},
		{"negative jwks refresh", "auth:\n  mode: jwt\n  jwt:\n    jwks_url: https://idp/keys\n    jwks_refresh: -1m\n", []string{"auth.jwt.jwks_refresh: must be positive"}},
		{"bad public url", "server:\n  public_url: not a url\n", []string{"server.public_url"}},
		{"bad telemetry", "telemetry:\n  otlp_endpoint: collector:4318\n  sample_ratio: 2\n  keep_spans: -1\n",
			[]string{"telemetry.otlp_endpoint", "telemetry.sample_ratio", "telemetry.keep_spans"}},
		{"bad limits", "limits:\n  concurrent_turns: 0\n  requests_per_minute: -5\n  tokens_per_day: many\n",
			[]string{"limits.tokens_per_day", "many"}},
		{"bad limit values", "limits:\n  concurrent_turns: 0\n  requests_per_minute: -5\n",
			[]string{"limits.concurrent_turns: must be at least 1 (leave it out for no limit), got 0", "limits.requests_per_minute: must be at least 1"}},
		{"negative max sessions", "sessions:\n  max_sessions: -1\n", []string{"sessions.max_sessions: must not be negative (0: no bound), got -1"}},
		{"negative run log bounds", "runs:\n  max_ended: -1\n  max_bytes: -5\n", []string{"runs.max_ended: must not be negative", "runs.max_bytes: must not be negative"}},
		{"max sessions not a number", "sessions:\n  max_sessions: many\n", []string{"max_sessions", "many"}},
		{"fraction for a whole number", "server:\n  max_connections: 1.5\n", []string{"server.max_connections (line 2): 1.5 is not a whole number"}},
		{"fraction deep in a list", "models:\n  - id: m\n    compaction:\n      interval: 2.5\n      overlap: 1\n",
			[]string{"models[0].compaction.interval (line 4): 2.5 is not a whole number"}},
		{"duration without a unit", "sessions:\n  ttl: 0\n", []string{"sessions.ttl", "a duration is a number with a unit"}},
		{"negative line bounds", "sessions:\n  max_queued: -1\n  queue_wait: -1s\n",
			[]string{"sessions.max_queued: must not be negative (0: the default), got -1", "sessions.queue_wait: must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml), nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// sessions.max_sessions: absent is the default bound, 0 is no bound, a
// number is that bound.
func TestMaxSessions(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want int
	}{
		{"sessions: {backend: memory}\n", config.DefaultMaxSessions},
		{"sessions: {max_sessions: 0}\n", 0},
		{"sessions: {max_sessions: 250}\n", 250},
		{"sessions:\n  max_sessions: ${MAX}\n", 7},
	} {
		cfg, err := config.Parse([]byte(tc.yaml), env(map[string]string{"MAX": "7"}))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if got := cfg.Sessions.MaxSessions; got == nil || *got != tc.want {
			t.Errorf("%q: max_sessions %v, want %d", tc.yaml, got, tc.want)
		}
	}
}

// TestSessionTTL: an absent sessions.ttl is the documented 168h, not 0
// (which keeps sessions forever and must be asked for).
func TestSessionTTL(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
	}{
		{"sessions: {backend: memory}\n", config.DefaultTTL},
		{"sessions: {ttl: 0s}\n", 0},
		{"sessions: {ttl: 90m}\n", 90 * time.Minute},
	} {
		cfg, err := config.Parse([]byte(tc.yaml), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if got := cfg.Sessions.TTL; got == nil || *got != tc.want {
			t.Errorf("%q: ttl %v, want %v", tc.yaml, got, tc.want)
		}
	}
}

func TestRepositoryConfigLoads(t *testing.T) {
	cfg, err := config.Load("../config.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Models) == 0 || cfg.Models[0].ID != "support-desk" || cfg.Sessions.Backend != "memory" {
		t.Errorf("default config: %+v", cfg.Models)
	}
}

// A whole number written as a float (2.0, 1e3) is taken as it is; only a
// fraction, which the decoder would truncate, is refused (see the errors
// test).
func TestWholeNumbersWrittenAsFloats(t *testing.T) {
	cfg, err := config.Parse([]byte("server:\n  max_connections: 2.0\nsessions:\n  max_sessions: 1e3\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.MaxConnections != 2 || *cfg.Sessions.MaxSessions != 1000 {
		t.Errorf("max_connections %d, max_sessions %d; want 2 and 1000", cfg.Server.MaxConnections, *cfg.Sessions.MaxSessions)
	}
}
