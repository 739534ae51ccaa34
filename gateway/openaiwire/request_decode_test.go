package openaiwire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// chatBodies are request bodies of the shapes clients send, and some they
// should not: the seeds of the fuzz tests, each decoded by hand.
var chatBodies = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`,
	`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}],"stop":["a","b"],"tool_choice":"auto"}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
	`{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"temperature":3,"n":2,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{}}}}`,
	`{"model":"m","messages":[{"role":"user","content":null}],"stop":"end","metadata":{"param.userId":"u"}}`,
	`{"model":"m","messages":[{"role":"user","content":"hi","reasoning_content":"x"}],"foo":1,"store":true,"logit_bias":{"1":2}}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}},{"type":"file","file":{"file_data":"data:x","filename":"a.pdf"}},{"type":"refusal","refusal":"no"}]},{"role":"assistant","content":"","refusal":"r"}]}`,
	`{"model":"m","messages":[],"reasoning_effort":"low","reasoning":{"effort":"high","summary":null},"verbosity":"low","service_tier":"flex","user":"u","safety_identifier":"s","logprobs":false,"top_logprobs":2,"seed":-7,"max_tokens":10,"max_completion_tokens":20,"top_p":0.5,"presence_penalty":-1.5e-3,"frequency_penalty":1E2,"parallel_tool_calls":true}`,
	`{"model":"m","messages":[],"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"f","description":"d","strict":true,"parameters":{"type":"object","properties":{"a":{"type":["string","null"],"enum":[1,2.5,true,false,null]}},"required":["a"],"additionalProperties":false}}}]}`,
	`{"model":"m","messages":[null,{"role":null,"content":[null]}],"tools":[null,{"function":null}],"stop":[null,"a"],"metadata":{"a":null},"functions":null,"tool_choice":{"function":null}}`,
	`{"Model":"m","MESSAGES":[{"ROLE":"user","conTent":"hi"}],"ſtream":true}`,
	` { "model" : "m\u00e9\ud83d\ude00\n" , "messages" : [ { "role" : "user" , "content" : "\"quoted\" \\ \/ \b\f\r\t \ud800 bad` + "\xff" + `" } ] } `,
	`{"model":"m","model":"n","messages":[{"role":"user","content":"a"}],"messages":[{"content":"b"}]}`,
	`{"model":"m","messages":[],"stop":[],"tools":[],"metadata":{},"response_format":{"type":"json_schema","json_schema":{"schema":{"a":[]}}}}`,
	`{"model":"m","messages":[],"temperature":1e400}`, `{"model":"m","messages":[],"n":1.0}`, `{"model":"m","messages":[],"n":9223372036854775808}`,
	`{"model":"m","messages":[],"n":-9223372036854775808,"seed":-0}`,
	`{"messages":[{"role":"user","content":5}]}`, `[]`, `null`, `{"model":`, `{"stop":[1]}`, ``, `{} x`, `"m"`,
}

// seedChat adds chatBodies and the corpus of FuzzDecodeRequest to f.
func seedChat(f *testing.F) {
	for _, s := range chatBodies {
		f.Add([]byte(s))
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeRequest")
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		_, v, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(v, "[]byte("), ")"))
		if err != nil {
			f.Fatalf("%s: %v", e.Name(), err)
		}
		f.Add([]byte(s))
	}
}

// FuzzDecodeChat decodes any body by hand and with encoding/json: a body
// the hand decoder takes, encoding/json takes too, and decodes to the
// same request (nil and empty slices and maps told apart); a body it gives
// up on is decoded by DecodeRequest as encoding/json decodes it.
func FuzzDecodeChat(f *testing.F) {
	seedChat(f)
	f.Fuzz(func(t *testing.T, body []byte) { sameAsEncodingJSON(t, body, decodeChat, DecodeRequest) })
}

// TestDecodeChatTakesClientShapes checks that the bodies of the shapes
// clients send are decoded by hand, not given to encoding/json, and that
// unusual ones are given up on.
func TestDecodeChatTakesClientShapes(t *testing.T) {
	for i, body := range chatBodies[:14] {
		var r ChatCompletionRequest
		if !decodeChat([]byte(body), &r) {
			t.Errorf("body %d given up on: %s", i, body)
		}
	}
	for _, body := range []string{
		chatBodies[14], // a member given twice
		`{"model":"m","messages":[],"temperature":1e400}`,
		`{"model":"m","messages":[],"n":1.0}`,
		`{"model":"m","messages":[{"role":"user","content":5}]}`,
		`{"model":"m"} x`,
	} {
		var r ChatCompletionRequest
		if decodeChat([]byte(body), &r) {
			t.Errorf("body taken: %s", body)
		}
	}
}

// responsesBodies are /v1/responses bodies, the seeds of FuzzDecodeResponses.
var responsesBodies = []string{
	`{"model":"m","input":"hi"}`,
	`{"model":"m","input":[{"role":"system","content":"s"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x/a.png","detail":"low"},{"type":"input_file","file_data":"data:x","filename":"a.pdf","file_id":"f","file_url":"u"}]},{"role":"assistant","content":[{"type":"output_text","text":"b"},{"type":"refusal","refusal":"no"}]}]}`,
	`{"model":"m","input":[{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{\"a\":1}"},{"type":"function_call_output","call_id":"c","output":"r"},{"type":"function_call_output","call_id":"d","output":[{"type":"input_text","text":"t"}]},{"type":"item_reference","id":"msg_1"}]}`,
	`{"model":"m","input":"x","instructions":"be brief","previous_response_id":"resp_1","conversation":"s","store":false,"stream":true,"stream_options":{"include_obfuscation":false},"background":false}`,
	`{"model":"m","input":"x","conversation":{"id":"s"},"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{}},"strict":true}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,"max_tool_calls":3}`,
	`{"model":"m","input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"},null]},"text":{"format":{"type":"json_schema","name":"s","description":"d","schema":{"type":"object"},"strict":true},"verbosity":"low"},"reasoning":{"effort":"low","summary":"auto"}}`,
	`{"model":"m","input":null,"tool_choice":"auto","temperature":0.5,"top_p":1,"presence_penalty":0,"frequency_penalty":-1,"max_output_tokens":100,"top_logprobs":0,"service_tier":"auto","truncation":"auto","include":["reasoning.encrypted_content"],"metadata":{"a":"b"},"user":"u","safety_identifier":"s","prompt_cache_key":"k"}`,
	`{"model":"m","input":[],"tools":[],"include":[],"tool_choice":{"type":"allowed_tools","tools":[]},"text":{"format":null},"conversation":null,"instructions":null}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":7}]}]}`, `{"model":"m","input":5}`,
	`{"model":"m","input":"x","conversation":7}`, `{"model":"m","input":"x","input":[]}`, `[1]`,
}

// FuzzDecodeResponses is FuzzDecodeChat for /v1/responses bodies.
func FuzzDecodeResponses(f *testing.F) {
	for _, s := range responsesBodies {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { sameAsEncodingJSON(t, body, decodeResponses, DecodeResponsesRequest) })
}

// sameAsEncodingJSON checks a hand decoder on body: a body it takes,
// encoding/json takes too, and decodes to the same request (nil and empty
// slices and maps told apart); and decode, which falls back on
// encoding/json, gives what encoding/json gives.
func sameAsEncodingJSON[T any](t *testing.T, body []byte, hand func([]byte, *T) bool, decode func([]byte) (*T, error)) {
	var got, want T
	took := hand(body, &got)
	err := json.Unmarshal(body, &want)
	if took {
		if err != nil {
			t.Fatalf("decoded by hand a body encoding/json refuses (%v)", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded by hand:\n%#v\nencoding/json:\n%#v", got, want)
		}
	}
	req, derr := decode(body)
	if (derr == nil) != (err == nil) || (err == nil && !reflect.DeepEqual(*req, want)) {
		t.Fatalf("decoded: %v, %v; encoding/json: %v", req, derr, err)
	}
}

// TestDecodeResponsesTakesClientShapes is TestDecodeChatTakesClientShapes
// for /v1/responses bodies.
func TestDecodeResponsesTakesClientShapes(t *testing.T) {
	for i, body := range responsesBodies[:8] {
		var r ResponsesRequest
		if !decodeResponses([]byte(body), &r) {
			t.Errorf("body %d given up on: %s", i, body)
		}
	}
	for _, body := range responsesBodies[8:] {
		var r ResponsesRequest
		if decodeResponses([]byte(body), &r) {
			t.Errorf("body taken: %s", body)
		}
	}
}
