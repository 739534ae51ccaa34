// Package gemini is the model provider for Google's Gemini API
// (generateContent and streamGenerateContent).
//
// It speaks the REST API itself, over net/http: the runtime's contents and
// config are genai types already, and genai's types encode to exactly the
// Gemini wire, so a request is one encoding/json pass over a small struct
// that holds them (request.go) and an answer decodes into genai types
// directly (response.go), by hand for the members the provider reads and
// with encoding/json for the rest (response_decode.go). genai's client went through a reflection round
// trip on both sides (typed values to JSON, to maps, converted, to JSON
// again; answers from JSON to maps to JSON to types), a third of a
// transfer turn's CPU and two thirds of a long session's; it remains in the
// tests as the oracle. Its contract is kept: explicit config only, retries
// before any output with backoff that honours Retry-After and RetryInfo,
// errors from Google's error envelope.
//
// A Provider is built once from config and is safe for concurrent use.
// Nothing here reads the environment (genai would read GOOGLE_API_KEY,
// GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL by itself); every setting is
// passed explicitly.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/wire"
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

// apiVersion is the Gemini API version requests go to (genai's default
// for the Gemini API).
const apiVersion = "v1beta"

// userAgent names the gateway to upstreams.
const userAgent = "agentgate"

// Provider creates the models of one configured Gemini API endpoint.
type Provider struct {
	name string
	// up and keys are pointers so that printing a Provider shows addresses,
	// not the credentials.
	up   *endpoint
	keys *model.Redactor
	// wait sleeps between retries; tests replace it.
	wait func(ctx context.Context, d time.Duration) error
}

// endpoint is where and how a provider's requests go.
type endpoint struct {
	// models is the URL every model's path is appended to:
	// <base>/v1beta/.
	models string
	// header returns a new copy of every request's headers, with Accept
	// set to accept; they hold the credentials, so they are kept in a
	// closure, which prints as an address.
	header  func(accept string) http.Header
	client  *http.Client
	timeout time.Duration
	retries int
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
	up := &endpoint{models: u.JoinPath(apiVersion).String() + "/"}
	up.client, up.timeout, up.retries = wire.Settings(cfg.HTTPClient, cfg.Timeout, DefaultTimeout, cfg.MaxRetries, DefaultMaxRetries)
	up.header = wire.ProviderHeader(userAgent, http.Header{"X-Goog-Api-Key": {cfg.APIKey.Reveal()}}, cfg.Headers)
	return &Provider{name: cfg.Name, up: up, keys: model.NewRedactor(cfg.APIKey, cfg.Headers), wait: model.Sleep}, nil
}

// Name returns the provider's name from config.
func (p *Provider) Name() string { return p.name }

// String names the provider; it never shows credentials.
func (p *Provider) String() string { return fmt.Sprintf("gemini provider %q", p.name) }

// Model returns the model with the given id at this provider (for example
// "gemini-2.5-flash", or a full "models/..." or "tunedModels/..." name).
// The model is cheap, stateless and safe for concurrent use.
func (p *Provider) Model(id string) model.LLM {
	m := &llm{p: p, id: id}
	m.urls, m.urlErr = p.up.urls(id)
	return m
}

type llm struct {
	p  *Provider
	id string
	// urls are id's generateContent and streamGenerateContent URLs, or
	// urlErr why id names no model.
	urls   modelURLs
	urlErr error
}

var _ model.LLM = (*llm)(nil)

// modelURLs are one model's two endpoints.
type modelURLs struct{ complete, stream target }

// target is an endpoint's URL, parsed once (u nil if it does not parse:
// each request then gives the error, as before).
type target struct {
	raw string
	u   *url.URL
}

func newTarget(raw string) target {
	u, _ := wire.ParseURL(raw)
	return target{raw: raw, u: u}
}

// url returns the parsed URL, or why it does not parse.
func (t target) url() (*url.URL, error) {
	if t.u != nil {
		return t.u, nil
	}
	return wire.ParseURL(t.raw)
}

// urls returns the URLs of the model id: "models/<id>" unless id names its
// collection ("models/" or "tunedModels/"), as genai resolves it.
func (e *endpoint) urls(id string) (modelURLs, error) {
	if id == "" || strings.ContainsAny(id, "?&#") || strings.Contains(id, "..") {
		return modelURLs{}, fmt.Errorf("%q is not a model name", id)
	}
	if !strings.HasPrefix(id, "models/") && !strings.HasPrefix(id, "tunedModels/") {
		id = "models/" + id
	}
	path := e.models + (&url.URL{Path: id}).EscapedPath()
	return modelURLs{complete: newTarget(path + ":generateContent"), stream: newTarget(path + ":streamGenerateContent?alt=sse")}, nil
}

// Name returns the model id at the provider.
func (m *llm) Name() string { return m.id }

// ProviderName implements model.ProviderNamer.
func (m *llm) ProviderName() string { return "gcp.gemini" }

// GenerateContent calls generateContent or streamGenerateContent, following
// model.LLM's contract. req.Model, when set, overrides the id the model was
// created with.
func (m *llm) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		c := &call{p: m.p, id: m.id, urls: m.urls}
		err := m.urlErr
		if req.Model != "" && req.Model != m.id {
			c.id = req.Model
			c.urls, err = m.p.up.urls(req.Model)
		}
		if err == nil {
			c.body, err = encodeRequest(req)
		}
		if err != nil {
			yield(nil, &model.Error{Provider: m.p.name, Model: c.id, Code: "unsupported", Message: m.p.keys.Redact(err.Error()), Err: err})
			return
		}
		for attempt := 0; ; attempt++ {
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
	p    *Provider
	id   string
	urls modelURLs
	// body is the request, encoded once for every attempt.
	body []byte
}

// post sends the call's body once to to. A status of 300 or more is an
// *apiError (the body read and closed). The upstream is told to keep to
// the soonest of the provider's timeout, the HTTP client's and ctx's
// deadline, as genai tells it.
func (c *call) post(ctx context.Context, to target, accept string) (*http.Response, error) {
	up := c.p.up
	header := up.header(accept)
	timeout := up.timeout
	if t := up.client.Timeout; t > 0 {
		timeout = min(timeout, t)
	}
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if timeout > 0 {
		// What genai sends: the server stops working on the request when
		// the client would stop waiting for it.
		header["X-Server-Timeout"] = []string{strconv.FormatInt(int64(math.Ceil(timeout.Seconds())), 10)}
	}
	u, err := to.url()
	if err != nil {
		return nil, err
	}
	resp, err := wire.Post(ctx, up.client, u, header, c.body, up.timeout)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, readAPIError(resp)
	}
	return resp, nil
}

// complete makes one non-streamed attempt; it yields the response or
// returns the error.
func (c *call) complete(ctx context.Context, yield func(*model.Response, error) bool) error {
	resp, err := c.post(ctx, c.urls.complete, "application/json")
	if err != nil {
		return c.failure(ctx, err, false)
	}
	w, err := readResponse(resp)
	if err != nil {
		return c.failure(ctx, err, false)
	}
	var st streamState
	st.add(w)
	if !st.finished() && len(w.Candidates) == 0 {
		return c.failure(ctx, errNoCandidates, false)
	}
	yield(st.final(), nil)
	return nil
}

// stream makes one streamed attempt. It yields partials and the final
// response, or returns the error (which the caller yields or retries) and
// whether any partial went out.
func (c *call) stream(ctx context.Context, yield func(*model.Response, error) bool) (yielded bool, err error) {
	resp, err := c.post(ctx, c.urls.stream, "text/event-stream")
	if err != nil {
		return false, c.failure(ctx, err, false)
	}
	defer resp.Body.Close()
	// A pacer (the gateway's stream writer) holds a delta's flush while
	// the next chunk is already read, and flushes before each read of the
	// body and at the end of the stream, as with the openai provider.
	pace := model.PacerFrom(ctx)
	sse := wire.NewSSEReader(wire.PacedBody(resp.Body, pace))
	var st streamState
	var dec chunkDecoder
	for {
		data, err := sse.Next()
		if err != nil {
			if err == io.EOF {
				break
			}
			return yielded, c.failure(ctx, err, st.produced)
		}
		w, err := dec.chunk(data)
		if err != nil {
			return yielded, c.failure(ctx, err, st.produced)
		}
		if r := st.add(w); r != nil {
			yielded = true
			if pace != nil {
				pace.Buffered(sse.Buffered() > 0)
			}
			if !yield(r, nil) {
				return true, nil
			}
		}
	}
	if pace != nil {
		pace.Waiting()
	}
	if !st.finished() {
		return yielded, c.failure(ctx, errStreamCut, true)
	}
	yield(st.final(), nil)
	return yielded, nil
}

// retry reports whether attempt (0-based) may be followed by another one
// (model.RetryDelay), after waiting.
func (c *call) retry(ctx context.Context, err error, attempt int) bool {
	delay, ok := model.RetryDelay(err, attempt, c.p.up.retries)
	return ok && c.p.wait(ctx, delay) == nil
}

// outgoing returns contents ready to send: function calls and responses
// keep their ids, except the "adk-" ids the runtime generated itself, which
// Gemini never issued (ADK strips them the same way); nil contents and parts
// are left out. contents is not modified: a content that needs a change is
// copied, the others are sent as they are.
func outgoing(contents []*genai.Content) []*genai.Content {
	out := make([]*genai.Content, 0, len(contents))
	for _, c := range contents {
		if c == nil {
			continue
		}
		if !needsCopy(c) {
			out = append(out, c)
			continue
		}
		cp := *c
		cp.Parts = make([]*genai.Part, 0, len(c.Parts))
		for _, p := range c.Parts {
			if p == nil {
				continue
			}
			switch {
			case generatedCall(p):
				pc, fc := *p, *p.FunctionCall
				fc.ID, pc.FunctionCall = "", &fc
				p = &pc
			case generatedResponse(p):
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

// needsCopy reports whether c has a nil part or a generated id to leave out.
func needsCopy(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p == nil || generatedCall(p) || generatedResponse(p) {
			return true
		}
	}
	return false
}

func generatedCall(p *genai.Part) bool {
	return p.FunctionCall != nil && strings.HasPrefix(p.FunctionCall.ID, generatedIDPrefix)
}

func generatedResponse(p *genai.Part) bool {
	return p.FunctionResponse != nil && strings.HasPrefix(p.FunctionResponse.ID, generatedIDPrefix)
}
