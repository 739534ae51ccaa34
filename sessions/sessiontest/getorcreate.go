package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/sessions"
)

// getOrCreateFunc reads the session req names, creating it when missing:
// sessions.GetOrCreate, or a LockingGetter's AcquireGetOrCreate with its
// lease let go at once.
type getOrCreateFunc func(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error)

// getOrCreateTests check the contract of sessions.GetOrCreate for every
// service, and of AcquireGetOrCreate for a LockingGetter.
var getOrCreateTests = []struct {
	name string
	fn   func(t *testing.T, svc sessions.Service, goc getOrCreateFunc)
}{
	{"CreatesLikeCreate", testGetOrCreateLikeCreate},
	{"ExistingUnchanged", testGetOrCreateExisting},
	{"ConcurrentCreateOnce", testGetOrCreateConcurrent},
	{"SubConversation", testGetOrCreateSub},
	{"Invalid", testGetOrCreateInvalid},
}

// richState has a key of every stored scope and a temp: key.
func richState(v string) map[string]any {
	return map[string]any{"k": v, "nested": map[string]any{"v": v}, "app:theme": v, "user:name": v, "temp:t": v}
}

// testGetOrCreateLikeCreate creates one session with Create and another
// with get-or-create from the same request: they read, list and delete
// alike.
func testGetOrCreateLikeCreate(t *testing.T, svc sessions.Service, goc getOrCreateFunc) {
	ctx := t.Context()
	made := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "made", State: richState("x")})
	got, err := goc(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "new", State: richState("x")})
	if err != nil {
		t.Fatalf("get or create a new session: %v", err)
	}
	if got.ID != "new" || got.AppName != app || got.UserID != user || len(got.Events) != 0 || got.LastUpdateTime.IsZero() {
		t.Errorf("new session = (%q, %q, %q), %d events, LastUpdateTime %v", got.AppName, got.UserID, got.ID, len(got.Events), got.LastUpdateTime)
	}
	diffState(t, "get or create", made.State, got.State)
	diffState(t, "Get after get or create", made.State, get(t, svc, app, user, "new").State)

	list, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]string{"made", "new"}, slices.Sorted(slices.Values(ids(list.Sessions)))); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	for _, ls := range list.Sessions {
		diffState(t, "listed "+ls.ID, made.State, ls.State)
	}
	if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "new"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertExist(t, svc, map[string]bool{"new": false, "made": true})
}

// testGetOrCreateExisting: an existing session comes back as it is, with
// its events; the request's state is not applied in any scope.
func testGetOrCreateExisting(t *testing.T, svc sessions.Service, goc getOrCreateFunc) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"k": "first"}})
	ts := future()
	appendEv(t, svc, s, newEvent("e1", ts, map[string]any{"seen": true}))
	got, err := goc(t.Context(), sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: richState("second")})
	if err != nil {
		t.Fatalf("get or create an existing session: %v", err)
	}
	want := state(`{"k":"first","seen":true}`)
	diffState(t, "get or create", want, got.State)
	diffState(t, "Get", want, get(t, svc, app, user, "s1").State)
	if diff := cmp.Diff([]string{"e1"}, eventIDs(got.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !got.LastUpdateTime.Equal(ts) {
		t.Errorf("LastUpdateTime = %v, want the event's %v", got.LastUpdateTime, ts)
	}
}

// testGetOrCreateConcurrent: callers racing on one missing session all get
// the one session that was stored.
func testGetOrCreateConcurrent(t *testing.T, svc sessions.Service, goc getOrCreateFunc) {
	const callers = 8
	got := make([]*sessions.Session, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			got[i], errs[i] = goc(t.Context(), sessions.CreateRequest{AppName: app, UserID: user, SessionID: "race",
				State: map[string]any{"k": fmt.Sprint(i)}})
		})
	}
	wg.Wait()
	stored := get(t, svc, app, user, "race")
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if got[i].State["k"] != stored.State["k"] {
			t.Errorf("caller %d got k = %v, the stored session has %v", i, got[i].State["k"], stored.State["k"])
		}
	}
	list, err := svc.List(t.Context(), sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff([]string{"race"}, ids(list.Sessions)); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
}

// testGetOrCreateSub: a sub-conversation made this way belongs to its
// parent's tree (deleting the parent deletes it).
func testGetOrCreateSub(t *testing.T, svc sessions.Service, goc getOrCreateFunc) {
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "p"})
	if _, err := goc(t.Context(), sessions.CreateRequest{AppName: app, UserID: user, SessionID: sessions.ChildID("p", "helper")}); err != nil {
		t.Fatalf("get or create a sub-conversation: %v", err)
	}
	assertExist(t, svc, map[string]bool{"p/helper": true})
	if err := svc.Delete(t.Context(), sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "p"}); err != nil {
		t.Fatalf("Delete(p): %v", err)
	}
	assertExist(t, svc, map[string]bool{"p": false, "p/helper": false})
}

func testGetOrCreateInvalid(t *testing.T, svc sessions.Service, goc getOrCreateFunc) {
	for _, req := range []sessions.CreateRequest{
		{AppName: app, UserID: user},
		{UserID: user, SessionID: "s1"},
		{AppName: app, SessionID: "s1"},
	} {
		if _, err := goc(t.Context(), req); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("get or create (%q, %q, %q): err = %v, want ErrInvalid", req.AppName, req.UserID, req.SessionID, err)
		}
	}
	list, err := svc.List(t.Context(), sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list.Sessions) != 0 {
		t.Errorf("invalid requests created %v", ids(list.Sessions))
	}
}

// LockingStore is a store whose run lock can be taken with the read
// (sessions.LockingGetter) and on its own (sessions.Locker).
type LockingStore interface {
	sessions.Service
	sessions.Locker
	sessions.LockingGetter
}

// RunLockingGetter runs the conformance suite for a sessions.LockingGetter:
// AcquireGetOrCreate keeps GetOrCreate's contract, holds the lease it
// reports, and creates nothing while another run holds the session;
// AcquireGet holds the lease on a missing session. newStore is called once
// per subtest and must return an empty, isolated store.
func RunLockingGetter(t *testing.T, newStore func(t *testing.T) LockingStore) {
	t.Helper()
	for _, tt := range getOrCreateTests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			tt.fn(t, s, func(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
				sess, release, err := s.AcquireGetOrCreate(ctx, req, patience)
				if release != nil {
					release.Release()
				}
				return sess, err
			})
		})
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s LockingStore)
	}{
		{"AcquireGetOrCreateHoldsLease", testAcquireGetOrCreateHolds},
		{"BusyCreatesNothing", testAcquireGetOrCreateBusy},
		{"WaitThenCreate", testAcquireGetOrCreateWaits},
		{"AcquireGetMissing", testAcquireGetMissing},
		{"AppendEventsRelease", testAppendEventsRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newStore(t)) })
	}
}

func testAcquireGetOrCreateHolds(t *testing.T, s LockingStore) {
	ctx := t.Context()
	sess, release, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"}, 0)
	if err != nil || release == nil || sess == nil {
		t.Fatalf("AcquireGetOrCreate: %v (release %v)", err, release != nil)
	}
	if _, err := s.Acquire(ctx, app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Acquire while held: err = %v, want ErrConflict", err)
	}
	if _, _, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"}, 0); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("AcquireGetOrCreate while held: err = %v, want ErrConflict", err)
	}
	release.Release()
	acquire(t, s, user, "s1")
}

// testAcquireGetOrCreateBusy: a session another run holds is not created
// by a caller that could not take the lease.
func testAcquireGetOrCreateBusy(t *testing.T, s LockingStore) {
	acquire(t, s, user, "s1")
	_, release, err := s.AcquireGetOrCreate(t.Context(), sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"}, 0)
	if !errors.Is(err, sessions.ErrConflict) || release != nil {
		t.Fatalf("AcquireGetOrCreate on a busy session: err = %v (release %v), want ErrConflict", err, release != nil)
	}
	assertExist(t, s, map[string]bool{"s1": false})
}

// testAcquireGetOrCreateWaits: a caller that waits for the lease creates
// the session once it is free.
func testAcquireGetOrCreateWaits(t *testing.T, s LockingStore) {
	first := acquire(t, s, user, "s1")
	type result struct {
		sess    *sessions.Session
		release sessions.Lease
		err     error
	}
	done := make(chan result, 1)
	go func() {
		sess, release, err := s.AcquireGetOrCreate(t.Context(), sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1",
			State: map[string]any{"k": "v"}}, patience)
		done <- result{sess, release, err}
	}()
	first()
	r := <-done
	if r.err != nil {
		t.Fatalf("AcquireGetOrCreate after the holder let go: %v", r.err)
	}
	r.release.Release()
	if got := get(t, s, app, user, "s1"); got.State["k"] != "v" {
		t.Errorf("created state k = %v, want v", got.State["k"])
	}
}

// testAcquireGetMissing: AcquireGet holds the lease on a session that does
// not exist, and creates nothing.
func testAcquireGetMissing(t *testing.T, s LockingStore) {
	ctx := t.Context()
	_, release, err := s.AcquireGet(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: "s1"}, 0)
	if !errors.Is(err, sessions.ErrNotFound) || release == nil {
		t.Fatalf("AcquireGet on a missing session: err = %v (release %v), want ErrNotFound with the lease", err, release != nil)
	}
	defer release.Release()
	if _, err := s.Acquire(ctx, app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Acquire while held: err = %v, want ErrConflict", err)
	}
	assertExist(t, s, map[string]bool{"s1": false})
}

// testAppendEventsRelease: a write that names the turn's lease ends it
// once the batch is stored (another run takes the session at once, and
// the holder's Release does not free that run's lease); a write that
// stores nothing, or fails, leaves it held. Skipped for a store that is
// not a sessions.ReleasingAppender.
func testAppendEventsRelease(t *testing.T, s LockingStore) {
	ra, ok := s.(sessions.ReleasingAppender)
	if !ok {
		t.Skip("not a sessions.ReleasingAppender")
	}
	ctx := t.Context()
	sess, lease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"}, 0)
	if err != nil {
		t.Fatalf("AcquireGetOrCreate: %v", err)
	}
	defer lease.Release()
	partial := newEvent("p", time.Time{}, nil)
	partial.Partial = true
	if err := ra.AppendEventsRelease(ctx, sess, []*sessions.Event{partial}, lease); err != nil {
		t.Fatalf("AppendEventsRelease of nothing to store: %v", err)
	}
	missing := &sessions.Session{AppName: app, UserID: user, ID: "gone"}
	if err := ra.AppendEventsRelease(ctx, missing, []*sessions.Event{newEvent("x", time.Time{}, nil)}, lease); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("AppendEventsRelease on a missing session: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Acquire(ctx, app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire after writes that stored nothing of s1: err = %v, want ErrConflict", err)
	}
	if err := ra.AppendEventsRelease(ctx, sess, []*sessions.Event{newEvent("e1", time.Time{}, nil)}, lease); err != nil {
		t.Fatalf("AppendEventsRelease: %v", err)
	}
	if got := get(t, s, app, user, "s1"); len(got.Events) != 1 {
		t.Errorf("%d events stored, want 1", len(got.Events))
	}
	next := acquire(t, s, user, "s1")
	lease.Release() // after the write's release: must not free next's lease
	if _, err := s.Acquire(ctx, app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Acquire while the next run holds the session: err = %v, want ErrConflict", err)
	}
	next()
}
