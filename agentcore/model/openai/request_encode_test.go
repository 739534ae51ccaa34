package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// MarshalJSON is messageContent's JSON for encoding/json (the reference
// encode is held to): its Parts, else its Text, HTML escaping off as in the
// rest of the request.
func (c messageContent) MarshalJSON() ([]byte, error) {
	var v any = c.Text
	if c.Parts != nil {
		v = c.Parts
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// encodeJSON is what encode must write: encoding/json's output for p, with
// HTML escaping off.
func encodeJSON(t *testing.T, p *chatRequest) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// encode writes every request, every field set and not, byte for byte as
// encoding/json does.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	yes, no := true, false
	tricky := "<a href=\"x\">&amp;</a>\n\t\\ \x01 日本 \u2028 \xff"
	reqs := map[string]*chatRequest{
		"empty":       {},
		"no messages": {Model: "m", Messages: []chatMessage{}},
		"one user message": {Model: "gpt-4o", Messages: []chatMessage{
			{Role: "system", Content: messageContent{Text: "Answer."}}, {Role: "user", Content: messageContent{Text: "Hello, how are you?"}}}},
		"every field": {
			Model: tricky,
			Messages: []chatMessage{
				{Role: "system", Content: messageContent{Text: tricky}},
				{Role: "user"},
				{Role: "user", Content: messageContent{Parts: []contentPart{
					{Type: "text", Text: tricky},
					{Type: "image_url", ImageURL: &imageURL{URL: "data:image/png;base64,AA==", Detail: "low"}},
					{Type: "image_url", ImageURL: &imageURL{URL: "https://x/<y>"}},
					{Type: "input_audio", InputAudio: &inputAudio{Data: "AA==", Format: "wav"}},
					{Type: "file", File: &filePart{FileData: "data:application/pdf;base64,AA==", Filename: tricky}},
					{Type: "file", File: &filePart{FileData: "data:application/pdf;base64,AA=="}},
				}}},
				{Role: "assistant", ToolCalls: []chatToolCall{
					{ID: "call_1", Type: "function", Function: functionCall{Name: "f", Arguments: `{"q":"<x>"}`}},
					{ID: tricky, Type: "function", Function: functionCall{Name: tricky, Arguments: "{}"}}}},
				{Role: "assistant", Content: messageContent{Text: "text and a call"}, ToolCalls: []chatToolCall{{ID: "c", Type: "function"}}},
				{Role: "tool", Content: messageContent{Text: `{"temperature":21}`}, ToolCallID: "call_1"},
			},
			Tools: []chatTool{
				{Type: "function", Function: functionDef{Name: "f", Description: tricky,
					Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "description": "<&>"}}}}},
				{Type: "function", Function: functionDef{Name: "g"}},
			},
			ToolChoice:          namedToolChoice{Type: "function"},
			ResponseFormat:      &responseFormat{Type: "json_schema", JSONSchema: &jsonSchemaFormat{Name: "output", Strict: true, Schema: map[string]any{"type": "object"}}},
			Temperature:         f(0.7),
			TopP:                f(1),
			PresencePenalty:     f(-0.5),
			FrequencyPenalty:    f(1e-7),
			MaxCompletionTokens: 4096,
			Seed:                i(-42),
			Stop:                []string{"END", tricky},
			Stream:              true,
			StreamOptions:       &streamOptions{IncludeUsage: true},
			ParallelToolCalls:   &no,
			ReasoningEffort:     "high",
			Verbosity:           "low",
			ServiceTier:         "flex",
		},
		"tool choice string, no options": {Model: "m", Messages: []chatMessage{{Role: "user", Content: messageContent{Text: "x"}}},
			ToolChoice: "required", StreamOptions: &streamOptions{}, ParallelToolCalls: &yes, Seed: i(0), Stop: []string{}},
		"large floats": {Model: "m", Messages: []chatMessage{{Role: "user", Content: messageContent{Text: "x"}}}, Temperature: f(1e21), TopP: f(123456789)},
	}
	for name, p := range reqs {
		t.Run(name, func(t *testing.T) {
			got, err := p.encode()
			if err != nil {
				t.Fatal(err)
			}
			if want := encodeJSON(t, p); !bytes.Equal(got, want) {
				t.Errorf("encode:\n got %s\nwant %s", got, want)
			}
		})
	}
	// What encoding/json cannot encode fails the same way.
	bad := &chatRequest{Model: "m", Messages: []chatMessage{{Role: "user", Content: messageContent{Text: "x"}}}, Temperature: f(math.NaN())}
	if _, err := bad.encode(); err == nil {
		t.Error("a NaN temperature encoded")
	}
}

// The requests buildParams makes encode in one allocation.
func TestEncodeAllocatesOnce(t *testing.T) {
	p := &chatRequest{Model: "m", Messages: []chatMessage{{Role: "system", Content: messageContent{Text: "Answer."}},
		{Role: "user", Content: messageContent{Text: "Hello, how are you? " + string(bytes.Repeat([]byte("and more "), 200))}}}}
	if n := testing.AllocsPerRun(100, func() { _, _ = p.encode() }); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// BenchmarkEncode writes a pass-through turn's request and a stateless
// client's 40-message history, by hand (encode) and with encoding/json
// (what encode replaced).
func BenchmarkEncode(b *testing.B) {
	history := []chatMessage{{Role: "system", Content: messageContent{Text: "Answer."}}}
	for range 10 {
		history = append(history,
			chatMessage{Role: "user", Content: messageContent{Text: "What is the weather in city 7?"}},
			chatMessage{Role: "assistant", ToolCalls: []chatToolCall{{ID: "call_7", Type: "function", Function: functionCall{Name: "get_weather", Arguments: `{"city":"city 7"}`}}}},
			chatMessage{Role: "tool", Content: messageContent{Text: `{"temperature":21,"sky":"clear"}`}, ToolCallID: "call_7"},
			chatMessage{Role: "assistant", Content: messageContent{Text: "It is 21 degrees and clear."}})
	}
	for name, p := range map[string]*chatRequest{
		"pass":      {Model: "pass", Messages: []chatMessage{{Role: "system", Content: messageContent{Text: "Answer."}}, {Role: "user", Content: messageContent{Text: "Hello, how are you?"}}}},
		"history40": {Model: "pass", Messages: history},
	} {
		b.Run(name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.encode(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A request of text messages allocates its messages' slice and nothing per
// message. (User messages: a model's or system text is joined first, which
// the race detector's build allocates.)
func TestBuildParamsTextMessagesAllocateTheSliceOnly(t *testing.T) {
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("Hello", genai.RoleUser),
		genai.NewContentFromText("Say more", genai.RoleUser), genai.NewContentFromText("And more", genai.RoleUser)}}
	if n := testing.AllocsPerRun(100, func() {
		var p chatRequest
		_ = buildParams(&p, "m", req)
	}); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
	// None when given room for them (as call.body gives it).
	var room [4]chatMessage
	if n := testing.AllocsPerRun(100, func() { _, _ = newParams(room[:], "m", req) }); n != 0 {
		t.Errorf("with room: %v allocations, want 0", n)
	}
}

// Each member encoding/json writes, set alone, is written: encode skips
// them all when none is set.
func TestEncodeEachEncodedMember(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for name, set := range map[string]func(*chatRequest){
		"tool_choice":       func(p *chatRequest) { p.ToolChoice = "auto" },
		"response_format":   func(p *chatRequest) { p.ResponseFormat = &responseFormat{Type: "json_object"} },
		"temperature":       func(p *chatRequest) { p.Temperature = f(0) },
		"top_p":             func(p *chatRequest) { p.TopP = f(0.5) },
		"presence_penalty":  func(p *chatRequest) { p.PresencePenalty = f(1) },
		"frequency_penalty": func(p *chatRequest) { p.FrequencyPenalty = f(-1) },
	} {
		p := &chatRequest{Model: "m", Messages: []chatMessage{{Role: "user", Content: messageContent{Text: "x"}}}}
		set(p)
		got, err := p.encode()
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeJSON(t, p); !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"`+name+`":`)) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}
