package sessions

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"
)

// reflectedJSON is the wire form as reflection writes it (the empty maps
// and slice for nil ones): the reference AppendJSON is held to.
func reflectedJSON(e *Event) ([]byte, error) {
	a := eventAlias(*e)
	act := &a.Actions
	if act.StateDelta == nil {
		act.StateDelta = map[string]any{}
	}
	if act.ArtifactDelta == nil {
		act.ArtifactDelta = map[string]int64{}
	}
	if act.RequestedAuthConfigs == nil {
		act.RequestedAuthConfigs = map[string]any{}
	}
	if act.RequestedToolConfirmations == nil {
		act.RequestedToolConfirmations = map[string]map[string]any{}
	}
	if a.LongRunningToolIDs == nil {
		a.LongRunningToolIDs = []string{}
	}
	return json.Marshal(eventJSON{eventAlias: &a, Timestamp: EpochSeconds(e.Timestamp)})
}

func checkAppendJSON(t *testing.T, name string, e *Event) {
	t.Helper()
	want, err := reflectedJSON(e)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, err := e.AppendJSON([]byte("prefix"))
	if err != nil || string(got) != "prefix"+string(want) {
		t.Errorf("%s:\n got %s (%v)\nwant prefix%s", name, got, err, want)
	}
	if m, err := json.Marshal(e); err != nil || string(m) != string(want) {
		t.Errorf("%s: json.Marshal\n got %s (%v)\nwant %s", name, m, err, want)
	}
	checkPacked(t, name, e, want)
}

// checkPacked: an event that packs unpacks to the same JSON (want), and
// packedLen says how long it packs, with its timestamp and without.
func checkPacked(t *testing.T, name string, e *Event, want []byte) {
	t.Helper()
	packed, ok := e.AppendPacked([]byte("prefix"))
	unstamped := *e
	unstamped.Timestamp = time.Time{}
	bare, _ := unstamped.AppendPacked(nil)
	if n, m := e.packedLen(true), e.packedLen(false); n != len(packed)-len("prefix") || m != len(bare) {
		t.Errorf("%s: packedLen %d, %d unstamped; AppendPacked packs %d, %d", name, n, m, len(packed)-len("prefix"), len(bare))
	}
	if ok {
		// What the memory store packs: the event without its timestamp.
		if got := e.appendPacked([]byte("prefix"), false); string(got) != "prefix"+string(bare) {
			t.Errorf("%s: appendPacked unstamped\n got %q\nwant %q", name, got, "prefix"+string(bare))
		}
	}
	if !ok {
		if string(packed) != "prefix" {
			t.Errorf("%s: AppendPacked wrote %q and refused", name, packed)
		}
		return
	}
	got, err := UnpackEvent(packed[len("prefix"):])
	if err != nil {
		t.Fatalf("%s: UnpackEvent: %v", name, err)
	}
	if j, err := json.Marshal(got); err != nil || string(j) != string(want) {
		t.Errorf("%s: unpacked\n got %s (%v)\nwant %s", name, j, err, want)
	}
}

// jsonTestEvents are the events a run streams, and odd ones, and the
// strings the first 2*len(strs) of them are made of (two events each).
func jsonTestEvents() (events []*Event, strs []string) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	text := func(s string) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s}}}
	}
	strs = []string{"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnl\n\x00\x1f", "日本語 🎉",
		"bad utf-8 \xff end", "\u2028 \u2029"}
	for _, s := range strs {
		events = append(events,
			&Event{ID: s, InvocationID: s, Author: s, Branch: s, Timestamp: at, Content: text(s), Partial: true},
			&Event{ID: "e", Author: "a", Content: &genai.Content{Role: s, Parts: []*genai.Part{{Text: s, Thought: true}, {Thought: true}, {}}},
				FinishReason: genai.FinishReason(s), ModelVersion: s, ErrorCode: s, ErrorMessage: s, LongRunningToolIDs: []string{s, "c2"},
				Actions: EventActions{TransferToAgent: s}},
		)
	}
	events = append(events,
		&Event{},
		&Event{Timestamp: time.Unix(0, 1000)},         // 1e-06 seconds
		&Event{Timestamp: time.Unix(-5, 0)},           // before the epoch
		&Event{Timestamp: time.UnixMilli(1e15)},       // far ahead
		&Event{Content: &genai.Content{}},             // neither parts nor role
		&Event{Content: &genai.Content{Role: "user"}}, // a role alone
		&Event{Content: &genai.Content{Parts: []*genai.Part{nil, {Text: "x"}}}},
		&Event{LongRunningToolIDs: []string{}, CustomMetadata: map[string]any{}},
		&Event{Actions: EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{}}},
		&Event{ID: "final", Content: text("the whole answer"), TurnComplete: true, FinishReason: genai.FinishReasonStop, Timestamp: at,
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 8, TotalTokenCount: 20}},
		&Event{ID: "call", Timestamp: at, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "Let me check."},
			{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "lookup", Args: map[string]any{"q": "<x>", "n": 2.5}}},
			{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "lookup", Response: map[string]any{"ok": true}}},
			{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0, 1, 2}}},
		}}, LongRunningToolIDs: []string{"c1"}},
		&Event{ID: "acts", Timestamp: at, Actions: EventActions{
			StateDelta:                 map[string]any{"k": "v", "app:n": float64(1), "z": nil},
			ArtifactDelta:              map[string]int64{"report": 2},
			RequestedAuthConfigs:       map[string]any{"c1": map[string]any{"scheme": "oauth2"}},
			RequestedToolConfirmations: map[string]map[string]any{"c1": {"hint": "sure?"}},
			TransferToAgent:            "greeter", Escalate: true, SkipSummarization: true,
			Compaction: &EventCompaction{StartTimestamp: at, EndTimestamp: at.Add(time.Minute), CompactedContent: text("summary")},
		}, CustomMetadata: map[string]any{"a2a:task_id": "t1", "n": []any{1, "two"}}},
	)
	return events, strs
}

// The events a run streams, and odd ones, encode as reflection does.
func TestAppendJSONMatchesReflection(t *testing.T) {
	events, strs := jsonTestEvents()
	for i, e := range events {
		checkAppendJSON(t, fmt.Sprint("event ", i), e)
	}
	// Text events pack; those with long-running calls do not (the rest
	// are checked to unpack as they were if they do).
	for i, e := range events[:2*len(strs)] {
		if _, ok := e.AppendPacked(nil); ok != (i%2 == 0) {
			t.Errorf("event %d packs: %v", i, ok)
		}
	}
	// What json.Marshal cannot encode fails as it did.
	for _, e := range []*Event{
		{CustomMetadata: map[string]any{"c": make(chan int)}},
		{Actions: EventActions{StateDelta: map[string]any{"f": func() {}}}},
		{Content: &genai.Content{Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Args: map[string]any{"c": make(chan int)}}}}}},
	} {
		if _, err := e.AppendJSON(nil); err == nil {
			t.Errorf("AppendJSON of an unencodable event %+v: no error", e)
		}
	}
}

// Each field of an event, of its actions, of its content, of a part and
// of its usage, set alone, encodes as reflection does and unpacks to the
// same JSON: a field that a new version of genai adds to Part or to the
// usage is not dropped by the shortcuts unnoticed.
func TestAppendJSONEveryField(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Event](), reflect.TypeFor[EventActions](), reflect.TypeFor[genai.Content](),
		reflect.TypeFor[genai.Part](), reflect.TypeFor[genai.GenerateContentResponseUsageMetadata]()} {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			e := eventWithField(typ, i)
			checkAppendJSON(t, typ.Name()+"."+f.Name, e)
		}
	}
}

// eventWithField is an event with field i of typ (the event, its actions,
// content, a part or usage) set.
func eventWithField(typ reflect.Type, i int) *Event {
	e := &Event{ID: "e", Timestamp: time.Unix(1, 0)}
	var target reflect.Value
	switch typ {
	case reflect.TypeFor[Event]():
		target = reflect.ValueOf(e).Elem()
	case reflect.TypeFor[EventActions]():
		target = reflect.ValueOf(&e.Actions).Elem()
	case reflect.TypeFor[genai.Content]():
		e.Content = &genai.Content{}
		target = reflect.ValueOf(e.Content).Elem()
	case reflect.TypeFor[genai.GenerateContentResponseUsageMetadata]():
		e.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{}
		target = reflect.ValueOf(e.UsageMetadata).Elem()
	default:
		p := &genai.Part{}
		e.Content = &genai.Content{Parts: []*genai.Part{p}}
		target = reflect.ValueOf(p).Elem()
	}
	setNonZero(target.Field(i), 0)
	return e
}

// UnpackEvent fails on what AppendPacked did not write, and never panics.
func FuzzUnpackEvent(f *testing.F) {
	ev := &Event{ID: "e1", InvocationID: "inv", Author: "a", Branch: "b", Partial: true, Timestamp: time.Unix(1, 2000),
		Content: &genai.Content{Role: "model", Parts: []*genai.Part{{Text: "hi"}, {Text: "th", Thought: true}}}}
	packed, _ := ev.AppendPacked(nil)
	f.Add(packed)
	f.Add([]byte{})
	f.Add([]byte{packContent, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := UnpackEvent(b)
		if err != nil {
			return
		}
		// What unpacks packs back to the same JSON.
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		checkPacked(t, "fuzzed", e, want)
	})
}

// setNonZero gives v a value that is not its zero value and that JSON can
// encode.
func setNonZero(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x<&>")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		if depth < 3 {
			setFirstField(v.Elem(), depth+1)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setNonZero(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		setNonZero(k, depth+1)
		val := reflect.New(v.Type().Elem()).Elem()
		setNonZero(val, depth+1)
		m.SetMapIndex(k, val)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any"))
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(2, 0)))
			return
		}
		setFirstField(v, depth)
	}
}

func setFirstField(v reflect.Value, depth int) {
	if v.Kind() != reflect.Struct {
		setNonZero(v, depth)
		return
	}
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() && !strings.HasPrefix(v.Type().Field(i).Tag.Get("json"), "-") {
			setNonZero(v.Field(i), depth)
			return
		}
	}
}

// BenchmarkEventJSON: a streamed delta, as a run log encodes it, by hand
// and by reflection.
func BenchmarkEventJSON(b *testing.B) {
	ev := &Event{ID: "3f7df883-4197-488a-b69c-dd201d235246", InvocationID: "e-b38fa3ae-52c0-47fa-9fd1-01781af5a7aa",
		Author: "desk", Partial: true, Timestamp: time.Now(),
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "tok12 "}}}}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = ev.AppendJSON(buf[:0])
		}
	})
	b.Run("pack", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = ev.AppendPacked(buf[:0])
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = reflectedJSON(ev)
		}
	})
}
