// Package gemini is the model provider for Google's Gemini API. It is the
// only package that creates a google.golang.org/genai Client.
//
// Requests go out as they are: the runtime's contents and config are genai
// types already. A Provider is built once from config and is safe for
// concurrent use. Nothing here reads the environment (genai would read
// GOOGLE_API_KEY, GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL by itself);
// every setting is passed explicitly.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Defaults for the zero values of Config.
const (
	DefaultBaseURL    = "https://generativelanguage.googleapis.com/"
	DefaultTimeout    = 10 * time.Minute
	DefaultMaxRetries = 2
)

// Config configures a Provider. The zero value of each field means its
// default.
type Config struct {
	// Name is the provider's name in config; errors carry it. Required.
	Name string
	// APIKey is the Gemini API key, sent as "x-goog-api-key". Required.
	APIKey model.Secret
	// BaseURL is the API root (a proxy, or a fake in tests). Default
	// DefaultBaseURL.
	BaseURL string
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
	// Headers are added to every request. Values of headers whose names
	// mention a key, token, secret or auth are redacted from errors.
	Headers map[string]string
}

// Provider creates the models of one configured Gemini API endpoint.
type Provider struct {
	name    string
	client  sealedClient
	retries int
	// keys is a pointer so that printing a Provider shows an address, not
	// the credentials.
	keys *model.Redactor
	// wait sleeps between retries; tests replace it.
	wait func(ctx context.Context, d time.Duration) error
}

// New validates cfg and returns the provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("gemini provider: name is required")
	}
	if cfg.APIKey == "" {
		// genai would fall back to GOOGLE_API_KEY / GEMINI_API_KEY.
		return nil, fmt.Errorf("gemini provider %q: api_key is required", cfg.Name)
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gemini provider %q: base_url %q is not an absolute http(s) URL", cfg.Name, base)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("gemini provider %q: timeout must not be negative", cfg.Name)
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
	client := http.Client{Transport: model.NewTransport()}
	if cfg.HTTPClient != nil {
		client = *cfg.HTTPClient
	}
	client.Transport = &recorder{next: client.Transport}

	keys := model.NewRedactor(cfg.APIKey, cfg.Headers)
	headers := http.Header{}
	for k, v := range cfg.Headers {
		headers.Set(k, v)
	}
	gc, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     cfg.APIKey.Reveal(),
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: &client,
		HTTPOptions: genai.HTTPOptions{
			BaseURL: base,
			Headers: headers,
			Timeout: &timeout,
		},
	})
	if err != nil {
		// genai's messages print its whole config, key included.
		return nil, fmt.Errorf("gemini provider %q: %s", cfg.Name, keys.Redact(err.Error()))
	}
	return &Provider{name: cfg.Name, client: sealedClient{get: func() *genai.Client { return gc }}, retries: retries, keys: keys, wait: model.Sleep}, nil
}

// Name returns the provider's name from config.
func (p *Provider) Name() string { return p.name }

// String names the provider; it never shows credentials.
func (p *Provider) String() string { return fmt.Sprintf("gemini provider %q", p.name) }

// Model returns the model with the given id at this provider (for example
// "gemini-2.5-flash"). The model is cheap, stateless and safe for
// concurrent use.
func (p *Provider) Model(id string) model.LLM { return &llm{p: p, id: id} }

type llm struct {
	p  *Provider
	id string
}

var _ model.LLM = (*llm)(nil)

// Name returns the model id at the provider.
func (m *llm) Name() string { return m.id }

// GenerateContent calls generateContent or streamGenerateContent, following
// model.LLM's contract. req.Model, when set, overrides the id the model was
// created with.
func (m *llm) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		c := &call{p: m.p, id: m.id, contents: outgoing(req.Contents), config: outgoingConfig(req.Config)}
		if req.Model != "" {
			c.id = req.Model
		}
		for attempt := 0; ; attempt++ {
			var err error
			var yielded bool
			if stream {
				yielded, err = c.stream(ctx, yield)
			} else {
				err = c.complete(ctx, yield)
			}
			if err == nil {
				return
			}
			if !yielded && c.retry(ctx, err, attempt) {
				continue
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			yield(nil, err)
			return
		}
	}
}

// call is one model call, possibly over several attempts.
type call struct {
	p        *Provider
	id       string
	contents []*genai.Content
	config   *genai.GenerateContentConfig
}

// complete makes one non-streamed attempt; it yields the response or
// returns the error.
func (c *call) complete(ctx context.Context, yield func(*model.Response, error) bool) error {
	ctx, last := withRecorder(ctx)
	resp, err := c.p.client.get().Models.GenerateContent(ctx, c.id, c.contents, c.config)
	if err != nil {
		return c.failure(ctx, err, last, false)
	}
	var st streamState
	st.add(resp)
	if !st.finished() && len(resp.Candidates) == 0 {
		return c.failure(ctx, errNoCandidates, last, false)
	}
	yield(st.final(), nil)
	return nil
}

// stream makes one streamed attempt. It yields partials and the final
// response, or returns the error (which the caller yields or retries) and
// whether any partial went out.
func (c *call) stream(ctx context.Context, yield func(*model.Response, error) bool) (yielded bool, err error) {
	ctx, last := withRecorder(ctx)
	var st streamState
	for resp, err := range c.p.client.get().Models.GenerateContentStream(ctx, c.id, c.contents, c.config) {
		if err != nil {
			return yielded, c.failure(ctx, err, last, st.produced)
		}
		if r := st.add(resp); r != nil {
			yielded = true
			if !yield(r, nil) {
				return true, nil
			}
		}
	}
	if !st.finished() {
		return yielded, c.failure(ctx, errStreamCut, last, true)
	}
	yield(st.final(), nil)
	return yielded, nil
}

// retry reports whether attempt (0-based) may be followed by another one
// (model.RetryDelay), after waiting.
func (c *call) retry(ctx context.Context, err error, attempt int) bool {
	delay, ok := model.RetryDelay(err, attempt, c.p.retries)
	return ok && c.p.wait(ctx, delay) == nil
}

// outgoing returns contents ready to send: function calls and responses
// keep their ids, except the "adk-" ids the runtime generated itself, which
// Gemini never issued (ADK strips them the same way). contents is not
// modified.
func outgoing(contents []*genai.Content) []*genai.Content {
	out := make([]*genai.Content, 0, len(contents))
	for _, c := range contents {
		if c == nil {
			continue
		}
		cp := *c
		cp.Parts = make([]*genai.Part, 0, len(c.Parts))
		for _, p := range c.Parts {
			if p == nil {
				continue
			}
			switch {
			case p.FunctionCall != nil && strings.HasPrefix(p.FunctionCall.ID, generatedIDPrefix):
				pc, fc := *p, *p.FunctionCall
				fc.ID, pc.FunctionCall = "", &fc
				p = &pc
			case p.FunctionResponse != nil && strings.HasPrefix(p.FunctionResponse.ID, generatedIDPrefix):
				pc, fr := *p, *p.FunctionResponse
				fr.ID, pc.FunctionResponse = "", &fr
				p = &pc
			}
			cp.Parts = append(cp.Parts, p)
		}
		out = append(out, &cp)
	}
	return out
}

// outgoingConfig copies cfg for genai, which writes into the config it is
// given. HTTP settings come from the provider alone, and genai's automatic
// continuation is off: a stream that breaks is an error here, never resumed
// behind the caller's back.
func outgoingConfig(cfg *genai.GenerateContentConfig) *genai.GenerateContentConfig {
	var out genai.GenerateContentConfig
	if cfg != nil {
		out = *cfg
	}
	if out.SystemInstruction != nil {
		si := *out.SystemInstruction
		out.SystemInstruction = &si
	}
	out.HTTPOptions = nil
	off := false
	out.AutomaticContinuation = &off
	return &out
}

// sealedClient holds the genai client, whose config carries the API key,
// behind a function, so that printing a Provider (even dereferenced, with
// any verb) shows an address, never the key.
type sealedClient struct{ get func() *genai.Client }
