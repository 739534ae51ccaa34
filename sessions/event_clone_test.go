package sessions

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/genai"
)

// appendClones makes what Clone makes, for every event of a batch, and the
// clones share no map or slice with their events.
func TestAppendClonesAsClone(t *testing.T) {
	evs := []*Event{
		{ID: "e1", Author: "a", Timestamp: time.Unix(1, 0)},
		{ID: "e2", Author: "b", Content: &genai.Content{Role: "model", Parts: []*genai.Part{{Text: "hi"}}},
			LongRunningToolIDs: []string{"t1"}, CustomMetadata: map[string]any{"m": 1.0},
			Actions: EventActions{StateDelta: map[string]any{"k": "v"}, ArtifactDelta: map[string]int64{"f": 1}}},
		{ID: "e3", Partial: true, Branch: "x.y"},
	}
	prefix := []*Event{{ID: "e0"}}
	got := appendClones(prefix[:1:1], evs)
	if len(got) != 1+len(evs) || got[0] != prefix[0] {
		t.Fatalf("got %d events, first %v", len(got), got[0])
	}
	for i, ev := range evs {
		c := got[1+i]
		if c == ev || !reflect.DeepEqual(c, ev.Clone()) {
			t.Errorf("event %d: %+v, want %+v", i, c, ev.Clone())
		}
	}
	got[2].Actions.StateDelta["k"] = "changed"
	got[2].LongRunningToolIDs[0] = "changed"
	got[2].CustomMetadata["m"] = 2.0
	if evs[1].Actions.StateDelta["k"] != "v" || evs[1].LongRunningToolIDs[0] != "t1" || evs[1].CustomMetadata["m"] != 1.0 {
		t.Errorf("a clone's change reached its event: %+v", evs[1])
	}
	if n := len(appendClones(nil, nil)); n != 0 {
		t.Errorf("no events: %d clones", n)
	}
}
