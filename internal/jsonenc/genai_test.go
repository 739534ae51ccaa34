package jsonenc

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/genai"
)

// TestAppendContentKnowsEveryField: handPart checks every field of the genai
// types it writes by hand (a field genai adds must be added there, or the
// part would lose it): each field of Part, FunctionCall and
// FunctionResponse set in turn, the part is encoded as json.Marshal does.
func TestAppendContentKnowsEveryField(t *testing.T) {
	known := map[reflect.Type][]string{
		reflect.TypeFor[genai.Part](): {"MediaResolution", "CodeExecutionResult", "ExecutableCode", "FileData", "FunctionCall", "FunctionResponse",
			"InlineData", "Text", "Thought", "ThoughtSignature", "VideoMetadata", "ToolCall", "ToolResponse", "PartMetadata",
			"AudioTranscription", "MediaProcessing", "SpeechMetadata"},
		reflect.TypeFor[genai.FunctionCall]():     {"ID", "Args", "Name", "PartialArgs", "WillContinue"},
		reflect.TypeFor[genai.FunctionResponse](): {"WillContinue", "Scheduling", "Parts", "ID", "Name", "Response"},
		reflect.TypeFor[genai.Content]():          {"Parts", "Role"},
	}
	for typ, names := range known {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, names) {
			t.Errorf("%v has the fields %v, handPart and appendPart know %v", typ, got, names)
		}
	}
	// Each field set to a value of its own, in turn.
	set := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			if v.Type().Elem().Kind() == reflect.Bool {
				v.Elem().SetBool(true)
			}
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			if e := v.Index(0); e.Kind() == reflect.Pointer {
				e.Set(reflect.New(e.Type().Elem()))
			}
		case reflect.Map:
			v.Set(reflect.MakeMap(v.Type()))
			v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(any("v")))
		default:
			t.Fatalf("no value for a %v", v.Type())
		}
	}
	check := func(p *genai.Part, what string) {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendPart(nil, p)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: appendPart = %s, %v; json.Marshal: %s", what, got, err, want)
		}
	}
	for i := range reflect.TypeFor[genai.Part]().NumField() {
		var p genai.Part
		set(reflect.ValueOf(&p).Elem().Field(i))
		check(&p, "Part."+reflect.TypeFor[genai.Part]().Field(i).Name)
	}
	for i := range reflect.TypeFor[genai.FunctionCall]().NumField() {
		p := genai.Part{FunctionCall: &genai.FunctionCall{}}
		set(reflect.ValueOf(p.FunctionCall).Elem().Field(i))
		check(&p, "FunctionCall."+reflect.TypeFor[genai.FunctionCall]().Field(i).Name)
	}
	for i := range reflect.TypeFor[genai.FunctionResponse]().NumField() {
		p := genai.Part{FunctionResponse: &genai.FunctionResponse{}}
		set(reflect.ValueOf(p.FunctionResponse).Elem().Field(i))
		check(&p, "FunctionResponse."+reflect.TypeFor[genai.FunctionResponse]().Field(i).Name)
	}
}

// TestAppendContent: contents of every part kind written by hand, and of
// others, come out as json.Marshal writes them, or fail as it fails.
func TestAppendContent(t *testing.T) {
	tricky := "<a href=\"x\">&amp;</a>\n\t\\ \x01 日本 \u2028 \xff"
	contents := []*genai.Content{
		{Parts: []*genai.Part{{Text: tricky, Thought: true, ThoughtSignature: []byte{0, 0xff, 1}}, {Thought: true}, {}, nil}},
		{Role: tricky},
		{},
		nil,
		{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{}},
			{FunctionCall: &genai.FunctionCall{Name: tricky, Args: map[string]any{}}, ThoughtSignature: []byte("s")},
			{FunctionCall: &genai.FunctionCall{ID: tricky, Args: map[string]any{tricky: tricky, "n": []any{int64(-3), int32(4), 0.1, float32(0.1), nil,
				map[string]any{}, []any{}, json.Number("7"), map[string]string{"b": "1", "a": "2"}}}}, Text: "with text"},
		}},
		{Role: genai.RoleUser, Parts: []*genai.Part{
			{FunctionResponse: &genai.FunctionResponse{}},
			{FunctionResponse: &genai.FunctionResponse{ID: "i", Response: map[string]any{"output": json.RawMessage(`{"x" : 1}`)}}},
			{FunctionResponse: &genai.FunctionResponse{Name: "n", Scheduling: genai.FunctionResponseSchedulingSilent, Response: map[string]any{"a": 1}}},
			{FunctionResponse: &genai.FunctionResponse{Name: "n", Parts: []*genai.FunctionResponsePart{{InlineData: &genai.FunctionResponseBlob{MIMEType: "image/png", Data: []byte{1}}}}}},
			{FunctionCall: &genai.FunctionCall{Name: "f", Args: map[string]any{"a": 1}}, FunctionResponse: &genai.FunctionResponse{Name: "f"}, Text: "all three"},
			{PartMetadata: map[string]any{"k": "v"}, Text: "metadata"},
			{InlineData: &genai.Blob{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8}}},
		}},
	}
	for _, tc := range []struct {
		name     string
		contents []*genai.Content
	}{
		{"every kind", contents},
		{"none", []*genai.Content{}},
		{"a NaN in the arguments", []*genai.Content{{Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Args: map[string]any{"x": math.NaN()}}}}}}},
		{"a NaN in a response", []*genai.Content{{Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Response: map[string]any{"x": math.Inf(-1)}}}}}}},
		{"a NaN in a marshalled part", []*genai.Content{{Parts: []*genai.Part{{InlineData: &genai.Blob{}, FunctionCall: &genai.FunctionCall{Args: map[string]any{"x": math.NaN()}}}}}}},
	} {
		want, werr := json.Marshal(tc.contents)
		got, err := AppendContents([]byte("x"), tc.contents)
		if (err == nil) != (werr == nil) || (err == nil && string(got) != "x"+string(want)) {
			t.Errorf("%s: AppendContents = %s, %v; json.Marshal: %s, %v", tc.name, got, err, want, werr)
		}
	}
}
