package openaiwire

import (
	"bytes"
	"fmt"
	"strings"

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
	if r.hasSettings() {
		if err := r.validateSettings(); err != nil {
			return Conversation{}, err
		}
	}
	return r.conversation()
}

// hasSettings reports whether the request has any of what
// validateSettings checks: most requests have none.
func (r *ChatCompletionRequest) hasSettings() bool {
	return r.SetsTurn() || len(r.Tools) > 0 || r.Logprobs != nil || r.TopLogprobs != nil
}

// validateSettings checks the sampling settings, the options, the tools
// and tool_choice, and response_format.
func (r *ChatCompletionRequest) validateSettings() error {
	if err := r.validateSampling(); err != nil {
		return err
	}
	if err := r.validateOptions(); err != nil {
		return err
	}
	if err := r.validateTools(); err != nil {
		return err
	}
	_, _, err := OutputSchema(r.ResponseFormat)
	return err
}

// Conversation is a request's messages converted as ToContents does, split
// after the last assistant message. System and developer messages are not
// contents: their text is kept in System, for the model's
// client_instructions setting to use or ignore.
type Conversation struct {
	// System is the text of the system and developer messages (and, on the
	// Responses API, the instructions first), joined by a blank line.
	System string
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
	sys1, history, err := toContents(r.Messages[:split], 0)
	if err != nil {
		return Conversation{}, err
	}
	sys2, fresh, err := toContents(r.Messages[split:], split)
	if err != nil {
		return Conversation{}, err
	}
	return Conversation{System: joinNonEmpty(sys1, sys2), History: history, New: fresh}, nil
}

// joinNonEmpty joins the non-empty texts by a blank line.
func joinNonEmpty(texts ...string) string {
	var out []string
	for _, t := range texts {
		if t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

func (r *ChatCompletionRequest) validateSampling() error {
	s := r.sampling()
	if s.empty() {
		return nil // most requests: nothing to check
	}
	for _, c := range []struct {
		param string
		v     *int64
	}{{"max_tokens", r.MaxTokens}, {"max_completion_tokens", r.MaxCompletionTokens}} {
		s.maxTokens = c.v
		if err := s.check(c.param, 1); err != nil {
			return err
		}
	}
	return nil
}

// validateOptions refuses log probabilities and checks the reasoning,
// verbosity and service tier values.
func (r *ChatCompletionRequest) validateOptions() error {
	if r.Logprobs == nil && r.TopLogprobs == nil && r.Reasoning == nil && r.ReasoningEffort == "" &&
		r.Verbosity == "" && r.ServiceTier == "" {
		return nil // most requests: nothing to check
	}
	if r.Logprobs != nil && *r.Logprobs {
		return logprobsRefused("logprobs")
	}
	if r.TopLogprobs != nil && *r.TopLogprobs != 0 {
		return logprobsRefused("top_logprobs")
	}
	var effort string
	if r.Reasoning != nil {
		effort = deref(r.Reasoning.Effort)
	}
	for _, e := range []struct {
		param, value string
		allowed      []string
	}{
		{"reasoning_effort", r.ReasoningEffort, ReasoningEfforts},
		{"reasoning.effort", effort, ReasoningEfforts},
		{"verbosity", r.Verbosity, Verbosities},
		{"service_tier", r.ServiceTier, ServiceTiers},
	} {
		if err := checkEnum(e.param, e.value, e.allowed); err != nil {
			return err
		}
	}
	return nil
}

func (r *ChatCompletionRequest) validateTools() error {
	if len(r.Tools) == 0 && r.ToolChoice == nil {
		return nil // nothing to check
	}
	seen := map[string]bool{}
	for i, t := range r.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return InvalidRequest(param+".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'.", t.Type))
		}
		if t.Function == nil {
			return InvalidRequest(param+".function", "Missing 'function' in a tool of type 'function'.")
		}
		if err := declareFunction(param+".function.name", t.Function.Name, seen); err != nil {
			return err
		}
	}
	tc := r.ToolChoice
	if tc == nil {
		return nil
	}
	if done, err := checkToolChoiceMode(tc.Mode, len(r.Tools)); done && err != nil {
		return err
	} else if done {
		return nil
	}
	if tc.Mode == ToolChoiceFunction {
		if err := namedChoice("tool_choice.function.name", tc.Name, seen); err != nil {
			return err
		}
		return nil
	}
	return InvalidRequest("tool_choice", fmt.Sprintf("Invalid value: '%s'. Supported values are: "+
		"'none', 'auto', 'required', or an object naming a function.", tc.Mode))
}

// checkToolChoiceMode checks the string forms of tool_choice: done is true
// for none, auto and required (err set when required comes without tools),
// false for the object forms the caller checks.
func checkToolChoiceMode(mode string, tools int) (done bool, err *Error) {
	switch mode {
	case ToolChoiceNone, ToolChoiceAuto:
		return true, nil
	case ToolChoiceRequired:
		if tools == 0 {
			return true, InvalidRequest("tool_choice", "Invalid 'tool_choice': 'required' is only allowed when 'tools' are specified.")
		}
		return true, nil
	}
	return false, nil
}

// declareFunction checks a client function's name, valid and not in seen,
// and adds it to seen; param names the field in errors.
func declareFunction(param, name string, seen map[string]bool) *Error {
	if !ValidFunctionName(name) {
		return InvalidRequest(param, fmt.Sprintf("Invalid function name '%s': "+
			"expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", name))
	}
	if seen[name] {
		return InvalidRequest(param, fmt.Sprintf("Duplicate function name '%s'.", name))
	}
	seen[name] = true
	return nil
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
