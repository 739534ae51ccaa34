// Package mcptoolset supplies the tools of an MCP server to agents, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk). The server is
// reached over streamable HTTP (a URL) or started as a child process that
// speaks MCP over stdio (a command).
//
// The session is opened on first use, not by New, so the gateway starts
// while a server is down. Tools are listed when an agent builds a request,
// cached for a short time (ListTTL) and dropped from the cache when the
// server announces a changed list; a tool the server adds is therefore seen
// on the next turn. A session that breaks (the server restarted, the
// process died) is reopened on the next use. While the server cannot be
// reached, Tools returns an error wrapping agentcore.ErrToolsetUnavailable:
// the agent runs without these tools and its model is told, and reconnects
// are spaced by a growing backoff.
//
// A Toolset is safe for concurrent use. Whoever made it closes it (Close
// ends the session, and with it the child process).
package mcptoolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/tools/httptool"
)

// Defaults.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultListTTL    = 5 * time.Second
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// ErrClosed is returned by a closed toolset.
var ErrClosed = errors.New("mcptoolset: closed")

// Config configures a Toolset: exactly one of URL and Command. Zero fields
// mean the defaults.
type Config struct {
	// Name identifies the server in errors, logs and what the model is
	// told when it is down.
	Name string

	// URL is a streamable HTTP endpoint.
	URL string
	// Headers are sent with every HTTP request (authorization, ...).
	Headers map[string]string
	// HTTPClient sends the requests (default: a new client).
	HTTPClient *http.Client

	// Command starts a server that speaks MCP over stdin and stdout.
	Command string
	Args    []string
	// Env is the child's whole environment ("KEY=value"); nil gives it an
	// empty one. The caller decides what, if anything, it inherits.
	Env []string
	// Dir is the child's working directory (default: the gateway's).
	Dir string

	// Timeout bounds connecting, one listing and one call (default 30s).
	Timeout time.Duration
	// ListTTL is how long a listing is reused (default 5s); negative lists
	// on every request.
	ListTTL time.Duration
	// MinBackoff and MaxBackoff space reconnects while the server is down
	// (defaults 500ms, 30s): each failure doubles the wait up to the max.
	MinBackoff, MaxBackoff time.Duration
	// Logger reports the server going down and coming back (default: no
	// logs).
	Logger *slog.Logger
	// Now replaces the clock (tests).
	Now func() time.Time
}

// Toolset is an MCP server's tools as an agentcore.Toolset.
type Toolset struct {
	cfg    Config
	client *mcp.Client
	// sem lets one goroutine at a time connect or list.
	sem chan struct{}

	mu       sync.Mutex
	session  *mcp.ClientSession
	tools    []agentcore.Tool
	listedAt time.Time
	stale    bool
	downErr  error
	retryAt  time.Time
	backoff  time.Duration
	closed   bool
}

var (
	_ agentcore.Toolset = (*Toolset)(nil)
	_ io.Closer         = (*Toolset)(nil)
)

// New validates cfg and returns the toolset. It does not connect.
func New(cfg Config) (*Toolset, error) {
	switch {
	case cfg.URL == "" && cfg.Command == "":
		return nil, errors.New("mcp: url or command required")
	case cfg.URL != "" && cfg.Command != "":
		return nil, errors.New("mcp: url and command exclude each other")
	case cfg.URL != "":
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("mcp.url: must be an absolute http(s) URL, got %q", cfg.URL)
		}
	}
	if cfg.Timeout < 0 {
		return nil, errors.New("mcp.timeout: must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ListTTL == 0 {
		cfg.ListTTL = DefaultListTTL
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	if cfg.Name == "" {
		cfg.Name = cfg.URL
		if cfg.Command != "" {
			cfg.Name = cfg.Command
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Headers = maps.Clone(cfg.Headers)
	t := &Toolset{cfg: cfg, sem: make(chan struct{}, 1)}
	t.client = mcp.NewClient(&mcp.Implementation{Name: "agentgate", Version: "1"}, &mcp.ClientOptions{
		// The session's own logs are the SDK's business; ours say when
		// the server goes down and comes back.
		Logger:                 slog.New(slog.DiscardHandler),
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { t.invalidate() },
		// Roots are not offered.
		Capabilities: &mcp.ClientCapabilities{},
	})
	return t, nil
}

// Name implements agentcore.Toolset.
func (t *Toolset) Name() string { return t.cfg.Name }

// Tools implements agentcore.Toolset: the server's current tools, from the
// cache when it is fresh.
func (t *Toolset) Tools(ctx context.Context, _ *agentcore.ReadonlyContext) ([]agentcore.Tool, error) {
	if tools, ok, err := t.cached(); ok || err != nil {
		return tools, err
	}
	if err := t.acquire(ctx); err != nil {
		return nil, err
	}
	defer t.release()
	// Another caller may have listed while this one waited.
	if tools, ok, err := t.cached(); ok || err != nil {
		return tools, err
	}
	if err := t.waitingToRetry(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	tools, fresh, err := t.list(ctx)
	if err != nil && !fresh && ctx.Err() == nil && reconnectable(err) {
		tools, _, err = t.list(ctx) // a broken session: once more on a new one
	}
	if err != nil {
		return nil, t.failed(ctx, err)
	}
	t.recovered(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	t.tools, t.listedAt, t.stale = tools, t.cfg.Now(), false
	return append([]agentcore.Tool(nil), tools...), nil
}

// Close ends the session (stopping a child process). Later calls fail
// with ErrClosed.
func (t *Toolset) Close() error {
	t.mu.Lock()
	cs := t.session
	t.session, t.closed, t.tools = nil, true, nil
	t.mu.Unlock()
	if cs != nil {
		return cs.Close()
	}
	return nil
}

// cached returns the cached listing when it is fresh; ok is false when the
// server must be asked.
func (t *Toolset) cached() (tools []agentcore.Tool, ok bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false, ErrClosed
	}
	if t.tools == nil || t.stale || t.cfg.ListTTL < 0 || t.cfg.Now().Sub(t.listedAt) >= t.cfg.ListTTL {
		return nil, false, nil
	}
	return append([]agentcore.Tool(nil), t.tools...), true, nil
}

func (t *Toolset) invalidate() {
	t.mu.Lock()
	t.stale = true
	t.mu.Unlock()
}

func (t *Toolset) acquire(ctx context.Context) error {
	select {
	case t.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Toolset) release() { <-t.sem }

// waitingToRetry reports the last failure while the backoff runs.
func (t *Toolset) waitingToRetry() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.downErr != nil && t.cfg.Now().Before(t.retryAt) {
		return t.downErr
	}
	return nil
}

// failed records a failure to reach the server and returns the error the
// agent gets. The first failure after success is logged.
func (t *Toolset) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err() // the caller gave up; the server may be fine
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", t.cfg.Timeout)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	wasUp := t.downErr == nil
	if wasUp {
		t.backoff = t.cfg.MinBackoff
	} else {
		t.backoff = min(2*t.backoff, t.cfg.MaxBackoff)
	}
	t.downErr = fmt.Errorf("mcp server %s: %w: %v", t.cfg.Name, agentcore.ErrToolsetUnavailable, err)
	t.retryAt = t.cfg.Now().Add(t.backoff)
	t.tools = nil
	if wasUp {
		t.cfg.Logger.WarnContext(ctx, "mcp server unavailable; its tools are withheld", "mcp_server", t.cfg.Name, "error", err.Error())
	}
	return t.downErr
}

// recovered clears the failure state, logging the recovery.
func (t *Toolset) recovered(ctx context.Context) {
	t.mu.Lock()
	wasDown := t.downErr != nil
	t.downErr, t.backoff = nil, 0
	t.mu.Unlock()
	if wasDown {
		t.cfg.Logger.InfoContext(ctx, "mcp server reachable again", "mcp_server", t.cfg.Name)
	}
}

// list lists every tool on the current session, opening one if needed
// (fresh reports that it did).
func (t *Toolset) list(ctx context.Context) (_ []agentcore.Tool, fresh bool, _ error) {
	cs, fresh, err := t.connect(ctx)
	if err != nil {
		return nil, true, err
	}
	var out []agentcore.Tool
	seen := map[string]bool{}
	for mt, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.drop(cs, err)
			return nil, fresh, fmt.Errorf("listing tools: %w", err)
		}
		tl, err := newTool(t, mt)
		if err != nil {
			t.cfg.Logger.WarnContext(ctx, "mcp tool skipped", "mcp_server", t.cfg.Name, "tool", mt.Name, "error", err.Error())
			continue
		}
		if seen[tl.Name()] {
			t.cfg.Logger.WarnContext(ctx, "mcp tool skipped: duplicate name", "mcp_server", t.cfg.Name, "tool", mt.Name)
			continue
		}
		seen[tl.Name()] = true
		out = append(out, tl)
	}
	if out == nil {
		out = []agentcore.Tool{}
	}
	return out, fresh, nil
}

// connect returns the open session, opening one if there is none (fresh
// reports that it did).
func (t *Toolset) connect(ctx context.Context) (_ *mcp.ClientSession, fresh bool, _ error) {
	t.mu.Lock()
	cs, closed := t.session, t.closed
	t.mu.Unlock()
	if closed {
		return nil, false, ErrClosed
	}
	if cs != nil {
		return cs, false, nil
	}
	cs, err := t.client.Connect(ctx, t.transport(), nil)
	if err != nil {
		return nil, true, fmt.Errorf("connecting: %w", err)
	}
	t.mu.Lock()
	winner, closed := t.session, t.closed
	if winner == nil && !closed {
		t.session = cs
	}
	t.mu.Unlock()
	switch {
	case closed:
		_ = cs.Close()
		return nil, true, ErrClosed
	case winner != nil: // another caller connected meanwhile
		_ = cs.Close()
		return winner, true, nil
	}
	go t.watch(cs)
	return cs, true, nil
}

// watch forgets the session when it ends (a stdio server that exited, a
// connection that failed), so the next use opens a new one. It returns
// when the session ends, at the latest on Close.
func (t *Toolset) watch(cs *mcp.ClientSession) {
	_ = cs.Wait()
	t.mu.Lock()
	if t.session == cs {
		t.session, t.stale = nil, true
	}
	t.mu.Unlock()
	_ = cs.Close() // releases what the session still holds; a no-op after Close
}

// drop forgets a session that failed with a transport error, so the next
// use opens a new one. Protocol errors (the server answered) keep it.
func (t *Toolset) drop(cs *mcp.ClientSession, err error) {
	if !reconnectable(err) {
		return
	}
	t.mu.Lock()
	mine := t.session == cs
	if mine {
		t.session = nil
	}
	t.mu.Unlock()
	if mine {
		_ = cs.Close()
	}
}

// reconnectable reports whether err means the session is broken rather
// than a refusal the server sent.
func reconnectable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrClosed) {
		return false
	}
	_, refused := refusal(err)
	return !refused
}

// The SDK reports its own transport failures as JSON-RPC errors with these
// codes (client closing, server closing, rejected by transport).
var transportCodes = []int64{-32003, -32004, -32005}

// refusal finds the JSON-RPC error the server answered with, if it did.
func refusal(err error) (*jsonrpc.Error, bool) {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && !slices.Contains(transportCodes, rpcErr.Code) {
		return rpcErr, true
	}
	return nil, false
}

// notSent reports whether a failed call certainly did not reach a live
// server (so calling again cannot run the tool twice): the server did not
// know the session (it restarted), or the connection was refused.
func notSent(err error) bool {
	if errors.Is(err, mcp.ErrSessionMissing) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (t *Toolset) transport() mcp.Transport {
	if t.cfg.Command != "" {
		cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
		cmd.Env = append([]string{}, t.cfg.Env...)
		cmd.Dir = t.cfg.Dir
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	// Redirects stay on the configured host, as for every tool that calls
	// out.
	client := httptool.NewClient(t.cfg.HTTPClient)
	if len(t.cfg.Headers) > 0 {
		base := client.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		client.Transport = headerTransport{base: base, headers: t.cfg.Headers}
	}
	return &mcp.StreamableClientTransport{Endpoint: t.cfg.URL, HTTPClient: client, MaxRetries: 1}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return h.base.RoundTrip(req)
}

// call runs one tool call, reopening a broken session once when the call
// certainly was not delivered.
func (t *Toolset) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		if err := t.waitingToRetry(); err != nil {
			return nil, err
		}
		cs, _, err := t.connect(ctx)
		if err != nil {
			return nil, t.failed(ctx, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err == nil {
			return res, nil
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("mcp server %s: no answer within %s", t.cfg.Name, t.cfg.Timeout)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt == 0 && notSent(err) {
			t.drop(cs, err)
			continue
		}
		if rpcErr, refused := refusal(err); refused {
			return nil, fmt.Errorf("mcp server %s refused the call: %s", t.cfg.Name, rpcErr.Message)
		}
		// The server cannot be reached: its tools are withheld until a
		// listing succeeds again.
		t.drop(cs, err)
		return nil, t.failed(ctx, err)
	}
}

// tool is one MCP tool as an agentcore.CallableTool. Its declaration
// carries the name offered to the model; remote is the server's.
type tool struct {
	agentcore.DeclaredTool
	ts     *Toolset
	remote string
}

var _ agentcore.CallableTool = (*tool)(nil)

var invalidNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

func newTool(ts *Toolset, mt *mcp.Tool) (*tool, error) {
	name := invalidNameChars.ReplaceAllString(mt.Name, "_")
	if name == "" || len(name) > 64 {
		return nil, fmt.Errorf("unusable tool name %q", mt.Name)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	if mt.InputSchema != nil {
		raw, err := json.Marshal(mt.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return nil, errors.New("input schema is not a JSON object")
		}
		schema = m
	}
	desc := mt.Description
	if desc == "" {
		desc = mt.Title
	}
	decl := &genai.FunctionDeclaration{Name: name, Description: desc, ParametersJsonSchema: schema}
	return &tool{DeclaredTool: agentcore.DeclaredTool{Decl: decl}, ts: ts, remote: mt.Name}, nil
}

// Run implements agentcore.CallableTool. A result the server flags as an
// error becomes an error, which the model sees as {"error": <its text>}.
func (t *tool) Run(ctx context.Context, tc *agentcore.ToolContext, args map[string]any) (map[string]any, error) {
	res, err := t.ts.call(ctx, t.remote, tc.Redactor().Object(args))
	if err != nil {
		return nil, err
	}
	return Result(res)
}

// Result maps a call's result to a function response: structured content
// as the response (an object as is, anything else as {"result": value});
// otherwise the text of the content blocks as {"result": text}, other
// blocks described in place. A result flagged as an error is an error
// holding that text.
func Result(res *mcp.CallToolResult) (map[string]any, error) {
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return nil, errors.New(text)
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structured content: %w", err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("structured content: %w", err)
		}
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
		return map[string]any{"result": v}, nil
	}
	return map[string]any{"result": text}, nil
}

func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else if c.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", c.Resource.URI))
			}
		}
	}
	return strings.Join(parts, "\n")
}
