package redis

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// TestWindowReadsNoEarlierEvent: a read since the latest compaction does
// not read the events before it. The first stored event is made unreadable:
// a whole read fails on it, the windowed read never sees it.
func TestWindowReadsNoEarlierEvent(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ctx := t.Context()
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "a", UserID: "u", SessionID: "long"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC().Truncate(time.Microsecond)
	var evs []*sessions.Event
	for i := range 50 {
		evs = append(evs, &sessions.Event{ID: "e" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Author: "user", Timestamp: ts,
			Content: genai.NewContentFromText("old", genai.RoleUser)})
	}
	evs = append(evs, &sessions.Event{ID: "c", Author: "user", Timestamp: ts,
		Actions: sessions.EventActions{Compaction: &sessions.EventCompaction{StartTimestamp: ts, EndTimestamp: ts,
			CompactedContent: genai.NewContentFromText("sum", genai.RoleModel)}}},
		&sessions.Event{ID: "new", Author: "user", Timestamp: ts, Content: genai.NewContentFromText("new", genai.RoleUser)})
	if err := s.AppendEvents(ctx, sess, evs); err != nil {
		t.Fatal(err)
	}
	k := s.keys("a", "u", "long")
	if err := s.client.LSet(ctx, k.events, 0, "not json").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, sessions.GetRequest{AppName: "a", UserID: "u", SessionID: "long"}); !errors.Is(err, errCorrupt) {
		t.Fatalf("whole read: err = %v, want the broken first event reported", err)
	}
	got, err := s.Get(ctx, sessions.GetRequest{AppName: "a", UserID: "u", SessionID: "long", Window: sessions.Window{SinceCompaction: true}})
	if err != nil {
		t.Fatalf("windowed read: %v", err)
	}
	if len(got.Events) != 2 || got.Events[0].ID != "c" || got.Events[1].ID != "new" {
		t.Errorf("windowed read = %v, want [c new]", got.Events)
	}
}

// TestWindowOldSession: a session without a compaction (as every session
// written before windowed reads existed: no compaction field in its meta
// hash) reads whole, and its first
// compaction starts the window without any migration step.
func TestWindowOldSession(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ctx := t.Context()
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "a", UserID: "u", SessionID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC().Truncate(time.Microsecond)
	ev := func(id string) *sessions.Event {
		return &sessions.Event{ID: id, Author: "user", Timestamp: ts, Content: genai.NewContentFromText(id, genai.RoleUser)}
	}
	if err := s.AppendEvents(ctx, sess, []*sessions.Event{ev("e1"), ev("e2")}); err != nil {
		t.Fatal(err)
	}
	req := sessions.GetRequest{AppName: "a", UserID: "u", SessionID: "old", Window: sessions.Window{SinceCompaction: true}}
	got, err := s.Get(ctx, req)
	if err != nil || len(got.Events) != 2 {
		t.Fatalf("old session since compaction: %v, %d events; want both", err, len(got.Events))
	}
	c := ev("c")
	c.Actions.Compaction = &sessions.EventCompaction{StartTimestamp: ts, EndTimestamp: ts}
	if err := s.AppendEvents(ctx, sess, []*sessions.Event{c, ev("e3")}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Get(ctx, req); err != nil || len(got.Events) != 2 || got.Events[0].ID != "c" {
		t.Fatalf("after its first compaction: %v, %v; want [c e3]", err, got)
	}
}
