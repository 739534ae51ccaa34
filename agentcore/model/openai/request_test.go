package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
	"github.com/agentgate/agentgate/agentcore/model/internal/wire"
)

const okCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test-0125",
 "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
 "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

// TestGoldenRequests records what a tree's turn sends upstream: the system
// prompt with the sub-agent roster, transfer_to_agent with its enum, a tool
// declared with a Gemini schema, earlier calls and their results fed back
// under their ids, an inline image and the generation settings.
func TestGoldenRequests(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
	}{
		{"tree_turn_stream", true},
		{"tree_turn", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.stream {
					sse(w, chunk(`{"role":"assistant","content":"ok"}`, "stop"))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(okCompletion))
			})
			req := providertest.LoadRequest(t, "tree_request")
			res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), req, tc.stream)
			if res.err != nil {
				t.Fatal(res.err)
			}
			reqs := up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
				t.Errorf("request line = %s %s, want POST /v1/chat/completions", got.Method, got.Path)
			}
			if auth := got.Header.Get("Authorization"); auth != "Bearer "+testKey {
				t.Errorf("Authorization = %q", auth)
			}
			providertest.CheckGolden(t, tc.name, got.Body)
		})
	}
}

// TestRequestMapping checks single aspects of the body against expected
// JSON fragments.
func TestRequestMapping(t *testing.T) {
	jsonSchemaOut := map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}
	for _, tc := range []struct {
		name string
		req  *model.Request
		want map[string]string // top-level key -> JSON value ("" = absent)
	}{
		{
			name: "output schema as JSON Schema",
			req: &model.Request{Config: &genai.GenerateContentConfig{
				ResponseMIMEType: "application/json", ResponseJsonSchema: jsonSchemaOut,
			}},
			want: map[string]string{"response_format": `{"type":"json_schema","json_schema":{"name":"output","strict":false,
				"schema":{"type":"object","properties":{"answer":{"type":"string"}}}}}`},
		},
		{
			name: "output schema as Gemini schema",
			req: &model.Request{Config: &genai.GenerateContentConfig{
				ResponseMIMEType: "application/json",
				ResponseSchema: &genai.Schema{Type: genai.TypeArray, Items: &genai.Schema{
					Type: genai.TypeObject, Required: []string{"n"},
					Properties: map[string]*genai.Schema{"n": {Type: genai.TypeInteger, Minimum: genai.Ptr(1.0)}},
				}},
			}},
			want: map[string]string{"response_format": `{"type":"json_schema","json_schema":{"name":"output","strict":false,
				"schema":{"type":"array","items":{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":1}}}}}}`},
		},
		{
			name: "the client's schema name and strictness, reasoning, verbosity and tier",
			req: &model.Request{Config: &genai.GenerateContentConfig{
				ResponseMIMEType: "application/json", ResponseJsonSchema: jsonSchemaOut,
			}, Options: model.Options{SchemaName: "answer", SchemaStrict: genai.Ptr(true), ReasoningEffort: "low",
				Verbosity: "high", ServiceTier: "flex", ParallelToolCalls: genai.Ptr(false)}},
			want: map[string]string{"response_format": `{"type":"json_schema","json_schema":{"name":"answer","strict":true,
				"schema":{"type":"object","properties":{"answer":{"type":"string"}}}}}`,
				"reasoning_effort": `"low"`, "verbosity": `"high"`, "service_tier": `"flex"`,
				"parallel_tool_calls": ""}, // no tools: OpenAI would refuse it
		},
		{
			name: "parallel_tool_calls goes with tools",
			req: &model.Request{Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "f"}}}}},
				Options: model.Options{ParallelToolCalls: genai.Ptr(false)}},
			want: map[string]string{"parallel_tool_calls": "false", "reasoning_effort": "", "verbosity": "", "service_tier": ""},
		},
		{
			name: "image detail from the media resolution",
			req: &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{
				{FileData: &genai.FileData{FileURI: "https://x/a.png", MIMEType: "image/png"},
					MediaResolution: &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionLow}},
				{InlineData: &genai.Blob{Data: []byte("x"), MIMEType: "image/png"},
					MediaResolution: &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionHigh}},
				{FileData: &genai.FileData{FileURI: "https://x/b.png", MIMEType: "image/png"}},
			}}}},
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png","detail":"low"}},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,eA==","detail":"high"}},{"type":"image_url","image_url":{"url":"https://x/b.png"}}]}]`},
		},
		{
			name: "JSON without a schema",
			req:  &model.Request{Config: &genai.GenerateContentConfig{ResponseMIMEType: "application/json"}},
			want: map[string]string{"response_format": `{"type":"json_object"}`},
		},
		{
			name: "no config at all",
			req:  &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}},
			want: map[string]string{
				"messages": `[{"role":"user","content":"hi"}]`, "tools": "", "tool_choice": "", "temperature": "",
				"response_format": "", "max_completion_tokens": "", "stream_options": "",
			},
		},
		{
			name: "mode NONE",
			req:  toolMode(genai.FunctionCallingConfigModeNone),
			want: map[string]string{"tool_choice": `"none"`},
		},
		{
			name: "mode ANY",
			req:  toolMode(genai.FunctionCallingConfigModeAny),
			want: map[string]string{"tool_choice": `"required"`},
		},
		{
			name: "mode ANY with one function",
			req:  toolMode(genai.FunctionCallingConfigModeAny, "transfer_to_agent"),
			want: map[string]string{"tool_choice": `{"type":"function","function":{"name":"transfer_to_agent"}}`},
		},
		{
			name: "mode ANY with two functions",
			req:  toolMode(genai.FunctionCallingConfigModeAny, "a", "b"),
			want: map[string]string{"tool_choice": `{"type":"allowed_tools","allowed_tools":{"mode":"required",
				"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]}}`},
		},
		{
			name: "mode AUTO",
			req:  toolMode(genai.FunctionCallingConfigModeAuto),
			want: map[string]string{"tool_choice": `"auto"`},
		},
		{
			name: "declaration without parameters",
			req: &model.Request{Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{
				FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "exit_loop"}},
			}}}},
			want: map[string]string{"tools": `[{"type":"function","function":{"name":"exit_loop","parameters":{"type":"object","properties":{}}}}]`},
		},
		{
			name: "calls without ids pair with their responses by name",
			req: &model.Request{Contents: []*genai.Content{
				{Role: genai.RoleModel, Parts: []*genai.Part{
					genai.NewPartFromFunctionCall("f", map[string]any{"x": 1.0}),
					genai.NewPartFromFunctionCall("g", nil),
				}},
				{Role: genai.RoleUser, Parts: []*genai.Part{
					genai.NewPartFromFunctionResponse("g", map[string]any{"ok": true}),
					genai.NewPartFromFunctionResponse("f", map[string]any{"y": 2.0}),
				}},
			}},
			want: map[string]string{"messages": `[
				{"role":"assistant","tool_calls":[
					{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
					{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"call_2","content":"{\"ok\":true}"},
				{"role":"tool","tool_call_id":"call_1","content":"{\"y\":2}"}]`},
		},
		{
			name: "thoughts are not sent back",
			req: &model.Request{Contents: []*genai.Content{
				{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "hmm", Thought: true}, {Text: "Hello"}}},
			}},
			want: map[string]string{"messages": `[{"role":"assistant","content":"Hello"}]`},
		},
		{
			name: "PDF and image URL",
			req: &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{
				{InlineData: &genai.Blob{MIMEType: "application/pdf", Data: []byte("%PDF"), DisplayName: "a.pdf"}},
				genai.NewPartFromURI("https://example.com/cat.jpg", "image/jpeg"),
			}}}},
			want: map[string]string{"messages": `[{"role":"user","content":[
				{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERg==","filename":"a.pdf"}},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]}]`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p chatRequest
			if err := buildParams(&p, "m", tc.req); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(&p)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatal(err)
			}
			for key, want := range tc.want {
				got, ok := body[key]
				if want == "" {
					if ok {
						t.Errorf("%s = %s, want it absent", key, got)
					}
					continue
				}
				var wantV, gotV any
				if err := json.Unmarshal([]byte(want), &wantV); err != nil {
					t.Fatalf("bad want for %s: %v", key, err)
				}
				_ = json.Unmarshal(got, &gotV)
				if diff := cmp.Diff(wantV, gotV); diff != "" {
					t.Errorf("%s (-want +got):\n%s", key, diff)
				}
			}
		})
	}
}

func toolMode(mode genai.FunctionCallingConfigMode, names ...string) *model.Request {
	return &model.Request{Config: &genai.GenerateContentConfig{ToolConfig: &genai.ToolConfig{
		FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: mode, AllowedFunctionNames: names},
	}}}
}

// TestRequestRefused covers requests chat completions cannot express; they
// fail before anything is sent.
func TestRequestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *model.Request
		want string
	}{
		{
			name: "built-in Google Search",
			req:  &model.Request{Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{GoogleSearch: &genai.GoogleSearch{}}}}},
			want: "googleSearch",
		},
		{
			name: "response without a call",
			req: &model.Request{Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{
				genai.NewPartFromFunctionResponse("orphan", map[string]any{}),
			}}}},
			want: "orphan",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
			res := run(t, context.Background(), up.provider(t, Config{}).Model("m"), tc.req, true)
			me, ok := model.AsError(res.err)
			if !ok || me.Code != "unsupported" || me.Retryable || !strings.Contains(me.Message, tc.want) {
				t.Fatalf("err = %#v, want an unsupported *model.Error mentioning %q", res.err, tc.want)
			}
			if n := len(up.Requests()); n != 0 {
				t.Errorf("upstream got %d requests, want none", n)
			}
		})
	}
}

// TestHeaderCopies: every request gets headers of its own, which a change
// to one request's headers leaves alone; a configured Accept gives way to
// the attempt's.
func TestHeaderCopies(t *testing.T) {
	base := http.Header{}
	base.Set("Content-Type", "application/json")
	base.Set("X-Configured", "yes")
	base.Set("Accept", "text/plain")
	copier := wire.HeaderCopier(base)
	want := http.Header{"Content-Type": {"application/json"}, "X-Configured": {"yes"}, "Accept": {"text/event-stream"}}

	first := copier("text/event-stream")
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("headers (-want +got):\n%s", diff)
	}
	for k := range first {
		first.Add(k, "more")
	}
	for k, v := range want {
		if got := first[k]; !slices.Equal(got, []string{v[0], "more"}) {
			t.Errorf("%s after adding a value to every header = %q", k, got)
		}
	}
	first.Del("Accept")
	if diff := cmp.Diff(want, copier("text/event-stream")); diff != "" {
		t.Errorf("headers after a change to an earlier copy (-want +got):\n%s", diff)
	}
	if got := base.Get("Accept"); got != "text/plain" {
		t.Errorf("the configured headers changed: Accept = %q", got)
	}
}

// TestRequestHeaderShared: without a cookie jar the client only reads a
// request's headers, and requests share one copy per Accept; with one,
// each request gets a copy of its own.
func TestRequestHeaderShared(t *testing.T) {
	copier := wire.ProviderHeader(userAgent, http.Header{"Authorization": {"Bearer k"}}, map[string]string{"X-Configured": "yes"})
	shared := requestHeader(&http.Client{}, copier)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	own := requestHeader(&http.Client{Jar: jar}, copier)
	for _, stream := range []bool{false, true} {
		want := copier("application/json")
		if stream {
			want = copier("text/event-stream")
		}
		for _, h := range []func(bool) http.Header{shared, own} {
			if diff := cmp.Diff(want, h(stream)); diff != "" {
				t.Errorf("stream %v: headers (-want +got):\n%s", stream, diff)
			}
		}
		if a, b := shared(stream), shared(stream); reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
			t.Errorf("stream %v: without a jar, two requests' headers are two maps", stream)
		}
		if a, b := own(stream), own(stream); reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
			t.Errorf("stream %v: with a jar, two requests share their headers", stream)
		}
	}
}

// joinText of one part (the usual instruction) and of several, thoughts
// and empty parts left out either way.
func TestJoinText(t *testing.T) {
	for _, tc := range []struct {
		parts []*genai.Part
		want  string
	}{
		{nil, ""},
		{[]*genai.Part{{Text: "Answer."}}, "Answer."},
		{[]*genai.Part{{Text: "hmm", Thought: true}}, ""},
		{[]*genai.Part{nil}, ""},
		{[]*genai.Part{{Text: ""}}, ""},
		{[]*genai.Part{{Text: "a"}, nil, {Text: "hmm", Thought: true}, {Text: ""}, {Text: "b"}}, "a\n\nb"},
		{[]*genai.Part{{Text: "hmm", Thought: true}, {Text: "b"}}, "b"},
	} {
		if got := joinText(&genai.Content{Parts: tc.parts}, "\n\n"); got != tc.want {
			t.Errorf("joinText(%d parts) = %q, want %q", len(tc.parts), got, tc.want)
		}
	}
	if got := joinText(nil, ""); got != "" {
		t.Errorf("joinText(nil) = %q", got)
	}
}
