package sessions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/genai"
)

// checkUnmarshal: UnmarshalEvent gives what json.Unmarshal into a new
// Event gives, the same event or the same error.
func checkUnmarshal(t *testing.T, name, data string) {
	t.Helper()
	want := &Event{}
	werr := json.Unmarshal([]byte(data), want)
	got, err := UnmarshalEvent(data)
	switch {
	case werr != nil:
		if err == nil || err.Error() != werr.Error() {
			t.Errorf("%s: %q: error %v, want %v", name, data, err, werr)
		}
	case err != nil:
		t.Errorf("%s: %q: %v", name, data, err)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%s: %q:\n got %#v\nwant %#v", name, data, got, want)
	}
}

// handDecoded reports whether the decoder takes data itself, without
// falling back to encoding/json for the whole event.
func handDecoded(data string) bool {
	var d eventDecoder
	d.Reset([]byte(data))
	d.event(&Event{})
	return d.End()
}

// Every event, in its stored and its wire form and with each field set
// alone, reads back as encoding/json reads it, and by hand: what the
// encoders write never takes the slow path.
func TestUnmarshalEventMatchesEncodingJSON(t *testing.T) {
	events, _ := jsonTestEvents()
	for _, typ := range []reflect.Type{reflect.TypeFor[Event](), reflect.TypeFor[EventActions](), reflect.TypeFor[genai.Content](),
		reflect.TypeFor[genai.Part](), reflect.TypeFor[genai.GenerateContentResponseUsageMetadata]()} {
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				events = append(events, eventWithField(typ, i))
			}
		}
	}
	for i, e := range events {
		stored, err := e.StoredJSON()
		if err != nil {
			t.Fatal(err)
		}
		wire, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, data := range []string{string(stored), string(wire)} {
			checkUnmarshal(t, fmt.Sprint("event ", i), data)
			if !handDecoded(data) {
				t.Errorf("event %d: %s not decoded by hand", i, data)
			}
		}
	}
}

// oddEvents are inputs the encoders never write: the decoder takes some
// (escaped keys, strings encoding/json repairs) and leaves the others to
// encoding/json; either way the result must be encoding/json's.
var oddEvents = []string{
	``, ` `, `null`, `[]`, `"x"`, `{`, `{}`, ` {"id":"a"} `, `{"id":"a"}x`, `{"id":"a"}{}`, `{"id":"a"}` + "\x00",
	`{"ID":"a"}`, `{"id":"a","id":"b"}`, `{"id":"a","unknown":[1,{"x":"]"}]}`, `{"id":null}`, `{"id":1}`,
	`{"id":"\u00e9\ud83c\udf89"}`, `{"id":"\ud800"}`, `{"id":"\x"}`, `{"id":"a\u00"}`, "{\"id\":\"\xff\"}", "{\"id\":\"a\x01\"}",
	`{"i\u0064":"a"}`, `{"id":"a\"b\\c\/d\b\f\n\r\t"}`,
	`{"timestamp":1e400}`, `{"timestamp":-0}`, `{"timestamp":01}`, `{"timestamp":1.}`, `{"timestamp":.5}`, `{"timestamp":1e}`,
	`{"timestamp":1764000000123}`, `{"timestamp":"1"}`, `{"timestamp":null}`, `{"timestamp":1.5E+3}`,
	`{"partial":true,"turnComplete":false}`, `{"partial":tru}`, `{"partial":1}`, `{"partial":null}`,
	`{"content":null}`, `{"content":{"parts":null}}`, `{"content":{"parts":[null]}}`, `{"content":{"parts":[]}}`,
	`{"content":{"parts":[{}],"role":"user","role":"model"}}`, `{"content":{"parts":[{"text":"a","text":"b"}]}}`,
	`{"content":{"parts":[{"text":"a","functionCall":{"name":"f","args":{"a":"}"}}}]}}`,
	`{"content":{"parts":[{"text":1}]}}`, `{"content":{"parts":[{"inlineData":{"data":"AAE="}}]}}`,
	`{"content":{"parts":[{"inlineData":{"data":"!"}}]}}`, `{"content":{"parts":[{"text":"a"}`, `{"content":[]}`,
	`{"usageMetadata":{"promptTokenCount":1,"totalTokenCount":2}}`, `{"usageMetadata":{"promptTokenCount":1.5}}`,
	`{"usageMetadata":{"promptTokenCount":3000000000}}`, `{"usageMetadata":{"promptTokenCount":1,"trafficType":"X"}}`,
	`{"usageMetadata":{"promptTokenCount":1,"promptTokenCount":2}}`, `{"usageMetadata":null}`, `{"usageMetadata":{"a":}}`,
	`{"actions":{}}`, `{"actions":null}`, `{"actions":{"stateDelta":{"a":1,"b":[true,null]}}}`, `{"actions":{"stateDelta":null}}`,
	`{"actions":{"stateDelta":[]}}`, `{"actions":{"stateDelta":{"a":"x","b":nul}}}`, `{"actions":{"stateDelta":{"a":1e999}}}`,
	`{"actions":{"stateDelta":{"\u0061":1,"a":2}}}`, `{"actions":{"stateDelta":{"a":-0.5,"a":false,"n":null,"s":"\n"}}}`,
	`{"actions":{"requestedAuthConfigs":{"a":{"b":1}}}}`, `{"actions":{"stateDelta":{"a":+1}}}`, `{"actions":{"artifactDelta":{"a":1.5}}}`, `{"actions":{"escalate":true,"escalate":false}}`,
	`{"actions":{"compaction":{"startTimestamp":1,"endTimestamp":2000000000000}}}`, `{"actions":{"compaction":null}}`,
	`{"actions":{"transferToAgent":"x","skipSummarization":true,"requestedToolConfirmations":{"c":{"a":1}}}}`,
	`{"longRunningToolIds":[]}`, `{"longRunningToolIds":null}`, `{"longRunningToolIds":["a",1]}`, `{"longRunningToolIds":["a" ,"b"]}`,
	`{"customMetadata":{"a":{"b":[1,"]"]}}}`, `{"customMetadata":[]}`, `{"customMetadata":{"a":1}`,
	"\t{ \"id\" : \"a\" ,\n\"partial\" : true }\r\n",
}

func TestUnmarshalEventOddInput(t *testing.T) {
	for i, data := range oddEvents {
		checkUnmarshal(t, fmt.Sprint("input ", i), data)
	}
}

// FuzzUnmarshalEvent: whatever the input, UnmarshalEvent gives what
// encoding/json gives.
func FuzzUnmarshalEvent(f *testing.F) {
	events, _ := jsonTestEvents()
	for _, e := range events {
		stored, _ := e.StoredJSON()
		f.Add(string(stored))
	}
	for _, data := range oddEvents {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data string) {
		checkUnmarshal(t, "fuzzed", data)
	})
}

// BenchmarkUnmarshalEvent: a stored model turn (text, usage and a state
// delta) and a stored streamed delta, by hand and by encoding/json.
func BenchmarkUnmarshalEvent(b *testing.B) {
	at := time.Now()
	for _, tc := range []struct {
		name string
		ev   *Event
	}{
		{"turn", &Event{ID: "3f7df883-4197-488a-b69c-dd201d235246", InvocationID: "e-b38fa3ae-52c0-47fa-9fd1-01781af5a7aa",
			Author: "desk", Timestamp: at, TurnComplete: true, FinishReason: genai.FinishReasonStop,
			Content:       genai.NewContentFromText("Sure: the report is ready, \"final\" and <signed>.\nAnything else?", genai.RoleModel),
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 120, CandidatesTokenCount: 18, TotalTokenCount: 138},
			Actions:       EventActions{StateDelta: map[string]any{"turn": float64(3)}}}},
		{"delta", &Event{ID: "3f7df883-4197-488a-b69c-dd201d235246", InvocationID: "e-b38fa3ae-52c0-47fa-9fd1-01781af5a7aa",
			Author: "desk", Partial: true, Timestamp: at,
			Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "tok12 "}}}}},
	} {
		stored, err := tc.ev.StoredJSON()
		if err != nil {
			b.Fatal(err)
		}
		data := string(stored)
		b.Run(tc.name+"/hand", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := UnmarshalEvent(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := json.Unmarshal([]byte(data), &Event{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
