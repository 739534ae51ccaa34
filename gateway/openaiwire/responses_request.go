package openaiwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// ResponsesRequest is the body of POST /v1/responses (OpenAI's Responses API,
// as the Open Responses specification describes it). It accepts what the
// official SDKs, the Vercel AI SDK and the OpenAI Agents SDK send; fields it
// does not name are ignored when decoding.
type ResponsesRequest struct {
	Model string `json:"model"`
	// Input is a string (one user message) or a list of items.
	Input ResponseInput `json:"input"`
	// Instructions is a system message for this request only.
	Instructions       *string          `json:"instructions,omitempty"`
	PreviousResponseID string           `json:"previous_response_id,omitempty"`
	Conversation       *ConversationRef `json:"conversation,omitempty"`
	// Store is nil when absent, which means true.
	Store         *bool                   `json:"store,omitempty"`
	Stream        bool                    `json:"stream,omitempty"`
	StreamOptions *ResponsesStreamOptions `json:"stream_options,omitempty"`
	Background    bool                    `json:"background,omitempty"`

	Tools             []ResponseTool      `json:"tools,omitempty"`
	ToolChoice        *ResponseToolChoice `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool               `json:"parallel_tool_calls,omitempty"`
	MaxToolCalls      *int64              `json:"max_tool_calls,omitempty"`
	Text              *TextConfig         `json:"text,omitempty"`
	Reasoning         *ReasoningConfig    `json:"reasoning,omitempty"`

	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	MaxOutputTokens  *int64   `json:"max_output_tokens,omitempty"`
	TopLogprobs      *int64   `json:"top_logprobs,omitempty"`
	ServiceTier      string   `json:"service_tier,omitempty"`
	Truncation       string   `json:"truncation,omitempty"`
	Include          []string `json:"include,omitempty"`

	Metadata         map[string]string `json:"metadata,omitempty"`
	User             string            `json:"user,omitempty"`
	SafetyIdentifier string            `json:"safety_identifier,omitempty"`
	PromptCacheKey   string            `json:"prompt_cache_key,omitempty"`
}

// ResponsesStreamOptions is the request's stream_options; include_obfuscation
// is accepted and ignored (we send no obfuscation padding).
type ResponsesStreamOptions struct {
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

// Stored reports whether the response is stored: store is true unless the
// request says false.
func (r *ResponsesRequest) Stored() bool { return r.Store == nil || *r.Store }

// ResponseInput is the request's input: the string form (Text, one user
// message) or the item list (Items, non-nil when an array was sent).
type ResponseInput struct {
	Text  string
	Items []InputItem
}

// UnmarshalJSON accepts a string, an array of items or null.
func (in *ResponseInput) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case '"':
		*in = ResponseInput{}
		return unquote(b, &in.Text)
	case '[':
		*in = ResponseInput{Items: []InputItem{}}
		return json.Unmarshal(b, &in.Items)
	case 'n':
		*in = ResponseInput{}
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[ResponseInput]()}
}

// MarshalJSON writes the array form when Items is non-nil, else the string.
func (in ResponseInput) MarshalJSON() ([]byte, error) {
	if in.Items != nil {
		return json.Marshal(in.Items)
	}
	return json.Marshal(in.Text)
}

// Input item types.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
	ItemReference          = "item_reference"
)

// InputItem is one element of the request's input. Type may be empty for a
// message (both SDKs send {role, content}). Fields of output items that a
// client sends back (status, agentgate) are accepted and ignored; ID names
// the referenced item of an item_reference and is ignored otherwise.
type InputItem struct {
	Type string `json:"type,omitempty"`
	ID   string `json:"id,omitempty"`

	// Role and Content are a message's.
	Role    string        `json:"role,omitempty"`
	Content *InputContent `json:"content,omitempty"`

	// CallID is a function_call's or function_call_output's; Name and
	// Arguments (a JSON string) a function_call's; Output a
	// function_call_output's.
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments string        `json:"arguments,omitempty"`
	Output    *InputContent `json:"output,omitempty"`
}

// kind is the item's type, "message" when it was left out.
func (it *InputItem) kind() string { return orDefault(it.Type, ItemMessage) }

// InputContent is a message's content or a function_call_output's output:
// the string form (Text) or parts (Parts, non-nil when an array was sent).
type InputContent struct {
	Text  string
	Parts []InputPart
}

// UnmarshalJSON accepts a string or an array of parts.
func (c *InputContent) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case '"':
		*c = InputContent{}
		return unquote(b, &c.Text)
	case '[':
		*c = InputContent{Parts: []InputPart{}}
		return json.Unmarshal(b, &c.Parts)
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[InputContent]()}
}

// MarshalJSON writes the array form when Parts is non-nil, else the string.
func (c InputContent) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

// Content part types of the Responses API.
const (
	PartInputText  = "input_text"
	PartInputImage = "input_image"
	PartInputFile  = "input_file"
	PartOutputText = "output_text"
	// PartRefusal ("refusal") is shared with chat.
)

// InputPart is one content part: input_text and output_text carry Text,
// input_image ImageURL and Detail, input_file FileData (a data: URL) and
// Filename, refusal Refusal. FileID and FileURL name files we cannot fetch
// and are refused.
type InputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
	Filename string `json:"filename,omitempty"`
	Refusal  string `json:"refusal,omitempty"`
}

// ConversationRef is the request's conversation: a session id given as a
// string or as {"id": ...}.
type ConversationRef struct {
	ID string `json:"id"`
}

// UnmarshalJSON accepts a string or an object with an id.
func (c *ConversationRef) UnmarshalJSON(b []byte) error {
	if firstByte(b) == '"' {
		*c = ConversationRef{}
		return json.Unmarshal(b, &c.ID)
	}
	type plain ConversationRef
	return json.Unmarshal(b, (*plain)(c))
}

// ResponseTool is an entry of the request's tools: on the Responses API a
// function's fields sit on the tool itself.
type ResponseTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description *string        `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
	Strict      *bool          `json:"strict,omitempty"`
}

// ResponseToolChoice is the request's tool_choice: "none", "auto" or
// "required" (Mode), {"type": "function", "name": ...} (Mode "function",
// Name), or {"type": "allowed_tools", "mode": ..., "tools": [{"type":
// "function", "name": ...}]} (Mode "allowed_tools", Allowed, AllowedMode).
type ResponseToolChoice struct {
	Mode        string
	Name        string
	Allowed     []string
	AllowedMode string
}

// ToolChoiceAllowedTools is the Mode of the allowed_tools form.
const ToolChoiceAllowedTools = "allowed_tools"

type responseToolChoiceObject struct {
	Type  string `json:"type"`
	Name  string `json:"name,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools,omitempty"`
}

// UnmarshalJSON accepts the string and the object forms.
func (t *ResponseToolChoice) UnmarshalJSON(b []byte) error {
	*t = ResponseToolChoice{}
	switch firstByte(b) {
	case '"':
		return json.Unmarshal(b, &t.Mode)
	case '{':
		var o responseToolChoiceObject
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		t.Mode, t.Name, t.AllowedMode = o.Type, o.Name, o.Mode
		for _, tool := range o.Tools {
			t.Allowed = append(t.Allowed, tool.Name)
		}
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[ResponseToolChoice]()}
}

// TextConfig is the request's text: the output format and verbosity.
type TextConfig struct {
	Format    *TextFormat `json:"format,omitempty"`
	Verbosity string      `json:"verbosity,omitempty"`
}

// TextFormat is text.format: {"type": "text"}, {"type": "json_object"} or
// {"type": "json_schema", "name", "description", "schema", "strict"}.
type TextFormat struct {
	Type        string         `json:"type"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Schema      map[string]any `json:"schema,omitempty"`
	Strict      *bool          `json:"strict,omitempty"`
}

// ReasoningConfig is the request's reasoning: effort and summary.
type ReasoningConfig struct {
	Effort  *string `json:"effort,omitempty"`
	Summary *string `json:"summary,omitempty"`
}

// DecodeResponsesRequest decodes a /v1/responses body as encoding/json
// decodes it, by hand when it can (responses_decode.go), else with
// encoding/json. Unknown fields are ignored. A body that is not a JSON object, or has a field of the wrong
// type, yields a 400 *Error whose Param names the field with array indexes
// ("input[2].content").
func DecodeResponsesRequest(body []byte) (*ResponsesRequest, error) {
	var req ResponsesRequest
	if decodeResponses(body, &req) {
		return &req, nil
	}
	req = ResponsesRequest{}
	err := json.Unmarshal(body, &req)
	if err == nil {
		return &req, nil
	}
	return nil, decodeError(body, err, reflect.TypeFor[ResponsesRequest]())
}

// decodeError turns a json.Unmarshal error for a request of type root into
// a 400 *Error.
func decodeError(body []byte, err error, root reflect.Type) *Error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return InvalidRequest("", "We could not parse the JSON body of your request. "+
			"(HINT: This likely means you aren't using your HTTP library correctly. "+
			"The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")
	}
	if te.Field == "" {
		return InvalidRequest("", fmt.Sprintf("The request body must be a JSON object, got %s.", te.Value))
	}
	param := indexedPath(body, te.Field, root)
	return InvalidRequest(param, fmt.Sprintf("Invalid type for '%s': got %s.", param, te.Value))
}
