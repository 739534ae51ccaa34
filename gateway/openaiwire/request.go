package openaiwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ChatCompletionRequest is the body of POST /v1/chat/completions. It accepts
// what the official SDKs, the Vercel AI SDK, LangChain and Open WebUI send;
// fields it does not name are ignored when decoding.
type ChatCompletionRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`

	Tools             []Tool          `json:"tools,omitempty"`
	ToolChoice        *ToolChoice     `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat    *ResponseFormat `json:"response_format,omitempty"`

	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`

	Temperature         *float64      `json:"temperature,omitempty"`
	TopP                *float64      `json:"top_p,omitempty"`
	MaxTokens           *int64        `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64        `json:"max_completion_tokens,omitempty"`
	Stop                StopSequences `json:"stop,omitempty"`
	Seed                *int64        `json:"seed,omitempty"`
	PresencePenalty     *float64      `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64      `json:"frequency_penalty,omitempty"`
	N                   *int64        `json:"n,omitempty"`

	// Logprobs and TopLogprobs are refused (Validate): an agent tree's
	// answer comes from several model calls.
	Logprobs    *bool  `json:"logprobs,omitempty"`
	TopLogprobs *int64 `json:"top_logprobs,omitempty"`
	// ReasoningEffort, or Reasoning.Effort (the form some clients send),
	// Verbosity and ServiceTier reach the model calls of the turn.
	ReasoningEffort string           `json:"reasoning_effort,omitempty"`
	Reasoning       *ReasoningConfig `json:"reasoning,omitempty"`
	Verbosity       string           `json:"verbosity,omitempty"`
	ServiceTier     string           `json:"service_tier,omitempty"`

	User             string            `json:"user,omitempty"`
	SafetyIdentifier string            `json:"safety_identifier,omitempty"`
	Metadata         map[string]string `json:"metadata,omitempty"`

	// Functions is the legacy form of Tools. It is kept only so Validate
	// can reject it instead of silently dropping the caller's tools.
	Functions json.RawMessage `json:"functions,omitempty"`
}

// StreamOptions is the request's stream_options. include_obfuscation and
// anything else is accepted and ignored.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ChatMessage is one entry of the request's messages. Fields other roles
// use (name, audio, annotations, reasoning_content, legacy function_call)
// are ignored.
type ChatMessage struct {
	Role string `json:"role"`
	// Content is nil when the message has no content or null.
	Content *Content `json:"content"`
	// ToolCalls are an assistant message's function calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Refusal is an assistant message's refusal text.
	Refusal *string `json:"refusal,omitempty"`
}

// Content is a message's content: the string form (Text) or the array form
// (Parts, non-nil when an array was sent, even an empty one).
type Content struct {
	Text  string
	Parts []ContentPart
}

// TextContent returns string content.
func TextContent(s string) *Content { return &Content{Text: s} }

// PartsContent returns array content.
func PartsContent(parts ...ContentPart) *Content {
	if parts == nil {
		parts = []ContentPart{}
	}
	return &Content{Parts: parts}
}

// UnmarshalJSON accepts a string or an array of parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case '"':
		*c = Content{}
		return unquote(b, &c.Text)
	case '[':
		*c = Content{Parts: []ContentPart{}}
		return json.Unmarshal(b, &c.Parts)
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[Content]()}
}

// MarshalJSON writes the array form when Parts is non-nil, else the string.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

// Content part types.
const (
	PartText       = "text"
	PartImageURL   = "image_url"
	PartInputAudio = "input_audio"
	PartFile       = "file"
	PartRefusal    = "refusal"
)

// ContentPart is one element of array content.
type ContentPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ImageURL   *ImageURL   `json:"image_url,omitempty"`
	InputAudio *InputAudio `json:"input_audio,omitempty"`
	File       *File       `json:"file,omitempty"`
	Refusal    string      `json:"refusal,omitempty"`
}

// ImageURL is an image_url part: an http(s) URL or a data: URL, and the
// requested detail (auto, low, high).
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// InputAudio is an input_audio part: base64 data and its format (wav, mp3).
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// File is a file part. Only inline file_data (a data: URL) is supported;
// file_id refers to OpenAI's Files API, which we do not have.
type File struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// ToolCall is a function call made by the assistant, both in requests
// (assistant history) and in non-streaming responses. Arguments is a JSON
// string, as OpenAI sends it.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function of a ToolCall.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is an entry of the request's tools.
type Tool struct {
	Type     string              `json:"type"`
	Function *FunctionDefinition `json:"function,omitempty"`
}

// FunctionDefinition declares a client function. Parameters is a JSON
// Schema object, nil when absent.
type FunctionDefinition struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Strict      *bool          `json:"strict,omitempty"`
}

// Tool choice modes.
const (
	ToolChoiceNone     = "none"
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	// ToolChoiceFunction is the Mode of the object form naming a function.
	ToolChoiceFunction = "function"
)

// ToolChoice is the request's tool_choice: the string form sets Mode to
// "none", "auto" or "required"; the object form
// {"type": "function", "function": {"name": ...}} sets Mode to its type and
// Name to the function's name.
type ToolChoice struct {
	Mode string
	Name string
}

type toolChoiceObject struct {
	Type     string `json:"type"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function,omitempty"`
}

// UnmarshalJSON accepts the string and the object form.
func (t *ToolChoice) UnmarshalJSON(b []byte) error {
	*t = ToolChoice{}
	switch firstByte(b) {
	case '"':
		return unquote(b, &t.Mode)
	case '{':
		var o toolChoiceObject
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		t.Mode = o.Type
		if o.Function != nil {
			t.Name = o.Function.Name
		}
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[ToolChoice]()}
}

// MarshalJSON writes the object form when Mode is "function", else the
// string.
func (t ToolChoice) MarshalJSON() ([]byte, error) {
	if t.Mode != ToolChoiceFunction {
		return json.Marshal(t.Mode)
	}
	o := toolChoiceObject{Type: t.Mode}
	o.Function = &struct {
		Name string `json:"name"`
	}{t.Name}
	return json.Marshal(o)
}

// Response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat is the request's response_format.
type ResponseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *JSONSchemaFormat `json:"json_schema,omitempty"`
}

// JSONSchemaFormat is the json_schema member of a json_schema response
// format.
type JSONSchemaFormat struct {
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Schema      map[string]any `json:"schema,omitempty"`
	Strict      *bool          `json:"strict,omitempty"`
}

// StopSequences is the request's stop: a string or an array of strings,
// decoded as a slice either way.
type StopSequences []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *StopSequences) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case '"':
		var one string
		if err := unquote(b, &one); err != nil {
			return err
		}
		*s = StopSequences{one}
		return nil
	case '[':
		return json.Unmarshal(b, (*[]string)(s))
	case 'n':
		*s = nil
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[StopSequences]()}
}

// unquote decodes the JSON string b into s. A plain string (no escapes,
// quotes or control characters, valid UTF-8) is its bytes between the
// quotes, taken without another pass of encoding/json (a custom
// UnmarshalJSON runs inside one, which scanned the value already); others
// go through encoding/json, which unescapes, replaces invalid UTF-8 and
// reports malformed strings.
func unquote(b []byte, s *string) error {
	b = bytes.Trim(b, " \t\r\n") // JSON's white space
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && plainString(b[1:len(b)-1]) {
		*s = string(b[1 : len(b)-1])
		return nil
	}
	return json.Unmarshal(b, s)
}

// plainString reports whether b is the inside of a JSON string that needs
// no decoding.
func plainString(b []byte) bool {
	ascii := true
	for _, c := range b {
		switch {
		case c == '"' || c == '\\' || c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || utf8.Valid(b)
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// jsonKind names the JSON type of b the way encoding/json does in
// UnmarshalTypeError.Value.
func jsonKind(b []byte) string {
	switch firstByte(b) {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// DecodeRequest decodes a request body as encoding/json decodes it, by hand
// when it can (request_decode.go), else with encoding/json. Unknown fields
// are ignored. A body that is not JSON, not an object, or has a field of
// the wrong type yields a 400 *Error whose Param names the field (with
// array indexes, like "messages[2].content").
func DecodeRequest(body []byte) (*ChatCompletionRequest, error) {
	// The request, and room for its first message and that message's
	// content (a request's one message, most of the time), in one
	// allocation.
	r := new(struct {
		req     ChatCompletionRequest
		msg     [1]ChatMessage
		content Content
	})
	req := &r.req
	if decodeChatIn(body, req, r.msg[:0], &r.content) {
		return req, nil
	}
	*req = ChatCompletionRequest{}
	err := json.Unmarshal(body, req)
	if err == nil {
		return req, nil
	}
	return nil, decodeError(body, err, reflect.TypeFor[ChatCompletionRequest]())
}

// indexedPath turns encoding/json's dotted field path ("messages.content")
// into OpenAI's form with array indexes ("messages[2].content"): along the
// path it follows the Go types from root, and in each array it picks the
// first element that does not decode (encoding/json reports the earliest
// error). It returns field unchanged when body cannot be walked.
func indexedPath(body []byte, field string, root reflect.Type) string {
	t := root
	cur := json.RawMessage(body)
	var out strings.Builder
	for i, name := range strings.Split(field, ".") {
		if i > 0 {
			out.WriteByte('.')
		}
		out.WriteString(name)
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return field
		}
		ft, ok := jsonField(t, name)
		if !ok {
			return field
		}
		cur, t = obj[name], ft
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t {
		case reflect.TypeFor[Content]():
			t = reflect.TypeFor[[]ContentPart]()
		case reflect.TypeFor[ResponseInput]():
			t = reflect.TypeFor[[]InputItem]()
		case reflect.TypeFor[InputContent]():
			t = reflect.TypeFor[[]InputPart]()
		}
		if t.Kind() != reflect.Slice || firstByte(cur) != '[' {
			continue
		}
		var elems []json.RawMessage
		if json.Unmarshal(cur, &elems) != nil {
			return field
		}
		idx := slices.IndexFunc(elems, func(e json.RawMessage) bool {
			return json.Unmarshal(e, reflect.New(t.Elem()).Interface()) != nil
		})
		if idx < 0 {
			return field
		}
		out.WriteString("[" + strconv.Itoa(idx) + "]")
		cur, t = elems[idx], t.Elem()
	}
	return out.String()
}

// jsonField finds the type of the struct field of t named name in JSON.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for f := range t.Fields() {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return f.Type, true
		}
	}
	return nil, false
}
