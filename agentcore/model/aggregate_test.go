package model

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

func TestAggregator(t *testing.T) {
	text := func(s string, thought bool) *Response {
		return &Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s, Thought: thought}}}}
	}
	call := &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}}
	var a Aggregator
	for _, r := range []*Response{
		text("Let ", true), text("me think.", true),
		{Content: &genai.Content{Parts: []*genai.Part{{Thought: true, ThoughtSignature: []byte("sig")}}}},
		text("Hel", false), text("", false), text("lo", false), nil,
		{Content: &genai.Content{Parts: []*genai.Part{call, nil, {Text: " wor"}}}},
		text("ld", false), {ModelVersion: "v2"},
	} {
		a.Add(r)
	}
	got := a.Final(genai.FinishReasonStop, nil)
	want := &Response{TurnComplete: true, FinishReason: genai.FinishReasonStop, ModelVersion: "v2", Content: &genai.Content{Role: genai.RoleModel,
		Parts: []*genai.Part{{Text: "Let me think.", Thought: true, ThoughtSignature: []byte("sig")}, {Text: "Hello"}, call, {Text: " world"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("final (-want +got):\n%s", diff)
	}
}

// A long streamed answer costs time linear in its length.
func BenchmarkAggregator1000Deltas(b *testing.B) {
	deltas := make([]*Response, 1000)
	for i := range deltas {
		deltas[i] = &Response{Partial: true, Content: &genai.Content{Parts: []*genai.Part{{Text: strings.Repeat("x", 16)}}}}
	}
	b.ReportAllocs()
	for b.Loop() {
		var a Aggregator
		for _, d := range deltas {
			a.Add(d)
		}
		if r := a.Final(genai.FinishReasonStop, nil); len(r.Content.Parts[0].Text) != 16000 {
			b.Fatal(len(r.Content.Parts[0].Text))
		}
	}
}
