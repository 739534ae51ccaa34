// Package openai is the model provider for OpenAI and every server that
// speaks its chat-completions API (vLLM, Ollama, LiteLLM, llama.cpp, Azure
// style deployments, ...). It is the only package that imports openai-go.
//
// A Provider is built once from config and is safe for concurrent use; its
// models share one HTTP client. Nothing here reads the environment: the key,
// base URL, headers, timeout and retries come from Config alone.
package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Defaults for the zero values of Config.
const (
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultTimeout    = 10 * time.Minute
	DefaultMaxRetries = 2
)

// maxRetryDelay caps the wait between retries. An upstream that asks for a
// longer wait (Retry-After) is not retried; its error carries the delay.
const maxRetryDelay = 10 * time.Second

// Config configures a Provider. The zero value of each field means its
// default.
type Config struct {
	// Name is the provider's name in config (the part before "/" in a model
	// reference); errors carry it. Required.
	Name string
	// BaseURL is the API root, up to and including "/v1". Default
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends none
	// (local servers often need no key).
	APIKey model.Secret
	// Timeout bounds one attempt, a whole stream included. Default
	// DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how often a call that failed before producing any
	// output (network failure, 408, 409, 429, 5xx) is tried again, with
	// exponential backoff that honours Retry-After. Default
	// DefaultMaxRetries; negative means never.
	MaxRetries int
	// HTTPClient sends the requests. Default: a client of its own.
	HTTPClient *http.Client
	// Headers are added to every request (for example "api-key" for
	// Azure-style gateways). Values of headers whose names mention a key,
	// token, secret or auth are redacted from errors like APIKey.
	Headers map[string]string
}

// Provider creates the models of one configured OpenAI-compatible server.
type Provider struct {
	name string
	chat oai.ChatCompletionService
	// keys is a pointer so that printing a Provider shows an address, not
	// the credentials.
	keys *model.Redactor
}

// New validates cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("openai provider: name is required")
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider %q: base_url %q is not an absolute http(s) URL", cfg.Name, base)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("openai provider %q: timeout must not be negative", cfg.Name)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Transport: model.NewTransport()}
	}

	p := &Provider{name: cfg.Name, keys: model.NewRedactor(cfg.APIKey, cfg.Headers)}
	// Every setting is passed explicitly, and the service is built without
	// oai.NewClient, which would first read OPENAI_* from the environment.
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(client),
		option.WithRequestTimeout(timeout),
		option.WithMaxRetries(retries),
		option.WithMaxRetryDelay(maxRetryDelay),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey.Reveal()))
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	p.chat = oai.NewChatCompletionService(opts...)
	return p, nil
}

// Name returns the provider's name from config.
func (p *Provider) Name() string { return p.name }

// String names the provider; it never shows credentials.
func (p *Provider) String() string { return fmt.Sprintf("openai provider %q", p.name) }

// Model returns the model with the given id at this provider. The model is
// cheap, stateless and safe for concurrent use.
func (p *Provider) Model(id string) model.LLM { return &llm{p: p, id: id} }

type llm struct {
	p  *Provider
	id string
}

var _ model.LLM = (*llm)(nil)

// Name returns the model id at the provider.
func (m *llm) Name() string { return m.id }

// GenerateContent calls chat completions, following model.LLM's contract.
// req.Model, when set, overrides the id the model was created with.
func (m *llm) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		id := m.id
		if req.Model != "" {
			id = req.Model
		}
		params, err := buildParams(id, req)
		if err != nil {
			yield(nil, &model.Error{Provider: m.p.name, Model: id, Code: "unsupported", Message: m.p.keys.Redact(err.Error()), Err: err})
			return
		}
		call := &call{p: m.p, id: id}
		if stream {
			call.stream(ctx, params, yield)
		} else {
			call.complete(ctx, params, yield)
		}
	}
}

// call is one model call.
type call struct {
	p  *Provider
	id string
}

func (c *call) complete(ctx context.Context, params oai.ChatCompletionNewParams, yield func(*model.Response, error) bool) {
	var raw *http.Response
	// The body is left to us (see wire.go); openai-go still handles error
	// statuses and retries.
	if _, err := c.p.chat.New(ctx, params, option.WithResponseBodyInto(&raw)); err != nil {
		yield(nil, c.failure(ctx, err, raw, false))
		return
	}
	out, err := readCompletion(raw)
	if err != nil {
		yield(nil, c.failure(ctx, err, raw, false))
		return
	}
	r, err := completionResponse(out)
	if err != nil {
		yield(nil, c.failure(ctx, err, raw, false))
		return
	}
	yield(r, nil)
}

func (c *call) stream(ctx context.Context, params oai.ChatCompletionNewParams, yield func(*model.Response, error) bool) {
	params.StreamOptions.IncludeUsage = oai.Bool(true)
	var raw *http.Response
	// What ChatCompletionService.NewStreaming does, with the events
	// decoded by chunkStream (see wire.go).
	_, err := c.p.chat.New(ctx, params, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&raw))
	if err != nil {
		if raw != nil && raw.Body != nil {
			_ = raw.Body.Close()
		}
		yield(nil, c.failure(ctx, err, raw, false))
		return
	}
	s := newChunkStream(raw)
	defer s.close()
	var st streamState
	for s.next() {
		if r := st.add(&s.cur); r != nil && !yield(r, nil) {
			return
		}
	}
	if s.err != nil {
		yield(nil, c.failure(ctx, s.err, raw, st.produced))
		return
	}
	if st.finish == "" {
		yield(nil, c.failure(ctx, errStreamCut, raw, true))
		return
	}
	yield(st.final(), nil)
}
