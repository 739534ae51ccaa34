// Package config reads agentgate's config.yaml: strict decoding (unknown keys
// are errors), ${VAR} expansion in every string value, defaults, and
// validation that names the key at fault. It never reads the environment
// itself: the caller passes a lookup function.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/limits"
)

// Config is the whole configuration file.
type Config struct {
	Server    Server    `yaml:"server"`
	Sessions  Sessions  `yaml:"sessions"`
	Runs      Runs      `yaml:"runs"`
	Auth      Auth      `yaml:"auth"`
	Log       Log       `yaml:"log"`
	Telemetry Telemetry `yaml:"telemetry"`
	// Limits bounds each user's turns over all models (models[].limits
	// bound them per model); absent: no limits.
	Limits    *limits.Limits      `yaml:"limits"`
	Providers []spec.Provider     `yaml:"providers"`
	Agents    []spec.Agent        `yaml:"agents"`
	Models    []spec.VirtualModel `yaml:"models"`
}

// Runs configures what is kept of runs (turns) for clients to re-attach.
type Runs struct {
	// Retention is how long a run's frames are kept after it ended
	// (default 1h).
	Retention time.Duration `yaml:"retention"`
	// MaxEnded bounds the ended runs whose frames the in-memory run log
	// keeps (default 10,000); MaxBytes what it holds in all (default 64
	// MiB). Beyond either the oldest ended runs go first.
	MaxEnded int   `yaml:"max_ended"`
	MaxBytes int64 `yaml:"max_bytes"`
	// PackFrames has the Redis run log keep a frame's event packed when
	// it packs (about a third of its JSON); on by default (nil). Off, every
	// frame is its JSON, which replicas of a version older than the one
	// that first read packed frames (a rolling upgrade) read too.
	PackFrames *bool `yaml:"pack_frames"`
}

// Server configures the HTTP server.
type Server struct {
	Addr string `yaml:"addr"`
	// PublicURL is how clients reach the gateway (absolute URLs).
	PublicURL   string   `yaml:"public_url"`
	CORSOrigins []string `yaml:"cors_origins"`
	// ShutdownGrace bounds how long running requests may finish on SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	MaxBodyBytes  int64         `yaml:"max_body_bytes"`
	// BodyReadTimeout bounds how long a request body may take to arrive
	// (default 30s).
	BodyReadTimeout time.Duration `yaml:"body_read_timeout"`
	// IdleTimeout closes keep-alive connections that carry no request for
	// this long (default 60s).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// WriteTimeout bounds how long a non-streamed response may take to be
	// written, from its first byte (default 60s); streams are not bounded.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// MaxConnections caps the open client connections (default 10000);
	// more wait in the listen queue.
	MaxConnections int `yaml:"max_connections"`
	// KeepaliveInterval spaces SSE keepalive comments during silence.
	KeepaliveInterval time.Duration `yaml:"keepalive_interval"`
	// WatchConfig reloads the providers, agents and models when the
	// config file changes (default true); SIGHUP reloads either way.
	WatchConfig *bool `yaml:"watch_config"`
	// WatchInterval is how often the file is checked (default 2s).
	WatchInterval time.Duration `yaml:"watch_interval"`
}

// Sessions configures the session store.
type Sessions struct {
	// Backend is memory or redis.
	Backend   string `yaml:"backend"`
	RedisURL  string `yaml:"redis_url"`
	KeyPrefix string `yaml:"key_prefix"`
	// TTL is how long an idle session lives (default DefaultTTL when the
	// key is absent; 0 keeps sessions forever).
	TTL *time.Duration `yaml:"ttl"`
	// MaxSessions bounds the top-level sessions the memory backend holds
	// (default DefaultMaxSessions; 0: no bound); the least recently used
	// are evicted.
	MaxSessions *int `yaml:"max_sessions"`
	// LockTTL is the lease of a session's run lock (redis).
	LockTTL time.Duration `yaml:"lock_ttl"`
	// BusyWait is how long a request waits for a busy session before 409.
	BusyWait time.Duration `yaml:"busy_wait"`
	// MaxQueued bounds the turns waiting in one session's line
	// (models[].multitask enqueue or interrupt; default 10).
	MaxQueued int `yaml:"max_queued"`
	// QueueWait bounds how long a turn waits in a session's line (default
	// 5m).
	QueueWait time.Duration `yaml:"queue_wait"`
}

// Auth configures authentication.
type Auth struct {
	// Mode is none or jwt.
	Mode string `yaml:"mode"`
	JWT  JWT    `yaml:"jwt"`
	// PublicPaths need no token (default /healthz, /readyz, /metrics).
	PublicPaths []string `yaml:"public_paths"`
}

// JWT configures token verification.
type JWT struct {
	Issuer         string       `yaml:"issuer"`
	Audience       string       `yaml:"audience"`
	HS256Secret    model.Secret `yaml:"hs256_secret"`
	PublicKeyFiles []string     `yaml:"public_key_files"`
	JWKSFile       string       `yaml:"jwks_file"`
	// JWKSURL is a JWKS document served over http(s), refreshed every
	// JWKSRefresh (default 15m) and when a token names an unknown kid.
	JWKSURL     string           `yaml:"jwks_url"`
	JWKSRefresh time.Duration    `yaml:"jwks_refresh"`
	Leeway      time.Duration    `yaml:"leeway"`
	UserClaim   string           `yaml:"user_claim"`
	ModelsClaim string           `yaml:"models_claim"`
	Parameters  []ClaimParameter `yaml:"parameters"`
}

// ClaimParameter maps a token claim to a trusted conversation parameter.
type ClaimParameter struct {
	Claim       string `yaml:"claim"`
	Name        string `yaml:"name"`
	SendToModel *bool  `yaml:"send_to_model"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is json or text.
	Format string `yaml:"format"`
}

// Telemetry configures OpenTelemetry tracing (off when neither
// OTLPEndpoint, OTEL_EXPORTER_OTLP_ENDPOINT nor KeepSpans is set).
type Telemetry struct {
	// OTLPEndpoint is the OTLP/HTTP base URL: spans go to
	// <otlp_endpoint>/v1/traces.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// ServiceName is service.name on every span (default agentgate).
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of new traces recorded, in (0, 1]
	// (default 1).
	SampleRatio float64 `yaml:"sample_ratio"`
	// CaptureContent records messages, tool arguments and results.
	CaptureContent bool `yaml:"capture_content"`
	// KeepSpans is how many recent spans are kept in process for ADK's
	// debug routes (adk-web's Traces tab); 0 keeps none.
	KeepSpans int `yaml:"keep_spans"`
}

// Defaults.
const (
	DefaultAddr              = ":8080"
	DefaultShutdownGrace     = 30 * time.Second
	DefaultMaxBodyBytes      = 4 << 20
	DefaultKeepaliveInterval = 15 * time.Second
	DefaultBodyReadTimeout   = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultMaxConnections    = 10000
	DefaultWatchInterval     = 2 * time.Second
	DefaultRedisURL          = "redis://127.0.0.1:6379/0"
	DefaultKeyPrefix         = "agentgate:"
	DefaultTTL               = 168 * time.Hour
	// DefaultMaxSessions bounds the memory backend: 10,000 sessions of ten
	// short turns hold about 130 MB of heap (docs/operations.md#sizing).
	DefaultMaxSessions = 10_000
)

// Load reads and validates a config file. lookup resolves ${VAR}
// references (os.LookupEnv in production).
func Load(path string, lookup func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, lookup)
}

// Parse decodes, expands, defaults and validates config data. Every problem
// found is returned, joined, one per line.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	expandNode(&root, lookup)
	var expanded bytes.Buffer
	enc := yaml.NewEncoder(&expanded)
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	text := bytes.Clone(expanded.Bytes())
	dec := yaml.NewDecoder(&expanded)
	dec.KnownFields(true)
	cfg := &Config{}
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			var reparsed yaml.Node
			_ = yaml.Unmarshal(text, &reparsed)
			var errs []error
			for _, msg := range te.Errors {
				if strings.Contains(msg, "into time.Duration") {
					msg += " (a duration is a number with a unit: 0s, 500ms, 30s, 2h)"
				}
				errs = append(errs, errors.New(withKeyPath(&reparsed, msg)))
			}
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if errs := fractions(&root, reflect.TypeFor[Config]()); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand replaces ${VAR} and ${VAR:-default} in s.
func Expand(s string, lookup func(string) (string, bool)) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		if v, ok := lookup(sub[1]); ok && v != "" {
			return v
		}
		return sub[3]
	})
}

// expandNode expands variables in every scalar string value (never keys).
func expandNode(n *yaml.Node, lookup func(string) (string, bool)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			expandNode(c, lookup)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			expandNode(n.Content[i], lookup)
		}
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "${") {
			n.Value = Expand(n.Value, lookup)
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				// A quoted value stays a string.
				n.Style, n.Tag = yaml.DoubleQuotedStyle, "!!str"
			} else {
				// A plain value is typed by what it expands to (a port, a
				// duration, a boolean).
				n.Style, n.Tag = 0, ""
			}
		}
	}
}

func (c *Config) applyDefaults() {
	setDefault(&c.Server.Addr, DefaultAddr)
	setDefault(&c.Server.ShutdownGrace, DefaultShutdownGrace)
	setDefault(&c.Server.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.Server.KeepaliveInterval, DefaultKeepaliveInterval)
	setDefault(&c.Server.BodyReadTimeout, DefaultBodyReadTimeout)
	setDefault(&c.Server.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.Server.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.Server.MaxConnections, DefaultMaxConnections)
	if c.Server.WatchConfig == nil {
		watch := true
		c.Server.WatchConfig = &watch
	}
	if c.Runs.PackFrames == nil {
		pack := true
		c.Runs.PackFrames = &pack
	}
	if c.Server.WatchInterval == 0 {
		c.Server.WatchInterval = DefaultWatchInterval
	}
	if c.Sessions.Backend == "" {
		c.Sessions.Backend = "memory"
	}
	if c.Sessions.RedisURL == "" {
		c.Sessions.RedisURL = DefaultRedisURL
	}
	if c.Sessions.KeyPrefix == "" {
		c.Sessions.KeyPrefix = DefaultKeyPrefix
	}
	if c.Sessions.TTL == nil {
		d := DefaultTTL
		c.Sessions.TTL = &d
	}
	if c.Sessions.MaxSessions == nil {
		n := DefaultMaxSessions
		c.Sessions.MaxSessions = &n
	}
	if c.Auth.Mode == "" {
		c.Auth.Mode = "none"
	}
	if c.Auth.PublicPaths == nil {
		c.Auth.PublicPaths = []string{"/healthz", "/readyz", "/metrics"}
	}
	if c.Auth.JWT.Leeway == 0 {
		c.Auth.JWT.Leeway = 30 * time.Second
	}
	if c.Auth.JWT.UserClaim == "" {
		c.Auth.JWT.UserClaim = "sub"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "json"
	}
}

// setDefault sets *v to d when it holds the zero value (the key is absent).
func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Validate checks the server, sessions, auth and log sections; the agent
// trees are checked when they are built (spec.Build).
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Server.MaxBodyBytes < 0 {
		bad("server.max_body_bytes", "must be positive")
	}
	if c.Server.ShutdownGrace < 0 {
		bad("server.shutdown_grace", "must not be negative")
	}
	if c.Server.KeepaliveInterval < 0 {
		bad("server.keepalive_interval", "must not be negative")
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"server.body_read_timeout", c.Server.BodyReadTimeout}, {"server.idle_timeout", c.Server.IdleTimeout},
		{"server.write_timeout", c.Server.WriteTimeout}} {
		if t.d < 0 {
			bad(t.key, "must be positive, got %s", t.d)
		}
	}
	if c.Server.MaxConnections < 0 {
		bad("server.max_connections", "must be positive, got %d", c.Server.MaxConnections)
	}
	if c.Server.WatchInterval < 0 {
		bad("server.watch_interval", "must not be negative")
	}
	if c.Server.PublicURL != "" {
		if u, err := url.Parse(c.Server.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("server.public_url", "must be an absolute http(s) URL, got %q", c.Server.PublicURL)
		}
	}
	switch c.Sessions.Backend {
	case "memory", "redis":
	default:
		bad("sessions.backend", "must be memory or redis, not %q", c.Sessions.Backend)
	}
	if c.Sessions.TTL != nil && *c.Sessions.TTL < 0 {
		bad("sessions.ttl", "must not be negative")
	}
	if n := c.Sessions.MaxSessions; n != nil && *n < 0 {
		bad("sessions.max_sessions", "must not be negative (0: no bound), got %d", *n)
	}
	if c.Runs.Retention < 0 {
		bad("runs.retention", "must not be negative")
	}
	if c.Runs.MaxEnded < 0 {
		bad("runs.max_ended", "must not be negative (0: the default)")
	}
	if c.Runs.MaxBytes < 0 {
		bad("runs.max_bytes", "must not be negative (0: the default)")
	}
	if c.Sessions.BusyWait < 0 {
		bad("sessions.busy_wait", "must not be negative")
	}
	if c.Sessions.MaxQueued < 0 {
		bad("sessions.max_queued", "must not be negative (0: the default), got %d", c.Sessions.MaxQueued)
	}
	if c.Sessions.QueueWait < 0 {
		bad("sessions.queue_wait", "must not be negative (0: the default)")
	}
	if strings.ContainsAny(c.Sessions.KeyPrefix, "{}") {
		bad("sessions.key_prefix", "must not contain { or }")
	}
	if t := c.Telemetry; t.OTLPEndpoint != "" {
		if u, err := url.Parse(t.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("telemetry.otlp_endpoint", "must be an absolute http(s) URL, got %q", t.OTLPEndpoint)
		}
	}
	if r := c.Telemetry.SampleRatio; r < 0 || r > 1 {
		bad("telemetry.sample_ratio", "must be in (0, 1], got %v", r)
	}
	if c.Telemetry.KeepSpans < 0 {
		bad("telemetry.keep_spans", "must not be negative")
	}
	if err := c.Limits.Validate("limits"); err != nil {
		errs = append(errs, err)
	}
	switch c.Auth.Mode {
	case "none":
	case "jwt":
		j := c.Auth.JWT
		if j.HS256Secret == "" && len(j.PublicKeyFiles) == 0 && j.JWKSFile == "" && j.JWKSURL == "" {
			bad("auth.jwt", "mode jwt needs hs256_secret, public_key_files, jwks_file or jwks_url")
		}
		if j.JWKSURL != "" {
			if u, err := url.Parse(j.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("auth.jwt.jwks_url", "must be an absolute http(s) URL, got %q", j.JWKSURL)
			}
		}
		if j.JWKSRefresh < 0 {
			bad("auth.jwt.jwks_refresh", "must be positive, got %s", j.JWKSRefresh)
		}
	default:
		bad("auth.mode", "must be none or jwt, not %q", c.Auth.Mode)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "must be debug, info, warn or error, not %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "json", "text":
	default:
		bad("log.format", "must be json or text, not %q", c.Log.Format)
	}
	return errors.Join(errs...)
}

// Spec returns the declarative agent set of the file.
func (c *Config) Spec() spec.Set {
	return spec.Set{Providers: c.Providers, Agents: c.Agents, Models: c.Models}
}

var lineRE = regexp.MustCompile(`^line (\d+): `)

// withKeyPath prefixes a decoding error ("line 3: ...") with the key path
// found on that line, e.g. "server.max_body_bytes (line 3): ...".
func withKeyPath(root *yaml.Node, msg string) string {
	m := lineRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	var line int
	fmt.Sscan(m[1], &line)
	if path := keyPathAt(root, line, ""); path != "" {
		return fmt.Sprintf("%s (line %d): %s", path, line, msg[len(m[0]):])
	}
	return msg
}

// keyPathAt finds the dotted key path (with [i] for sequences) of the key
// or value that starts on line.
func keyPathAt(n *yaml.Node, line int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := keyPathAt(c, line, prefix); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := k.Value
			if prefix != "" {
				path = prefix + "." + k.Value
			}
			if k.Line == line {
				return path
			}
			if p := keyPathAt(v, line, path); p != "" {
				return p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			path := fmt.Sprintf("%s[%d]", prefix, i)
			if c.Kind == yaml.ScalarNode && c.Line == line {
				return path
			}
			if p := keyPathAt(c, line, path); p != "" {
				return p
			}
		}
	}
	return ""
}
