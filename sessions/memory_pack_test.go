package sessions_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// The memory store keeps plain text events packed and the others cloned:
// a read gives back every event as appended (its timestamp to the
// nanosecond, in its location, where the packed form keeps microseconds),
// in fresh objects that the caller may change without changing what the
// store holds, nor the other events read with them.
func TestMemoryServicePackedEvents(t *testing.T) {
	ctx := context.Background()
	svc := sessions.NewMemoryService(sessions.MemoryConfig{})
	sess, err := svc.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	text := func(id, role, s string) *sessions.Event {
		return &sessions.Event{ID: id, InvocationID: "i", Author: role, Timestamp: ts, Content: genai.NewContentFromText(s, genai.Role(role))}
	}
	model := text("m1", genai.RoleModel, "an answer")
	model.TurnComplete, model.FinishReason = true, genai.FinishReasonStop
	model.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, TotalTokenCount: 5}
	call := &sessions.Event{ID: "c1", Author: genai.RoleModel, Timestamp: ts.Add(time.Nanosecond),
		Content: genai.NewContentFromFunctionCall("f", map[string]any{"a": 1.0}, genai.RoleModel),
		Actions: sessions.EventActions{StateDelta: map[string]any{"k": "v"}}}
	// Events of more than one part: 4, then 2 and 2 (which the store may
	// make in one allocation).
	parts := func(id string, n int) *sessions.Event {
		ev := text(id, genai.RoleModel, "a thought")
		ev.Content.Parts[0].Thought = true
		for range n - 1 {
			ev.Content.Parts = append(ev.Content.Parts, genai.NewPartFromText("and a reply"))
		}
		return ev
	}
	evs := []*sessions.Event{text("u1", genai.RoleUser, "a question"), model, call, parts("m2", 4), parts("m3", 2),
		parts("m4", 2), text("u2", genai.RoleUser, "thanks"), {ID: "bare", Author: "user"}}
	if err := svc.AppendEvents(ctx, sess, evs); err != nil {
		t.Fatal(err)
	}
	req := sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s"}
	read := func(w sessions.Window) []*sessions.Event {
		t.Helper()
		req.Window = w
		got, err := svc.Get(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return got.Events
	}
	got := read(sessions.Window{})
	if !reflect.DeepEqual(got, evs) {
		t.Fatalf("read back:\n%+v\nwant\n%+v", got, evs)
	}

	got[1].UsageMetadata.TotalTokenCount = 9
	got[2].Actions.StateDelta["k"] = "changed"
	// A clone (c1) shares its content, which no one changes (see Event.Clone);
	// the packed events' contents are the caller's own.
	packed := func(ev *sessions.Event) bool { return ev.Content != nil && ev.ID != "c1" }
	for _, ev := range got {
		if packed(ev) {
			ev.Content.Parts[0].Text += " changed"
			ev.Content.Parts = append(ev.Content.Parts, genai.NewPartFromText("more"))
		}
	}
	for i, ev := range got {
		if !packed(ev) {
			continue
		}
		first := *evs[i].Content.Parts[0]
		first.Text += " changed"
		want := append(append([]*genai.Part{&first}, evs[i].Content.Parts[1:]...), genai.NewPartFromText("more"))
		if !reflect.DeepEqual(ev.Content.Parts, want) {
			t.Errorf("event %s: the caller's changes to the events read left its parts %+v, want %+v", ev.ID, ev.Content.Parts, want)
		}
	}
	if again := read(sessions.Window{}); !reflect.DeepEqual(again, evs) {
		t.Errorf("after the caller's changes the store reads:\n%+v\nwant\n%+v", again, evs)
	}
	// A window that starts after the first packed events.
	for n := 1; n < len(evs); n++ {
		if tail := read(sessions.Window{NumRecentEvents: n}); !reflect.DeepEqual(tail, evs[len(evs)-n:]) {
			t.Errorf("the last %d events:\n%+v\nwant\n%+v", n, tail, evs[len(evs)-n:])
		}
	}
}

// Batches after a session's first pack straight into its packed bytes,
// which grow as they fill, also in the middle of an event: every event
// reads back as appended, whatever the batch it came in and however large
// (the 4 KiB text outgrows a growth), and a window that starts inside any
// batch reads its events alone.
func TestMemoryServicePackedBatches(t *testing.T) {
	ctx := context.Background()
	svc := sessions.NewMemoryService(sessions.MemoryConfig{})
	sess, err := svc.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var all []*sessions.Event
	for i, text := range []string{"a", "a question", strings.Repeat("long ", 820), "b", "thanks", strings.Repeat("x", 300)} {
		batch := []*sessions.Event{
			{ID: fmt.Sprint("u", i), InvocationID: "i", Author: "user", Timestamp: ts, Content: genai.NewContentFromText(text, genai.RoleUser)},
			{ID: fmt.Sprint("m", i), InvocationID: "i", Author: "model", Timestamp: ts, TurnComplete: true,
				Content:       genai.NewContentFromText("re: "+text, genai.RoleModel),
				UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: int32(i), TotalTokenCount: 1 << 20}},
		}
		if err := svc.AppendEvents(ctx, sess, batch); err != nil {
			t.Fatal(err)
		}
		all = append(all, batch...)
	}
	req := sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s"}
	for n := 1; n <= len(all); n++ {
		req.Window = sessions.Window{NumRecentEvents: n}
		got, err := svc.Get(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if want := all[len(all)-n:]; !reflect.DeepEqual(got.Events, want) {
			t.Fatalf("the last %d events:\n%+v\nwant\n%+v", n, got.Events, want)
		}
	}
}
