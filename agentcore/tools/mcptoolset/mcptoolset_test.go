package mcptoolset_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/tools/internal/tooltest"
	"github.com/agentgate/agentgate/agentcore/tools/mcptoolset"
)

type addIn struct {
	A int `json:"a" jsonschema:"the first number"`
	B int `json:"b" jsonschema:"the second number"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// newServer is an MCP server with add, echo and fail tools.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes its text.", InputSchema: map[string]any{"type": "object",
		"properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + string(req.Params.Arguments)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is full"}}}, nil
		})
	return s
}

// httpServer serves an MCP server over streamable HTTP on a fixed address,
// so that it can be stopped and started again there (a restart).
type httpServer struct {
	t      *testing.T
	addr   string
	legacy bool

	mu      sync.Mutex
	mcp     *mcp.Server
	srv     *httptest.Server
	headers []http.Header
}

// startHTTP starts a server. A legacy one refuses the 2026 protocol's
// discovery, as servers on older SDKs do, so the client falls back to
// sessions with ids.
func startHTTP(t *testing.T, legacy bool) *httpServer {
	t.Helper()
	h := &httpServer{t: t, addr: "127.0.0.1:0", legacy: legacy}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *httpServer) URL() string { return "http://" + h.addr + "/mcp" }

func (h *httpServer) start() {
	h.t.Helper()
	ln, err := net.Listen("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	s := newServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.headers = append(h.headers, r.Header.Clone())
		h.mu.Unlock()
		if h.legacy && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"server/discover"`)) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		handler.ServeHTTP(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	h.mu.Lock()
	h.mcp, h.srv = s, srv
	h.mu.Unlock()
}

// stop stops the server as a process exit would: connections cut,
// sessions gone.
func (h *httpServer) stop() {
	h.mu.Lock()
	srv, s := h.srv, h.mcp
	h.srv = nil
	h.mu.Unlock()
	if srv == nil {
		return
	}
	srv.CloseClientConnections()
	srv.Close()
	for ss := range s.Sessions() {
		_ = ss.Close()
	}
}

func (h *httpServer) server() *mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mcp
}

func (h *httpServer) seenHeaders() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.headers)
}

func newToolset(t *testing.T, cfg mcptoolset.Config) *mcptoolset.Toolset {
	t.Helper()
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = time.Nanosecond
		cfg.MaxBackoff = time.Nanosecond
	}
	ts, err := mcptoolset.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	return ts
}

func names(tools []agentcore.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name())
	}
	slices.Sort(out)
	return out
}

// addRules make the model call add, then report the sum (or the error).
var addRules = []scripted.Rule{
	{Agent: "agent", AfterTool: "add", Reply: "sum={response.sum} error={response.error}"},
	{Agent: "agent", WhenTool: "add", Call: &scripted.Call{Name: "add", Args: map[string]any{"a": 2, "b": 40}}},
	{Agent: "agent", Reply: "no add tool"},
}

// TestStreamableHTTP: the server's tools are declared to the model with
// their schemas, called with the model's arguments, and their results fed
// back; configured headers reach the server.
func TestStreamableHTTP(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "current", true: "legacy"}[legacy], func(t *testing.T) {
			srv := startHTTP(t, legacy)
			ts := newToolset(t, mcptoolset.Config{Name: "calc", URL: srv.URL(), Headers: map[string]string{"Authorization": "Bearer t0k"}})
			h := tooltest.New(t, tooltest.Config{Toolsets: []agentcore.Toolset{ts}, Rules: addRules})
			evs := h.Turn("add please", nil)
			if got := tooltest.FinalText(evs); got != "sum=42 error=" {
				t.Errorf("final text = %q", got)
			}
			req := h.Requests()[0]
			if diff := cmp.Diff([]string{"add", "echo", "fail"}, tooltest.Declared(req)); diff != "" {
				t.Errorf("declared (-want +got):\n%s", diff)
			}
			var addSchema map[string]any
			for _, d := range req.FunctionDeclarations() {
				if d.Name == "add" {
					addSchema, _ = d.ParametersJsonSchema.(map[string]any)
					if d.Description != "Adds two numbers." {
						t.Errorf("description = %q", d.Description)
					}
				}
			}
			props, _ := addSchema["properties"].(map[string]any)
			if a, _ := props["a"].(map[string]any); a["type"] != "integer" || a["description"] != "the first number" {
				t.Errorf("add schema = %v", addSchema)
			}
			for _, hd := range srv.seenHeaders() {
				if hd.Get("Authorization") != "Bearer t0k" {
					t.Errorf("a request went without the configured header: %v", hd)
				}
			}
		})
	}
}

func TestResults(t *testing.T) {
	srv := startHTTP(t, false)
	ts := newToolset(t, mcptoolset.Config{URL: srv.URL()})
	tools, err := ts.Tools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]agentcore.CallableTool{}
	for _, tl := range tools {
		byName[tl.Name()] = tl.(agentcore.CallableTool)
	}
	got, err := byName["echo"].Run(context.Background(), nil, map[string]any{"text": "hi"})
	if err != nil || got["result"] != `echo: {"text":"hi"}` {
		t.Errorf("echo = %v, %v", got, err)
	}
	_, err = byName["fail"].Run(context.Background(), nil, map[string]any{})
	if err == nil || err.Error() != "the disk is full" {
		t.Errorf("fail: err = %v", err)
	}
	// A protocol-level refusal (the tool vanished) is an error, and the
	// session stays usable.
	srv.server().RemoveTools("echo")
	_, err = byName["echo"].Run(context.Background(), nil, map[string]any{"text": "hi"})
	if err == nil || !strings.Contains(err.Error(), "refused the call") {
		t.Errorf("removed tool: err = %v", err)
	}
	if got, err := byName["add"].Run(context.Background(), nil, map[string]any{"a": 1, "b": 2}); err != nil || got["sum"] != 3.0 {
		t.Errorf("add after a refusal = %v, %v", got, err)
	}
}

func TestResultMapping(t *testing.T) {
	tests := []struct {
		name    string
		res     *mcp.CallToolResult
		want    map[string]any
		wantErr string
	}{
		{name: "structured object", res: &mcp.CallToolResult{StructuredContent: map[string]any{"a": 1},
			Content: []mcp.Content{&mcp.TextContent{Text: `{"a":1}`}}}, want: map[string]any{"a": 1.0}},
		{name: "structured array", res: &mcp.CallToolResult{StructuredContent: []any{1, 2}}, want: map[string]any{"result": []any{1.0, 2.0}}},
		{name: "texts joined", res: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
			want: map[string]any{"result": "a\nb"}},
		{name: "other blocks described", res: &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
			&mcp.ResourceLink{URI: "file:///x"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", Text: "inline"}},
		}}, want: map[string]any{"result": "[image image/png, 3 bytes]\n[resource file:///x]\ninline"}},
		{name: "empty", res: &mcp.CallToolResult{}, want: map[string]any{"result": ""}},
		{name: "error", res: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "nope"}}}, wantErr: "nope"},
		{name: "error without text", res: &mcp.CallToolResult{IsError: true}, wantErr: "the tool reported an error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mcptoolset.Result(tt.res)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewToolSeenNextTurn: a tool the server adds is offered on the next
// turn.
func TestNewToolSeenNextTurn(t *testing.T) {
	srv := startHTTP(t, false)
	ts := newToolset(t, mcptoolset.Config{URL: srv.URL(), ListTTL: -1})
	h := tooltest.New(t, tooltest.Config{Toolsets: []agentcore.Toolset{ts}, Rules: []scripted.Rule{{Agent: "agent", Reply: "ok"}}})
	h.Turn("one", nil)
	srv.server().AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	h.Turn("two", nil)
	reqs := h.Requests()
	if got := tooltest.Declared(reqs[0]); slices.Contains(got, "later") {
		t.Errorf("first turn declared %v", got)
	}
	if got := tooltest.Declared(reqs[1]); !slices.Contains(got, "later") {
		t.Errorf("second turn declared %v, want later among them", got)
	}
}

// TestListChangedNotification: with a long cache, the server's
// notification that its list changed drops the cache.
func TestListChangedNotification(t *testing.T) {
	srv := startHTTP(t, false)
	ts := newToolset(t, mcptoolset.Config{URL: srv.URL(), ListTTL: time.Hour})
	tools, err := ts.Tools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"add", "echo", "fail"}, names(tools)); diff != "" {
		t.Fatalf("tools (-want +got):\n%s", diff)
	}
	srv.server().RemoveTools("fail")
	deadline := time.Now().Add(10 * time.Second)
	for {
		tools, err := ts.Tools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(names(tools), "fail") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the removed tool is still listed after the notification")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRestart: the server stops mid-conversation and comes back on the
// same address. While it is down the agent still answers, without its
// tools and knowing why; once it is back, the toolset opens a new session
// and the tools work again.
func TestRestart(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "current", true: "legacy"}[legacy], func(t *testing.T) {
			srv := startHTTP(t, legacy)
			ts := newToolset(t, mcptoolset.Config{Name: "calc", URL: srv.URL(), ListTTL: time.Hour, Timeout: 5 * time.Second})
			h := tooltest.New(t, tooltest.Config{Toolsets: []agentcore.Toolset{ts}, Rules: addRules})
			if got := tooltest.FinalText(h.Turn("add", nil)); got != "sum=42 error=" {
				t.Fatalf("before the restart: %q", got)
			}

			// A restart between two turns: the cached listing is still
			// fresh, the old session is unknown to the new server; the
			// call goes through on a new session.
			srv.stop()
			srv.start()
			if got := tooltest.FinalText(h.Turn("add", nil)); got != "sum=42 error=" {
				t.Fatalf("right after a restart: %q", got)
			}

			// Down: the call fails as a result the model sees, and the
			// next turn runs without the tools, the model told why.
			srv.stop()
			got := tooltest.FinalText(h.Turn("add", nil))
			if !strings.HasPrefix(got, "sum= error=mcp server calc") {
				t.Errorf("call while down: %q", got)
			}
			evs := h.Turn("add", nil)
			if got := tooltest.FinalText(evs); got != "no add tool" {
				t.Errorf("turn while down: %q", got)
			}
			reqs := h.Requests()
			lastReq := reqs[len(reqs)-1]
			if d := tooltest.Declared(lastReq); len(d) != 0 {
				t.Errorf("declared while down: %v", d)
			}
			if si := systemText(lastReq.Config.SystemInstruction); !strings.Contains(si, `The tools of "calc" are unavailable right now`) {
				t.Errorf("system instruction while down: %q", si)
			}
			_, err := ts.Tools(context.Background(), nil)
			if !errors.Is(err, agentcore.ErrToolsetUnavailable) {
				t.Errorf("Tools while down: %v", err)
			}

			srv.start()
			if got := tooltest.FinalText(h.Turn("add", nil)); got != "sum=42 error=" {
				t.Errorf("after coming back: %q", got)
			}
		})
	}
}

func systemText(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// TestDownAtStart: a server that was never up makes its toolset
// contribute nothing; the agent's other tools still work.
func TestDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ts := newToolset(t, mcptoolset.Config{Name: "gone", URL: "http://" + addr + "/mcp"})
	other, err := agentcore.NewFunctionTool(agentcore.FunctionToolConfig{Name: "local", Description: "A local tool."},
		func(ctx context.Context, tc *agentcore.ToolContext, _ struct{}) (map[string]any, error) {
			return map[string]any{"fine": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	h := tooltest.New(t, tooltest.Config{Tools: []agentcore.Tool{other}, Toolsets: []agentcore.Toolset{ts}, Rules: []scripted.Rule{
		{Agent: "agent", AfterTool: "local", Reply: "local says {response.fine}"},
		{Agent: "agent", Call: &scripted.Call{Name: "local"}},
	}})
	evs := h.Turn("hi", nil)
	if got := tooltest.FinalText(evs); got != "local says true" {
		t.Errorf("final text = %q", got)
	}
	if d := tooltest.Declared(h.Requests()[0]); !slices.Equal(d, []string{"local"}) {
		t.Errorf("declared = %v", d)
	}
	_, err = ts.Tools(context.Background(), nil)
	if !errors.Is(err, agentcore.ErrToolsetUnavailable) || !strings.Contains(err.Error(), "mcp server gone") {
		t.Errorf("Tools: %v", err)
	}
}

// TestBackoff: while the server is down, reconnects wait for the backoff.
func TestBackoff(t *testing.T) {
	srv := startHTTP(t, false)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts := newToolset(t, mcptoolset.Config{URL: srv.URL(), ListTTL: -1, MinBackoff: time.Second, MaxBackoff: 4 * time.Second, Now: clock})
	srv.stop()
	if _, err := ts.Tools(context.Background(), nil); err == nil {
		t.Fatal("Tools succeeded while down")
	}
	srv.start()
	if _, err := ts.Tools(context.Background(), nil); !errors.Is(err, agentcore.ErrToolsetUnavailable) {
		t.Fatalf("within the backoff: %v", err)
	}
	before := len(srv.seenHeaders())
	advance(time.Second)
	if _, err := ts.Tools(context.Background(), nil); err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
	if len(srv.seenHeaders()) == before {
		t.Error("no request after the backoff")
	}
}

// buildStdioServer builds testdata/stdioserver.
func buildStdioServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stdioserver")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/stdioserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestStdio: a command-started server: tools called, the environment is
// only what the config gives, a crashed server is started again on the
// next call, and Close stops the process.
func TestStdio(t *testing.T) {
	t.Setenv("AGENTGATE_TEST_PARENT_SECRET", "leak")
	bin := buildStdioServer(t)
	ts := newToolset(t, mcptoolset.Config{Name: "local", Command: bin, Env: []string{"GREETING=hello"}})
	h := tooltest.New(t, tooltest.Config{Toolsets: []agentcore.Toolset{ts}, Rules: []scripted.Rule{
		{Agent: "agent", AfterTool: "getenv", Reply: "value={response.value} set={response.set}"},
		{Agent: "agent", AfterTool: "pid", Reply: "{response.pid}"},
		{Agent: "agent", AfterTool: "crash", Reply: "crashed: {response.result}"},
		{Agent: "agent", Match: "greeting", Call: &scripted.Call{Name: "getenv", Args: map[string]any{"name": "GREETING"}}},
		{Agent: "agent", Match: "secret", Call: &scripted.Call{Name: "getenv", Args: map[string]any{"name": "AGENTGATE_TEST_PARENT_SECRET"}}},
		{Agent: "agent", Match: "pid", Call: &scripted.Call{Name: "pid"}},
		{Agent: "agent", Match: "crash", Call: &scripted.Call{Name: "crash"}},
	}})
	if got := tooltest.FinalText(h.Turn("greeting", nil)); got != "value=hello set=true" {
		t.Errorf("configured env: %q", got)
	}
	if got := tooltest.FinalText(h.Turn("secret", nil)); got != "value= set=false" {
		t.Errorf("the parent's environment leaked: %q", got)
	}
	pid1 := tooltest.FinalText(h.Turn("pid", nil))
	if got := tooltest.FinalText(h.Turn("crash", nil)); got != "crashed: bye" {
		t.Errorf("crash: %q", got)
	}
	// The process is gone; the next call starts a new one.
	var pid2 string
	deadline := time.Now().Add(10 * time.Second)
	for {
		pid2 = tooltest.FinalText(h.Turn("pid", nil))
		if pid2 != pid1 && !strings.Contains(pid2, "error") && pid2 != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new process: pid %q then %q", pid1, pid2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ts.Close(); err != nil {
		t.Logf("close: %v", err) // a terminated child may report its signal
	}
	var pid int
	for _, c := range pid2 {
		pid = pid*10 + int(c-'0')
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists after Close (kill 0: %v)", pid, err)
	}
	if _, err := ts.Tools(context.Background(), nil); !errors.Is(err, mcptoolset.ErrClosed) {
		t.Errorf("Tools after Close: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		cfg  mcptoolset.Config
		want string
	}{
		{mcptoolset.Config{}, "mcp: url or command required"},
		{mcptoolset.Config{URL: "http://x", Command: "y"}, "mcp: url and command exclude each other"},
		{mcptoolset.Config{URL: "x.example/mcp"}, `mcp.url: must be an absolute http(s) URL, got "x.example/mcp"`},
		{mcptoolset.Config{Command: "y", Timeout: -1}, "mcp.timeout: must not be negative"},
	}
	for _, tt := range tests {
		if _, err := mcptoolset.New(tt.cfg); err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}
