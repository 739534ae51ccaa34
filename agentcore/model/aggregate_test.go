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

// The first part and the final response share one allocation: the parts
// given are not changed, a call first keeps its place, and a turn of no
// parts has no content.
func TestAggregatorRoom(t *testing.T) {
	first := &genai.Part{Text: "Hel"}
	call := &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}}
	var a Aggregator
	a.Add(&Response{Partial: true, Content: &genai.Content{Parts: []*genai.Part{first}}})
	a.Add(&Response{Partial: true, Content: &genai.Content{Parts: []*genai.Part{{Text: "lo"}}}})
	got := a.Final(genai.FinishReasonStop, nil)
	if first.Text != "Hel" || got.Content.Parts[0] == first || got.Content.Parts[0].Text != "Hello" {
		t.Errorf("first part %q, final's %q (the same: %v)", first.Text, got.Content.Parts[0].Text, got.Content.Parts[0] == first)
	}

	var b Aggregator
	b.Add(&Response{Content: &genai.Content{Parts: []*genai.Part{call, {Text: "after"}}}})
	want := &Response{TurnComplete: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{call, {Text: "after"}}}}
	if diff := cmp.Diff(want, b.Final("", nil)); diff != "" {
		t.Errorf("call first (-want +got):\n%s", diff)
	}

	var c Aggregator
	c.Add(&Response{Partial: true, Content: &genai.Content{Parts: []*genai.Part{{Text: ""}}}})
	if got := c.Final(genai.FinishReasonStop, nil); got.Content != nil || !got.TurnComplete {
		t.Errorf("no parts: %+v", got)
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
