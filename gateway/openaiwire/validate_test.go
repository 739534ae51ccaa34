package openaiwire

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

func TestValidate(t *testing.T) {
	const hi = `{"role":"user","content":"hi"}`
	const fTool = `{"type":"function","function":{"name":"open_file","parameters":{"type":"object"}}}`
	withMsgs := func(msgs ...string) string {
		return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	with := func(extra string) string { return `{"model":"m","messages":[` + hi + `],` + extra + `}` }
	tests := []struct {
		name, body string
		param      string // "-" when valid
	}{
		{"minimal", withMsgs(hi), "-"},
		{"every accepted option", with(`"tools":[` + fTool + `],"tool_choice":{"type":"function","function":{"name":"open_file"}},
			"parallel_tool_calls":false,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},
			"stream":false,"stream_options":{"include_usage":true},"temperature":2,"top_p":1,"max_tokens":1,
			"max_completion_tokens":5,"stop":["a","b"],"seed":-3,"presence_penalty":-2,"frequency_penalty":2,"n":1,
			"user":"u","safety_identifier":"s","metadata":{"k":"v"},"store":true,"prompt_cache_key":"p",
			"logprobs":false,"service_tier":"auto","reasoning_effort":"low","functions":null`), "-"},
		{"parts for system, developer, user", withMsgs(`{"role":"system","content":[{"type":"text","text":"s"}]}`,
			`{"role":"developer","content":[{"type":"text","text":"d"}]}`, `{"role":"user","content":[{"type":"text","text":"u"}]}`), "-"},
		{"tool round trip with null content", withMsgs(hi,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`,
			`{"role":"tool","tool_call_id":"call_1","content":"ok"}`), "-"},
		{"tool round trip with empty content", withMsgs(hi,
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`,
			`{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"ok"}]}`), "-"},
		{"tool message answering a call not in the request", withMsgs(`{"role":"tool","tool_call_id":"call_x","content":"ok"}`), "-"},
		{"assistant refusal parts", withMsgs(hi, `{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}`), "-"},

		{"missing model", `{"messages":[` + hi + `]}`, "model"},
		{"missing messages", `{"model":"m"}`, "messages"},
		{"empty messages", withMsgs(), "messages"},
		{"unknown role", withMsgs(hi, `{"role":"robot","content":"x"}`), "messages[1].role"},
		{"legacy function role", withMsgs(hi, `{"role":"function","name":"f","content":"x"}`), "messages[1].role"},
		{"legacy functions", with(`"functions":[{"name":"f"}]`), "functions"},
		{"user without content", withMsgs(`{"role":"user"}`), "messages[0].content"},
		{"system with null content", withMsgs(`{"role":"system","content":null}`, hi), "messages[0].content"},
		{"system with an image", withMsgs(`{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://a/b.png"}}]}`, hi),
			"messages[0].content[0].type"},
		{"user with an unknown part", withMsgs(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"video","video":{}}]}`),
			"messages[0].content[1].type"},
		{"user with a refusal part", withMsgs(`{"role":"user","content":[{"type":"refusal","refusal":"a"}]}`),
			"messages[0].content[0].type"},
		{"image without url", withMsgs(`{"role":"user","content":[{"type":"image_url","image_url":{}}]}`),
			"messages[0].content[0].image_url.url"},
		{"image with a bad scheme", withMsgs(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://a/b.png"}}]}`),
			"messages[0].content[0].image_url.url"},
		{"image with bad base64", withMsgs(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]}`),
			"messages[0].content[0].image_url.url"},
		{"image data URL without type", withMsgs(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:;base64,AAAA"}}]}`),
			"messages[0].content[0].image_url.url"},
		{"audio in an unknown format", withMsgs(`{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"midi"}}]}`),
			"messages[0].content[0].input_audio.format"},
		{"file by id", withMsgs(`{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}`),
			"messages[0].content[0].file.file_data"},
		{"tool without tool_call_id", withMsgs(hi, `{"role":"tool","content":"x"}`), "messages[1].tool_call_id"},
		{"new message after an assistant message", withMsgs(hi, `{"role":"assistant","content":"a"}`, hi,
			`{"role":"tool","content":"x"}`), "messages[3].tool_call_id"},
		{"tool with an image", withMsgs(`{"role":"tool","tool_call_id":"a","content":[{"type":"image_url","image_url":{"url":"https://a/b"}}]}`),
			"messages[0].content[0].type"},
		{"tool call arguments not JSON", withMsgs(hi,
			`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{nope"}}]}`),
			"messages[1].tool_calls[1].function.arguments"},
		{"tool call arguments a JSON array", withMsgs(hi,
			`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}`),
			"messages[1].tool_calls[0].function.arguments"},
		{"tool call arguments null", withMsgs(hi,
			`{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"null"}}]}`),
			"messages[1].tool_calls[0].function.arguments"},
		{"tool call without id", withMsgs(hi, `{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`),
			"messages[1].tool_calls[0].id"},
		{"tool call without name", withMsgs(hi, `{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"arguments":"{}"}}]}`),
			"messages[1].tool_calls[0].function.name"},
		{"tool call of another type", withMsgs(hi, `{"role":"assistant","tool_calls":[{"id":"a","type":"custom","function":{"name":"f"}}]}`),
			"messages[1].tool_calls[0].type"},
		{"n 2", with(`"n":2`), "n"},
		{"n 0", with(`"n":0`), "n"},
		{"temperature too high", with(`"temperature":2.5`), "temperature"},
		{"top_p negative", with(`"top_p":-0.1`), "top_p"},
		{"presence penalty too low", with(`"presence_penalty":-3`), "presence_penalty"},
		{"frequency penalty too high", with(`"frequency_penalty":3`), "frequency_penalty"},
		{"max_tokens 0", with(`"max_tokens":0`), "max_tokens"},
		{"max_completion_tokens negative", with(`"max_completion_tokens":-1`), "max_completion_tokens"},
		{"tool of another type", with(`"tools":[` + fTool + `,{"type":"custom","custom":{"name":"x"}}]`), "tools[1].type"},
		{"tool without function", with(`"tools":[{"type":"function"}]`), "tools[0].function"},
		{"tool name with a space", with(`"tools":[{"type":"function","function":{"name":"open file"}}]`), "tools[0].function.name"},
		{"tool name empty", with(`"tools":[{"type":"function","function":{"name":""}}]`), "tools[0].function.name"},
		{"tool name too long", with(`"tools":[{"type":"function","function":{"name":"` + strings.Repeat("a", 65) + `"}}]`), "tools[0].function.name"},
		{"tool name 64 long", with(`"tools":[{"type":"function","function":{"name":"` + strings.Repeat("a", 64) + `"}}]`), "-"},
		{"duplicate tool names", with(`"tools":[` + fTool + `,` + fTool + `]`), "tools[1].function.name"},
		{"tool_choice unknown string", with(`"tool_choice":"sometimes"`), "tool_choice"},
		{"tool_choice required without tools", with(`"tool_choice":"required"`), "tool_choice"},
		{"tool_choice none without tools", with(`"tool_choice":"none"`), "-"},
		{"tool_choice naming an undeclared function", with(`"tools":[` + fTool + `],"tool_choice":{"type":"function","function":{"name":"g"}}`),
			"tool_choice.function.name"},
		{"tool_choice object without a name", with(`"tools":[` + fTool + `],"tool_choice":{"type":"function"}`), "tool_choice.function.name"},
		{"tool_choice allowed_tools", with(`"tools":[` + fTool + `],"tool_choice":{"type":"allowed_tools","allowed_tools":{}}`), "tool_choice"},
		{"json_schema without json_schema", with(`"response_format":{"type":"json_schema"}`), "response_format.json_schema"},
		{"json_schema without schema", with(`"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`),
			"response_format.json_schema.schema"},
		{"unknown response format", with(`"response_format":{"type":"yaml"}`), "response_format.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			_, err = req.Validate()
			if tt.param == "-" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			assertError(t, err, 400, tt.param)
		})
	}
}

func TestValidateConversation(t *testing.T) {
	text := genai.NewPartFromText
	resp := func(id, name string) *genai.Part {
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{"result": "ok"}}}
	}
	call := &genai.Part{FunctionCall: &genai.FunctionCall{ID: "call_1", Name: "f", Args: map[string]any{}}}
	tests := []struct {
		name string
		msgs []string
		want Conversation
	}{{
		name: "no assistant message: all is new",
		msgs: []string{`{"role":"system","content":"s"}`, `{"role":"developer","content":[{"type":"text","text":"d"}]}`, `{"role":"user","content":"hi"}`},
		want: Conversation{System: "s\n\nd", New: []*genai.Content{{Role: "user", Parts: []*genai.Part{text("hi")}}}},
	}, {
		name: "split after the last assistant message",
		msgs: []string{`{"role":"user","content":"hi"}`,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`,
			`{"role":"tool","tool_call_id":"call_1","content":"ok"}`,
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]}`,
			`{"role":"system","content":"s"}`,
			`{"role":"tool","tool_call_id":"call_2","content":"ok"}`,
			`{"role":"user","content":"and?"}`},
		want: Conversation{
			System: "s",
			History: []*genai.Content{
				{Role: "user", Parts: []*genai.Part{text("hi")}},
				{Role: "model", Parts: []*genai.Part{call}},
				{Role: "user", Parts: []*genai.Part{resp("call_1", "f")}},
				{Role: "model", Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "call_2", Name: "g", Args: map[string]any{}}}}},
			},
			New: []*genai.Content{
				{Role: "user", Parts: []*genai.Part{resp("call_2", "")}},
				{Role: "user", Parts: []*genai.Part{text("and?")}},
			},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(`{"model":"m","messages":[` + strings.Join(tt.msgs, ",") + `]}`))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			got, err := req.Validate()
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conversation (-want +got):\n%s", diff)
			}
		})
	}
}
