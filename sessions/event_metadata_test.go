package sessions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentgate/agentgate/sessions"
)

// customMetadata rides on the wire as ADK's customMetadata, is left out
// when empty, and Clone copies it.
func TestEventCustomMetadata(t *testing.T) {
	ev := &sessions.Event{ID: "e1", Author: "remote", CustomMetadata: map[string]any{"a2a:task_id": "t1"}}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"customMetadata":{"a2a:task_id":"t1"}`) {
		t.Fatalf("wire form lacks customMetadata: %s", b)
	}
	var back sessions.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.CustomMetadata["a2a:task_id"] != "t1" {
		t.Fatalf("round trip lost customMetadata: %v", back.CustomMetadata)
	}
	c := ev.Clone()
	c.CustomMetadata["a2a:task_id"] = "changed"
	if ev.CustomMetadata["a2a:task_id"] != "t1" {
		t.Fatal("Clone shares customMetadata with the original")
	}
	plain, _ := json.Marshal(&sessions.Event{ID: "e2"})
	if strings.Contains(string(plain), "customMetadata") {
		t.Fatalf("empty customMetadata is written: %s", plain)
	}
}
