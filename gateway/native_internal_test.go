package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

func TestEventViewArtifactSplit(t *testing.T) {
	ev := &sessions.Event{ID: "e1", InvocationID: "inv", Author: "a",
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "saved"}}}}
	ev.Actions.ArtifactDelta = map[string]int64{"report.txt": 2}
	inv := func() string { return "inv" }

	got := (&eventView{invocationID: inv, splitArtifacts: true, callers: map[string]string{}}).frames(ev)
	if len(got) != 2 {
		t.Fatalf("got %d frames, want content then actions", len(got))
	}
	if got[0].ID != "e1" || got[0].Content == nil || len(got[0].Actions.ArtifactDelta) != 0 {
		t.Errorf("content frame %+v", got[0])
	}
	if got[1].ID != "e1" || got[1].Content != nil || got[1].Actions.ArtifactDelta["report.txt"] != 2 {
		t.Errorf("actions frame %+v", got[1])
	}
	if ev.Actions.ArtifactDelta["report.txt"] != 2 || ev.Content == nil {
		t.Errorf("the runtime's event was changed: %+v", ev)
	}
	// A reply to a long-running call (functionCallEventId) is sent whole.
	got = (&eventView{invocationID: inv, callers: map[string]string{}}).frames(ev)
	if len(got) != 1 || got[0] != ev {
		t.Errorf("unsplit frames %+v", got)
	}
}

func TestEventViewChildBranches(t *testing.T) {
	v := &eventView{invocationID: func() string { return "e-1" }, callers: map[string]string{}}
	call := func(author, inv, branch, name string) *sessions.Event {
		return &sessions.Event{InvocationID: inv, Author: author, Branch: branch,
			Content: &genai.Content{Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: name}}}}}
	}
	var branches []string
	for _, ev := range []*sessions.Event{
		call("root", "e-1", "", "outer"),
		call("outer", "e-1.sub.outer", "", "inner"),
		{InvocationID: "e-1.sub.outer.sub.inner", Author: "inner"},
		{InvocationID: "e-1.sub.outer.sub.inner", Author: "inner", Branch: "par.x"},
		{InvocationID: "e-1", Author: "root"},
	} {
		branches = append(branches, v.frames(ev)[0].Branch)
	}
	want := []string{"", "root.outer", "root.outer.inner", "root.outer.inner.par.x", ""}
	if diff := cmp.Diff(want, branches); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
}

func TestCamelKey(t *testing.T) {
	for in, want := range map[string]string{"new_message": "newMessage", "app_name": "appName", "appName": "appName",
		"function_call_event_id": "functionCallEventId", "_private": "_private", "x_": "x_", "a__b": "aB"} {
		if got := camelKey(in); got != want {
			t.Errorf("camelKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeContent(t *testing.T) {
	raw := []byte(`{"role":"user","parts":[
		{"text":"look"},
		{"inline_data":{"mime_type":"image/png","data":"_-8"}},
		{"function_response":{"id":"c1","name":"pick","response":{"user_choice":"a_b"},"will_continue":false}},
		{"fileData":{"file_uri":"gs://b/o","mimeType":"text/plain"}}]}`)
	got, err := decodeContent(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := &genai.Content{Role: "user", Parts: []*genai.Part{
		{Text: "look"},
		{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0xff, 0xef}}},
		{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "pick", Response: map[string]any{"user_choice": "a_b"}, WillContinue: genai.Ptr(false)}},
		{FileData: &genai.FileData{FileURI: "gs://b/o", MIMEType: "text/plain"}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`"text"`, `{"parts":"x"}`, `{"parts":[{"functionCall":5}]}`, `{"parts":[{"text":5}]}`, `{"role":`} {
		if _, err := decodeContent([]byte(bad)); err == nil {
			t.Errorf("decodeContent(%s) accepted", bad)
		} else if ae := classify(err); ae.status != 400 {
			t.Errorf("decodeContent(%s): status %d", bad, ae.status)
		}
	}
	if c, err := decodeContent([]byte(" null ")); c != nil || err != nil {
		t.Errorf("null content: %v %v", c, err)
	}
}
