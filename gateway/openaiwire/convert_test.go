package openaiwire

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

func TestToContents(t *testing.T) {
	call := func(id, name string, args map[string]any) *genai.Part {
		return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}
	}
	resp := func(id, name string, r map[string]any) *genai.Part {
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: r}}
	}
	text := genai.NewPartFromText
	tests := []struct {
		name       string
		msgs       []ChatMessage
		wantSystem string
		want       []*genai.Content
	}{{
		name: "system and developer joined, user text",
		msgs: []ChatMessage{
			{Role: "system", Content: TextContent("You are terse.")},
			{Role: "developer", Content: PartsContent(ContentPart{Type: "text", Text: "Line 1"}, ContentPart{Type: "text", Text: "Line 2"})},
			{Role: "system", Content: TextContent("")},
			{Role: "user", Content: TextContent("hi")},
		},
		wantSystem: "You are terse.\n\nLine 1\nLine 2",
		want:       []*genai.Content{{Role: "user", Parts: []*genai.Part{text("hi")}}},
	}, {
		name: "string and parts forms give the same content",
		msgs: []ChatMessage{
			{Role: "user", Content: TextContent("hi")},
			{Role: "user", Content: PartsContent(ContentPart{Type: "text", Text: "hi"})},
		},
		want: []*genai.Content{{Role: "user", Parts: []*genai.Part{text("hi")}}, {Role: "user", Parts: []*genai.Part{text("hi")}}},
	}, {
		name: "user media parts",
		msgs: []ChatMessage{{Role: "user", Content: PartsContent(
			ContentPart{Type: "text", Text: "what is this?"},
			ContentPart{Type: "text", Text: ""},
			ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "data:image/png;base64,iVBORw=="}},
			ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "https://example.com/cat.JPG?x=1", Detail: "high"}},
			ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "https://example.com/cat", Detail: "low"}},
			ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "http://example.com/a.webp", Detail: "auto"}},
			ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: "data:text/plain,a%20b"}},
			ContentPart{Type: "input_audio", InputAudio: &InputAudio{Data: "AAEC", Format: "mp3"}},
			ContentPart{Type: "file", File: &File{FileData: "data:application/pdf;base64,JVBERg", Filename: "a.pdf"}},
		)}},
		want: []*genai.Content{{Role: "user", Parts: []*genai.Part{
			text("what is this?"),
			{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}},
			{FileData: &genai.FileData{FileURI: "https://example.com/cat.JPG?x=1", MIMEType: "image/jpeg"},
				MediaResolution: &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionHigh}},
			{FileData: &genai.FileData{FileURI: "https://example.com/cat", MIMEType: "image/jpeg"},
				MediaResolution: &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionLow}},
			{FileData: &genai.FileData{FileURI: "http://example.com/a.webp", MIMEType: "image/webp"}},
			{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte("a b")}},
			{InlineData: &genai.Blob{MIMEType: "audio/mpeg", Data: []byte{0, 1, 2}}},
			{InlineData: &genai.Blob{MIMEType: "application/pdf", Data: []byte("%PDF")}},
		}}},
	}, {
		name: "empty user message is skipped",
		msgs: []ChatMessage{{Role: "user", Content: TextContent("")}, {Role: "user", Content: PartsContent()}},
	}, {
		name: "assistant text and tool calls, consecutive tool messages merged",
		msgs: []ChatMessage{
			{Role: "user", Content: TextContent("weather in Paris and Rome?")},
			{Role: "assistant", Content: TextContent("Checking."), ToolCalls: []ToolCall{
				{ID: "call_1", Type: "function", Function: FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
				{ID: "call_2", Type: "function", Function: FunctionCall{Name: "weather", Arguments: ""}},
			}},
			{Role: "tool", ToolCallID: "call_1", Content: TextContent(`{"temp": 20}`)},
			{Role: "tool", ToolCallID: "call_2", Content: PartsContent(ContentPart{Type: "text", Text: "sunny"})},
			{Role: "assistant", Content: TextContent("Both fine.")},
		},
		want: []*genai.Content{
			{Role: "user", Parts: []*genai.Part{text("weather in Paris and Rome?")}},
			{Role: "model", Parts: []*genai.Part{text("Checking."),
				call("call_1", "weather", map[string]any{"city": "Paris"}), call("call_2", "weather", map[string]any{})}},
			{Role: "user", Parts: []*genai.Part{
				resp("call_1", "weather", map[string]any{"temp": float64(20)}),
				resp("call_2", "weather", map[string]any{"result": "sunny"})}},
			{Role: "model", Parts: []*genai.Part{text("Both fine.")}},
		},
	}, {
		name: "assistant null and empty content with tool calls",
		msgs: []ChatMessage{
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Function: FunctionCall{Name: "f", Arguments: "{}"}}}},
			{Role: "tool", ToolCallID: "a", Content: TextContent("[1,2]")},
			{Role: "assistant", Content: TextContent(""), ToolCalls: []ToolCall{{ID: "b", Type: "function", Function: FunctionCall{Name: "g", Arguments: " "}}}},
			{Role: "tool", ToolCallID: "b", Content: TextContent("{broken")},
		},
		want: []*genai.Content{
			{Role: "model", Parts: []*genai.Part{call("a", "f", map[string]any{})}},
			{Role: "user", Parts: []*genai.Part{resp("a", "f", map[string]any{"result": "[1,2]"})}},
			{Role: "model", Parts: []*genai.Part{call("b", "g", map[string]any{})}},
			{Role: "user", Parts: []*genai.Part{resp("b", "g", map[string]any{"result": "{broken"})}},
		},
	}, {
		name: "tool message answering a call not in the request has no name",
		msgs: []ChatMessage{
			{Role: "tool", ToolCallID: "call_paused", Content: TextContent(`{"approved":true}`)},
			{Role: "tool", ToolCallID: "call_other"},
		},
		want: []*genai.Content{{Role: "user", Parts: []*genai.Part{
			resp("call_paused", "", map[string]any{"approved": true}),
			resp("call_other", "", map[string]any{"result": ""}),
		}}},
	}, {
		name: "a message between tool messages splits them",
		msgs: []ChatMessage{
			{Role: "tool", ToolCallID: "a", Content: TextContent("1")},
			{Role: "user", Content: TextContent("and?")},
			{Role: "tool", ToolCallID: "b", Content: TextContent("2")},
		},
		want: []*genai.Content{
			{Role: "user", Parts: []*genai.Part{resp("a", "", map[string]any{"result": "1"})}},
			{Role: "user", Parts: []*genai.Part{text("and?")}},
			{Role: "user", Parts: []*genai.Part{resp("b", "", map[string]any{"result": "2"})}},
		},
	}, {
		name: "assistant refusals and empty assistant skipped",
		msgs: []ChatMessage{
			{Role: "assistant", Content: PartsContent(ContentPart{Type: "text", Text: "I"}, ContentPart{Type: "refusal", Refusal: "can't"})},
			{Role: "assistant", Refusal: ptr("No.")},
			{Role: "assistant"},
		},
		want: []*genai.Content{
			{Role: "model", Parts: []*genai.Part{text("I\ncan't")}},
			{Role: "model", Parts: []*genai.Part{text("No.")}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			system, got, err := ToContents(tt.msgs)
			if err != nil {
				t.Fatalf("ToContents: %v", err)
			}
			if system != tt.wantSystem {
				t.Errorf("system = %q, want %q", system, tt.wantSystem)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("contents mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToFunctionDeclarations(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	got := ToFunctionDeclarations([]Tool{
		{Type: "function", Function: &FunctionDefinition{Name: "open_file", Description: "Opens a file", Parameters: schema, Strict: ptr(true)}},
		{Type: "function", Function: &FunctionDefinition{Name: "ping"}},
	})
	want := []*genai.FunctionDeclaration{
		{Name: "open_file", Description: "Opens a file", ParametersJsonSchema: schema},
		{Name: "ping", ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declarations mismatch (-want +got):\n%s", diff)
	}
	if got := ToFunctionDeclarations(nil); got != nil {
		t.Errorf("no tools: got %v, want nil", got)
	}
}

func TestToToolConfig(t *testing.T) {
	fc := func(mode genai.FunctionCallingConfigMode, names ...string) *genai.ToolConfig {
		return &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: mode, AllowedFunctionNames: names}}
	}
	tests := []struct {
		name string
		in   *ToolChoice
		want *genai.ToolConfig
	}{
		{"absent", nil, nil},
		{"none", &ToolChoice{Mode: "none"}, fc(genai.FunctionCallingConfigModeNone)},
		{"auto", &ToolChoice{Mode: "auto"}, fc(genai.FunctionCallingConfigModeAuto)},
		{"required", &ToolChoice{Mode: "required"}, fc(genai.FunctionCallingConfigModeAny)},
		{"named", &ToolChoice{Mode: "function", Name: "open_file"}, fc(genai.FunctionCallingConfigModeAny, "open_file")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ToToolConfig(tt.in)); diff != "" {
				t.Errorf("tool config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutputSchema(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	tests := []struct {
		name       string
		in         *ResponseFormat
		wantSchema map[string]any
		wantJSON   bool
		wantParam  string
	}{
		{"absent", nil, nil, false, ""},
		{"text", &ResponseFormat{Type: "text"}, nil, false, ""},
		{"json_object", &ResponseFormat{Type: "json_object"}, nil, true, ""},
		{"json_schema", &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaFormat{Name: "n", Schema: schema, Strict: ptr(true)}},
			schema, true, ""},
		{"json_schema without schema", &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaFormat{Name: "n"}},
			nil, false, "response_format.json_schema.schema"},
		{"json_schema without json_schema", &ResponseFormat{Type: "json_schema"}, nil, false, "response_format.json_schema"},
		{"unknown", &ResponseFormat{Type: "xml"}, nil, false, "response_format.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotSchema, gotJSON, err := OutputSchema(tt.in)
			if tt.wantParam != "" {
				assertError(t, err, 400, tt.wantParam)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantSchema, gotSchema); diff != "" || gotJSON != tt.wantJSON {
				t.Errorf("got json mode %v, want %v; schema (-want +got):\n%s", gotJSON, tt.wantJSON, diff)
			}
		})
	}
}

func TestGenerationSettings(t *testing.T) {
	base := &genai.GenerateContentConfig{
		SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: "sys"}}},
		Temperature:       ptr[float32](0.1), MaxOutputTokens: 100, StopSequences: []string{"base"},
	}
	tests := []struct {
		name string
		req  *ChatCompletionRequest
		base *genai.GenerateContentConfig
		want *genai.GenerateContentConfig
	}{{
		name: "nothing set keeps base",
		req:  &ChatCompletionRequest{},
		base: base,
		want: base,
	}, {
		name: "everything set, max_completion_tokens wins",
		req: &ChatCompletionRequest{Temperature: ptr(0.5), TopP: ptr(0.25), MaxTokens: ptr[int64](10), MaxCompletionTokens: ptr[int64](20),
			Stop: StopSequences{"END"}, Seed: ptr[int64](42), PresencePenalty: ptr(0.5), FrequencyPenalty: ptr(-1.0)},
		base: base,
		want: &genai.GenerateContentConfig{SystemInstruction: base.SystemInstruction,
			Temperature: ptr[float32](0.5), TopP: ptr[float32](0.25), MaxOutputTokens: 20, StopSequences: []string{"END"},
			Seed: ptr[int32](42), PresencePenalty: ptr[float32](0.5), FrequencyPenalty: ptr[float32](-1)},
	}, {
		name: "nothing set, nil base",
		req:  &ChatCompletionRequest{Stop: StopSequences{}},
		want: nil,
	}, {
		name: "max_tokens alone, nil base, huge values",
		req:  &ChatCompletionRequest{MaxTokens: ptr[int64](1 << 40), Seed: ptr[int64](1<<32 + 5)},
		want: &genai.GenerateContentConfig{MaxOutputTokens: 1<<31 - 1, Seed: ptr[int32](5)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GenerationSettings(tt.req, tt.base)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
			if tt.base != nil && got == tt.base {
				t.Error("base returned instead of a copy")
			}
		})
	}
	if base.Temperature == nil || *base.Temperature != 0.1 || base.StopSequences[0] != "base" {
		t.Errorf("base modified: %+v", base)
	}
}

// oneField makes a request with only the named field of
// ChatCompletionRequest set, to a value that sets a turn's settings or is
// refused where the field can be: one entry a field, which
// TestSetsTurn checks.
var oneField = func() map[string]func(r *ChatCompletionRequest) {
	two, half, yes, x := int64(2), 0.5, true, "x"
	return map[string]func(r *ChatCompletionRequest){
		"Model":               func(r *ChatCompletionRequest) { r.Model = x },
		"Messages":            func(r *ChatCompletionRequest) { r.Messages = []ChatMessage{{Role: RoleUser, Content: TextContent(x)}} },
		"Tools":               func(r *ChatCompletionRequest) { r.Tools = []Tool{{Type: x}} },
		"ToolChoice":          func(r *ChatCompletionRequest) { r.ToolChoice = &ToolChoice{Mode: x} },
		"ParallelToolCalls":   func(r *ChatCompletionRequest) { r.ParallelToolCalls = &yes },
		"ResponseFormat":      func(r *ChatCompletionRequest) { r.ResponseFormat = &ResponseFormat{Type: x} },
		"Stream":              func(r *ChatCompletionRequest) { r.Stream = true },
		"StreamOptions":       func(r *ChatCompletionRequest) { r.StreamOptions = &StreamOptions{IncludeUsage: true} },
		"Temperature":         func(r *ChatCompletionRequest) { r.Temperature = &half },
		"TopP":                func(r *ChatCompletionRequest) { r.TopP = &half },
		"MaxTokens":           func(r *ChatCompletionRequest) { r.MaxTokens = &two },
		"MaxCompletionTokens": func(r *ChatCompletionRequest) { r.MaxCompletionTokens = &two },
		"Stop":                func(r *ChatCompletionRequest) { r.Stop = StopSequences{x} },
		"Seed":                func(r *ChatCompletionRequest) { r.Seed = &two },
		"PresencePenalty":     func(r *ChatCompletionRequest) { r.PresencePenalty = &half },
		"FrequencyPenalty":    func(r *ChatCompletionRequest) { r.FrequencyPenalty = &half },
		"N":                   func(r *ChatCompletionRequest) { r.N = &two },
		"Logprobs":            func(r *ChatCompletionRequest) { r.Logprobs = &yes },
		"TopLogprobs":         func(r *ChatCompletionRequest) { r.TopLogprobs = &two },
		"ReasoningEffort":     func(r *ChatCompletionRequest) { r.ReasoningEffort = x },
		"Reasoning":           func(r *ChatCompletionRequest) { r.Reasoning = &ReasoningConfig{Effort: &x} },
		"Verbosity":           func(r *ChatCompletionRequest) { r.Verbosity = x },
		"ServiceTier":         func(r *ChatCompletionRequest) { r.ServiceTier = x },
		"User":                func(r *ChatCompletionRequest) { r.User = x },
		"SafetyIdentifier":    func(r *ChatCompletionRequest) { r.SafetyIdentifier = x },
		"Metadata":            func(r *ChatCompletionRequest) { r.Metadata = map[string]string{x: x} },
		"Functions":           func(r *ChatCompletionRequest) { r.Functions = []byte(`[{}]`) },
	}
}()

// TestSetsTurn sets each field of a request in turn (oneField) and checks
// that SetsTurn reports every one that OutputSchema, GenerationSettings,
// ToToolConfig or ModelOptions maps, and that Validate looks at the
// settings (hasSettings) of every request validateSettings refuses: a
// field added to those and not to SetsTurn or hasSettings fails here.
func TestSetsTurn(t *testing.T) {
	if (&ChatCompletionRequest{}).SetsTurn() {
		t.Fatal("a request with nothing set sets its turn")
	}
	rt := reflect.TypeFor[ChatCompletionRequest]()
	for i := range rt.NumField() {
		name := rt.Field(i).Name
		set, ok := oneField[name]
		if !ok {
			t.Errorf("oneField does not set %s", name)
			continue
		}
		var r ChatCompletionRequest
		set(&r)
		schema, jsonMode, err := OutputSchema(r.ResponseFormat)
		maps := schema != nil || jsonMode || err != nil || GenerationSettings(&r, nil) != nil ||
			ToToolConfig(r.ToolChoice) != nil || r.ModelOptions() != (model.Options{})
		if maps && !r.SetsTurn() {
			t.Errorf("%s maps to the turn's settings, but SetsTurn is false", name)
		}
		if err := r.validateSettings(); err != nil && !r.hasSettings() {
			t.Errorf("%s is refused (%v), but hasSettings is false", name, err)
		}
	}
}
