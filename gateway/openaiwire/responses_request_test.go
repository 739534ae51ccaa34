package openaiwire

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

func TestDecodeResponsesRequestErrors(t *testing.T) {
	tests := []struct{ body, param string }{
		{`[1]`, ""},
		{`{"model":"m","input":5}`, "input"},
		{`{"model":"m","input":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":[{"type":"input_text","text":7}]}]}`, "input[2].content[0].text"},
		{`{"model":"m","input":"x","tools":[{"type":"function","name":1}]}`, "tools[0].name"},
		{`{"model":"m","input":"x","tool_choice":3}`, "tool_choice"},
		{`{"model":"m","input":"x","conversation":7}`, "conversation"},
	}
	for _, tt := range tests {
		_, err := DecodeResponsesRequest([]byte(tt.body))
		e, ok := AsError(err)
		if !ok || e.Status != 400 || e.Param != tt.param {
			t.Errorf("%s: error %v; want a 400 naming %q", tt.body, err, tt.param)
		}
	}
}

func TestResponsesValidateErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"no model", `{"input":"x"}`, "model"},
		{"no input", `{"model":"m"}`, "input"},
		{"background without store", `{"model":"m","input":"x","background":true,"store":false}`, "background"},
		{"conversation and previous response", `{"model":"m","input":"x","conversation":"s","previous_response_id":"resp_1"}`, "conversation"},
		{"temperature out of range", `{"model":"m","input":"x","temperature":3}`, "temperature"},
		{"max_output_tokens below 16", `{"model":"m","input":"x","max_output_tokens":8}`, "max_output_tokens"},
		{"logprobs asked by top_logprobs", `{"model":"m","input":"x","top_logprobs":2}`, "top_logprobs"},
		{"logprobs asked by include", `{"model":"m","input":"x","include":["reasoning.encrypted_content","message.output_text.logprobs"]}`, "include[1]"},
		{"unknown truncation", `{"model":"m","input":"x","truncation":"middle"}`, "truncation"},
		{"unknown service tier", `{"model":"m","input":"x","service_tier":"gold"}`, "service_tier"},
		{"unknown reasoning effort", `{"model":"m","input":"x","reasoning":{"effort":"max"}}`, "reasoning.effort"},
		{"unknown verbosity", `{"model":"m","input":"x","text":{"verbosity":"loud"}}`, "text.verbosity"},
		{"a hosted tool", `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"a bad function name", `{"model":"m","input":"x","tools":[{"type":"function","name":"a b"}]}`, "tools[0].name"},
		{"a duplicate function", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, "tools[1].name"},
		{"tool_choice naming no tool", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, "tool_choice.name"},
		{"allowed tools naming no tool", `{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"g"}]}}`, "tool_choice.tools[0].name"},
		{"required without tools", `{"model":"m","input":"x","tool_choice":"required"}`, "tool_choice"},
		{"json_schema without schema", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"a"}}}`, "text.format.schema"},
		{"unknown format", `{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type"},
		{"too much metadata", `{"model":"m","input":"x","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata"},
		{"an unknown item type", `{"model":"m","input":[{"type":"user_message","content":"x"}]}`, "input[0].type"},
		{"a message without role", `{"model":"m","input":[{"type":"message","content":"x"}]}`, "input[0].role"},
		{"an unknown role", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, "input[0].role"},
		{"a message without content", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content"},
		{"an image without URL", `{"model":"m","input":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"input_image","detail":"low"}]}]}`, "input[1].content[0].image_url"},
		{"an image that is no URL", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"ftp://x"}]}]}`, "input[0].content[1].image_url"},
		{"an image by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input[0].content[0].file_id"},
		{"a bad image detail", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png","detail":"huge"}]}]}`, "input[0].content[0].detail"},
		{"a file that is not inline", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://x/a.pdf"}]}]}`, "input[0].content[0].file_data"},
		{"an image in a system message", `{"model":"m","input":[{"role":"system","content":[{"type":"input_image","image_url":"https://x/a.png"}]}]}`, "input[0].content[0].type"},
		{"a function call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id"},
		{"function call arguments that are no object", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"}]}`, "input[0].arguments"},
		{"an output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{"an output without output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output"},
		{"an unknown item reference", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"item_reference","id":"msg_9"}]}`, "input[1].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeResponsesRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			_, err = req.Validate(nil)
			e, ok := AsError(err)
			if !ok || e.Status != 400 || e.Param != tt.param {
				t.Errorf("error %v; want a 400 naming %q", err, tt.param)
			}
		})
	}
}

func TestResponsesConversation(t *testing.T) {
	text := genai.NewPartFromText
	call := func(id, name string) *genai.Part {
		return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: map[string]any{"a": 1.0}}}
	}
	output := func(id, name, result string) *genai.Part {
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: map[string]any{"result": result}}}
	}
	resolve := func(id string) (InputItem, bool) {
		if id == "msg_old" {
			return InputItem{Type: ItemMessage, Role: RoleAssistant, Content: &InputContent{Text: "stored answer"}}, true
		}
		return InputItem{}, false
	}
	tests := []struct {
		name, body string
		want       Conversation
	}{{
		name: "a string is one user message",
		body: `{"model":"m","input":"hello","instructions":"be brief"}`,
		want: Conversation{System: "be brief", New: []*genai.Content{{Role: "user", Parts: []*genai.Part{text("hello")}}}},
	}, {
		name: "items without type, output fields ignored, system text collected",
		body: `{"model":"m","instructions":"I","input":[
			{"role":"developer","content":"D"},
			{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/a.png","detail":"high"},{"type":"input_file","filename":"f.pdf","file_data":"data:application/pdf;base64,JVBE"}]},
			{"id":"msg_1","type":"message","role":"assistant","status":"completed","agentgate":{"author":"greeter"},"content":[{"type":"output_text","text":"seen","annotations":[]}]},
			{"role":"system","content":[{"type":"input_text","text":"S"}]},
			{"role":"user","content":"and?"}]}`,
		want: Conversation{
			System: "I\n\nD\n\nS",
			History: []*genai.Content{
				{Role: "user", Parts: []*genai.Part{text("look"),
					{FileData: &genai.FileData{FileURI: "https://x/a.png", MIMEType: "image/png"},
						MediaResolution: &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionHigh}},
					{InlineData: &genai.Blob{Data: []byte("%PD"), MIMEType: "application/pdf"}}}},
				{Role: "model", Parts: []*genai.Part{text("seen")}},
			},
			New: []*genai.Content{{Role: "user", Parts: []*genai.Part{text("and?")}}},
		},
	}, {
		name: "a resent history: calls join the assistant's content, outputs after the last call are new",
		body: `{"model":"m","input":[
			{"role":"user","content":"weather?"},
			{"type":"message","role":"assistant","content":"Checking."},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"a\":1}"},
			{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{\"a\":1}"},
			{"type":"function_call_output","call_id":"call_1","output":"sunny"},
			{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]}]}`,
		want: Conversation{
			History: []*genai.Content{
				{Role: "user", Parts: []*genai.Part{text("weather?")}},
				{Role: "model", Parts: []*genai.Part{text("Checking."), call("call_1", "get_weather"), call("call_2", "get_time")}},
			},
			New: []*genai.Content{{Role: "user", Parts: []*genai.Part{output("call_1", "", "sunny"), output("call_2", "", "noon")}}},
		},
	}, {
		name: "outputs answered earlier are history, named after their calls",
		body: `{"model":"m","input":[
			{"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"},
			{"type":"function_call_output","call_id":"call_1","output":"one"},
			{"type":"item_reference","id":"msg_old"},
			{"role":"user","content":"next"}]}`,
		want: Conversation{
			History: []*genai.Content{
				{Role: "model", Parts: []*genai.Part{call("call_1", "f")}},
				{Role: "user", Parts: []*genai.Part{output("call_1", "f", "one")}},
				{Role: "model", Parts: []*genai.Part{text("stored answer")}},
			},
			New: []*genai.Content{{Role: "user", Parts: []*genai.Part{text("next")}}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeResponsesRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := req.Validate(resolve)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conversation (-want +got):\n%s", diff)
			}
			if req.Input.Items != nil && strings.Contains(tt.body, "item_reference") && req.Input.Items[2].kind() != ItemReference {
				t.Error("resolving a reference changed the request")
			}
		})
	}
}

func TestResponsesSettings(t *testing.T) {
	req, err := DecodeResponsesRequest([]byte(`{"model":"m","input":"x","temperature":0.2,"max_output_tokens":64,
		"tools":[{"type":"function","name":"f","description":"does f"},{"type":"function","name":"g","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}],
		"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g"}]},
		"text":{"format":{"type":"json_schema","name":"answer","description":"d","strict":true,"schema":{"type":"object"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Validate(nil); err != nil {
		t.Fatal(err)
	}
	gen := req.GenerationSettings(nil)
	if gen == nil || *gen.Temperature != 0.2 || gen.MaxOutputTokens != 64 || gen.TopP != nil {
		t.Errorf("generation settings %+v", gen)
	}
	decls := req.FunctionDeclarations()
	if len(decls) != 2 || decls[0].Name != "f" || decls[0].Description != "does f" ||
		!cmp.Equal(decls[0].ParametersJsonSchema, map[string]any{"type": "object", "properties": map[string]any{}}) ||
		!cmp.Equal(decls[1].ParametersJsonSchema, map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}) {
		t.Errorf("declarations %+v", decls)
	}
	want := &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"g"}}}
	if diff := cmp.Diff(want, req.ToolConfig()); diff != "" {
		t.Errorf("tool config (-want +got):\n%s", diff)
	}
	f, err := req.OutputFormat()
	strict := true
	if diff := cmp.Diff(OutputFormat{JSON: true, Schema: map[string]any{"type": "object"}, Name: "answer", Description: "d", Strict: &strict}, f); err != nil || diff != "" {
		t.Errorf("output format (-want +got):\n%s %v", diff, err)
	}
}

func BenchmarkDecodeResponsesRequest(b *testing.B) {
	benchDecode(b, DecodeResponsesRequest, map[string]string{
		"hello": `{"model":"pass","input":"Hello, how are you?"}`,
		"agent": `{"model":"support","stream":true,"store":false,"instructions":"You are a helpful support agent. Answer briefly and cite the invoice.",
"input":[{"role":"user","content":[{"type":"input_text","text":"Why is invoice INV-7 so high?"}]},
 {"type":"function_call","call_id":"call_1","name":"lookup_invoice","arguments":"{\"invoice_id\":\"INV-7\"}"},
 {"type":"function_call_output","call_id":"call_1","output":"{\"total\":1234.5,\"lines\":3}"}],
"tools":[{"type":"function","name":"lookup_invoice","description":"Look an invoice up by id.","parameters":{"type":"object","properties":{"invoice_id":{"type":"string","description":"The invoice's id"}},"required":["invoice_id"]},"strict":true}],
"tool_choice":"auto","temperature":0.2,"max_output_tokens":1024,"metadata":{"session_id":"abc"}}`,
	})
}
