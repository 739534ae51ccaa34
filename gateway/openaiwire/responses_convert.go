package openaiwire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Limits the specification puts on requests.
const (
	maxMetadataPairs    = 16
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
	minMaxOutputTokens  = 16
	maxTopLogprobs      = 20
)

// IncludeLogprobs is the include value asking for output text log
// probabilities, which an agent tree cannot give.
const IncludeLogprobs = "message.output_text.logprobs"

// ItemResolver finds an item of one of the caller's stored responses by id,
// for item_reference; ok is false when there is none.
type ItemResolver func(id string) (item InputItem, ok bool)

// Validate checks what would change the meaning of a /v1/responses request,
// as ChatCompletionRequest.Validate does for chat, and converts its input:
// a failure is a 400 *Error whose Param is the JSON path of the field
// ("input[2].content[0].image_url", "tools[1].name", "text.format.schema").
//
// Input items of type item_reference are replaced by what resolve finds
// (nil resolves nothing: every reference is a 400 naming "input[i].id").
// The conversation is split after the last assistant message or
// function_call item: what precedes is history the client already holds,
// what follows is new input. System holds the instructions and the text of
// system and developer messages.
func (r *ResponsesRequest) Validate(resolve ItemResolver) (Conversation, error) {
	if r.Model == "" {
		return Conversation{}, InvalidRequest("model", "You must provide a model parameter.")
	}
	if r.Input.Items == nil && r.Input.Text == "" {
		return Conversation{}, InvalidRequest("input", "You must provide 'input': a string or a list of input items.")
	}
	if r.Background && !r.Stored() {
		return Conversation{}, InvalidRequest("background", "Background responses must be stored: 'background' needs 'store' true.")
	}
	if r.PreviousResponseID != "" && r.Conversation != nil {
		return Conversation{}, InvalidRequest("conversation", "'previous_response_id' and 'conversation' cannot be used together.")
	}
	if r.Conversation != nil && r.Conversation.ID == "" {
		return Conversation{}, InvalidRequest("conversation", "Missing the conversation id.")
	}
	if err := r.validateSettings(); err != nil {
		return Conversation{}, err
	}
	if err := r.validateTools(); err != nil {
		return Conversation{}, err
	}
	if _, err := r.OutputFormat(); err != nil {
		return Conversation{}, err
	}
	return r.conversation(resolve)
}

func (r *ResponsesRequest) sampling() sampling {
	return sampling{temperature: r.Temperature, topP: r.TopP, presence: r.PresencePenalty,
		frequency: r.FrequencyPenalty, maxTokens: r.MaxOutputTokens}
}

// GenerationSettings returns a copy of base (a new config when nil) with
// the request's temperature, top_p, presence_penalty, frequency_penalty and
// max_output_tokens laid over it, as GenerationSettings does for chat; nil
// when base is nil and the request sets none of them.
func (r *ResponsesRequest) GenerationSettings(base *genai.GenerateContentConfig) *genai.GenerateContentConfig {
	return r.sampling().apply(base)
}

func (r *ResponsesRequest) validateSettings() *Error {
	if err := r.sampling().check("max_output_tokens", minMaxOutputTokens); err != nil {
		return err
	}
	if r.TopLogprobs != nil && (*r.TopLogprobs < 0 || *r.TopLogprobs > maxTopLogprobs) {
		return InvalidRequest("top_logprobs", fmt.Sprintf("Invalid 'top_logprobs': expected a value between 0 and %d, got %d.", maxTopLogprobs, *r.TopLogprobs))
	}
	if r.TopLogprobs != nil && *r.TopLogprobs > 0 {
		return logprobsRefused("top_logprobs")
	}
	for i, inc := range r.Include {
		if inc == IncludeLogprobs {
			return logprobsRefused("include[" + strconv.Itoa(i) + "]")
		}
	}
	if r.MaxToolCalls != nil && *r.MaxToolCalls < 1 {
		return InvalidRequest("max_tool_calls", fmt.Sprintf("Invalid 'max_tool_calls': expected a value >= 1, got %d.", *r.MaxToolCalls))
	}
	enums := []struct {
		param, value string
		allowed      []string
	}{
		{"truncation", r.Truncation, []string{"auto", "disabled"}},
		{"service_tier", r.ServiceTier, ServiceTiers},
		{"text.verbosity", r.textVerbosity(), Verbosities},
		{"reasoning.effort", r.reasoningField(func(c *ReasoningConfig) *string { return c.Effort }), ReasoningEfforts},
		{"reasoning.summary", r.reasoningField(func(c *ReasoningConfig) *string { return c.Summary }), []string{"auto", "concise", "detailed"}},
	}
	for _, e := range enums {
		if err := checkEnum(e.param, e.value, e.allowed); err != nil {
			return err
		}
	}
	if len(r.Metadata) > maxMetadataPairs {
		return InvalidRequest("metadata", fmt.Sprintf("Invalid 'metadata': at most %d pairs, got %d.", maxMetadataPairs, len(r.Metadata)))
	}
	for k, v := range r.Metadata {
		if len(k) > maxMetadataKeyLen || len(v) > maxMetadataValueLen {
			return InvalidRequest("metadata", fmt.Sprintf("Invalid 'metadata' entry '%.64s': keys are at most %d characters, values at most %d.",
				k, maxMetadataKeyLen, maxMetadataValueLen))
		}
	}
	return nil
}

// Values the specification allows for service_tier, text.verbosity and
// reasoning.effort.
var (
	ServiceTiers     = []string{"auto", "default", "flex", "priority"}
	Verbosities      = []string{"low", "medium", "high"}
	ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
)

// checkEnum accepts an empty value or one of allowed.
func checkEnum(param, value string, allowed []string) *Error {
	if value == "" || slices.Contains(allowed, value) {
		return nil
	}
	return InvalidRequest(param, fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", value, quoteList(allowed)))
}

// logprobsRefused is the 400 for a request of log probabilities: the text
// of an agent tree comes from several model calls, some of them not the
// client's, and we do not pass token probabilities on.
func logprobsRefused(param string) *Error {
	return InvalidRequest(param, "Log probabilities are not supported: the answer of an agent tree comes from several model calls.")
}

func (r *ResponsesRequest) textVerbosity() string {
	if r.Text == nil {
		return ""
	}
	return r.Text.Verbosity
}

func (r *ResponsesRequest) reasoningField(f func(*ReasoningConfig) *string) string {
	if r.Reasoning == nil {
		return ""
	}
	if v := f(r.Reasoning); v != nil {
		return *v
	}
	return ""
}

// ReasoningEffort is reasoning.effort, "" when not given.
func (r *ResponsesRequest) ReasoningEffort() string {
	return r.reasoningField(func(c *ReasoningConfig) *string { return c.Effort })
}

// Verbosity is text.verbosity, "" when not given.
func (r *ResponsesRequest) Verbosity() string { return r.textVerbosity() }

// ModelOptions are the request's settings for the model calls beyond
// genai's config, as ChatCompletionRequest.ModelOptions has them: the
// json_schema format's name and strict flag, parallel tool calls,
// reasoning.effort, text.verbosity and service tier.
func (r *ResponsesRequest) ModelOptions() model.Options {
	o := model.Options{ParallelToolCalls: r.ParallelToolCalls, ReasoningEffort: r.ReasoningEffort(),
		Verbosity: r.Verbosity(), ServiceTier: r.ServiceTier}
	if f, err := r.OutputFormat(); err == nil && f.Schema != nil {
		o.SchemaName, o.SchemaStrict = f.Name, f.Strict
	}
	return o
}

func (r *ResponsesRequest) validateTools() *Error {
	seen := map[string]bool{}
	for i, t := range r.Tools {
		param := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return InvalidRequest(param+".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' "+
				"(hosted tools are not available: the agents' own tools run in the gateway).", t.Type))
		}
		if err := declareFunction(param+".name", t.Name, seen); err != nil {
			return err
		}
	}
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	if done, err := checkToolChoiceMode(tc.Mode, len(r.Tools)); done {
		return err
	}
	switch tc.Mode {
	case ToolChoiceFunction:
		return namedChoice("tool_choice.name", tc.Name, seen)
	case ToolChoiceAllowedTools:
		if len(tc.Allowed) == 0 {
			return InvalidRequest("tool_choice.tools", "Invalid 'tool_choice': 'allowed_tools' needs at least one tool.")
		}
		for i, name := range tc.Allowed {
			if err := namedChoice("tool_choice.tools["+strconv.Itoa(i)+"].name", name, seen); err != nil {
				return err
			}
		}
		return checkEnum("tool_choice.mode", tc.AllowedMode, []string{ToolChoiceAuto, ToolChoiceRequired})
	}
	return InvalidRequest("tool_choice", fmt.Sprintf("Invalid value: '%s'. Supported values are: "+
		"'none', 'auto', 'required', or an object naming a function or allowed tools.", tc.Mode))
}

// namedChoice checks a function named by tool_choice is among the tools.
func namedChoice(param, name string, tools map[string]bool) *Error {
	if name == "" {
		return InvalidRequest(param, "Missing the function name in 'tool_choice'.")
	}
	if !tools[name] {
		return InvalidRequest(param, fmt.Sprintf("Invalid 'tool_choice': function '%s' is not among the request's 'tools'.", name))
	}
	return nil
}

// FunctionDeclarations converts the request's tools (already validated) as
// ToFunctionDeclarations does for chat.
func (r *ResponsesRequest) FunctionDeclarations() []*genai.FunctionDeclaration {
	tools := make([]Tool, len(r.Tools))
	for i, t := range r.Tools {
		tools[i] = Tool{Type: t.Type, Function: &FunctionDefinition{Name: t.Name, Description: deref(t.Description),
			Parameters: t.Parameters, Strict: t.Strict}}
	}
	return ToFunctionDeclarations(tools)
}

// ToolConfig converts tool_choice as ToToolConfig does for chat;
// allowed_tools becomes AUTO (mode auto) or ANY (mode required) limited to
// the named functions.
func (r *ResponsesRequest) ToolConfig() *genai.ToolConfig {
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	if tc.Mode != ToolChoiceAllowedTools {
		return ToToolConfig(&ToolChoice{Mode: tc.Mode, Name: tc.Name})
	}
	mode := genai.FunctionCallingConfigModeAuto
	if tc.AllowedMode == ToolChoiceRequired {
		mode = genai.FunctionCallingConfigModeAny
	}
	return &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: mode,
		AllowedFunctionNames: slices.Clone(tc.Allowed)}}
}

// OutputFormat reads text.format: text (or none) is the zero value,
// json_object asks for JSON, json_schema for JSON conforming to its schema
// under its name. A json_schema format without a schema object, or an
// unknown type, is a 400 naming the field.
func (r *ResponsesRequest) OutputFormat() (OutputFormat, error) {
	if r.Text == nil || r.Text.Format == nil {
		return OutputFormat{}, nil
	}
	f := r.Text.Format
	switch f.Type {
	case FormatText:
		return OutputFormat{}, nil
	case FormatJSONObject:
		return OutputFormat{JSON: true}, nil
	case FormatJSONSchema:
		if f.Schema == nil {
			return OutputFormat{}, InvalidRequest("text.format.schema",
				"Missing 'schema' in text.format: a JSON Schema object is required.")
		}
		if f.Name != "" && !ValidFunctionName(f.Name) {
			return OutputFormat{}, InvalidRequest("text.format.name", fmt.Sprintf("Invalid name '%s': "+
				"expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", f.Name))
		}
		return OutputFormat{JSON: true, Schema: f.Schema, Name: f.Name, Description: f.Description, Strict: f.Strict}, nil
	}
	return OutputFormat{}, InvalidRequest("text.format.type", fmt.Sprintf(
		"Invalid value: '%s'. Supported values are: 'text', 'json_object', 'json_schema'.", f.Type))
}

// OutputFormat is the structured output a client asked for: JSON, conforming
// to Schema when there is one, which the client named Name (with
// Description) and wants followed strictly or not (Strict, nil when the
// client did not say).
type OutputFormat struct {
	JSON              bool
	Schema            map[string]any
	Name, Description string
	Strict            *bool
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// conversation resolves references, splits the items after the last
// assistant message or function_call, and converts both halves.
func (r *ResponsesRequest) conversation(resolve ItemResolver) (Conversation, error) {
	instructions := deref(r.Instructions)
	if r.Input.Items == nil {
		var fresh []*genai.Content
		if r.Input.Text != "" {
			fresh = []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromText(r.Input.Text)}}}
		}
		return Conversation{System: instructions, New: fresh}, nil
	}
	items, cloned := r.Input.Items, false
	for i := range items {
		if items[i].kind() != ItemReference {
			continue
		}
		found, ok := InputItem{}, false
		if resolve != nil && items[i].ID != "" {
			found, ok = resolve(items[i].ID)
		}
		if !ok || found.kind() == ItemReference {
			return Conversation{}, InvalidRequest(fmt.Sprintf("input[%d].id", i), fmt.Sprintf("Item with id '%s' not found.", items[i].ID))
		}
		if !cloned {
			items, cloned = slices.Clone(items), true // the request stays as it was sent
		}
		items[i] = found
	}
	split := 0
	for i := range items {
		if k := items[i].kind(); k == ItemFunctionCall || k == ItemMessage && items[i].Role == RoleAssistant {
			split = i + 1
		}
	}
	sys1, history, err := itemsToContents(items[:split], 0)
	if err != nil {
		return Conversation{}, err
	}
	sys2, fresh, err := itemsToContents(items[split:], split)
	if err != nil {
		return Conversation{}, err
	}
	return Conversation{System: joinNonEmpty(instructions, sys1, sys2), History: history, New: fresh}, nil
}

// itemsToContents converts input items (references resolved) that begin at
// index first of the request's input, which is how errors count them.
// Consecutive assistant messages and function calls share one model
// content, consecutive function call outputs one user content; each user
// message is a content of its own. A function_call_output's FunctionResponse
// is named after the function_call with its call_id among items, and has an
// empty Name when there is none (the caller resolves the call by id).
func itemsToContents(items []InputItem, first int) (system string, contents []*genai.Content, err error) {
	var systems []string
	callNames := map[string]string{}
	var last *genai.Content // the latest content, which the next item may join
	lastOutputs := false    // last holds function call outputs
	for i := range items {
		it := &items[i]
		parts, role, err := itemPart(it, &systems, callNames)
		if err != nil {
			return "", nil, within("input["+strconv.Itoa(first+i)+"]", err)
		}
		if role == "" {
			continue // a system message, or a message with nothing to say
		}
		outputs := it.kind() == ItemFunctionCallOutput
		if last != nil && last.Role == role && (role == genai.RoleModel || outputs && lastOutputs) {
			last.Parts = append(last.Parts, parts...)
			continue
		}
		last, lastOutputs = &genai.Content{Role: role, Parts: parts}, outputs
		contents = append(contents, last)
	}
	return strings.Join(systems, "\n\n"), contents, nil
}

// itemPart converts one item to the parts it adds and their role ("" for
// none). Errors name the field relative to the item.
func itemPart(it *InputItem, systems *[]string, callNames map[string]string) ([]*genai.Part, string, *Error) {
	switch it.kind() {
	case ItemMessage:
		return messageParts(it, systems)
	case ItemFunctionCall:
		if it.CallID == "" {
			return nil, "", InvalidRequest(".call_id", "Missing 'call_id' in a function_call item.")
		}
		if it.Name == "" {
			return nil, "", InvalidRequest(".name", "Missing 'name' in a function_call item.")
		}
		args, err := ParseArguments(it.Arguments)
		if err != nil {
			return nil, "", InvalidRequest(".arguments", "The function arguments must be a JSON object encoded as a string.")
		}
		callNames[it.CallID] = it.Name
		return []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: it.CallID, Name: it.Name, Args: args}}}, genai.RoleModel, nil
	case ItemFunctionCallOutput:
		if it.CallID == "" {
			return nil, "", InvalidRequest(".call_id", "Missing 'call_id' in a function_call_output item.")
		}
		if it.Output == nil {
			return nil, "", InvalidRequest(".output", "Missing 'output' in a function_call_output item.")
		}
		text, err := partsText(it.Output, ".output", PartInputText, PartOutputText)
		if err != nil {
			return nil, "", err
		}
		return []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: it.CallID, Name: callNames[it.CallID],
			Response: ToolResult(text)}}}, genai.RoleUser, nil
	}
	return nil, "", InvalidRequest(".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", it.Type,
		quoteList([]string{ItemMessage, ItemFunctionCall, ItemFunctionCallOutput, ItemReference})))
}

// messageParts converts a message item: system and developer text goes to
// systems, a user message may hold images and files, an assistant message
// text (refusals count as text).
func messageParts(it *InputItem, systems *[]string) ([]*genai.Part, string, *Error) {
	if it.Content == nil {
		return nil, "", InvalidRequest(".content", fmt.Sprintf("Missing content in a %s message.", orDefault(it.Role, "message")))
	}
	switch it.Role {
	case RoleSystem, RoleDeveloper:
		text, err := partsText(it.Content, ".content", PartInputText, PartOutputText)
		if err != nil {
			return nil, "", err
		}
		if text != "" {
			*systems = append(*systems, text)
		}
		return nil, "", nil
	case RoleAssistant:
		text, err := partsText(it.Content, ".content", PartOutputText, PartRefusal, PartInputText)
		if err != nil || text == "" {
			return nil, "", err
		}
		return []*genai.Part{genai.NewPartFromText(text)}, genai.RoleModel, nil
	case RoleUser:
		parts, err := userParts(it.Content)
		if err != nil || len(parts) == 0 {
			return nil, "", err
		}
		return parts, genai.RoleUser, nil
	case "":
		return nil, "", InvalidRequest(".role", "Missing 'role' in a message item.")
	}
	return nil, "", InvalidRequest(".role", fmt.Sprintf("Invalid value: '%s'. Supported values are: "+
		"'user', 'assistant', 'system', and 'developer'.", it.Role))
}

// partsText returns the text of c: the string, or its parts joined by a
// newline; only parts of the allowed types are accepted. param names c in
// errors.
func partsText(c *InputContent, param string, allowed ...string) (string, *Error) {
	if c.Parts == nil {
		return c.Text, nil
	}
	return joinParts(c.Parts, param, allowed, func(p *InputPart) (string, string) { return p.Type, p.Text }, func(p *InputPart) string { return p.Refusal })
}

// userParts converts a user message's content; empty text is dropped.
func userParts(c *InputContent) ([]*genai.Part, *Error) {
	if c.Parts == nil {
		if c.Text == "" {
			return nil, nil
		}
		return []*genai.Part{genai.NewPartFromText(c.Text)}, nil
	}
	var parts []*genai.Part
	for j, p := range c.Parts {
		param := ".content[" + strconv.Itoa(j) + "]"
		var part *genai.Part
		var err *Error
		switch p.Type {
		case PartInputText, PartOutputText:
			if p.Text != "" {
				part = genai.NewPartFromText(p.Text)
			}
		case PartInputImage:
			if p.ImageURL == "" && p.FileID != "" {
				return nil, InvalidRequest(param+".file_id", "Images by file id are not supported: send 'image_url' (an http(s) URL or a data: URL).")
			}
			if err := checkEnum(param+".detail", p.Detail, []string{"low", "high", "auto"}); err != nil {
				return nil, err
			}
			part, err = imagePart(p.ImageURL, p.Detail, param+".image_url")
		case PartInputFile:
			part, err = filePart(p.FileData, param+".file_data")
		default:
			err = InvalidRequest(param+".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.",
				p.Type, quoteList([]string{PartInputText, PartInputImage, PartInputFile})))
		}
		if err != nil {
			return nil, err
		}
		if part != nil {
			parts = append(parts, part)
		}
	}
	return parts, nil
}
