package a2a

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleTask() *Task {
	return &Task{ID: "t1", ContextID: "c1",
		Status:    TaskStatus{State: StateInputRequired, Message: &Message{MessageID: "m2", Role: RoleAgent, Parts: []Part{TextPart("Which plan?"), DataPart(map[string]any{"k": "v"})}}},
		Artifacts: []Artifact{{ArtifactID: "a1", Name: "response", Parts: []Part{TextPart("so far")}}},
		History: []Message{{MessageID: "m1", Role: RoleUser, TaskID: "t1", ContextID: "c1", Parts: []Part{TextPart("hi"),
			{Kind: "file", File: &File{Bytes: []byte("png"), MediaType: "image/png", Name: "x.png"}}}}},
	}
}

func TestTaskWireForms(t *testing.T) {
	for _, tc := range []struct {
		v    Version
		want string
	}{
		{V03, `{"kind":"task","id":"t1","contextId":"c1","status":{"state":"input-required","message":{"kind":"message","messageId":"m2","role":"agent","parts":[{"kind":"text","text":"Which plan?"},{"kind":"data","data":{"k":"v"}}]}},` +
			`"artifacts":[{"artifactId":"a1","name":"response","parts":[{"kind":"text","text":"so far"}]}],` +
			`"history":[{"kind":"message","messageId":"m1","contextId":"c1","taskId":"t1","role":"user","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"bytes":"cG5n","mimeType":"image/png","name":"x.png"}}]}]}`},
		{V1, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m2","role":"ROLE_AGENT","parts":[{"text":"Which plan?"},{"data":{"k":"v"}}]}},` +
			`"artifacts":[{"artifactId":"a1","name":"response","parts":[{"text":"so far"}]}],` +
			`"history":[{"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER","parts":[{"text":"hi"},{"raw":"cG5n","filename":"x.png","mediaType":"image/png"}]}]}`},
	} {
		t.Run(tc.v.String(), func(t *testing.T) {
			b, err := json.Marshal(EncodeTask(sampleTask(), tc.v))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("wire form (-want +got):\n%s", diff)
			}
			back, err := DecodeTask(b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(sampleTask(), back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamEventForms(t *testing.T) {
	status := Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateCompleted}, Final: true}}
	art := Event{Artifact: &ArtifactUpdate{TaskID: "t", ContextID: "c", Append: true, Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("x")}}}}
	for _, tc := range []struct {
		name string
		e    Event
		v    Version
		want string
	}{
		{"status v0.3", status, V03, `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`},
		{"status v1", status, V1, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`},
		{"artifact v0.3", art, V03, `{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]},"append":true}`},
		{"artifact v1", art, V1, `{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"append":true}}`},
		{"message v1", Event{Message: &Message{MessageID: "m", Role: RoleAgent, Parts: []Part{TextPart("")}}}, V1, `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":""}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(EncodeEvent(tc.e, tc.v))
			if string(b) != tc.want {
				t.Errorf("got  %s\nwant %s", b, tc.want)
			}
			back, err := DecodeEvent(b)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.e
			if tc.v == V1 && want.Status != nil {
				s := *want.Status
				s.Final = false // v1 has no final flag
				want.Status = &s
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// Events without kind (some v0.3 servers, v1 bare objects) are recognised
// by their fields; enums are read in either spelling.
func TestDecodeEventLenient(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Event
	}{
		{`{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}`, Event{Task: &Task{ID: "t", ContextID: "c", Status: TaskStatus{State: StateCompleted}}}},
		{`{"taskId":"t","contextId":"c","status":{"state":"CANCELLED"}}`, Event{Status: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateCanceled}}}},
		{`{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}`, Event{Message: &Message{MessageID: "m", Role: RoleAgent, Parts: []Part{TextPart("hi")}}}},
		{`{"task":{"id":"t","status":{"state":"working"}}}`, Event{Task: &Task{ID: "t", Status: TaskStatus{State: StateWorking}}}},
	} {
		got, err := DecodeEvent([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
	if _, err := DecodeEvent([]byte(`{"foo":1}`)); err == nil {
		t.Error("an unknown object decoded")
	}
}

func TestSendParams(t *testing.T) {
	p := SendParams{Message: Message{MessageID: "m", Parts: []Part{TextPart("hi")}, ContextID: "c"}, ReturnImmediately: true}
	b03, _ := json.Marshal(EncodeSendParams(p, V03))
	b1, _ := json.Marshal(EncodeSendParams(p, V1))
	if want := `{"message":{"kind":"message","messageId":"m","contextId":"c","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":false}}`; string(b03) != want {
		t.Errorf("v0.3: %s", b03)
	}
	if want := `{"message":{"messageId":"m","contextId":"c","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}`; string(b1) != want {
		t.Errorf("v1: %s", b1)
	}
	for _, b := range [][]byte{b03, b1} {
		got, err := DecodeSendParams(b)
		if err != nil {
			t.Fatal(err)
		}
		p.Message.Role = RoleUser
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
	if got, _ := DecodeSendParams([]byte(`{"message":{"messageId":"m","role":"user","parts":[]}}`)); got.ReturnImmediately {
		t.Error("a send without configuration must block")
	}
	if _, err := DecodeSendParams([]byte(`{}`)); err == nil {
		t.Error("a send without message decoded")
	}
	q, err := DecodeTaskQuery([]byte(`{"name":"tasks/abc"}`))
	if err != nil || q.ID != "abc" {
		t.Errorf("task query by name: %v %v", q, err)
	}
}

func TestMethods(t *testing.T) {
	for _, name := range []string{"message/send", "SendMessage", "message/stream", "SendStreamingMessage", "tasks/get", "GetTask", "tasks/cancel", "CancelTask"} {
		m, v, ok := ParseMethod(name)
		if !ok || MethodName(m, v) != name {
			t.Errorf("%s: parsed as %v %v %v", name, m, v, ok)
		}
	}
	if _, _, ok := ParseMethod("tasks/explode"); ok {
		t.Error("unknown method parsed")
	}
}

func TestCardJSONRPC(t *testing.T) {
	for _, tc := range []struct {
		name string
		card AgentCard
		url  string
		v    Version
		ok   bool
	}{
		{"v1 first", AgentCard{URL: "http://x/old", SupportedInterfaces: []AgentInterface{{URL: "http://x/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"}, {URL: "http://x/rpc", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}}}, "http://x/rpc", V1, true},
		{"v0.3 interface", AgentCard{SupportedInterfaces: []AgentInterface{{URL: "http://x/rpc", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}}}, "http://x/rpc", V03, true},
		{"v0.3 url", AgentCard{URL: "http://x/rpc", PreferredTransport: "JSONRPC"}, "http://x/rpc", V03, true},
		{"v0.3 additional", AgentCard{URL: "http://x/grpc", PreferredTransport: "GRPC", AdditionalInterfaces: []AgentInterface{{URL: "http://x/j", Transport: "JSONRPC"}}}, "http://x/j", V03, true},
		{"none", AgentCard{URL: "http://x/grpc", PreferredTransport: "GRPC"}, "", V03, false},
	} {
		url, v, ok := tc.card.JSONRPC()
		if url != tc.url || v != tc.v || ok != tc.ok {
			t.Errorf("%s: got %q %v %v", tc.name, url, v, ok)
		}
	}
}

func TestTokenAllowed(t *testing.T) {
	for url, want := range map[string]bool{
		"https://agents.example.com/a": true, "http://127.0.0.1:9000": true, "http://localhost:9000/a2a/x": true,
		"http://[::1]:80": true, "http://agents.example.com": false, "http://10.0.0.1": false, "ftp://localhost": false,
	} {
		if got := TokenAllowed(url); got != want {
			t.Errorf("%s: %v, want %v", url, got, want)
		}
	}
}

func TestRedirectKeepsTheTokenSafe(t *testing.T) {
	for _, tc := range []struct {
		to, auth string
		ok       bool
	}{
		{"https://agents.example.com/rpc", "Bearer t", true},
		{"http://127.0.0.1:9/rpc", "Bearer t", true},
		{"http://agents.example.com/rpc", "Bearer t", false},
		{"http://agents.example.com/rpc", "", true},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.to, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		if err := checkRedirect(req, nil); (err == nil) != tc.ok {
			t.Errorf("redirect to %s with %q: %v", tc.to, tc.auth, err)
		}
	}
}
