package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/auth"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

// agentgate as an A2A server, spoken to in raw JSON-RPC.

func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func textMsg(text string, extra map[string]any) map[string]any {
	m := map[string]any{"messageId": "m-" + text, "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestA2ACard(t *testing.T) {
	set := remoteSet()
	set.Models = append(set.Models, spec.VirtualModel{ID: "team/analyst", Agent: "analyst"})
	p := newPeer(t, set, nil)
	for _, path := range []string{"/a2a/analyst/.well-known/agent-card.json", "/a2a/analyst/.well-known/agent.json"} {
		resp, err := http.Get(p.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		card := decode(t, resp.Body)
		resp.Body.Close()
		want := p.srv.URL + "/a2a/analyst"
		if card["url"] != want || dig(card, "supportedInterfaces", 0, "url") != want || dig(card, "supportedInterfaces", 0, "protocolVersion") != "1.0" ||
			dig(card, "supportedInterfaces", 1, "protocolVersion") != "0.3" || card["preferredTransport"] != "JSONRPC" {
			t.Errorf("%s: card urls %v", path, card)
		}
		if card["securitySchemes"] != nil {
			t.Errorf("%s: security schemes without authentication: %v", path, card["securitySchemes"])
		}
		if dig(card, "capabilities", "streaming") != true || dig(card, "skills", 0, "id") != "analyst" || dig(card, "skills", 0, "description") != "Analyses anything." {
			t.Errorf("%s: card %v", path, card)
		}
	}
	resp, _ := http.Get(p.srv.URL + "/a2a/team%2Fanalyst/.well-known/agent-card.json")
	card := decode(t, resp.Body)
	resp.Body.Close()
	if card["url"] != p.srv.URL+"/a2a/team%2Fanalyst" || card["name"] != "team/analyst" {
		t.Errorf("escaped model id: %v", card)
	}
	resp, _ = http.Get(p.srv.URL + "/a2a/nope/.well-known/agent-card.json")
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown model: status %d", resp.StatusCode)
	}

	// server.public_url wins over the request's host.
	pub, err := gateway.New(gateway.Config{Catalog: p.build(remoteSet(), nil), Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}),
		PublicURL: "https://agents.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	pub.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://internal:8080/a2a/analyst/.well-known/agent-card.json", nil))
	var pc map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &pc)
	if pc["url"] != "https://agents.example.com/a2a/analyst" {
		t.Errorf("public url card: %v", pc["url"])
	}
}

func TestA2AServerSendAndGetBothVersions(t *testing.T) {
	p := newPeer(t, remoteSet(), nil)
	for _, tc := range []struct {
		send, get, completed string
		task                 []any // path to the task in a send result
	}{
		{"message/send", "tasks/get", "completed", nil},
		{"SendMessage", "GetTask", "TASK_STATE_COMPLETED", []any{"task"}},
	} {
		t.Run(tc.send, func(t *testing.T) {
			res := p.rpc("analyst", tc.send, map[string]any{"message": textMsg("hello", nil)})
			if res["jsonrpc"] != "2.0" || dig(res, "id") != float64(7) {
				t.Fatalf("envelope %v", res)
			}
			task := dig(res["result"], tc.task...)
			if dig(task, "status", "state") != tc.completed || dig(task, "artifacts", 0, "parts", 0, "text") != "analysis of [hello]" {
				t.Fatalf("send result %v", res)
			}
			if (tc.task == nil) != (dig(task, "kind") == "task") {
				t.Errorf("kind tag %v in %s", dig(task, "kind"), tc.send)
			}
			id, ctxID := dig(task, "id").(string), dig(task, "contextId").(string)
			if !strings.HasPrefix(id, "e-") || ctxID == "" {
				t.Fatalf("task id %q context %q", id, ctxID)
			}
			// The context is our session: a second message continues it.
			res = p.rpc("analyst", tc.send, map[string]any{"message": textMsg("again", map[string]any{"contextId": ctxID})})
			if got := dig(res["result"], append(tc.task, "contextId")...); got != ctxID {
				t.Errorf("second message in context %v, want %s", got, ctxID)
			}
			sess, err := p.store.Get(context.Background(), sessions.GetRequest{AppName: "analyst", UserID: "anonymous", SessionID: ctxID})
			if err != nil || len(sess.Events) != 4 {
				t.Fatalf("session %s: %v, %d events", ctxID, err, len(sess.Events))
			}
			got := p.rpc("analyst", tc.get, map[string]any{"id": id, "historyLength": 1})
			if dig(got, "result", "status", "state") != tc.completed || len(dig(got, "result", "history").([]any)) != 1 {
				t.Errorf("get %v", got)
			}
		})
	}
}

func TestA2AServerErrors(t *testing.T) {
	p := newPeer(t, remoteSet(), nil)
	done := p.rpc("analyst", "message/send", map[string]any{"message": textMsg("x", nil)})
	doneID := dig(done, "result", "id")
	for _, tc := range []struct {
		name string
		body string
		code float64
	}{
		{"parse", `{"jsonrpc": "2.0", "id": 1, "method": `, -32700},
		{"not 2.0", `{"jsonrpc": "1.0", "id": 1, "method": "tasks/get"}`, -32600},
		{"unknown method", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/explode", "params": {}}`, -32601},
		{"no message", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}`, -32602},
		{"empty parts", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "parts": []}}}`, -32602},
		{"bad context", `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "contextId": "a/b", "parts": [{"kind": "text", "text": "x"}]}}}`, -32602},
		{"unknown task", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}}`, -32001},
		{"unknown task message", `{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "taskId": "nope", "parts": [{"text": "x"}]}}}`, -32001},
		{"done task cancel", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": "` + doneID.(string) + `"}}`, -32002},
		{"push", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/set", "params": {}}`, -32003},
		{"resubscribe", `{"jsonrpc": "2.0", "id": 1, "method": "tasks/resubscribe", "params": {"id": "x"}}`, -32004},
	} {
		resp := p.post(context.Background(), "/a2a/analyst", tc.body)
		m := decode(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || dig(m, "error", "code") != tc.code || dig(m, "error", "message") == "" {
			t.Errorf("%s: status %d, %v; want error %v", tc.name, resp.StatusCode, m, tc.code)
		}
	}
}

// sseResults reads the JSON-RPC results of an A2A event stream.
func sseResults(t *testing.T, resp *http.Response) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("frame %q: %v", data, err)
			}
			out = append(out, m["result"])
		}
	}
	return out
}

func TestA2AServerStreamBothVersions(t *testing.T) {
	p := newPeer(t, remoteSet(), nil)
	for _, tc := range []struct {
		method                      string
		taskKey, artKey, statusKey  []any
		artKind, statusKind, doneSt string
	}{
		{"message/stream", nil, nil, nil, "artifact-update", "status-update", "completed"},
		{"SendStreamingMessage", []any{"task"}, []any{"artifactUpdate"}, []any{"statusUpdate"}, "", "", "TASK_STATE_COMPLETED"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "s", "method": tc.method, "params": map[string]any{"message": textMsg("a long enough question", nil)}})
			resp := p.post(context.Background(), "/a2a/analyst", string(body))
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q", ct)
			}
			frames := sseResults(t, resp)
			if len(frames) < 4 {
				t.Fatalf("frames %v", frames)
			}
			if st := dig(frames[0], append(tc.taskKey, "status", "state")...); st != "working" && st != "TASK_STATE_WORKING" {
				t.Errorf("first frame %v", frames[0])
			}
			var text strings.Builder
			for _, f := range frames[1 : len(frames)-1] {
				a := dig(f, tc.artKey...)
				if tc.artKind != "" && dig(a, "kind") != tc.artKind {
					t.Errorf("frame %v", f)
				}
				s, _ := dig(a, "artifact", "parts", 0, "text").(string)
				text.WriteString(s)
			}
			if text.String() != "analysis of [a long enough question]" || len(frames) < 5 {
				t.Errorf("streamed %q in %d chunks", text.String(), len(frames)-2)
			}
			last := dig(frames[len(frames)-1], tc.statusKey...)
			if dig(last, "status", "state") != tc.doneSt {
				t.Errorf("last frame %v", frames[len(frames)-1])
			}
			if tc.statusKind != "" && (dig(last, "kind") != tc.statusKind || dig(last, "final") != true) {
				t.Errorf("v0.3 last frame %v", last)
			}
		})
	}
}

// A paused run is an input-required task; a message with its taskId
// answers the pending call and resumes it.
func TestA2AServerInputRequired(t *testing.T) {
	p := newPeer(t, remoteSet(), nil)
	res := p.rpc("asker", "message/send", map[string]any{"message": textMsg("help me choose", nil)})
	task := res["result"]
	if dig(task, "status", "state") != "input-required" || dig(task, "status", "message", "parts", 0, "text") != "Which plan? Options: basic, pro." ||
		dig(task, "status", "message", "parts", 1, "data", "pendingCalls", 0, "name") != "get_user_choice" {
		t.Fatalf("paused task %v", res)
	}
	id, ctxID := dig(task, "id"), dig(task, "contextId")
	res = p.rpc("asker", "message/send", map[string]any{"message": textMsg("pro", map[string]any{"taskId": id, "contextId": ctxID})})
	if dig(res, "result", "id") != id || dig(res, "result", "status", "state") != "completed" ||
		dig(res, "result", "artifacts", 0, "parts", 0, "text") != "asker chose pro" {
		t.Fatalf("resumed task %v", res)
	}
	// The task is over: answering it again is refused.
	res = p.rpc("asker", "message/send", map[string]any{"message": textMsg("basic", map[string]any{"taskId": id, "contextId": ctxID})})
	if dig(res, "error", "code") != float64(-32602) {
		t.Errorf("answering a completed task: %v", res)
	}
}

func TestA2AServerReturnImmediatelyAndCancel(t *testing.T) {
	g := newGate("late")
	p := newPeer(t, remoteSet(), map[string]*gate{"gated": g})
	res := p.rpc("gated", "SendMessage", map[string]any{"message": textMsg("go", nil), "configuration": map[string]any{"returnImmediately": true}})
	id := dig(res, "result", "task", "id")
	if st := dig(res, "result", "task", "status", "state"); st != "TASK_STATE_WORKING" {
		t.Fatalf("returned %v", res)
	}
	<-g.started
	if st := dig(p.rpc("gated", "GetTask", map[string]any{"id": id}), "result", "status", "state"); st != "TASK_STATE_WORKING" {
		t.Errorf("running task %v", st)
	}
	res = p.rpc("gated", "CancelTask", map[string]any{"id": id})
	if dig(res, "result", "status", "state") != "TASK_STATE_CANCELED" {
		t.Errorf("cancel %v", res)
	}
	select {
	case <-g.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the run was not canceled")
	}
	if res := p.rpc("gated", "CancelTask", map[string]any{"id": id}); dig(res, "error", "code") != float64(-32002) {
		t.Errorf("canceling twice: %v", res)
	}
}

// fakeAuth accepts "Bearer <user>" for alice and bob.
type fakeAuth struct{}

func (fakeAuth) Authenticate(h string) (*auth.Principal, error) {
	switch h {
	case "Bearer alice", "Bearer bob":
		return &auth.Principal{User: strings.TrimPrefix(h, "Bearer ")}, nil
	}
	return nil, &auth.Error{Reason: auth.ReasonMissing}
}

func (fakeAuth) BoundParameters() []string { return nil }

// The A2A routes sit behind the same authentication as the others, and a
// task belongs to the token's user.
func TestA2AServerAuth(t *testing.T) {
	p := newPeer(t, remoteSet(), nil)
	var err error
	p.gw, err = gateway.New(gateway.Config{Catalog: p.build(remoteSet(), nil), Sessions: p.store, Auth: fakeAuth{}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(p.srv.URL + "/a2a/analyst/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("card without a token: %d", resp.StatusCode)
	}
	body := `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "x"}]}}}`
	resp = p.post(context.Background(), "/a2a/analyst", body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("send without a token: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, p.srv.URL+"/a2a/analyst/.well-known/agent-card.json", nil)
	req.Header.Set("Authorization", "Bearer alice")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	card := decode(t, resp.Body)
	resp.Body.Close()
	if dig(card, "securitySchemes", "bearer", "scheme") != "bearer" || dig(card, "securitySchemes", "bearer", "httpAuthSecurityScheme", "scheme") != "Bearer" ||
		dig(card, "security", 0, "bearer") == nil || dig(card, "securityRequirements", 0, "schemes", "bearer") == nil {
		t.Errorf("card security %v", card)
	}
	resp = p.post(context.Background(), "/a2a/analyst", body, "Authorization", "Bearer alice")
	res := decode(t, resp.Body)
	resp.Body.Close()
	id, ctxID := dig(res, "result", "id"), dig(res, "result", "contextId").(string)
	if _, err := p.store.Get(context.Background(), sessions.GetRequest{AppName: "analyst", UserID: "alice", SessionID: ctxID}); err != nil {
		t.Errorf("alice's session: %v", err)
	}
	get := `{"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "` + id.(string) + `"}}`
	resp = p.post(context.Background(), "/a2a/analyst", get, "Authorization", "Bearer bob")
	res = decode(t, resp.Body)
	resp.Body.Close()
	if dig(res, "error", "code") != float64(-32001) {
		t.Errorf("bob reads alice's task: %v", res)
	}
}
