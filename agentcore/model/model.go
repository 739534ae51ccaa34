// Package model defines what the runtime asks of a language model: one
// streaming call that yields responses as an iterator. Providers live in
// sub-packages, one outside SDK per package.
package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"
)

// LLM is a language model.
//
// GenerateContent with stream=false yields exactly one non-partial Response.
// With stream=true it yields zero or more partial Responses whose text parts
// are deltas (never the text so far), then exactly one non-partial Response
// that aggregates the whole turn: all text, every function call with its
// complete arguments, the finish reason and usage. An error ends the
// sequence; a stream cut short is an error, never a short final response.
// Each partial Response is the consumer's to keep, unless ctx is
// WithCopiedPartials's and the provider marks it Transient.
// When ctx ends the upstream call is aborted and the sequence ends with
// ctx's error.
type LLM interface {
	Name() string
	GenerateContent(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error]
}

// ProviderNamer is an optional LLM ability: the name of the provider in
// the OpenTelemetry GenAI conventions (gen_ai.provider.name), such as
// "openai" or "gcp.gemini".
type ProviderNamer interface {
	ProviderName() string
}

// Request is one model call. Config carries the system instruction, tool
// declarations (function declarations with ParametersJsonSchema, or provider
// built-ins), response schema and generation settings.
type Request struct {
	// Model is the model id at the provider.
	Model string
	// Agent names the calling agent. Providers may use it for metrics and
	// logs; the scripted model matches its rules on it.
	Agent    string
	Contents []*genai.Content
	Config   *genai.GenerateContentConfig
	// Options are settings of this call that genai's config has no field
	// for; each provider applies those its API knows.
	Options Options
}

// Options are per-call settings beyond genai.GenerateContentConfig, as a
// client asked for them. The zero value asks for nothing.
type Options struct {
	// SchemaName and SchemaStrict are the client's name for Config's
	// response schema and whether it must be followed strictly ("" and
	// nil: the provider's defaults).
	SchemaName   string
	SchemaStrict *bool
	// ParallelToolCalls allows or forbids several function calls in one
	// answer (nil: the provider's default). It is set only on calls that
	// offer functions.
	ParallelToolCalls *bool
	// ReasoningEffort is none, minimal, low, medium, high or xhigh.
	ReasoningEffort string
	// Verbosity is low, medium or high.
	Verbosity string
	// ServiceTier is auto, default, flex or priority.
	ServiceTier string
}

// Response is one model response, partial or whole.
type Response struct {
	Content      *genai.Content
	Partial      bool
	TurnComplete bool
	// Transient marks a partial response that its provider rewrites for
	// its next delta: the response, its Content, the Content's Parts
	// array and the Parts (not what they point to). Providers set it only
	// on a call made under WithCopiedPartials, whose consumer copies what
	// it keeps of each partial response before it asks for the next.
	// (Beside the other flags, in the padding after them: Response
	// stays 88 bytes.)
	Transient     bool
	FinishReason  genai.FinishReason
	ModelVersion  string
	UsageMetadata *genai.GenerateContentResponseUsageMetadata
	// ErrorCode and ErrorMessage report a turn the model refused or could not
	// finish (a safety block, for example); the turn still ends normally.
	ErrorCode    string
	ErrorMessage string
}

type copiedPartialsKey struct{}

// WithCopiedPartials returns ctx telling the streaming model calls made
// under it that their consumer copies what it keeps of a partial response
// before it asks for the next: a provider may then yield one response,
// rewritten and marked Transient, for every delta, rather than one each.
func WithCopiedPartials(ctx context.Context) context.Context {
	return new(CopiedPartialsContext).Init(ctx)
}

// CopiedPartialsContext is the context WithCopiedPartials returns, for a
// caller that makes it in place, in an allocation of its own (Init).
type CopiedPartialsContext struct{ context.Context }

// Init makes c what WithCopiedPartials(ctx) returns, and returns it.
func (c *CopiedPartialsContext) Init(ctx context.Context) context.Context {
	c.Context = ctx
	return c
}

// Value implements context.Context.
func (c *CopiedPartialsContext) Value(key any) any {
	if key == (copiedPartialsKey{}) {
		return true
	}
	return c.Context.Value(key)
}

// CopiedPartials reports whether ctx is WithCopiedPartials's.
func CopiedPartials(ctx context.Context) bool {
	v, _ := ctx.Value(copiedPartialsKey{}).(bool)
	return v
}

// FunctionDeclarations lists the function declarations offered in req.
func (r *Request) FunctionDeclarations() []*genai.FunctionDeclaration {
	if r == nil || r.Config == nil {
		return nil
	}
	var out []*genai.FunctionDeclaration
	for _, t := range r.Config.Tools {
		if t != nil {
			out = append(out, t.FunctionDeclarations...)
		}
	}
	return out
}

// Error is a failed model call. Providers return it (wrapped or not) so the
// runtime and the gateway can decide on retries and on the status to answer
// with.
type Error struct {
	// Provider is the provider name from config; Model the model id.
	Provider, Model string
	// Status is the upstream HTTP status, 0 for network failures.
	Status int
	// Code is a short machine-readable reason ("rate_limited", "timeout",
	// "upstream_error", "stream_cut", "network"; for other upstream statuses
	// "bad_request", "unauthorized", "forbidden", "not_found", "conflict";
	// see HTTPError).
	Code string
	// Message is safe to show: it never carries keys or auth headers.
	Message string
	// Retryable reports whether trying again may help.
	Retryable bool
	// RetryAfter is the upstream's requested delay, when it gave one.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("model %s/%s: %s", e.Provider, e.Model, e.Code)
	if e.Status != 0 {
		s += fmt.Sprintf(" (upstream status %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// AsError finds a *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var me *Error
	ok := errors.As(err, &me)
	return me, ok
}

// AddUsage returns the field-wise sum of two usage records (nil counts as 0).
func AddUsage(a, b *genai.GenerateContentResponseUsageMetadata) *genai.GenerateContentResponseUsageMetadata {
	if a == nil && b == nil {
		return nil
	}
	var out genai.GenerateContentResponseUsageMetadata
	for _, u := range []*genai.GenerateContentResponseUsageMetadata{a, b} {
		if u == nil {
			continue
		}
		out.PromptTokenCount += u.PromptTokenCount
		out.CandidatesTokenCount += u.CandidatesTokenCount
		out.CachedContentTokenCount += u.CachedContentTokenCount
		out.ThoughtsTokenCount += u.ThoughtsTokenCount
		out.ToolUsePromptTokenCount += u.ToolUsePromptTokenCount
		out.TotalTokenCount += u.TotalTokenCount
	}
	return &out
}

// Secret is a credential taken from config, such as a provider's API key.
// However it is printed, logged or marshalled it shows as "[redacted]";
// Reveal returns the value for the one place that sends it upstream.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]" (or "" for an empty secret).
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Format prints String for every verb, %#v and %x included.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// LogValue keeps the secret out of slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText keeps the secret out of JSON, YAML and text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Redact replaces every occurrence of the secret in text.
func (s Secret) Redact(text string) string {
	if s == "" {
		return text
	}
	return strings.ReplaceAll(text, string(s), redacted)
}

// HTTPError returns the Error for an upstream answer with a non-2xx status:
// Status, a Code and Retryable derived from it (429, 408, 409 and 5xx other
// than 501 are worth retrying; an "x-should-retry" header overrides that),
// and RetryAfter from "Retry-After-Ms" or "Retry-After" (seconds or an HTTP
// date). header may be nil. The caller fills in Provider, Model, Message and
// Err.
func HTTPError(status int, header http.Header) *Error {
	e := &Error{Status: status, Code: "bad_request"}
	switch {
	case status == http.StatusUnauthorized:
		e.Code = "unauthorized"
	case status == http.StatusForbidden:
		e.Code = "forbidden"
	case status == http.StatusNotFound:
		e.Code = "not_found"
	case status == http.StatusRequestTimeout:
		e.Code, e.Retryable = "timeout", true
	case status == http.StatusConflict:
		e.Code, e.Retryable = "conflict", true
	case status == http.StatusTooManyRequests:
		e.Code, e.Retryable = "rate_limited", true
	case status >= 500:
		e.Code, e.Retryable = "upstream_error", status != http.StatusNotImplemented
	}
	switch header.Get("X-Should-Retry") {
	case "true":
		e.Retryable = true
	case "false":
		e.Retryable = false
	}
	e.RetryAfter = retryAfter(header, time.Now())
	return e
}

// retryAfter reads the delay an upstream asked for; 0 when it gave none.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Redactor keeps a provider's credentials out of error messages: its API
// key and the values of configured headers that carry credentials. Build it
// once per provider; it is safe for concurrent use. The secrets sit behind a
// function so that even reflective printing (fmt's %s of a struct holding a
// Redactor) shows an address, never them.
type Redactor struct{ secrets func() []Secret }

// NewRedactor returns the redactor for a provider with the given key and
// extra headers. Header values count as credentials when the header's name
// mentions a key, token, secret or auth ("api-key", "X-Auth-Token", ...).
func NewRedactor(key Secret, headers map[string]string) *Redactor {
	var secrets []Secret
	if key != "" {
		secrets = append(secrets, key)
	}
	for name, v := range headers {
		n := strings.ToLower(name)
		if v != "" && (strings.Contains(n, "key") || strings.Contains(n, "token") ||
			strings.Contains(n, "secret") || strings.Contains(n, "auth")) {
			secrets = append(secrets, Secret(v))
		}
	}
	return &Redactor{secrets: func() []Secret { return secrets }}
}

// Redact replaces every credential in text with "[redacted]".
func (r *Redactor) Redact(text string) string {
	for _, s := range r.secrets() {
		text = s.Redact(text)
	}
	return text
}

// Scrub returns err unchanged, or, when any error in its chain mentions a
// credential, a plain error with the redacted message (and no chain).
func (r *Redactor) Scrub(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if msg := e.Error(); r.Redact(msg) != msg {
			return errors.New(r.Redact(err.Error()))
		}
	}
	return err
}
