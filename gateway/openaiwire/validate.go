package openaiwire

import (
	"bytes"
	"fmt"

	"google.golang.org/genai"
)

// Validate checks what would change the meaning of the request, and
// nothing else: unknown fields and unsupported-but-harmless options pass.
// A failure is a 400 *Error whose Param is the JSON path OpenAI would name
// ("model", "messages[3].tool_call_id", "n", "tools[0].function.name",
// "tool_choice", "response_format.json_schema.schema", ...).
//
// Messages are checked by converting them, and the conversation is
// returned so that the caller need not convert them again. Whether a tool
// message's tool_call_id matches a pending call is the caller's question.
func (r *ChatCompletionRequest) Validate() (Conversation, error) {
	if r.Model == "" {
		return Conversation{}, InvalidRequest("model", "You must provide a model parameter.")
	}
	if len(r.Messages) == 0 {
		return Conversation{}, InvalidRequest("messages", "'messages' must contain at least one message.")
	}
	if fn := bytes.TrimSpace(r.Functions); len(fn) > 0 && !bytes.Equal(fn, []byte("null")) && !bytes.Equal(fn, []byte("[]")) {
		return Conversation{}, InvalidRequest("functions", "The legacy 'functions' parameter is not supported; declare functions in 'tools'.")
	}
	if r.N != nil && *r.N != 1 {
		return Conversation{}, InvalidRequest("n", fmt.Sprintf("Invalid 'n': only n=1 is supported, got %d.", *r.N))
	}
	if err := r.validateSampling(); err != nil {
		return Conversation{}, err
	}
	if err := r.validateTools(); err != nil {
		return Conversation{}, err
	}
	if _, _, err := OutputSchema(r.ResponseFormat); err != nil {
		return Conversation{}, err
	}
	return r.conversation()
}

// Conversation is a request's messages converted as ToContents does, split
// after the last assistant message. System and developer messages are
// checked but not kept: the agents' instructions are their system prompt.
type Conversation struct {
	// History holds the contents of the messages up to and including the
	// last assistant message: what a stateless client resends of the
	// conversation so far. It is empty when no message is the assistant's.
	History []*genai.Content
	// New holds the contents of the messages after it, converted on their
	// own: a tool response names the call it answers by id alone.
	New []*genai.Content
}

func (r *ChatCompletionRequest) conversation() (Conversation, error) {
	split := 0 // the first message after the last assistant message
	for i := range r.Messages {
		if r.Messages[i].Role == RoleAssistant {
			split = i + 1
		}
	}
	_, history, err := toContents(r.Messages[:split], 0)
	if err != nil {
		return Conversation{}, err
	}
	_, fresh, err := toContents(r.Messages[split:], split)
	if err != nil {
		return Conversation{}, err
	}
	return Conversation{History: history, New: fresh}, nil
}

func (r *ChatCompletionRequest) validateSampling() error {
	ranges := []struct {
		param    string
		v        *float64
		min, max float64
	}{
		{"temperature", r.Temperature, 0, 2},
		{"top_p", r.TopP, 0, 1},
		{"presence_penalty", r.PresencePenalty, -2, 2},
		{"frequency_penalty", r.FrequencyPenalty, -2, 2},
	}
	for _, c := range ranges {
		if c.v != nil && (*c.v < c.min || *c.v > c.max) {
			return InvalidRequest(c.param, fmt.Sprintf("Invalid '%s': expected a value between %g and %g, got %g.",
				c.param, c.min, c.max, *c.v))
		}
	}
	for _, c := range []struct {
		param string
		v     *int64
	}{{"max_tokens", r.MaxTokens}, {"max_completion_tokens", r.MaxCompletionTokens}} {
		if c.v != nil && *c.v < 1 {
			return InvalidRequest(c.param, fmt.Sprintf("Invalid '%s': expected a value >= 1, got %d.", c.param, *c.v))
		}
	}
	return nil
}

func (r *ChatCompletionRequest) validateTools() error {
	seen := map[string]bool{}
	for i, t := range r.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return InvalidRequest(param+".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'.", t.Type))
		}
		if t.Function == nil {
			return InvalidRequest(param+".function", "Missing 'function' in a tool of type 'function'.")
		}
		if !ValidFunctionName(t.Function.Name) {
			return InvalidRequest(param+".function.name", fmt.Sprintf("Invalid function name '%s': "+
				"expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", t.Function.Name))
		}
		if seen[t.Function.Name] {
			return InvalidRequest(param+".function.name", fmt.Sprintf("Duplicate function name '%s'.", t.Function.Name))
		}
		seen[t.Function.Name] = true
	}
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	switch tc.Mode {
	case ToolChoiceNone, ToolChoiceAuto:
		return nil
	case ToolChoiceRequired:
		if len(r.Tools) == 0 {
			return InvalidRequest("tool_choice", "Invalid 'tool_choice': 'required' is only allowed when 'tools' are specified.")
		}
		return nil
	case ToolChoiceFunction:
		if tc.Name == "" {
			return InvalidRequest("tool_choice.function.name", "Missing the function name in 'tool_choice'.")
		}
		if !seen[tc.Name] {
			return InvalidRequest("tool_choice.function.name", fmt.Sprintf(
				"Invalid 'tool_choice': function '%s' is not among the request's 'tools'.", tc.Name))
		}
		return nil
	}
	return InvalidRequest("tool_choice", fmt.Sprintf("Invalid value: '%s'. Supported values are: "+
		"'none', 'auto', 'required', or an object naming a function.", tc.Mode))
}

// ValidFunctionName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$, the
// rule OpenAI applies to function names.
func ValidFunctionName(name string) bool {
	return len(name) >= 1 && len(name) <= 64 && allOf(name, isWordByte)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func allOf(s string, ok func(byte) bool) bool {
	for i := range len(s) {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
