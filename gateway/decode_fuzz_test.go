package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

// fuzzGateway serves the scripted demo tree as model "desk", with session
// s1 of user u1, for the decoding fuzz targets: each feeds request bodies
// through the whole handler (middleware, decoding, the turn when the body
// is valid).
func fuzzGateway(f *testing.F) *gateway.Server {
	f.Helper()
	cat, err := spec.Build(spec.Set{Providers: []spec.Provider{{Name: "demo", Type: "scripted", Rules: demoRules}},
		Agents: []spec.Agent{{Name: "coordinator", Model: "demo/c", SubAgents: []string{"greeter"}, AgentTools: []string{"summarizer"}},
			{Name: "greeter", Model: "demo/g"}, {Name: "summarizer", Model: "demo/s"}},
		Models: []spec.VirtualModel{{ID: "desk", Agent: "coordinator"}}}, spec.BuildOptions{})
	if err != nil {
		f.Fatal(err)
	}
	store := sessions.NewMemoryService(sessions.MemoryConfig{})
	if _, err := store.Create(context.Background(), sessions.CreateRequest{AppName: "desk", UserID: "u1", SessionID: "s1"}); err != nil {
		f.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Catalog: cat, Sessions: store, MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	return gw
}

// fuzzBody posts body to path and checks the answer: never a 5xx (a panic
// is one: the recovery middleware answers 500), and a JSON body unless it
// is an event stream.
func fuzzBody(t *testing.T, gw *gateway.Server, path string, body []byte) {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body)
	}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
		return
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("POST %s %q: status %d, body not JSON: %s", path, body, rec.Code, rec.Body)
	}
}

func FuzzChatCompletionsBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"desk","messages":[{"role":"user","content":"hello"}]}`,
		`{"model":"desk","stream":true,"messages":[{"role":"user","content":"summarize this"}]}`,
		`{"model":"desk","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
		`{"model":"desk","messages":[{"role":"tool","tool_call_id":"call_1","content":"x"}]}`,
		`{"model":"desk","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}],"metadata":{"param.x":"1"}}`,
		`{"model":"nope","messages":[]}`, `{"model":"desk","messages":[{"role":"user","content":5}]}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	gw := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, gw, "/v1/chat/completions", body) })
}

func FuzzNativeRunBody(f *testing.F) {
	for _, s := range []string{
		`{"appName":"desk","userId":"u1","sessionId":"s1","newMessage":{"role":"user","parts":[{"text":"hello"}]}}`,
		`{"app_name":"desk","user_id":"u1","session_id":"s1","new_message":{"parts":[{"text":"hi"}]},"streaming":true,"state_delta":{"k":1}}`,
		`{"appName":"desk","userId":"u1","sessionId":"s1","newMessage":{"role":"user","parts":[{"functionResponse":{"id":"x","name":"f","response":{}}}]},"invocationId":"e-1"}`,
		`{"appName":"desk","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"inlineData":{"mimeType":"text/plain","data":"aGk="}}]}}`,
		`{"appName":"desk","userId":"u1","sessionId":"nope","newMessage":{"parts":[{"text":"x"}]}}`,
		`{"appName":"desk","newMessage":"text"}`, `null`, `{"stateDelta":[]}`, `{`,
	} {
		f.Add([]byte(s))
	}
	gw := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzBody(t, gw, "/run", body)
		fuzzBody(t, gw, "/run_sse", body)
	})
}

func FuzzA2ARequestBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m1","parts":[{"kind":"text","text":"hello"}]}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"message/stream","params":{"message":{"role":"user","messageId":"m2","parts":[{"kind":"text","text":"summarize"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m3","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"t1"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"id":"t1"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"parts":[{"kind":"file","file":{"bytes":"AAE="}}],"taskId":"t9","contextId":"c"}}}`,
		`{"jsonrpc":"2.0","method":"nope"}`, `{"jsonrpc":"1.0","id":1}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	gw := fuzzGateway(f)
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, gw, "/a2a/desk", body) })
}
