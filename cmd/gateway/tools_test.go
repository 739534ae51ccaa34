package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/agentcore/tools/mcptoolset"
)

// The tests below run the gateway (run, as main does) on a config whose
// agents use every tool source, and talk to it over /v1/chat/completions:
// an HTTP tool, an MCP server over streamable HTTP (restarted mid-test),
// one over stdio, an OpenAPI document, and, for the agent on a recording
// fake OpenAI upstream, the MCP tool declared upstream and its result fed
// back.

// calcMCP is an MCP server over streamable HTTP on a fixed address, so it
// can stop and start again there.
type calcMCP struct {
	addr string
	mu   sync.Mutex
	hs   *http.Server
	s    *mcp.Server
	auth []string
}

type calcIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type calcOut struct {
	Sum int `json:"sum"`
}

func (c *calcMCP) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds a and b."},
		func(_ context.Context, _ *mcp.CallToolRequest, in calcIn) (*mcp.CallToolResult, calcOut, error) {
			return nil, calcOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hidden", Description: "Not on the allow-list."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, calcOut, error) {
			return nil, calcOut{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(ln) }()
	c.mu.Lock()
	c.hs, c.s = hs, s
	c.mu.Unlock()
}

// stop ends the server as a crash would: connections and sessions gone.
func (c *calcMCP) stop() {
	c.mu.Lock()
	hs, s := c.hs, c.s
	c.hs = nil
	c.mu.Unlock()
	if hs == nil {
		return
	}
	_ = hs.Close()
	for ss := range s.Sessions() {
		_ = ss.Close()
	}
}

// fakeOpenAI is a recording chat-completions upstream: it calls calc_add
// first, then answers with the tool's result.
type fakeOpenAI struct {
	mu   sync.Mutex
	reqs []map[string]any
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	msgs, _ := req["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	var msg map[string]any
	finish := "stop"
	if last["role"] == "tool" {
		msg = map[string]any{"role": "assistant", "content": fmt.Sprintf("The tool said %v", last["content"])}
	} else {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_up1", "type": "function", "function": map[string]any{"name": "calc_add", "arguments": `{"a":20,"b":22}`}}}}
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if req["stream"] == true {
		w.Header().Set("Content-Type", "text/event-stream")
		if tc, ok := msg["tool_calls"].([]any); ok {
			tc[0].(map[string]any)["index"] = 0
		}
		for _, chunk := range []map[string]any{
			{"choices": []any{map[string]any{"index": 0, "delta": msg}}},
			{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}},
			{"choices": []any{}, "usage": usage},
		} {
			chunk["id"], chunk["object"], chunk["created"], chunk["model"] = "c1", "chat.completion.chunk", 1, "gpt-test"
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
}

func (f *fakeOpenAI) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.reqs...)
}

const toolsConfig = `
server:
  shutdown_grace: 5s
providers:
  - name: demo
    type: scripted
    rules:
      - {agent: desk, after_tool: order_status, reply: "order: {response}"}
      - {agent: desk, after_tool: calc_add, reply: "sum={response.sum} error={response.error}"}
      - {agent: desk, after_tool: local_getenv, reply: "env={response.value}"}
      - {agent: desk, after_tool: local_pid, reply: "{response.pid}"}
      - {agent: desk, after_tool: pets_listPets, reply: "pets: {response.result}"}
      - {agent: desk, match: order, call: {name: order_status, args: {order: A-17}}}
      - {agent: desk, match: add, when_tool: calc_add, call: {name: calc_add, args: {a: 2, b: 40}}}
      - {agent: desk, match: add, reply: "no calculator right now"}
      - {agent: desk, match: env, call: {name: local_getenv, args: {name: GREETING}}}
      - {agent: desk, match: leak, call: {name: local_getenv, args: {name: OPENAI_API_KEY}}}
      - {agent: desk, match: pid, call: {name: local_pid}}
      - {agent: desk, match: pets, call: {name: pets_listPets, args: {species: cat}}}
      - {agent: desk, reply: "hello"}
  - name: up
    type: openai
    base_url: %[1]s/v1
    api_key: up-key
    max_retries: 0
agents:
  - name: desk
    model: demo/desk-v1
    parameters:
      - {name: account, send_to_model: false}
    tools:
      - name: order_status
        description: Looks up an order.
        kind: http
        url: %[2]s/orders
        headers: {Authorization: "Bearer ${ORDERS_TOKEN}"}
        timeout: 5s
        parameters: {type: object, properties: {order: {type: string}}}
    toolsets:
      - mcp: {url: "http://%[3]s/mcp", headers: {Authorization: Bearer mcp-token}}
        prefix: calc
        allow: [add]
      - mcp: {command: %[4]q, env: {GREETING: hello from config}}
        prefix: local
      - openapi: {spec: %[5]q, base_url: "%[6]s/v1", headers: {Authorization: Bearer pets-key}}
        prefix: pets
        allow: [listPets]
  - name: upstreamed
    model: up/gpt-test
    toolsets:
      - mcp: {url: "http://%[3]s/mcp", headers: {Authorization: Bearer mcp-token}}
        prefix: calc
        allow: [add]
models:
  - {id: desk, agent: desk}
  - {id: upstreamed, agent: upstreamed}
`

// toolsChat sends one user message and returns the assistant's text.
func toolsChat(t *testing.T, base, model, session, text string, metadata map[string]string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": text}},
		"metadata": metadata})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %q: status %d: %s", model, text, resp.StatusCode, raw)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		t.Fatalf("%s %q: %s", model, text, raw)
	}
	return out.Choices[0].Message.Content
}

func TestToolSourcesEndToEnd(t *testing.T) {
	// The HTTP tool's endpoint records what it got.
	var ordersMu sync.Mutex
	type order struct {
		method, body string
		header       http.Header
	}
	var orders []order
	ordersSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ordersMu.Lock()
		orders = append(orders, order{r.Method, string(b), r.Header.Clone()})
		ordersMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status": "shipped"}`)
	}))
	defer ordersSrv.Close()
	// The OpenAPI service.
	var petsMu sync.Mutex
	var pets []string
	petsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		petsMu.Lock()
		pets = append(pets, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		petsMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"name": "Tom"}]`)
	}))
	defer petsSrv.Close()
	up := &fakeOpenAI{}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	calc := &calcMCP{addr: "127.0.0.1:0"}
	calc.start(t)
	defer calc.stop()

	dir := t.TempDir()
	bin := filepath.Join(dir, "stdioserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../agentcore/tools/mcptoolset/testdata/stdioserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	petstore, err := filepath.Abs("../../agentcore/tools/openapitoolset/testdata/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(toolsConfig, upSrv.URL, ordersSrv.URL, calc.addr, bin, petstore, petsSrv.URL)
	gw := runConfig(t, cfg, map[string]string{"ORDERS_TOKEN": "orders-secret", "OPENAI_API_KEY": "must-not-leak", "PATH": os.Getenv("PATH")})
	base, stdout := gw.base, &gw.stdout

	t.Run("http tool", func(t *testing.T) {
		got := toolsChat(t, base, "desk", "", "where is my order?", map[string]string{"param.account": "acct-7"})
		if got != `order: {"status":"shipped"}` {
			t.Errorf("reply = %q", got)
		}
		ordersMu.Lock()
		defer ordersMu.Unlock()
		if len(orders) != 1 {
			t.Fatalf("the endpoint got %d requests", len(orders))
		}
		r := orders[0]
		if r.method != "POST" || r.header.Get("Authorization") != "Bearer orders-secret" || r.body != `{"order":"A-17"}` {
			t.Errorf("request: %s %v %s", r.method, r.header, r.body)
		}
		if got := r.header.Get("X-Agentgate-Param-Account"); got != "acct-7" {
			t.Errorf("parameter header = %q, want acct-7", got)
		}
	})

	t.Run("openapi", func(t *testing.T) {
		if got := toolsChat(t, base, "desk", "", "pets?", nil); got != `pets: [{"name":"Tom"}]` {
			t.Errorf("reply = %q", got)
		}
		petsMu.Lock()
		defer petsMu.Unlock()
		if len(pets) != 1 || pets[0] != "GET /v1/pets?species=cat Bearer pets-key" {
			t.Errorf("requests = %q", pets)
		}
	})

	t.Run("stdio", func(t *testing.T) {
		if got := toolsChat(t, base, "desk", "", "env?", nil); got != "env=hello from config" {
			t.Errorf("reply = %q", got)
		}
		// The gateway's own secrets stay out of the child's environment.
		if got := toolsChat(t, base, "desk", "", "leak?", nil); got != "env=" {
			t.Errorf("reply = %q", got)
		}
	})

	t.Run("mcp restart mid-conversation", func(t *testing.T) {
		const session = "restart-1"
		if got := toolsChat(t, base, "desk", session, "add 2 and 40", nil); got != "sum=42 error=" {
			t.Fatalf("before: %q", got)
		}
		calc.stop()
		// The call fails as a result the model sees; then the agent runs
		// without the tools and says so.
		got := toolsChat(t, base, "desk", session, "add again", nil)
		if !strings.HasPrefix(got, "sum= error=mcp server calc") {
			t.Errorf("call while down: %q", got)
		}
		if got := toolsChat(t, base, "desk", session, "add once more", nil); got != "no calculator right now" {
			t.Errorf("turn while down: %q", got)
		}
		eventually(t, "the log about the server going down", func() bool { // the logs go out in batches
			return strings.Contains(stdout.String(), "mcp server unavailable")
		})
		calc.start(t)
		var got2 string
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if got2 = toolsChat(t, base, "desk", session, "add after restart", nil); got2 == "sum=42 error=" {
				break
			}
			time.Sleep(100 * time.Millisecond) // the reconnect backoff
		}
		if got2 != "sum=42 error=" {
			t.Errorf("after the restart: %q", got2)
		}
		calc.mu.Lock()
		defer calc.mu.Unlock()
		for _, a := range calc.auth {
			if a != "Bearer mcp-token" {
				t.Errorf("MCP request with Authorization %q", a)
			}
		}
	})

	t.Run("declared upstream and fed back", func(t *testing.T) {
		got := toolsChat(t, base, "upstreamed", "", "add 20 and 22", nil)
		if got != `The tool said {"sum":42}` {
			t.Errorf("reply = %q", got)
		}
		reqs := up.requests()
		if len(reqs) != 2 {
			t.Fatalf("upstream got %d requests", len(reqs))
		}
		tools, _ := reqs[0]["tools"].([]any)
		var names []string
		for _, tl := range tools {
			fn, _ := tl.(map[string]any)["function"].(map[string]any)
			names = append(names, fmt.Sprint(fn["name"]))
			if fn["name"] == "calc_add" {
				props, _ := fn["parameters"].(map[string]any)["properties"].(map[string]any)
				if _, ok := props["a"]; !ok {
					t.Errorf("calc_add parameters = %v", fn["parameters"])
				}
			}
		}
		if strings.Join(names, ",") != "calc_add" {
			t.Errorf("declared upstream: %v", names)
		}
		msgs, _ := reqs[1]["messages"].([]any)
		lastMsg, _ := msgs[len(msgs)-1].(map[string]any)
		if lastMsg["role"] != "tool" || lastMsg["tool_call_id"] != "call_up1" || lastMsg["content"] != `{"sum":42}` {
			t.Errorf("tool result fed back as %v", lastMsg)
		}
	})

	// Shutdown closes the toolsets: the stdio server's process ends.
	pid, err := strconv.Atoi(toolsChat(t, base, "desk", "", "pid?", nil))
	if err != nil {
		t.Fatal(err)
	}
	gw.stop(t)
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("stdio server %d still running after shutdown (kill 0: %v)", pid, err)
	}
}

// TestToolConfigErrors: a bad tool or toolset stops start-up naming the key.
func TestToolConfigErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := `
providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]
agents:
  - name: desk
    model: demo/x
    tools:
      - {name: lookup, kind: http, url: "not a url"}
      - {builtin: google_search}
    toolsets:
      - {mcp: {args: [x]}}
      - {openapi: {spec: missing.yaml}}
models: [{id: desk, agent: desk}]
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{
		`agents[0].tools[0]: url: must be an absolute http(s) URL, got "not a url"`,
		`agents[0].tools[1].builtin: google_search runs on Gemini only`,
		`agents[0].toolsets[0].mcp: url or command required`,
		`agents[0].toolsets[1]: openapi.spec: reading ` + filepath.Join(filepath.Dir(path), "missing.yaml"),
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestGeminiBuiltinEndToEnd: google_search and code_execution reach the
// Gemini upstream as its own tools, beside the agent's functions.
func TestGeminiBuiltinEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	gem := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		resp := `{"candidates":[{"content":{"role":"model","parts":[{"text":"grounded answer"}]},"finishReason":"STOP"}],` +
			`"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}`
		if strings.Contains(r.URL.Path, "streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", resp)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, resp)
	}))
	defer gem.Close()
	cfg := fmt.Sprintf(`
providers:
  - {name: g, type: gemini, base_url: %q, api_key: test-key, max_retries: 0}
agents:
  - name: researcher
    model: g/gemini-test
    tools:
      - builtin: google_search
      - builtin: code_execution
      - {name: notify, kind: client, parameters: {type: object, properties: {}}}
models:
  - {id: researcher, agent: researcher}
`, gem.URL)
	gw := runConfig(t, cfg, nil)
	if got := toolsChat(t, gw.base, "researcher", "", "what happened today?", nil); got != "grounded answer" {
		t.Errorf("reply = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("upstream got %d requests", len(bodies))
	}
	raw, _ := json.Marshal(bodies[0]["tools"])
	var tools []map[string]any
	_ = json.Unmarshal(raw, &tools)
	var kinds []string
	for _, tl := range tools {
		for k := range tl {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	if strings.Join(kinds, ",") != "codeExecution,functionDeclarations,googleSearch" {
		t.Errorf("upstream tools = %s", raw)
	}
}

// TestToolMakersAcrossReloads: a reload keeps the MCP sessions it still
// names, closes the ones it dropped, and a failed one closes only what it
// alone opened.
func TestToolMakersAcrossReloads(t *testing.T) {
	m := newToolMakers(slog.New(slog.DiscardHandler), lookupFrom(nil), t.TempDir())
	mk := func(cmd string) agentcore.Toolset {
		t.Helper()
		ts, err := m.toolset("agent", spec.Toolset{MCP: &spec.MCPToolset{Command: cmd}})
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	closed := func(ts agentcore.Toolset) bool {
		_, err := ts.Tools(context.Background(), nil)
		return errors.Is(err, mcptoolset.ErrClosed)
	}
	a, b := mk("/nonexistent/a"), mk("/nonexistent/b")
	if mk("/nonexistent/a") != a {
		t.Error("the same server named twice got two toolsets")
	}
	m.Begin()
	if mk("/nonexistent/a") != a {
		t.Error("a reload did not keep the session of a server it still names")
	}
	c := mk("/nonexistent/c")
	if err := m.Commit(); err != nil {
		t.Fatal(err)
	}
	if closed(a) || !closed(b) || closed(c) {
		t.Errorf("after commit: a closed %v, b closed %v, c closed %v; want false, true, false", closed(a), closed(b), closed(c))
	}
	m.Begin()
	d := mk("/nonexistent/d")
	if err := m.Rollback(); err != nil {
		t.Fatal(err)
	}
	if closed(a) || closed(c) || !closed(d) {
		t.Errorf("after rollback: a closed %v, c closed %v, d closed %v; want false, false, true", closed(a), closed(c), closed(d))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed(a) || !closed(c) {
		t.Error("Close left a toolset open")
	}
}
