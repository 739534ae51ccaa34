package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hiddenUser is the hidden parameter value of the redaction test: the
// caller sends it with send_to_model false, the user repeats it in every
// kind of part, and scripted models write it into every kind of call.
const hiddenUser = "u-7Q3LEAK9"

// recorder is a server that records every request it gets (headers and
// body) before handing it to next.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var hdr strings.Builder
	_ = r.Header.Write(&hdr)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, r.Method+" "+r.URL.RequestURI()+"\n"+hdr.String()+"\n"+string(body))
	rc.mu.Unlock()
	rc.next.ServeHTTP(w, r)
}

// check fails t when no request was recorded or one holds the value, in
// any form: raw, percent-encoded, or inside base64 (a data: URI, an A2A
// file's bytes).
func (rc *recorder) check(t *testing.T, value string) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.reqs) == 0 {
		t.Fatal("no request recorded")
	}
	for _, req := range rc.reqs {
		if where := leakedIn(req, value); where != "" {
			t.Errorf("the hidden value went out (%s):\n%s", where, req)
		}
	}
}

// leakedIn says where value hides in a recorded request, "" if nowhere.
func leakedIn(req, value string) string {
	forms := map[string]string{"raw": value, "query-escaped": url.QueryEscape(value), "path-escaped": url.PathEscape(value)}
	for name, f := range forms {
		if strings.Contains(req, f) {
			return name
		}
	}
	for _, s := range strings.FieldsFunc(req, func(r rune) bool { return strings.ContainsRune("\" \n\r,", r) }) {
		for _, dec := range []string{percentDecoded(s)} {
			if strings.Contains(dec, value) {
				return "percent-decoded " + s
			}
		}
		if i := strings.Index(s, "base64,"); i >= 0 {
			s = s[i+len("base64,"):]
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(s); err == nil && bytes.Contains(b, []byte(value)) {
				return "base64 " + s
			}
		}
	}
	return ""
}

func percentDecoded(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// chatUpstream answers every chat completion with "ok" (streamed or not).
func chatUpstream(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	msg := map[string]any{"role": "assistant", "content": "ok"}
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": msg, "finish_reason": "stop"}}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
}

const redactRemoteConfig = `
providers:
  - {name: demo, type: scripted, rules: [{agent: analyst, reply: "analysed"}]}
agents:
  - {name: analyst, model: demo/a}
models:
  - {id: analyst, agent: analyst}
`

const redactLookupSpec = `openapi: 3.0.3
info: {title: lookup, version: "1"}
paths:
  /users/{id}:
    post:
      operationId: lookup
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: q, in: query, schema: {type: string}}
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {note: {type: string}}}
      responses:
        "200": {description: ok}
`

const redactConfig = `
providers:
  - name: demo
    type: scripted
    rules:
      - {agent: desk, match: transfer, call: {name: transfer_to_agent, args: {agent_name: remote_t}}}
      - {agent: desk, match: consult, call: {name: remote_a, args: {request: "about %[6]s"}}}
      - {agent: desk, match: fetch, call: {name: fetch_get, args: {q: "%[6]s", who: "%[6]s"}}}
      - {agent: desk, match: post, call: {name: fetch_post, args: {note: "%[6]s", nested: {deep: ["x %[6]s"]}}}}
      - {agent: desk, match: mcp, call: {name: rec_echo, args: {text: "%[6]s"}}}
      - {agent: desk, match: openapi, call: {name: api_lookup, args: {id: "%[6]s", q: "%[6]s", note: "%[6]s"}}}
      - {agent: desk, reply: "hello"}
  - {name: up, type: openai, base_url: "%[1]s/v1", api_key: up-key, max_retries: 0}
agents:
  - name: desk
    model: demo/desk
    parameters:
      - {name: userId, send_to_model: false}
    sub_agents: [remote_t]
    agent_tools: [remote_a]
    tools:
      - {name: fetch_get, description: Reads., kind: http, method: GET, url: "%[2]s/get",
         parameters: {type: object, properties: {q: {type: string}, who: {type: string}}}}
      - {name: fetch_post, description: Writes., kind: http, url: "%[2]s/post",
         parameters: {type: object, properties: {note: {type: string}}}}
    toolsets:
      - mcp: {url: "%[3]s/mcp"}
        prefix: rec
      - openapi: {spec: %[4]q, base_url: "%[2]s/api"}
        prefix: api
  - name: vision
    model: up/gpt-test
    parameters:
      - {name: userId, send_to_model: false}
  - {name: remote_t, description: Remote analyst., endpoint: {a2a: "%[5]s/a2a/analyst"}}
  - {name: remote_a, description: Remote analyst as a tool., endpoint: {a2a: "%[5]s/a2a/analyst"}}
models:
  - {id: desk, agent: desk}
  - {id: vision, agent: vision}
`

// hops is the gateway of redactConfig with every hop out of the process
// (a model provider, a remote A2A agent by transfer and as a tool, GET and
// POST HTTP tools, an MCP server over streamable HTTP, an OpenAPI service)
// behind a recording server.
type hops struct {
	gw                     *testGateway
	model, tools, mcp, a2a *recorder
	// paramHeaders are the X-Agentgate-Param-userId headers the tools'
	// server got, taken off before the request is recorded.
	phMu         sync.Mutex
	paramHeaders []string
}

// startHops runs the gateway of redactConfig with extra appended to its
// config (a telemetry section, say), and the servers it calls out to.
func startHops(t *testing.T, extra string) *hops {
	h := &hops{model: &recorder{next: http.HandlerFunc(chatUpstream)}}
	upSrv := httptest.NewServer(h.model)
	t.Cleanup(upSrv.Close)

	// The tools' server: the parameter header is the one place the value
	// may go, by design; it is taken off before the request is recorded.
	h.tools = &recorder{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok": true}`)
	})}
	toolSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.phMu.Lock()
		h.paramHeaders = append(h.paramHeaders, r.Header.Get("X-Agentgate-Param-userId"))
		h.phMu.Unlock()
		r.Header.Del("X-Agentgate-Param-userId")
		h.tools.ServeHTTP(w, r)
	}))
	t.Cleanup(toolSrv.Close)

	s := mcp.NewServer(&mcp.Implementation{Name: "rec", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, struct{}, error) {
			return nil, struct{}{}, nil
		})
	h.mcp = &recorder{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)}
	mcpSrv := httptest.NewServer(h.mcp)
	// Closed after the gateway stops (cleanups run last first); its
	// clients' open event streams are cut rather than waited for.
	t.Cleanup(func() { mcpSrv.CloseClientConnections(); mcpSrv.Close() })

	remote := runConfig(t, redactRemoteConfig, nil)
	target, _ := url.Parse(remote.base)
	h.a2a = &recorder{next: httputil.NewSingleHostReverseProxy(target)}
	a2aSrv := httptest.NewServer(h.a2a)
	t.Cleanup(a2aSrv.Close)

	specPath := filepath.Join(t.TempDir(), "lookup.yaml")
	if err := os.WriteFile(specPath, []byte(redactLookupSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(redactConfig, upSrv.URL, toolSrv.URL, mcpSrv.URL, specPath, a2aSrv.URL, hiddenUser)
	h.gw = runConfig(t, cfg+extra, nil)
	return h
}

// reset forgets the requests rc recorded so far.
func (rc *recorder) reset() {
	rc.mu.Lock()
	rc.reqs = nil
	rc.mu.Unlock()
}

// TestHiddenValueNeverLeavesTheProcess runs the gateway of startHops. The
// caller or the agents' declarations hide userId; the user repeats it in
// text, an image URL, a text file and a binary image, and the scripted
// model writes it into every call. No recorded request holds it in any
// form; the HTTP tools still get it in their X-Agentgate-Param-userId
// header, as designed. Tracing is off: no request carries a traceparent.
func TestHiddenValueNeverLeavesTheProcess(t *testing.T) {
	h := startHops(t, "")
	gw, model, tools, mcpRec, a2aRec := h.gw, h.model, h.tools, h.mcp, h.a2a

	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), []byte("tEXt"+hiddenUser+"\x00\xff")...)
	parts := func(text string) []any {
		return []any{
			map[string]any{"type": "text", "text": text + ", I am " + hiddenUser},
			map[string]any{"type": "image_url", "image_url": map[string]any{
				"url": "https://img.example/u/" + hiddenUser + ".png?who=" + url.QueryEscape("id "+hiddenUser)}},
			map[string]any{"type": "file", "file": map[string]any{"filename": hiddenUser + ".txt",
				"file_data": "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("account of "+hiddenUser))}},
			map[string]any{"type": "image_url", "image_url": map[string]any{
				"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}},
		}
	}
	// Each message is sent twice: once hidden by the caller, once shown by
	// the caller and hidden only by the agents' declarations (which a
	// remote agent below them inherits).
	send := func(t *testing.T, modelID, text string) {
		t.Helper()
		for _, md := range []map[string]string{
			{"param.userId": hiddenUser, "param.userId.send_to_model": "false"},
			{"param.userId": hiddenUser},
		} {
			body, _ := json.Marshal(map[string]any{"model": modelID, "messages": []any{map[string]any{"role": "user", "content": parts(text)}},
				"metadata": md})
			resp, err := http.Post(gw.base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
		}
	}

	t.Run("model provider", func(t *testing.T) {
		send(t, "vision", "look at this")
		model.check(t, hiddenUser)
		model.mu.Lock()
		last := model.reqs[len(model.reqs)-1]
		model.mu.Unlock()
		// Redacted, not dropped: the URL and the text file keep the
		// placeholder; the binary image is replaced by a note.
		for _, want := range []string{"img.example/u/[hidden:userId].png?who=id+[hidden:userId]", "image/png data removed"} {
			if !strings.Contains(last, want) {
				t.Errorf("the upstream request lacks %q:\n%s", want, last)
			}
		}
	})
	t.Run("a2a transfer", func(t *testing.T) {
		send(t, "desk", "transfer me")
		a2aRec.check(t, hiddenUser)
	})
	t.Run("a2a agent tool", func(t *testing.T) {
		a2aRec.reset()
		send(t, "desk", "consult the analyst")
		a2aRec.check(t, hiddenUser)
	})
	t.Run("http tools", func(t *testing.T) {
		send(t, "desk", "fetch it")
		send(t, "desk", "post it")
		tools.check(t, hiddenUser)
		h.phMu.Lock()
		defer h.phMu.Unlock()
		for _, v := range h.paramHeaders {
			if v != hiddenUser {
				t.Errorf("X-Agentgate-Param-userId = %q, want the value", v)
			}
		}
	})
	t.Run("mcp", func(t *testing.T) {
		send(t, "desk", "mcp please")
		mcpRec.check(t, hiddenUser)
		mcpRec.mu.Lock()
		defer mcpRec.mu.Unlock()
		if all := strings.Join(mcpRec.reqs, "\n"); !strings.Contains(all, `"text":"[hidden:userId]"`) {
			t.Errorf("no call with the placeholder reached the MCP server:\n%s", all)
		}
	})
	t.Run("openapi", func(t *testing.T) {
		tools.reset()
		send(t, "desk", "openapi lookup")
		tools.check(t, hiddenUser)
	})
	t.Run("no trace context with tracing off", func(t *testing.T) {
		for name, rc := range map[string]*recorder{"model": model, "tools": tools, "mcp": mcpRec, "a2a": a2aRec} {
			for _, req := range rc.recorded() {
				if tp, _ := traceparentOf(req); tp != "" {
					t.Errorf("%s: traceparent %s sent with tracing off:\n%s", name, tp, req)
				}
			}
		}
	})
}
