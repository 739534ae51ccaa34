// Package httptool makes tools that call an HTTP endpoint named in config:
// the model's arguments go out as a JSON body, the conversation's
// parameters as X-Agentgate-Param-<Name> headers, and the JSON reply comes
// back as the tool's result. Everything that goes wrong (a timeout, a
// non-2xx status, a reply that is not JSON or is too large) becomes an
// error the runtime hands the model as {"error": ...}, so it can react.
//
// The package also holds the HTTP plumbing other HTTP-backed tools share
// (NewClient, ReadResult, SetParamHeaders): the redirect policy and the
// reply rules are the same for every tool that calls out.
package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
)

// Defaults.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	// ParamHeaderPrefix starts the header carrying a conversation parameter.
	ParamHeaderPrefix = "X-Agentgate-Param-"
)

// Config configures one HTTP tool. Zero fields mean the defaults.
type Config struct {
	// Name is what the model calls ([a-zA-Z0-9_-], at most 64).
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments (default: an object
	// without properties).
	Parameters map[string]any
	// URL is the only URL the tool calls (absolute http or https).
	URL string
	// Method is POST (default), PUT or PATCH, which send the arguments as
	// a JSON body, or GET or DELETE, which send them as query parameters.
	Method string
	// Headers are added to every request (authorization, ...).
	Headers map[string]string
	// Timeout bounds one call, reply included (default 30s).
	Timeout time.Duration
	// MaxResponseBytes caps the reply body (default 1 MiB).
	MaxResponseBytes int64
	// Client sends the requests (default: a client of its own). Its
	// redirect policy is replaced by NewClient's.
	Client *http.Client
}

var (
	nameRE   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	methods  = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodGet, http.MethodDelete}
	bodyless = []string{http.MethodGet, http.MethodDelete}
)

// Tool is an HTTP tool. It is safe for concurrent use.
type Tool struct {
	agentcore.DeclaredTool
	cfg    Config
	client *http.Client
}

var _ agentcore.CallableTool = (*Tool)(nil)

// New validates cfg and returns the tool. Error messages start with the
// config key at fault (url, method, ...).
func New(cfg Config) (*Tool, error) {
	if !nameRE.MatchString(cfg.Name) {
		return nil, fmt.Errorf("name: must match [a-zA-Z0-9_-]{1,64}, got %q", cfg.Name)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url: must be an absolute http(s) URL, got %q", cfg.URL)
	}
	cfg.Method = strings.ToUpper(cfg.Method)
	if cfg.Method == "" {
		cfg.Method = http.MethodPost
	}
	if !slices.Contains(methods, cfg.Method) {
		return nil, fmt.Errorf("method: must be one of %s, got %q", strings.Join(methods, ", "), cfg.Method)
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("timeout: must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	for k := range cfg.Headers {
		if !headerNameRE.MatchString(k) {
			return nil, fmt.Errorf("headers: invalid header name %q", k)
		}
	}
	if cfg.Parameters == nil {
		cfg.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	decl := &genai.FunctionDeclaration{Name: cfg.Name, Description: cfg.Description, ParametersJsonSchema: cfg.Parameters}
	return &Tool{DeclaredTool: agentcore.DeclaredTool{Decl: decl}, cfg: cfg, client: NewClient(cfg.Client)}, nil
}

// Run implements agentcore.CallableTool: one request to the configured URL.
func (t *Tool) Run(ctx context.Context, tc *agentcore.ToolContext, args map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	args = tc.Redactor().Object(args)
	var body io.Reader
	target := t.cfg.URL
	if slices.Contains(bodyless, t.cfg.Method) {
		target = withArgs(t.cfg.URL, args)
	} else {
		if args == nil {
			args = map[string]any{}
		}
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %w", err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, t.cfg.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if tc != nil {
		SetParamHeaders(req.Header, tc.Invocation().Params())
	}
	// The configured headers last: a parameter (which a model may have
	// generated) never replaces one, whatever the case of its name.
	for k, v := range t.cfg.Headers {
		for have := range req.Header {
			if strings.EqualFold(have, k) {
				delete(req.Header, have)
			}
		}
		req.Header.Set(k, v)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, CallError(ctx, t.cfg.Timeout, err)
	}
	defer resp.Body.Close()
	return ReadResult(ctx, t.cfg.Timeout, resp, t.cfg.MaxResponseBytes)
}

// withArgs adds args to the query of the configured URL, which is kept as
// written: an argument named like a query parameter the config wrote is
// left out, so a model can fill what the config leaves open but never
// change what it pinned.
func withArgs(configured string, args map[string]any) string {
	u, _ := url.Parse(configured) // validated by New
	pinned, _ := url.ParseQuery(u.RawQuery)
	extra := url.Values{}
	for k, v := range args {
		if _, ok := pinned[k]; !ok {
			extra.Set(k, scalarString(v))
		}
	}
	if len(extra) > 0 {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += extra.Encode()
	}
	return u.String()
}

var headerNameRE = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`)

// SetParamHeaders adds one X-Agentgate-Param-<Name> header per conversation
// parameter (hidden ones included: tools may see them). String values go
// as they are, other values JSON-encoded; a string holding control
// characters is JSON-encoded too. Names that cannot be part of a header
// name are skipped. The name keeps its case on the wire.
func SetParamHeaders(h http.Header, p *agentcore.Params) {
	names := p.Names()
	slices.Sort(names)
	for _, name := range names {
		if !headerNameRE.MatchString(name) {
			continue
		}
		v, _ := p.Get(name)
		h[ParamHeaderPrefix+name] = []string{headerValue(v.Value)}
	}
}

func headerValue(v any) string {
	if s, ok := v.(string); ok && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(raw)
}

// scalarString renders a query value: strings as they are, the rest as
// JSON.
func scalarString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// NewClient returns a copy of base (nil: a new client) that follows at most
// five redirects and only to the host (scheme, name and port) of the
// original request: a tool never reaches a host its config does not name.
func NewClient(base *http.Client) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("stopped after 5 redirects")
		}
		first := via[0].URL
		if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return fmt.Errorf("redirect to another host (%s) refused", req.URL.Host)
		}
		return nil
	}
	return c
}

// CallError describes a failed request for the model: a timeout names the
// limit, other failures keep the transport's reason.
func CallError(ctx context.Context, timeout time.Duration, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the request timed out after %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("the request failed: %w", err)
}

// ReadResult turns a reply into a tool result: a 2xx JSON reply becomes the
// result (an object as is, any other value as {"result": value}), an empty
// 2xx reply {"status": code}. A non-2xx status, a reply that is not JSON or
// is larger than limit bytes is an error; a non-2xx error carries the
// start of the body, which often says what was wrong.
func ReadResult(ctx context.Context, timeout time.Duration, resp *http.Response, limit int64) (map[string]any, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, CallError(ctx, timeout, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("the endpoint answered HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if snippet := strings.TrimSpace(string(raw[:min(len(raw), 512)])); snippet != "" {
			msg += ": " + strings.ToValidUTF8(snippet, "")
		}
		return nil, errors.New(msg)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("the reply is larger than %d bytes", limit)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{"status": resp.StatusCode}, nil
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		if ct == "" {
			ct = "no content type"
		}
		return nil, fmt.Errorf("the reply is not JSON (%s)", ct)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("the reply is not valid JSON: %w", err)
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return map[string]any{"result": v}, nil
}
