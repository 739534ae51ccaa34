package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/sessions"
)

// batchTests check sessions.BatchAppender; Run skips them for a service
// that does not implement it.
var batchTests = []struct {
	name string
	fn   func(t *testing.T, svc sessions.Service, b sessions.BatchAppender)
}{
	{"AppendEventsLikeAppendEvent", testBatchLikeSingle},
	{"AppendEventsNothingToStore", testBatchEmpty},
	{"AppendEventsMissingSession", testBatchMissing},
	{"AppendEventsAllOrNothing", testBatchAllOrNothing},
	{"AppendEventsNotAliased", testBatchNotAliased},
	{"AppendEventsConcurrent", testBatchConcurrent},
}

// testBatchLikeSingle appends the same events to one session one by one and
// to another in one batch: the stores and the callers' copies end up alike.
func testBatchLikeSingle(t *testing.T, svc sessions.Service, b sessions.BatchAppender) {
	ts := future()
	mixed := func() []*sessions.Event {
		evs := richEvents(ts)
		evs[0].Actions.StateDelta = map[string]any{"temp:draft": "x", "first": true}
		partial := newEvent("p", ts.Add(time.Second), map[string]any{"k": "partial", "user:city": "partial"})
		partial.Partial = true
		return slices.Insert(evs, 2, partial)
	}
	one := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "one", State: map[string]any{"k": "v"}})
	for _, ev := range mixed() {
		appendEv(t, svc, one, ev)
	}
	batch := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "batch", State: map[string]any{"k": "v"}})
	evs := mixed()
	if err := b.AppendEvents(t.Context(), batch, evs); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}

	stored := append(evs[:2:2], evs[3:]...) // without the partial event
	if _, ok := evs[0].Actions.StateDelta["temp:draft"]; ok {
		t.Errorf("temp: key left in the batch's event: %v", evs[0].Actions.StateDelta)
	}
	gotOne, gotBatch := get(t, svc, app, user, "one"), get(t, svc, app, user, "batch")
	if diff := cmp.Diff(marshalAll(t, gotOne.Events), marshalAll(t, gotBatch.Events)); diff != "" {
		t.Errorf("stored events (-one by one +batch):\n%s", diff)
	}
	if diff := cmp.Diff(marshalAll(t, stored), marshalAll(t, gotBatch.Events)); diff != "" {
		t.Errorf("stored events (-appended +read):\n%s", diff)
	}
	want := state(`{"k":"v","first":true,"topic":"weather","app:calls":1,"user:city":"Paris"}`)
	diffState(t, "state after one by one", want, gotOne.State)
	diffState(t, "state after a batch", want, gotBatch.State)
	diffState(t, "caller's copy after a batch", want, batch.State)
	if diff := cmp.Diff(marshalAll(t, stored), marshalAll(t, batch.Events)); diff != "" {
		t.Errorf("caller's copy events (-appended +copy):\n%s", diff)
	}
	last := stored[len(stored)-1].Timestamp
	for what, got := range map[string]time.Time{"store (one by one)": gotOne.LastUpdateTime, "store (batch)": gotBatch.LastUpdateTime,
		"caller's copy (batch)": batch.LastUpdateTime} {
		if !got.Equal(last) {
			t.Errorf("%s LastUpdateTime = %v, want %v", what, got, last)
		}
	}
	// The shared scopes reach the user's other sessions.
	other := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "later"})
	diffState(t, "another session of the user", state(`{"app:calls":1,"user:city":"Paris"}`), other.State)
}

func testBatchEmpty(t *testing.T, svc sessions.Service, b sessions.BatchAppender) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"k": "v"}})
	before := s.LastUpdateTime
	partial := newEvent("p", future(), map[string]any{"k": "partial"})
	partial.Partial = true
	ghost := &sessions.Session{ID: "ghost", AppName: app, UserID: user, State: map[string]any{}}
	for _, tc := range []struct {
		name string
		sess *sessions.Session
		evs  []*sessions.Event
	}{{"no events", s, nil}, {"only partial events", s, []*sessions.Event{partial}}, {"no events, missing session", ghost, nil}} {
		if err := b.AppendEvents(t.Context(), tc.sess, tc.evs); err != nil {
			t.Errorf("%s: %v, want nil", tc.name, err)
		}
	}
	got := get(t, svc, app, user, "s1")
	if len(got.Events) != 0 || len(s.Events) != 0 {
		t.Errorf("events stored %d, in the caller's copy %d; want none", len(got.Events), len(s.Events))
	}
	diffState(t, "state", state(`{"k":"v"}`), got.State)
	if !got.LastUpdateTime.Equal(before) {
		t.Errorf("LastUpdateTime moved: %v -> %v", before, got.LastUpdateTime)
	}
}

func testBatchMissing(t *testing.T, svc sessions.Service, b sessions.BatchAppender) {
	ctx := t.Context()
	evs := func() []*sessions.Event {
		return []*sessions.Event{newEvent("e1", time.Time{}, map[string]any{"k": "v", "app:a": "x"}),
			newEvent("e2", time.Time{}, map[string]any{"user:u": "x"})}
	}
	ghost := &sessions.Session{ID: "ghost", AppName: app, UserID: user, State: map[string]any{}}
	if err := b.AppendEvents(ctx, ghost, evs()); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("AppendEvents to a missing session: err = %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, key(ghost)); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("a failed batch created the session: Get err = %v", err)
	}
	if len(ghost.Events) != 0 || len(ghost.State) != 0 {
		t.Errorf("a failed batch changed the caller's copy: %d events, state %v", len(ghost.Events), ghost.State)
	}
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "mine"})
	forged := &sessions.Session{ID: "mine", AppName: app, UserID: other, State: map[string]any{}}
	if err := b.AppendEvents(ctx, forged, evs()); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("AppendEvents as another user: err = %v, want ErrNotFound", err)
	}
	got := get(t, svc, app, user, "mine")
	if len(got.Events) != 0 || len(got.State) != 0 {
		t.Errorf("failed batches changed the session: %d events, state %v", len(got.Events), got.State)
	}
}

// testBatchAllOrNothing: a batch that fails stores none of its events and
// applies none of its deltas, and leaves the caller's copy as it was.
func testBatchAllOrNothing(t *testing.T, svc sessions.Service, b sessions.BatchAppender) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"k": "v"}})
	appendEv(t, svc, s, newEvent("e0", time.Time{}, nil))
	batch := func(bad any) []*sessions.Event {
		return []*sessions.Event{
			newEvent("b1", time.Time{}, map[string]any{"k": "b1", "user:u": "b1", "app:a": "b1"}),
			newEvent("b2", time.Time{}, map[string]any{"k": bad}),
			newEvent("b3", time.Time{}, map[string]any{"k3": "b3"}),
		}
	}
	unchanged := func(what string) {
		t.Helper()
		got := get(t, svc, app, user, "s1")
		if diff := cmp.Diff([]string{"e0"}, eventIDs(got.Events)); diff != "" {
			t.Errorf("%s: stored events (-want +got):\n%s", what, diff)
		}
		diffState(t, what, state(`{"k":"v"}`), got.State)
		if diff := cmp.Diff([]string{"e0"}, eventIDs(s.Events)); diff != "" || s.State["k"] != "v" {
			t.Errorf("%s: the caller's copy changed: events %v, state %v", what, eventIDs(s.Events), s.State)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.AppendEvents(ctx, s, batch("fine")); err == nil {
		t.Error("AppendEvents with a cancelled context succeeded")
	}
	unchanged("after a batch with a cancelled context")

	// A value JSON cannot encode: a store that checks refuses the whole
	// batch (ErrInvalid); one that does not stores all of it.
	err := b.AppendEvents(t.Context(), s, batch(math.Inf(1)))
	if err != nil {
		if !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("batch with a value JSON cannot encode: err = %v, want ErrInvalid", err)
		}
		unchanged("after a refused batch")
		return
	}
	got := get(t, svc, app, user, "s1")
	if diff := cmp.Diff([]string{"e0", "b1", "b2", "b3"}, eventIDs(got.Events)); diff != "" {
		t.Errorf("an accepted batch: stored events (-want +got):\n%s", diff)
	}
}

func testBatchNotAliased(t *testing.T, svc sessions.Service, b sessions.BatchAppender) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"})
	evs := []*sessions.Event{newEvent("e1", time.Time{}, map[string]any{"k": "v"}), newEvent("e2", time.Time{}, map[string]any{"j": "w"})}
	if err := b.AppendEvents(t.Context(), s, evs); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	for _, ev := range evs {
		ev.Actions.StateDelta["k"] = "changed after append"
		ev.ID = "changed"
	}
	got := get(t, svc, app, user, "s1")
	if diff := cmp.Diff([]string{"e1", "e2"}, eventIDs(got.Events)); diff != "" || got.Events[0].Actions.StateDelta["k"] != "v" {
		t.Errorf("stored events changed through the appended values: %s", marshalAll(t, got.Events))
	}
	diffState(t, "state", state(`{"k":"v","j":"w"}`), got.State)
}

// testBatchConcurrent: batches of concurrent writers never interleave: each
// batch's events are stored next to each other, in order.
func testBatchConcurrent(t *testing.T, svc sessions.Service, b sessions.BatchAppender) {
	const writers, batches, size = 8, 4, 3
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "busy"})
	concurrently(t, svc, "busy", writers, func(ctx context.Context, s *sessions.Session, w int) error {
		for i := range batches {
			var evs []*sessions.Event
			for j := range size {
				evs = append(evs, newEvent(fmt.Sprintf("w%d-%d-%d", w, i, j), time.Time{},
					map[string]any{fmt.Sprintf("w%d", w): float64(i), fmt.Sprintf("user:w%d", w): float64(i)}))
			}
			if err := b.AppendEvents(ctx, s, evs); err != nil {
				return err
			}
		}
		return nil
	})
	got := get(t, svc, app, user, "busy")
	if len(got.Events) != writers*batches*size {
		t.Fatalf("stored %d events, want %d", len(got.Events), writers*batches*size)
	}
	next := make([]int, writers)
	for k := 0; k < len(got.Events); k += size {
		group := got.Events[k : k+size]
		var w, i int
		for n, ev := range group {
			var ew, ei, ej int
			if _, err := fmt.Sscanf(ev.ID, "w%d-%d-%d", &ew, &ei, &ej); err != nil {
				t.Fatalf("unexpected event id %q", ev.ID)
			}
			if n == 0 {
				w, i = ew, ei
			}
			if ew != w || ei != i || ej != n || i != next[w] {
				t.Fatalf("events %v: a batch was split, interleaved or reordered", eventIDs(group))
			}
		}
		next[w]++
	}
	want := map[string]any{}
	for w := range writers {
		want[fmt.Sprintf("w%d", w)] = float64(batches - 1)
		want[fmt.Sprintf("user:w%d", w)] = float64(batches - 1)
	}
	diffState(t, "state after concurrent batches", want, got.State)
}
