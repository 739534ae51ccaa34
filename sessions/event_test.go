package sessions_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

var at = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// fullEvent sets every field of the wire format.
func fullEvent() *sessions.Event {
	return &sessions.Event{
		ID: "e1", InvocationID: "e-inv", Author: "coordinator", Branch: "fan.a", Timestamp: at,
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "Let me check."},
			{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "get_user_choice", Args: map[string]any{"options": []any{"a", "b"}}}},
		}},
		Partial: true, TurnComplete: true, FinishReason: genai.FinishReasonStop, ModelVersion: "demo-1",
		ErrorCode: "MAX_ITERATIONS", ErrorMessage: "stopped",
		UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 4, TotalTokenCount: 7},
		Actions: sessions.EventActions{
			StateDelta:                 map[string]any{"k": "v", "app:n": float64(1)},
			ArtifactDelta:              map[string]int64{"report": 2},
			RequestedAuthConfigs:       map[string]any{"c1": map[string]any{"scheme": "oauth2"}},
			RequestedToolConfirmations: map[string]map[string]any{"c1": {"hint": "sure?"}},
			TransferToAgent:            "greeter", Escalate: true, SkipSummarization: true,
		},
		LongRunningToolIDs: []string{"c1"},
	}
}

// A bare event still carries the four action maps and longRunningToolIds,
// and its timestamp is float epoch seconds.
func TestEventJSONBare(t *testing.T) {
	ev := sessions.Event{ID: "e1", InvocationID: "e-inv", Author: "user", Timestamp: at}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"e1","invocationId":"e-inv","author":"user",` +
		`"actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},` +
		`"longRunningToolIds":[],"timestamp":1767323045.123456}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	// A pointer marshals the same way.
	if bp, _ := json.Marshal(&ev); string(bp) != string(b) {
		t.Errorf("pointer JSON %s differs from value JSON %s", bp, b)
	}
}

// Every field uses ADK's camelCase name.
func TestEventJSONFieldNames(t *testing.T) {
	b, err := json.Marshal(fullEvent())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": "e1", "invocationId": "e-inv", "author": "coordinator", "branch": "fan.a", "timestamp": 1767323045.123456,
		"content": map[string]any{"role": "model", "parts": []any{
			map[string]any{"text": "Let me check."},
			map[string]any{"functionCall": map[string]any{"id": "c1", "name": "get_user_choice", "args": map[string]any{"options": []any{"a", "b"}}}},
		}},
		"partial": true, "turnComplete": true, "finishReason": "STOP", "modelVersion": "demo-1",
		"errorCode": "MAX_ITERATIONS", "errorMessage": "stopped",
		"usageMetadata": map[string]any{"promptTokenCount": float64(3), "candidatesTokenCount": float64(4), "totalTokenCount": float64(7)},
		"actions": map[string]any{
			"stateDelta":                 map[string]any{"k": "v", "app:n": float64(1)},
			"artifactDelta":              map[string]any{"report": float64(2)},
			"requestedAuthConfigs":       map[string]any{"c1": map[string]any{"scheme": "oauth2"}},
			"requestedToolConfirmations": map[string]any{"c1": map[string]any{"hint": "sure?"}},
			"transferToAgent":            "greeter", "escalate": true, "skipSummarization": true,
		},
		"longRunningToolIds": []any{"c1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestEventJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   *sessions.Event
	}{
		{"full", fullEvent()},
		{"bare", &sessions.Event{ID: "e2", InvocationID: "i", Author: "user", Timestamp: at,
			Actions: sessions.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{},
				RequestedAuthConfigs: map[string]any{}, RequestedToolConfirmations: map[string]map[string]any{}},
			LongRunningToolIDs: []string{}}},
		{"function response", &sessions.Event{ID: "e3", InvocationID: "i", Author: "helper", Timestamp: at,
			Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: "c1", Name: "weather", Response: map[string]any{"temp": float64(21)}}}}},
			Actions: sessions.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{},
				RequestedAuthConfigs: map[string]any{}, RequestedToolConfirmations: map[string]map[string]any{}},
			LongRunningToolIDs: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			var got sessions.Event
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.ev, &got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			again, _ := json.Marshal(&got)
			if string(again) != string(b) {
				t.Errorf("second encoding differs:\n%s\n%s", b, again)
			}
		})
	}
}

// The stored form leaves out what holds nothing, and reads back as an
// event whose wire form is the original's, byte for byte; every field of
// a full event survives it.
func TestEventStoredJSON(t *testing.T) {
	withCompaction := fullEvent()
	withCompaction.Actions = sessions.EventActions{Compaction: &sessions.EventCompaction{StartTimestamp: at, EndTimestamp: at,
		CompactedContent: genai.NewContentFromText("summary", genai.RoleModel)}}
	for _, tc := range []struct {
		name string
		ev   *sessions.Event
		want string // the stored form, when checked
	}{
		{"full", fullEvent(), ""},
		{"bare", &sessions.Event{ID: "e1", InvocationID: "e-inv", Author: "user", Timestamp: at},
			`{"id":"e1","invocationId":"e-inv","author":"user","timestamp":1767323045.123456}`},
		{"empty maps", &sessions.Event{ID: "e1", InvocationID: "e-inv", Author: "user", Timestamp: at,
			Actions: sessions.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{}}, LongRunningToolIDs: []string{}},
			`{"id":"e1","invocationId":"e-inv","author":"user","timestamp":1767323045.123456}`},
		{"one action", &sessions.Event{ID: "e1", InvocationID: "e-inv", Author: "coordinator", Timestamp: at,
			Actions: sessions.EventActions{TransferToAgent: "greeter"}},
			`{"id":"e1","invocationId":"e-inv","author":"coordinator","actions":{"transferToAgent":"greeter"},"timestamp":1767323045.123456}`},
		{"one delta", &sessions.Event{ID: "e1", InvocationID: "e-inv", Author: "user", Timestamp: at,
			Actions: sessions.EventActions{StateDelta: map[string]any{"k": "v"}}},
			`{"id":"e1","invocationId":"e-inv","author":"user","actions":{"stateDelta":{"k":"v"}},"timestamp":1767323045.123456}`},
		{"members after an empty one", &sessions.Event{ID: "e1", InvocationID: "e-inv", Author: "user", Timestamp: at,
			Actions: sessions.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{"a.txt": 1}, Escalate: true, SkipSummarization: true}},
			`{"id":"e1","invocationId":"e-inv","author":"user","actions":{"artifactDelta":{"a.txt":1},"escalate":true,"skipSummarization":true},"timestamp":1767323045.123456}`},
		{"compaction", withCompaction, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored, err := tc.ev.StoredJSON()
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && string(stored) != tc.want {
				t.Errorf("stored form\n%s\nwant\n%s", stored, tc.want)
			}
			var got sessions.Event
			if err := json.Unmarshal(stored, &got); err != nil {
				t.Fatal(err)
			}
			wire, _ := json.Marshal(tc.ev)
			again, _ := json.Marshal(&got)
			if string(again) != string(wire) {
				t.Errorf("wire form after storing\n%s\nwant\n%s", again, wire)
			}
			if len(stored) > len(wire) {
				t.Errorf("stored form (%d bytes) longer than the wire form (%d)", len(stored), len(wire))
			}
		})
	}
}

// Timestamps are read as float epoch seconds (Python ADK) or integer
// milliseconds (ADK JS).
func TestEventTimestampDecoding(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       time.Time
	}{
		{"float seconds", "1767323045.123456", at},
		{"whole seconds", "1767323045", at.Truncate(time.Second)},
		{"integer milliseconds", "1767323045123", at.Truncate(time.Millisecond)},
		{"fractional milliseconds", "1767323045123.5", at.Truncate(time.Millisecond).Add(500 * time.Microsecond)},
		{"zero", "0", time.Time{}},
		{"missing", "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"id":"e","invocationId":"i","author":"user"`
			if tc.json != "" {
				doc += `,"timestamp":` + tc.json
			}
			var ev sessions.Event
			if err := json.Unmarshal([]byte(doc+"}"), &ev); err != nil {
				t.Fatal(err)
			}
			if !ev.Timestamp.Equal(tc.want) {
				t.Errorf("timestamp %v, want %v", ev.Timestamp, tc.want)
			}
		})
	}
}

// Unknown fields (newer ADK versions) are tolerated; a malformed document
// is an error.
func TestEventUnmarshalTolerance(t *testing.T) {
	var ev sessions.Event
	if err := json.Unmarshal([]byte(`{"id":"e","author":"user","timestamp":1.5,"groundingMetadata":{"x":1},"actions":{"stateDelta":{"a":1},"future":true}}`), &ev); err != nil {
		t.Fatalf("unknown fields: %v", err)
	}
	if ev.ID != "e" || ev.Actions.StateDelta["a"] != float64(1) {
		t.Errorf("decoded %+v", ev)
	}
	for _, bad := range []string{`{"id":1}`, `{"timestamp":"yesterday"}`, `[`} {
		if err := json.Unmarshal([]byte(bad), &ev); err == nil {
			t.Errorf("%s decoded without error", bad)
		}
	}
}

func TestSessionJSON(t *testing.T) {
	s := sessions.Session{ID: "s1", AppName: "app", UserID: "u1", LastUpdateTime: at}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"s1","appName":"app","userId":"u1","state":{},"events":[],"lastUpdateTime":1767323045.123456}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	s.State = map[string]any{"k": "v"}
	s.Events = []*sessions.Event{fullEvent()}
	b, _ = json.Marshal(s)
	var got sessions.Session
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestEventHelpers(t *testing.T) {
	call := &genai.Part{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "f"}}
	resp := &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "f"}}
	thought := &genai.Part{Text: "hmm", Thought: true}
	for _, tc := range []struct {
		name      string
		ev        sessions.Event
		wantText  string
		wantFinal bool
		calls     int
		resps     int
	}{
		{"text", sessions.Event{Content: &genai.Content{Parts: []*genai.Part{thought, {Text: "a"}, {Text: "b"}}}}, "ab", true, 0, 0},
		{"partial", sessions.Event{Partial: true, Content: &genai.Content{Parts: []*genai.Part{{Text: "a"}}}}, "a", false, 0, 0},
		{"empty and nil parts", sessions.Event{Content: &genai.Content{Parts: []*genai.Part{{Text: ""}, nil, {Text: "b"}, thought, {Text: "c"}}}}, "bc", true, 0, 0},
		{"call", sessions.Event{Content: &genai.Content{Parts: []*genai.Part{call}}}, "", false, 1, 0},
		{"response", sessions.Event{Content: &genai.Content{Parts: []*genai.Part{resp}}}, "", false, 0, 1},
		{"long-running call", sessions.Event{Content: &genai.Content{Parts: []*genai.Part{call}}, LongRunningToolIDs: []string{"c1"}}, "", true, 1, 0},
		{"skip summarization", sessions.Event{Content: &genai.Content{Parts: []*genai.Part{resp}}, Actions: sessions.EventActions{SkipSummarization: true}},
			"", true, 0, 1},
		{"no content", sessions.Event{}, "", true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.ev.Text(); got != tc.wantText {
				t.Errorf("Text = %q, want %q", got, tc.wantText)
			}
			if got := tc.ev.IsFinalResponse(); got != tc.wantFinal {
				t.Errorf("IsFinalResponse = %v, want %v", got, tc.wantFinal)
			}
			if c, r := len(tc.ev.FunctionCalls()), len(tc.ev.FunctionResponses()); c != tc.calls || r != tc.resps {
				t.Errorf("calls %d responses %d, want %d %d", c, r, tc.calls, tc.resps)
			}
		})
	}
}

func TestEventCloneIsIndependent(t *testing.T) {
	orig := fullEvent()
	c := orig.Clone()
	c.Actions.StateDelta["k"] = "changed"
	c.Actions.ArtifactDelta["report"] = 9
	c.LongRunningToolIDs[0] = "other"
	if diff := cmp.Diff(fullEvent(), orig); diff != "" {
		t.Errorf("changing the clone changed the original (-want +got):\n%s", diff)
	}
}
