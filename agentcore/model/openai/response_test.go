package openai

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

// A non-streamed answer's parts: reasoning, then its text (content and
// refusal), then its tool calls (the slow path beside a text-only
// answer's), ids kept; a call whose arguments are not a JSON object is
// left out and marks the answer.
func TestCompletionResponseToolCalls(t *testing.T) {
	call := func(id, name, args string) wireToolCall {
		tc := wireToolCall{ID: id}
		tc.Function.Name, tc.Function.Arguments = name, args
		return tc
	}
	for _, tc := range []struct {
		name  string
		msg   wireMessage
		parts []*genai.Part
		bad   bool
	}{
		{"text alone", wireMessage{Content: "Hello"}, []*genai.Part{{Text: "Hello"}}, false},
		{"a refusal", wireMessage{Refusal: "I can't."}, []*genai.Part{{Text: "I can't."}}, false},
		{"text and a refusal", wireMessage{Content: "Well. ", Refusal: "I can't."}, []*genai.Part{{Text: "Well. I can't."}}, false},
		{"reasoning and text", wireMessage{Reasoning: "Think.", Content: "Hi"},
			[]*genai.Part{{Text: "Think.", Thought: true}, {Text: "Hi"}}, false},
		{"reasoning and calls", wireMessage{ReasoningContent: "Look it up.", ToolCalls: []wireToolCall{call("call_1", "lookup", `{}`)}},
			[]*genai.Part{{Text: "Look it up.", Thought: true},
				{FunctionCall: &genai.FunctionCall{ID: "call_1", Name: "lookup", Args: map[string]any{}}}}, false},
		{"text and calls", wireMessage{Content: "Let me look.", ToolCalls: []wireToolCall{
			call("call_1", "lookup", `{"id":7}`), call("call_2", "other", "")}},
			[]*genai.Part{{Text: "Let me look."},
				{FunctionCall: &genai.FunctionCall{ID: "call_1", Name: "lookup", Args: map[string]any{"id": float64(7)}}},
				{FunctionCall: &genai.FunctionCall{ID: "call_2", Name: "other", Args: map[string]any{}}}}, false},
		{"calls alone", wireMessage{ToolCalls: []wireToolCall{call("call_1", "lookup", `{}`)}},
			[]*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "call_1", Name: "lookup", Args: map[string]any{}}}}, false},
		{"a broken call", wireMessage{Content: "x", ToolCalls: []wireToolCall{call("call_1", "lookup", `[1]`)}},
			[]*genai.Part{{Text: "x"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := completionResponse(&wireCompletion{Model: "m", Choices: []wireChoice{{Message: tc.msg, FinishReason: "stop"}}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Content == nil || r.Content.Role != genai.RoleModel {
				t.Fatalf("content %+v", r.Content)
			}
			if diff := cmp.Diff(tc.parts, r.Content.Parts); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if bad := r.FinishReason == genai.FinishReasonMalformedFunctionCall; bad != tc.bad {
				t.Errorf("finish reason %s, malformed call %v", r.FinishReason, tc.bad)
			}
		})
	}
}

// A non-streamed answer's usage is mapped, and an answer without usage
// has none.
func TestCompletionResponseUsage(t *testing.T) {
	u := &wireUsage{PromptTokens: 12, CompletionTokens: 8, TotalTokens: 20}
	u.PromptTokensDetails.CachedTokens, u.CompletionTokensDetails.ReasoningTokens = 4, 2
	r, err := completionResponse(&wireCompletion{Choices: []wireChoice{{Message: wireMessage{Content: "ok"}}}, Usage: u})
	if err != nil {
		t.Fatal(err)
	}
	want := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 8,
		CachedContentTokenCount: 4, ThoughtsTokenCount: 2, TotalTokenCount: 20}
	if diff := cmp.Diff(want, r.UsageMetadata); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if r, _ := completionResponse(&wireCompletion{Choices: []wireChoice{{}}}); r.UsageMetadata != nil || r.Content != nil {
		t.Errorf("empty answer: usage %v, content %v", r.UsageMetadata, r.Content)
	}
}
