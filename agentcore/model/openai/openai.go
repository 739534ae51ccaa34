// Package openai is the model provider for OpenAI and every server that
// speaks its chat-completions API (vLLM, Ollama, LiteLLM, llama.cpp, Azure
// style deployments, ...).
//
// It speaks the API itself, over net/http, with wire types of its own for
// what it sends (request.go) and a decoder and SSE reader of its own for
// what it reads (wire*.go); of openai-go only the type of an in-band stream
// error remains (ssestream.StreamError). Sending through openai-go's client
// was a third of the gateway's CPU per non-streamed turn (its param unions
// encoded by reflection, a request config rebuilt from options and the
// headers cloned per attempt, and a body wrapper that made net/http flush
// the headers in a packet of their own), its decoding half of a streamed
// turn's. Its contract is kept: explicit config only, retries before any
// output with backoff that honours Retry-After, errors from the OpenAI
// error envelope.
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
	"strings"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/wire"
)

// Defaults for the zero values of Config.
const (
	DefaultBaseURL    = "https://api.openai.com/v1"
	DefaultTimeout    = 10 * time.Minute
	DefaultMaxRetries = 2
)

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

// userAgent names the gateway to upstreams.
const userAgent = "agentgate"

// Provider creates the models of one configured OpenAI-compatible server.
type Provider struct {
	name string
	// up and keys are pointers so that printing a Provider shows addresses,
	// not the credentials.
	up   *endpoint
	keys *model.Redactor
}

// endpoint is where and how a provider's requests go.
type endpoint struct {
	url *url.URL // base URL + "/chat/completions", parsed once
	// header returns the headers of a request (a streamed one's when
	// stream), with Accept set; they hold the credentials, so they are
	// kept in a closure, which prints as an address.
	header  func(stream bool) http.Header
	client  *http.Client
	timeout time.Duration
	retries int
	// wait sleeps between retries; tests replace it.
	wait func(ctx context.Context, d time.Duration) error
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
	if u, err = wire.ParseURL(strings.TrimSuffix(base, "/") + "/chat/completions"); err != nil {
		return nil, fmt.Errorf("openai provider %q: base_url %q: %w", cfg.Name, base, err)
	}
	up := &endpoint{url: u, wait: model.Sleep}
	up.client, up.timeout, up.retries = wire.Settings(cfg.HTTPClient, cfg.Timeout, DefaultTimeout, cfg.MaxRetries, DefaultMaxRetries)
	var auth http.Header
	if cfg.APIKey != "" {
		auth = http.Header{"Authorization": {"Bearer " + cfg.APIKey.Reveal()}}
	}
	up.header = requestHeader(up.client, wire.ProviderHeader(userAgent, auth, cfg.Headers))
	return &Provider{name: cfg.Name, up: up, keys: model.NewRedactor(cfg.APIKey, cfg.Headers)}, nil
}

// requestHeader returns the headers of each request, from copier. A
// client without a cookie jar only reads a request's headers (it adds
// cookies to them otherwise), and so does every transport
// (http.RoundTripper's contract): its requests share two copies made
// here, one per Accept, read-only. A client with a jar gets a copy per
// request.
func requestHeader(client *http.Client, copier func(accept string) http.Header) func(stream bool) http.Header {
	const jsonAccept, streamAccept = "application/json", "text/event-stream"
	if client.Jar != nil {
		return func(stream bool) http.Header {
			if stream {
				return copier(streamAccept)
			}
			return copier(jsonAccept)
		}
	}
	complete, streamed := copier(jsonAccept), copier(streamAccept)
	return func(stream bool) http.Header {
		if stream {
			return streamed
		}
		return complete
	}
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

// ProviderName implements model.ProviderNamer.
func (m *llm) ProviderName() string { return "openai" }

// GenerateContent calls chat completions, following model.LLM's contract.
// req.Model, when set, overrides the id the model was created with.
func (m *llm) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		c := &call{p: m.p, id: m.id}
		if req.Model != "" {
			c.id = req.Model
		}
		body, err := c.body(req, stream)
		if err != nil {
			yield(nil, &model.Error{Provider: m.p.name, Model: c.id, Code: "unsupported", Message: m.p.keys.Redact(err.Error()), Err: err})
			return
		}
		if stream {
			c.stream(ctx, body, yield)
		} else {
			c.complete(ctx, body, yield)
		}
	}
}

// call is one model call.
type call struct {
	p  *Provider
	id string
}

// includeUsage is every streamed call's stream options, read-only.
var includeUsage = streamOptions{IncludeUsage: true}

// body returns the JSON request body.
func (c *call) body(req *model.Request, stream bool) ([]byte, error) {
	// The messages of a new conversation's turn (an instruction and the
	// user's message) on the stack.
	var room [2]chatMessage
	params, err := newParams(room[:], c.id, req)
	if err != nil {
		return nil, err
	}
	if stream {
		params.Stream = true
		params.StreamOptions = &includeUsage
	}
	return params.encode()
}

// send posts body (a streamed call's when stream) until an attempt
// succeeds, an error is not worth another attempt (model.RetryDelay), or
// the retries are used up. The response's body ends the attempt's timeout
// when closed. An answer with a status of 400 or more fails its attempt as
// an *apiError (its body read and closed), classified with the answer's
// headers.
func (c *call) send(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	up := c.p.up
	for attempt := 0; ; attempt++ {
		resp, err := wire.Post(ctx, up.client, up.url, up.header(stream), body, up.timeout)
		if err == nil {
			if resp.StatusCode < 400 {
				return resp, nil
			}
			err = readAPIError(resp)
		}
		err = c.failure(ctx, err, resp, false)
		delay, again := model.RetryDelay(err, attempt, up.retries)
		if !again {
			return nil, err
		}
		if err := up.wait(ctx, delay); err != nil {
			return nil, err
		}
	}
}

func (c *call) complete(ctx context.Context, body []byte, yield func(*model.Response, error) bool) {
	raw, err := c.send(ctx, body, false)
	if err != nil {
		yield(nil, err)
		return
	}
	var out wireCompletion
	if err := readCompletion(raw, &out, c.id); err != nil {
		yield(nil, c.failure(ctx, err, raw, false))
		return
	}
	r, err := completionResponse(&out)
	if err != nil {
		yield(nil, c.failure(ctx, err, raw, false))
		return
	}
	yield(r, nil)
}

func (c *call) stream(ctx context.Context, body []byte, yield func(*model.Response, error) bool) {
	raw, err := c.send(ctx, body, true)
	if err != nil {
		yield(nil, err)
		return
	}
	// A pacer (the gateway's stream writer) holds a delta's flush while
	// the next chunk is already read, and flushes before each read of
	// the body and at the end of the stream.
	pace := model.PacerFrom(ctx)
	if raw != nil {
		raw.Body = wire.PacedBody(raw.Body, pace)
	}
	var s chunkStream
	s.init(raw, c.id)
	defer s.close()
	st := streamState{transient: model.CopiedPartials(ctx)}
	for s.next() {
		r := st.add(&s.cur)
		if r == nil {
			continue
		}
		if pace != nil {
			pace.Buffered(s.sse.Buffered() > 0)
		}
		if !yield(r, nil) {
			return
		}
	}
	if pace != nil {
		pace.Waiting()
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
