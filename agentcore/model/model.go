// Package model defines what the runtime asks of a language model: one
// streaming call that yields responses as an iterator. Providers live in
// sub-packages, one outside SDK per package.
package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
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
// When ctx ends the upstream call is aborted and the sequence ends with
// ctx's error.
type LLM interface {
	Name() string
	GenerateContent(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error]
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
}

// Response is one model response, partial or whole.
type Response struct {
	Content       *genai.Content
	Partial       bool
	TurnComplete  bool
	FinishReason  genai.FinishReason
	ModelVersion  string
	UsageMetadata *genai.GenerateContentResponseUsageMetadata
	// ErrorCode and ErrorMessage report a turn the model refused or could not
	// finish (a safety block, for example); the turn still ends normally.
	ErrorCode    string
	ErrorMessage string
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
	// "upstream_error", "stream_cut", "network").
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
