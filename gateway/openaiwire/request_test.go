package openaiwire

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// assertJSON compares the JSON encoding of got with want after decoding both
// into generic values, so key order and spacing do not matter.
func assertJSON(t *testing.T, want string, got any) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("bad got JSON %s: %v", b, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s\ngot: %s", diff, b)
	}
}

// assertError checks that err is an *Error with the given status and param.
func assertError(t *testing.T, err error, status int, param string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %d with param %q", status, param)
	}
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("got %T %v, want *Error", err, err)
	}
	if e.Status != status || e.Param != param {
		t.Errorf("got status %d param %q (%s), want %d param %q", e.Status, e.Param, e.Message, status, param)
	}
	if e.Message == "" || e.Type == "" {
		t.Errorf("error without message or type: %+v", e)
	}
}

func TestDecodeRequestAcceptsClientShapes(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *ChatCompletionRequest
	}{{
		name: "string content and unknown fields",
		body: `{"model":"m","messages":[{"role":"user","content":"hi","reasoning_content":"x"}],
			"foo":1,"litellm_session_id":"s","store":true,"prompt_cache_key":"k","logit_bias":{"1":2}}`,
		want: &ChatCompletionRequest{Model: "m", Messages: []ChatMessage{{Role: "user", Content: TextContent("hi")}}},
	}, {
		name: "parts content and assistant null content with tool calls",
		body: `{"model":"m","messages":[
			{"role":"system","content":[{"type":"text","text":"be brief"}]},
			{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"ok"},
			{"role":"assistant","content":""}]}`,
		want: &ChatCompletionRequest{Model: "m", Messages: []ChatMessage{
			{Role: "system", Content: PartsContent(ContentPart{Type: "text", Text: "be brief"})},
			{Role: "user", Content: PartsContent(ContentPart{Type: "text", Text: "look"},
				ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "https://x/a.png", Detail: "low"}})},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Type: "function", Function: FunctionCall{Name: "f", Arguments: `{"a":1}`}}}},
			{Role: "tool", ToolCallID: "call_1", Content: TextContent("ok")},
			{Role: "assistant", Content: TextContent("")},
		}},
	}, {
		name: "empty parts array stays an array",
		body: `{"model":"m","messages":[{"role":"user","content":[]}]}`,
		want: &ChatCompletionRequest{Model: "m", Messages: []ChatMessage{{Role: "user", Content: PartsContent()}}},
	}, {
		name: "every option",
		body: `{"model":"m","messages":[{"role":"user","content":"hi"}],
			"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}],
			"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,
			"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"strict":true}},
			"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false},
			"temperature":0.5,"top_p":0.9,"max_tokens":10,"max_completion_tokens":20,"stop":"END","seed":7,
			"presence_penalty":0.1,"frequency_penalty":-0.1,"n":1,"user":"u","safety_identifier":"s",
			"metadata":{"session_id":"abc","param.userId":"42"}}`,
		want: &ChatCompletionRequest{
			Model: "m", Messages: []ChatMessage{{Role: "user", Content: TextContent("hi")}},
			Tools: []Tool{{Type: "function", Function: &FunctionDefinition{Name: "f", Description: "d",
				Parameters: map[string]any{"type": "object"}, Strict: ptr(true)}}},
			ToolChoice: &ToolChoice{Mode: "function", Name: "f"}, ParallelToolCalls: ptr(false),
			ResponseFormat: &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaFormat{Name: "x",
				Schema: map[string]any{"type": "object"}, Strict: ptr(true)}},
			Stream: true, StreamOptions: &StreamOptions{IncludeUsage: true},
			Temperature: ptr(0.5), TopP: ptr(0.9), MaxTokens: ptr[int64](10), MaxCompletionTokens: ptr[int64](20),
			Stop: StopSequences{"END"}, Seed: ptr[int64](7), PresencePenalty: ptr(0.1), FrequencyPenalty: ptr(-0.1),
			N: ptr[int64](1), User: "u", SafetyIdentifier: "s",
			Metadata: map[string]string{"session_id": "abc", "param.userId": "42"},
		},
	}, {
		name: "stop as array, tool_choice as string, nulls",
		body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b"],"tool_choice":"required",
			"temperature":null,"stream":null,"stream_options":null,"n":null}`,
		want: &ChatCompletionRequest{Model: "m", Messages: []ChatMessage{{Role: "user", Content: TextContent("hi")}},
			Stop: StopSequences{"a", "b"}, ToolChoice: &ToolChoice{Mode: "required"}},
	}, {
		name: "stop null",
		body: `{"model":"m","messages":[],"stop":null}`,
		want: &ChatCompletionRequest{Model: "m", Messages: []ChatMessage{}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, param string
	}{
		{"malformed JSON", `{"model":"m",`, ""},
		{"trailing garbage", `{"model":"m"} x`, ""},
		{"not an object", `[1,2]`, ""},
		{"model not a string", `{"model":5,"messages":[]}`, "model"},
		{"message role not a string", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":5}]}`, "messages[1].role"},
		{"content a number", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":5}]}`, "messages[1].content"},
		{"part text a number", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":1}]}]}`,
			"messages[0].content[1].text"},
		{"arguments an object", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{}}}]}]}`,
			"messages[0].tool_calls[0].function.arguments"},
		{"message not an object", `{"model":"m","messages":["hi"]}`, "messages[0]"},
		{"tool parameters an array", `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`,
			"tools[0].function.parameters"},
		{"tool_choice a number", `{"model":"m","messages":[],"tool_choice":1}`, "tool_choice"},
		{"stop a number", `{"model":"m","messages":[],"stop":1}`, "stop"},
		{"stop element a number", `{"model":"m","messages":[],"stop":["a",1]}`, "stop[1]"},
		{"metadata value a number", `{"model":"m","messages":[],"metadata":{"a":1}}`, "metadata"},
		{"n a string", `{"model":"m","messages":[],"n":"2"}`, "n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			assertError(t, err, 400, tt.param)
		})
	}
}

func TestRequestMarshalRoundTrip(t *testing.T) {
	req := &ChatCompletionRequest{
		Model: "m",
		Messages: []ChatMessage{
			{Role: "user", Content: PartsContent(ContentPart{Type: "text", Text: "hi"})},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Type: "function", Function: FunctionCall{Name: "f", Arguments: "{}"}}}},
			{Role: "tool", ToolCallID: "c", Content: TextContent("done")},
		},
		ToolChoice: &ToolChoice{Mode: "function", Name: "f"},
		Stop:       StopSequences{"x"},
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, `{"model":"m","messages":[
		{"role":"user","content":[{"type":"text","text":"hi"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","content":"done","tool_call_id":"c"}],
		"tool_choice":{"type":"function","function":{"name":"f"}},"stop":["x"]}`, json.RawMessage(b))
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	assertJSON(t, `"auto"`, ToolChoice{Mode: "auto"})
}

func BenchmarkDecodeRequest(b *testing.B) {
	benchDecode(b, DecodeRequest, map[string]string{
		"hello": `{"model":"pass","stream":false,"messages":[{"role":"user","content":"Hello, how are you?"}]}`,
		"agent": benchAgentRequest,
	})
}

// benchDecode runs decode on each body, in sub-benchmarks named by the
// keys.
func benchDecode[T any](b *testing.B, decode func([]byte) (*T, error), bodies map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(bodies)) {
		b.Run(name, func(b *testing.B) {
			body := []byte(bodies[name])
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchAgentRequest is a turn of a client that runs tools: a system
// message, a tool with its schema, an assistant's call and its result.
const benchAgentRequest = `{"model":"support","stream":true,"stream_options":{"include_usage":true},"temperature":0.2,"max_completion_tokens":1024,
"messages":[
 {"role":"system","content":"You are a helpful support agent. Answer briefly and cite the invoice."},
 {"role":"user","content":[{"type":"text","text":"Why is invoice INV-7 so high?"}]},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup_invoice","arguments":"{\"invoice_id\":\"INV-7\"}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"{\"total\":1234.5,\"lines\":3}"}],
"tools":[{"type":"function","function":{"name":"lookup_invoice","description":"Look an invoice up by id.","parameters":{"type":"object","properties":{"invoice_id":{"type":"string","description":"The invoice's id"}},"required":["invoice_id"]},"strict":true}}],
"tool_choice":"auto","user":"u-42","metadata":{"session_id":"abc"}}`
