package sessiontest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// windowTests check windowed reads (sessions.Window): the events from the
// latest compaction event on, the last N, both, and that state is read
// whole whatever the window.
var windowTests = []struct {
	name string
	fn   func(t *testing.T, svc sessions.Service)
}{
	{"WindowWithoutCompaction", testWindowWithoutCompaction},
	{"WindowSinceCompaction", testWindowSinceCompaction},
	{"WindowGetOrCreate", testWindowGetOrCreate},
	{"WindowUncoveredBeforeCompaction", testWindowUncoveredBeforeCompaction},
}

// compactionEvent is a compaction event covering [start, end].
func compactionEvent(id string, start, end time.Time) *sessions.Event {
	return &sessions.Event{ID: id, InvocationID: "c-" + id, Author: "user", Timestamp: end.Add(time.Millisecond),
		Actions: sessions.EventActions{Compaction: &sessions.EventCompaction{StartTimestamp: start, EndTimestamp: end,
			CompactedContent: genai.NewContentFromText("summary "+id, genai.RoleModel)}}}
}

func windowed(t *testing.T, svc sessions.Service, s *sessions.Session, w sessions.Window) []string {
	t.Helper()
	req := key(s)
	req.Window = w
	got, err := svc.Get(t.Context(), req)
	if err != nil {
		t.Fatalf("Get(%+v): %v", w, err)
	}
	return eventIDs(got.Events)
}

func testWindowWithoutCompaction(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "w"})
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		appendEv(t, svc, s, newEvent(id, time.Time{}, nil))
	}
	for _, tc := range []struct {
		w    sessions.Window
		want []string
	}{
		{sessions.Window{}, []string{"e1", "e2", "e3", "e4"}},
		{sessions.Window{SinceCompaction: true}, []string{"e1", "e2", "e3", "e4"}},
		{sessions.Window{NumRecentEvents: 2}, []string{"e3", "e4"}},
		{sessions.Window{NumRecentEvents: 9}, []string{"e1", "e2", "e3", "e4"}},
		{sessions.Window{SinceCompaction: true, NumRecentEvents: 1}, []string{"e4"}},
	} {
		if diff := cmp.Diff(tc.want, windowed(t, svc, s, tc.w)); diff != "" {
			t.Errorf("window %+v (-want +got):\n%s", tc.w, diff)
		}
	}
}

func testWindowSinceCompaction(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "w"})
	base := future()
	appendEv(t, svc, s, newEvent("e1", base, map[string]any{"early": "kept"}))
	appendEv(t, svc, s, newEvent("e2", base.Add(time.Second), nil))
	c1 := compactionEvent("c1", base, base.Add(time.Second))
	appendEv(t, svc, s, c1)
	appendEv(t, svc, s, newEvent("e3", base.Add(2*time.Second), nil))
	if diff := cmp.Diff([]string{"c1", "e3"}, windowed(t, svc, s, sessions.Window{SinceCompaction: true})); diff != "" {
		t.Errorf("after one compaction (-want +got):\n%s", diff)
	}
	// A compaction inside a batch, not at its end, moves the window to it.
	c2 := compactionEvent("c2", base, base.Add(3*time.Second))
	batch := []*sessions.Event{newEvent("e4", base.Add(3*time.Second), nil), c2, newEvent("e5", base.Add(4*time.Second), nil)}
	if b, ok := svc.(sessions.BatchAppender); ok {
		if err := b.AppendEvents(ctx, s, batch); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, ev := range batch {
			appendEv(t, svc, s, ev)
		}
	}
	for _, tc := range []struct {
		w    sessions.Window
		want []string
	}{
		{sessions.Window{SinceCompaction: true}, []string{"c2", "e5"}},
		{sessions.Window{SinceCompaction: true, NumRecentEvents: 1}, []string{"e5"}},
		{sessions.Window{SinceCompaction: true, NumRecentEvents: 5}, []string{"c2", "e5"}},
		{sessions.Window{NumRecentEvents: 3}, []string{"e4", "c2", "e5"}},
		{sessions.Window{}, []string{"e1", "e2", "c1", "e3", "e4", "c2", "e5"}},
	} {
		if diff := cmp.Diff(tc.want, windowed(t, svc, s, tc.w)); diff != "" {
			t.Errorf("window %+v (-want +got):\n%s", tc.w, diff)
		}
	}
	req := key(s)
	req.SinceCompaction = true
	got, err := svc.Get(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.State["early"] != "kept" {
		t.Errorf("windowed read's state = %v, want the delta of an event before the window", got.State)
	}
	// The compaction event reads back whole, in ADK's wire form.
	if diff := cmp.Diff(marshalAll(t, []*sessions.Event{c2}), marshalAll(t, got.Events[:1])); diff != "" {
		t.Errorf("compaction event round trip (-want +got):\n%s", diff)
	}
}

func testWindowGetOrCreate(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "w"})
	base := future()
	appendEv(t, svc, s, newEvent("e1", base, nil))
	appendEv(t, svc, s, compactionEvent("c1", base, base))
	appendEv(t, svc, s, newEvent("e2", base.Add(time.Second), nil))
	got, err := sessions.GetOrCreate(t.Context(), svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "w",
		Window: sessions.Window{SinceCompaction: true}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1", "e2"}, eventIDs(got.Events)); diff != "" {
		t.Errorf("GetOrCreate of an existing session, since compaction (-want +got):\n%s", diff)
	}
}

// A compaction event stored after events it does not cover (a turn stored
// them while the summary was being written: their timestamps are after its
// endTimestamp) starts the window at the first of them; never further back
// than the compaction event before it.
func testWindowUncoveredBeforeCompaction(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "w"})
	base := future()
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	// c1 covers e1 and e2; e3 to e12 came while it was summarized (more
	// than a store may read back at a time).
	var ids []string
	for i := range 12 {
		ids = append(ids, fmt.Sprintf("e%d", i+1))
		appendEv(t, svc, s, newEvent(ids[i], at(i), nil))
	}
	c1 := compactionEvent("c1", at(0), at(1))
	c1.Timestamp = at(12)
	appendEv(t, svc, s, c1)
	appendEv(t, svc, s, newEvent("e13", at(13), nil))
	uncovered := append(ids[2:], "c1", "e13")
	for _, tc := range []struct {
		w    sessions.Window
		want []string
	}{
		{sessions.Window{SinceCompaction: true}, uncovered},
		{sessions.Window{SinceCompaction: true, NumRecentEvents: 2}, []string{"c1", "e13"}},
		{sessions.Window{SinceCompaction: true, NumRecentEvents: 20}, uncovered},
	} {
		if diff := cmp.Diff(tc.want, windowed(t, svc, s, tc.w)); diff != "" {
			t.Errorf("window %+v (-want +got):\n%s", tc.w, diff)
		}
	}
	// c2 covers everything before it: the window starts at it.
	appendEv(t, svc, s, compactionEvent("c2", at(0), at(13)))
	if diff := cmp.Diff([]string{"c2"}, windowed(t, svc, s, sessions.Window{SinceCompaction: true})); diff != "" {
		t.Errorf("after a compaction of every event (-want +got):\n%s", diff)
	}
	// c3 ends before every event (as an imported one may): the events
	// after c2 are uncovered, c2 and what it covers are not read again.
	appendEv(t, svc, s, newEvent("e14", at(14), nil))
	appendEv(t, svc, s, compactionEvent("c3", at(0), at(-1)))
	if diff := cmp.Diff([]string{"e14", "c3"}, windowed(t, svc, s, sessions.Window{SinceCompaction: true})); diff != "" {
		t.Errorf("a compaction that ends before the events since the one before (-want +got):\n%s", diff)
	}
}
