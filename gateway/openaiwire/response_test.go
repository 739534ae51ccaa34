package openaiwire

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

func TestResponseJSON(t *testing.T) {
	stop, tools := FinishStop, FinishToolCalls
	ext := Extension{Author: "coordinator", InvocationID: "e-1"}
	tests := []struct {
		name string
		v    any
		want string
	}{{
		name: "completion with text",
		v: ChatCompletion{ID: "chatcmpl-1", Created: 1700000000, Model: "support-desk", Agentgate: ext,
			Choices: []Choice{{Message: Message{Role: "assistant", Content: ptr("Hello")}, FinishReason: FinishStop}},
			Usage:   Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		want: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"support-desk",
			"choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],
			"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,
				"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
				"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
			"agentgate":{"author":"coordinator","invocation_id":"e-1"}}`,
	}, {
		name: "completion with only tool calls",
		v: ChatCompletion{ID: "chatcmpl-1", Created: 1, Model: "m", Agentgate: Extension{Author: "a", InvocationID: "i", TransferToAgent: "b"},
			Choices: []Choice{{Message: Message{Role: "assistant", ToolCalls: []ToolCall{
				{ID: "call_1", Type: "function", Function: FunctionCall{Name: "open_file", Arguments: `{"path":"a.txt"}`}}}},
				FinishReason: FinishToolCalls}}},
		want: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
			"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"open_file","arguments":"{\"path\":\"a.txt\"}"}}]},
				"logprobs":null,"finish_reason":"tool_calls"}],
			"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,
				"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
				"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
			"agentgate":{"author":"a","invocation_id":"i","transfer_to_agent":"b"}}`,
	}, {
		name: "content chunk",
		v: ChatCompletionChunk{ID: "chatcmpl-1", Created: 1, Model: "m", Agentgate: ext,
			Choices: []ChunkChoice{{Delta: Delta{Role: "assistant", Content: ptr("")}}}},
		want: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",
			"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],
			"agentgate":{"author":"coordinator","invocation_id":"e-1"}}`,
	}, {
		name: "tool call chunks",
		v: []ChatCompletionChunk{
			{ID: "c", Created: 1, Model: "m", Agentgate: ext, Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCallDelta{
				{Index: 1, ID: "call_2", Type: "function", Function: FunctionCallDelta{Name: "open_file"}}}}}}},
			{ID: "c", Created: 1, Model: "m", Agentgate: ext, Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCallDelta{
				{Index: 1, Function: FunctionCallDelta{Arguments: "{}"}}}}}}},
			{ID: "c", Created: 1, Model: "m", Agentgate: ext, Choices: []ChunkChoice{{FinishReason: &tools}}},
		},
		want: `[{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","agentgate":{"author":"coordinator","invocation_id":"e-1"},
				"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"open_file","arguments":""}}]},
				"logprobs":null,"finish_reason":null}]},
			{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","agentgate":{"author":"coordinator","invocation_id":"e-1"},
				"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]},
			{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","agentgate":{"author":"coordinator","invocation_id":"e-1"},
				"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}]`,
	}, {
		name: "usage chunk",
		v:    ChatCompletionChunk{ID: "c", Created: 1, Model: "m", Agentgate: ext, Usage: &Usage{PromptTokens: 1, TotalTokens: 1}},
		want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],
			"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1,
				"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
				"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
			"agentgate":{"author":"coordinator","invocation_id":"e-1"}}`,
	}, {
		name: "finish chunk",
		v:    ChatCompletionChunk{ID: "c", Created: 1, Model: "m", Agentgate: ext, Choices: []ChunkChoice{{FinishReason: &stop}}},
		want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",
			"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"agentgate":{"author":"coordinator","invocation_id":"e-1"}}`,
	}, {
		name: "model",
		v:    Model{ID: "team/researcher", Created: 1700000000, OwnedBy: "agentgate"},
		want: `{"id":"team/researcher","object":"model","created":1700000000,"owned_by":"agentgate"}`,
	}, {
		name: "model list",
		v:    ModelList{Data: []Model{{ID: "a", Created: 1, OwnedBy: "agentgate"}}},
		want: `{"object":"list","data":[{"id":"a","object":"model","created":1,"owned_by":"agentgate"}]}`,
	}, {
		name: "empty model list",
		v:    ModelList{},
		want: `{"object":"list","data":[]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertJSON(t, tt.want, tt.v) })
	}
}

func TestUsageFrom(t *testing.T) {
	tests := []struct {
		name string
		in   *genai.GenerateContentResponseUsageMetadata
		want Usage
	}{
		{"nil", nil, Usage{}},
		{"gemini counts: candidates exclude thoughts", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 100,
			ToolUsePromptTokenCount: 5, CandidatesTokenCount: 20, ThoughtsTokenCount: 30, CachedContentTokenCount: 40, TotalTokenCount: 155},
			Usage{PromptTokens: 105, CompletionTokens: 50, TotalTokens: 155,
				PromptTokensDetails:     PromptTokensDetails{CachedTokens: 40},
				CompletionTokensDetails: CompletionTokensDetails{ReasoningTokens: 30}}},
		{"openai provider counts: candidates include reasoning", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 100,
			CandidatesTokenCount: 50, ThoughtsTokenCount: 30, TotalTokenCount: 150},
			Usage{PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150,
				CompletionTokensDetails: CompletionTokensDetails{ReasoningTokens: 30}}},
		{"sum of both", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 200, ToolUsePromptTokenCount: 5,
			CandidatesTokenCount: 70, ThoughtsTokenCount: 60, TotalTokenCount: 305},
			Usage{PromptTokens: 205, CompletionTokens: 100, TotalTokens: 305,
				CompletionTokensDetails: CompletionTokensDetails{ReasoningTokens: 60}}},
		{"no total", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, ThoughtsTokenCount: 2},
			Usage{PromptTokens: 10, CompletionTokens: 7, TotalTokens: 17, CompletionTokensDetails: CompletionTokensDetails{ReasoningTokens: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, UsageFrom(tt.in)); diff != "" {
				t.Errorf("usage mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIDs(t *testing.T) {
	completion := regexp.MustCompile(`^chatcmpl-[A-Za-z0-9]{29}$`)
	call := regexp.MustCompile(`^call_[A-Za-z0-9]{32}$`)
	seen := map[string]bool{}
	for range 100 { // completion ids from several batches of random bytes
		c, tc := NewCompletionID(), NewToolCallID()
		if !completion.MatchString(c) || !call.MatchString(tc) || !ValidToolCallID(tc) {
			t.Fatalf("bad ids %q %q", c, tc)
		}
		if seen[tc] || seen[c] {
			t.Fatalf("repeated id %q or %q", tc, c)
		}
		seen[tc], seen[c] = true, true
	}
	for id, want := range map[string]bool{
		"call_abc": true, "adk-0b6e7c1a-6a43-4e8d-9f51-2f1c3b9a7d10": true, "toolu_01A-b_c": true,
		"": false, "call abc": false, "call.1": false, "x" + string(make([]byte, 40)): false,
		"a123456789012345678901234567890123456789": true, "a1234567890123456789012345678901234567890": false,
	} {
		if got := ValidToolCallID(id); got != want {
			t.Errorf("ValidToolCallID(%q) = %v, want %v", id, got, want)
		}
	}
}
