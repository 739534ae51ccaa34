package openaiwire

import (
	"encoding/json"
	"testing"
)

// The hand-written chunk encoder writes what json.Marshal writes, byte for
// byte, whatever the strings hold.
func TestAppendChunkFrameMatchesMarshal(t *testing.T) {
	str := func(s string) *string { return &s }
	stop, calls := FinishStop, FinishToolCalls
	strs := []string{"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnl\ncr\rbs\bff\f\x00\x01\x1f\x7f",
		"héllo wörld 日本語 🎉", "bad utf-8 \xff\xfe end", "\u2028 line \u2029 para", "\xe2\x80", "a\u00a0b"}
	var chunks []ChatCompletionChunk
	for _, s := range strs {
		chunks = append(chunks,
			ChatCompletionChunk{ID: s, Object: ObjectChunk, Created: 1700000000, Model: s,
				Choices:   []ChunkChoice{{Delta: Delta{Role: "assistant", Content: str(s)}}},
				Agentgate: Extension{Author: s, InvocationID: "e-1", TransferToAgent: s}},
			ChatCompletionChunk{ID: "c", Created: -5, Model: "m",
				Choices: []ChunkChoice{{Index: 3, Delta: Delta{ToolCalls: []ToolCallDelta{
					{Index: 0, ID: s, Type: "function", Function: FunctionCallDelta{Name: s, Arguments: ""}},
					{Index: 1, Function: FunctionCallDelta{Arguments: s}},
				}}, FinishReason: &calls}}},
		)
	}
	chunks = append(chunks,
		ChatCompletionChunk{},
		ChatCompletionChunk{Choices: []ChunkChoice{{Delta: Delta{Content: str("")}, FinishReason: &stop}}},
		ChatCompletionChunk{ID: "u", Choices: []ChunkChoice{}, Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3,
			PromptTokensDetails:     PromptTokensDetails{CachedTokens: 4, AudioTokens: 5},
			CompletionTokensDetails: CompletionTokensDetails{ReasoningTokens: 6, AudioTokens: 7, AcceptedPredictionTokens: 8, RejectedPredictionTokens: 9}}},
		ChatCompletionChunk{Choices: []ChunkChoice{{Logprobs: json.RawMessage(`{ "content" : null }`)}, {Index: 1}}},
	)
	// One ChunkFramer through every chunk, each twice (what it keeps of
	// the chunk before, then a new head or extension), writes the same.
	var f ChunkFramer
	for i, c := range chunks {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		want = append(append([]byte("data: "), want...), "\n\n"...)
		got, err := AppendChunkFrame([]byte("prefix"), &c)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("chunk %d:\n got %q, %v\nwant %q", i, got, err, "prefix"+string(want))
		}
		for range 2 {
			got, err = f.Append([]byte("prefix"), &c)
			if err != nil || string(got) != "prefix"+string(want) {
				t.Errorf("chunk %d, framed:\n got %q, %v\nwant %q", i, got, err, "prefix"+string(want))
			}
		}
	}
}

func TestAppendCompletionMatchesMarshal(t *testing.T) {
	str := func(s string) *string { return &s }
	var comps []ChatCompletion
	for _, s := range []string{"", "plain", "<&> \"quoted\" \\ \n\t\x01", "日本 \u2028 \xff"} {
		comps = append(comps,
			ChatCompletion{ID: s, Object: ObjectCompletion, Created: 1700000000, Model: s,
				Choices:   []Choice{{Message: Message{Role: "assistant", Content: str(s)}, FinishReason: FinishStop}},
				Usage:     Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3, PromptTokensDetails: PromptTokensDetails{CachedTokens: 4}},
				Agentgate: Extension{Author: s, InvocationID: s, TransferToAgent: s}},
			ChatCompletion{ID: "x", Model: "m", Choices: []Choice{{Index: 1, Message: Message{Role: "assistant", ToolCalls: []ToolCall{
				{ID: s, Type: "function", Function: FunctionCall{Name: s, Arguments: s}}, {ID: "b", Type: "function"},
			}}, FinishReason: FinishToolCalls}}, Agentgate: Extension{Author: "a"}},
		)
	}
	comps = append(comps, ChatCompletion{}, ChatCompletion{Choices: []Choice{{Logprobs: json.RawMessage(`{"content": []}`)}}})
	for i, c := range comps {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendCompletion(nil, &c)
		if err != nil || string(got) != string(want) {
			t.Errorf("completion %d:\n got %s, %v\nwant %s", i, got, err, want)
		}
	}
}

// BenchmarkChunkFrame: a streamed delta's chunk framed on its own
// (AppendChunkFrame) and by the response's ChunkFramer, which keeps what
// each chunk repeats:
//
//	go test -run '^$' -bench ChunkFrame -benchmem ./gateway/openaiwire/
func BenchmarkChunkFrame(b *testing.B) {
	text := " tokens"
	c := ChatCompletionChunk{ID: "chatcmpl-7f3c9b2e4d5a46c8a1b0e9f8d7c6b5a4", Object: ObjectChunk, Created: 1700000000,
		Model: "support-triage", Choices: []ChunkChoice{{Delta: Delta{Content: &text}}},
		Agentgate: Extension{Author: "triage", InvocationID: "e-2f1d8c7b-6a5e-4d3c-9b2a-1f0e9d8c7b6a"}}
	buf := make([]byte, 0, 1024)
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = AppendChunkFrame(buf[:0], &c)
		}
	})
	b.Run("framer", func(b *testing.B) {
		var f ChunkFramer
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = f.Append(buf[:0], &c)
		}
	})
}
