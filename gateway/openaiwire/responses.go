package openaiwire

import (
	"encoding/json"
	"slices"

	"google.golang.org/genai"
)

// ObjectResponse is the object name of a Responses API response.
const ObjectResponse = "response"

// Response statuses.
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Response is the Responses API's response object. Every field the Open
// Responses specification requires is present: the nullable ones as null
// when unset, the others with the value used (the request's, else the
// specification's default), so strict clients validate it. The agentgate
// member is our extension.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             string             `json:"status"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Model              string             `json:"model"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Instructions       *string            `json:"instructions"`
	Output             []OutputItem       `json:"output"`
	Error              *ResponseError     `json:"error"`
	Tools              []FunctionTool     `json:"tools"`
	ToolChoice         ResponseToolChoice `json:"tool_choice"`
	Truncation         string             `json:"truncation"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	Text               TextField          `json:"text"`
	TopP               float64            `json:"top_p"`
	PresencePenalty    float64            `json:"presence_penalty"`
	FrequencyPenalty   float64            `json:"frequency_penalty"`
	TopLogprobs        int64              `json:"top_logprobs"`
	Temperature        float64            `json:"temperature"`
	Reasoning          *Reasoning         `json:"reasoning"`
	User               *string            `json:"user"`
	Usage              *ResponseUsage     `json:"usage"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	MaxToolCalls       *int64             `json:"max_tool_calls"`
	Store              bool               `json:"store"`
	Background         bool               `json:"background"`
	ServiceTier        string             `json:"service_tier"`
	Metadata           map[string]string  `json:"metadata"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	Agentgate          ResponseExtension  `json:"agentgate"`
}

// IncompleteDetails says why a response is incomplete: "max_output_tokens"
// or "content_filter".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseError is the error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// FunctionTool is a client function as a response echoes it.
type FunctionTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Parameters  map[string]any `json:"parameters"`
	Strict      *bool          `json:"strict"`
}

// TextField is the response's text configuration.
type TextField struct {
	Format    TextFormatField `json:"format"`
	Verbosity string          `json:"verbosity,omitempty"`
}

// TextFormatField is the output format a response used: text, json_object,
// or json_schema with its name, description (null when none), schema and
// strict flag.
type TextFormatField struct {
	Type        string
	Name        string
	Description string
	Schema      map[string]any
	Strict      bool
}

// MarshalJSON writes only the members of the format's type.
func (f TextFormatField) MarshalJSON() ([]byte, error) {
	if f.Type != FormatJSONSchema {
		return json.Marshal(struct {
			Type string `json:"type"`
		}{orDefault(f.Type, FormatText)})
	}
	return json.Marshal(struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Description *string        `json:"description"`
		Schema      map[string]any `json:"schema"`
		Strict      bool           `json:"strict"`
	}{f.Type, f.Name, nullable(f.Description), f.Schema, f.Strict})
}

// Reasoning is the reasoning configuration a response used.
type Reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// ResponseUsage counts a response's tokens, every model call of the tree
// included.
type ResponseUsage struct {
	InputTokens         int64               `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int64               `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int64               `json:"total_tokens"`
}

// InputTokensDetails breaks down ResponseUsage.InputTokens.
type InputTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputTokensDetails breaks down ResponseUsage.OutputTokens.
type OutputTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// ResponseUsageFrom converts the runtime's usage record (nil counts as
// zero) with the same arithmetic as UsageFrom.
func ResponseUsageFrom(u *genai.GenerateContentResponseUsageMetadata) ResponseUsage {
	c := UsageFrom(u)
	return ResponseUsage{
		InputTokens: c.PromptTokens, OutputTokens: c.CompletionTokens, TotalTokens: c.TotalTokens,
		InputTokensDetails:  InputTokensDetails{CachedTokens: c.PromptTokensDetails.CachedTokens},
		OutputTokensDetails: OutputTokensDetails{ReasoningTokens: c.CompletionTokensDetails.ReasoningTokens},
	}
}

// ResponseExtension is the response's agentgate member: the turn's
// invocation, the session it ran on (null when nothing is stored), and the
// transfers of control in the order they happened.
type ResponseExtension struct {
	InvocationID string     `json:"invocation_id"`
	SessionID    *string    `json:"session_id"`
	Transfers    []Transfer `json:"transfers"`
}

// Transfer is one passing of control from an agent to another.
type Transfer struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ItemExtension is an output item's agentgate member: the agent that
// produced it, and on the first item of an agent that received a
// transfer, the agent it came from.
type ItemExtension struct {
	Author          string `json:"author"`
	TransferredFrom string `json:"transferred_from,omitempty"`
}

// OutputItem is an item of a response's output: a message (Role, Content)
// or a function_call (CallID, Name, Arguments).
type OutputItem struct {
	Type      string
	ID        string
	Status    string
	Role      string
	Content   []OutputContent
	CallID    string
	Name      string
	Arguments string
	Agentgate ItemExtension
}

// MarshalJSON writes the members of the item's type.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	if it.Type == ItemFunctionCall {
		return json.Marshal(struct {
			Type      string        `json:"type"`
			ID        string        `json:"id"`
			CallID    string        `json:"call_id"`
			Name      string        `json:"name"`
			Arguments string        `json:"arguments"`
			Status    string        `json:"status"`
			Agentgate ItemExtension `json:"agentgate"`
		}{it.Type, it.ID, it.CallID, it.Name, it.Arguments, it.Status, it.Agentgate})
	}
	content := it.Content
	if content == nil {
		content = []OutputContent{}
	}
	return json.Marshal(struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Status    string          `json:"status"`
		Role      string          `json:"role"`
		Content   []OutputContent `json:"content"`
		Agentgate ItemExtension   `json:"agentgate"`
	}{orDefault(it.Type, ItemMessage), it.ID, it.Status, it.Role, content, it.Agentgate})
}

// OutputContent is an output_text part of a message item. It has no
// annotations and no log probabilities; both are sent as empty lists.
type OutputContent struct {
	Type string
	Text string
}

// MarshalJSON writes {"type", "text", "annotations": [], "logprobs": []}.
func (c OutputContent) MarshalJSON() ([]byte, error) {
	return appendOutputContent(nil, &c), nil
}

func appendOutputContent(b []byte, c *OutputContent) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, orDefault(c.Type, PartOutputText))
	b = append(b, `,"text":`...)
	b = appendString(b, c.Text)
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

// MarshalJSON writes the string form for none, auto and required (auto
// when Mode is empty), {"type": "function", "name"} for a named function,
// and {"type": "allowed_tools", "mode", "tools"} for allowed tools.
func (t ResponseToolChoice) MarshalJSON() ([]byte, error) {
	type named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	switch t.Mode {
	case ToolChoiceFunction:
		return json.Marshal(named{ToolChoiceFunction, t.Name})
	case ToolChoiceAllowedTools:
		tools := make([]named, len(t.Allowed))
		for i, n := range t.Allowed {
			tools[i] = named{ToolChoiceFunction, n}
		}
		return json.Marshal(struct {
			Type  string  `json:"type"`
			Mode  string  `json:"mode"`
			Tools []named `json:"tools"`
		}{ToolChoiceAllowedTools, orDefault(t.AllowedMode, ToolChoiceAuto), tools})
	}
	return json.Marshal(orDefault(t.Mode, ToolChoiceAuto))
}

// NewResponseID returns a fresh response id: "resp_" and 40 random
// characters of [A-Za-z0-9].
func NewResponseID() string { return randomID("resp_", 40) }

// NewItemID returns a fresh output item id: prefix ("msg" or "fc"), "_" and
// 40 random characters of [A-Za-z0-9].
func NewItemID(prefix string) string { return randomID(prefix+"_", 40) }

// NewResponse returns the response object for r before the turn runs:
// status in_progress, no output, no usage, and the request's settings
// echoed with the specification's defaults (temperature 1, top_p 1,
// penalties 0, top_logprobs 0, truncation "disabled", parallel_tool_calls
// true, tool_choice "auto", service_tier "default", text format "text",
// metadata {}). A json_schema format the client did not name is echoed as
// "output", the name the model was asked with.
func (r *ResponsesRequest) NewResponse(id string, createdAt int64) *Response {
	resp := &Response{
		ID: id, Object: ObjectResponse, CreatedAt: createdAt, Status: StatusInProgress, Model: r.Model,
		PreviousResponseID: nullable(r.PreviousResponseID), Instructions: r.Instructions,
		Output: []OutputItem{}, Tools: make([]FunctionTool, len(r.Tools)),
		Truncation: orDefault(r.Truncation, "disabled"), ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		TopP: floatOr(r.TopP, 1), Temperature: floatOr(r.Temperature, 1),
		PresencePenalty: floatOr(r.PresencePenalty, 0), FrequencyPenalty: floatOr(r.FrequencyPenalty, 0),
		User: nullable(r.User), MaxOutputTokens: r.MaxOutputTokens, MaxToolCalls: r.MaxToolCalls,
		Store: r.Stored(), Background: r.Background, ServiceTier: orDefault(r.ServiceTier, "default"),
		Metadata: map[string]string{}, SafetyIdentifier: nullable(r.SafetyIdentifier), PromptCacheKey: nullable(r.PromptCacheKey),
		Agentgate: ResponseExtension{Transfers: []Transfer{}},
	}
	for k, v := range r.Metadata {
		resp.Metadata[k] = v
	}
	if r.TopLogprobs != nil {
		resp.TopLogprobs = *r.TopLogprobs
	}
	for i, t := range r.Tools {
		resp.Tools[i] = FunctionTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}
	}
	if r.ToolChoice != nil {
		resp.ToolChoice = *r.ToolChoice
		resp.ToolChoice.Allowed = slices.Clone(r.ToolChoice.Allowed)
	}
	resp.Text.Verbosity = r.Verbosity()
	if f, err := r.OutputFormat(); err == nil && f.JSON {
		resp.Text.Format = TextFormatField{Type: FormatJSONObject}
		if f.Schema != nil {
			resp.Text.Format = TextFormatField{Type: FormatJSONSchema, Name: orDefault(f.Name, DefaultSchemaName),
				Description: f.Description, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
		}
	}
	if r.Reasoning != nil {
		resp.Reasoning = &Reasoning{Effort: r.Reasoning.Effort, Summary: r.Reasoning.Summary}
	}
	return resp
}

// DefaultSchemaName is the name a JSON schema output format gets when the
// client gave none.
const DefaultSchemaName = "output"

func floatOr(v *float64, def float64) float64 {
	if v == nil {
		return def
	}
	return *v
}
