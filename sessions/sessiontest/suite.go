// Package sessiontest is the conformance suite every sessions.Service backend
// runs. It checks the contract documented on sessions.Service: ids, sentinel
// errors, isolation between users, listing and pagination, cascading deletes,
// the three state scopes, temp: and partial data, event round trips, copy
// semantics, concurrent appends, LastUpdateTime and unlisted sessions;
// windowed reads (sessions.Window); for services that are sessions.Refs,
// the refs index; sessions.GetOrCreate
// (through the service's GetOrCreator when it has one); and, for services that
// are a sessions.BatchAppender, AppendEvents: the same effects as appending
// one by one, all or nothing, batches that never interleave.
//
// A backend's test calls Run with a constructor that returns an empty,
// isolated service for each subtest:
//
//	func TestConformance(t *testing.T) {
//		sessiontest.Run(t, func(t *testing.T) sessions.Service {
//			return sessions.NewMemoryService(sessions.MemoryConfig{})
//		})
//	}
package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

const (
	app   = "app1"
	user  = "alice"
	other = "mallory"
)

// Run runs the whole suite. newService is called once per subtest and must
// return a service that shares no data with the services of other subtests
// (a fresh store, or a fresh key prefix on a shared server).
func Run(t *testing.T, newService func(t *testing.T) sessions.Service) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, svc sessions.Service)
	}{
		{"CreateGeneratedID", testCreateGeneratedID},
		{"CreateClientID", testCreateClientID},
		{"CreateDuplicate", testCreateDuplicate},
		{"CreateInitialState", testCreateInitialState},
		{"InvalidRequests", testInvalidRequests},
		{"GetMissing", testGetMissing},
		{"OtherUserIsolation", testOtherUserIsolation},
		{"ListNewestFirstPaginated", testList},
		{"ListEmpty", testListEmpty},
		{"ListBadPageToken", testListBadPageToken},
		{"DeleteCascades", testDeleteCascades},
		{"DeleteMissing", testDeleteMissing},
		{"DeleteThenRecreate", testDeleteThenRecreate},
		{"AppendScopes", testAppendScopes},
		{"AppendTempNeverStored", testAppendTemp},
		{"AppendPartial", testAppendPartial},
		{"AppendMissingSession", testAppendMissing},
		{"EventsRoundTrip", testEventsRoundTrip},
		{"CallerCopyUpdated", testCallerCopyUpdated},
		{"ReturnedSessionsAreCopies", testReturnedCopies},
		{"AppendedEventNotAliased", testAppendedEventNotAliased},
		{"ConcurrentAppends", testConcurrentAppends},
		{"LastUpdateTime", testLastUpdateTime},
		{"Unlisted", testUnlisted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newService(t))
		})
	}
	for _, tt := range windowTests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newService(t))
		})
	}
	for _, tt := range getOrCreateTests {
		t.Run("GetOrCreate"+tt.name, func(t *testing.T) {
			svc := newService(t)
			tt.fn(t, svc, func(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
				return sessions.GetOrCreate(ctx, svc, req)
			})
		})
	}
	for _, tt := range batchTests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newService(t)
			b, ok := svc.(sessions.BatchAppender)
			if !ok {
				t.Skipf("%T is not a sessions.BatchAppender", svc)
			}
			tt.fn(t, svc, b)
		})
	}
	for _, tt := range refsTests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := newService(t).(sessions.Refs)
			if !ok {
				t.Skip("not a sessions.Refs")
			}
			tt.fn(t, r)
		})
	}
}

func testCreateGeneratedID(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	a := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user})
	b := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user})
	if a.ID == "" || b.ID == "" {
		t.Fatalf("generated ids %q, %q: want non-empty", a.ID, b.ID)
	}
	if a.ID == b.ID {
		t.Fatalf("two generated ids are both %q", a.ID)
	}
	if a.AppName != app || a.UserID != user {
		t.Errorf("created (%q, %q), want (%q, %q)", a.AppName, a.UserID, app, user)
	}
	if a.State == nil || len(a.State) != 0 {
		t.Errorf("created state = %#v, want an empty non-nil map", a.State)
	}
	if len(a.Events) != 0 {
		t.Errorf("created events = %d, want 0", len(a.Events))
	}
	if a.LastUpdateTime.IsZero() {
		t.Error("created LastUpdateTime is zero")
	}
	got, err := svc.Get(ctx, key(a))
	if err != nil {
		t.Fatalf("Get(%q): %v", a.ID, err)
	}
	if got.ID != a.ID || got.AppName != app || got.UserID != user {
		t.Errorf("Get = (%q, %q, %q), want (%q, %q, %q)", got.AppName, got.UserID, got.ID, app, user, a.ID)
	}
	if !got.LastUpdateTime.Equal(a.LastUpdateTime) {
		t.Errorf("Get LastUpdateTime = %v, Create returned %v", got.LastUpdateTime, a.LastUpdateTime)
	}
}

func testCreateClientID(t *testing.T, svc sessions.Service) {
	for _, id := range []string{"s1", "chat-42", "with space", "ünïcødé", "p/agent", "{tag}|x"} {
		s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: id})
		if s.ID != id {
			t.Errorf("Create(%q).ID = %q", id, s.ID)
		}
		got := get(t, svc, app, user, id)
		if got.ID != id {
			t.Errorf("Get(%q).ID = %q", id, got.ID)
		}
	}
}

func testCreateDuplicate(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "dup", State: map[string]any{"k": "first"}})
	_, err := svc.Create(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "dup", State: map[string]any{"k": "second"}})
	if !errors.Is(err, sessions.ErrExists) {
		t.Fatalf("second Create: err = %v, want ErrExists", err)
	}
	if got := get(t, svc, app, user, "dup"); got.State["k"] != "first" {
		t.Errorf("after a duplicate Create, state k = %v, want first", got.State["k"])
	}
	// The same id is free for another user and another app.
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: other, SessionID: "dup"})
	create(t, svc, sessions.CreateRequest{AppName: "app2", UserID: user, SessionID: "dup"})
}

func testCreateInitialState(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{
		"k":          "v",
		"nested":     map[string]any{"a": []any{1.0, "x", true}},
		"app:theme":  "dark",
		"user:name":  "Alice",
		"temp:draft": "scratch",
	}})
	want := state(`{"k":"v","nested":{"a":[1,"x",true]},"app:theme":"dark","user:name":"Alice"}`)
	diffState(t, "Create", want, s.State)
	diffState(t, "Get", want, get(t, svc, app, user, "s1").State)

	same := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s2"})
	diffState(t, "another session of the user", state(`{"app:theme":"dark","user:name":"Alice"}`), same.State)
	otherUser := create(t, svc, sessions.CreateRequest{AppName: app, UserID: other, SessionID: "s1"})
	diffState(t, "another user's session", state(`{"app:theme":"dark"}`), otherUser.State)
	otherApp := create(t, svc, sessions.CreateRequest{AppName: "app2", UserID: user, SessionID: "s1"})
	diffState(t, "another app's session", state(`{}`), otherApp.State)
}

func testInvalidRequests(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	checks := []struct {
		name string
		call func() error
	}{
		{"create without app", func() error {
			_, err := svc.Create(ctx, sessions.CreateRequest{UserID: user})
			return err
		}},
		{"create without user", func() error {
			_, err := svc.Create(ctx, sessions.CreateRequest{AppName: app})
			return err
		}},
		{"get without user", func() error {
			_, err := svc.Get(ctx, sessions.GetRequest{AppName: app, SessionID: "s"})
			return err
		}},
		{"list without app", func() error {
			_, err := svc.List(ctx, sessions.ListRequest{UserID: user})
			return err
		}},
		{"delete without user", func() error {
			return svc.Delete(ctx, sessions.DeleteRequest{AppName: app, SessionID: "s"})
		}},
	}
	for _, c := range checks {
		if err := c.call(); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}
}

func testGetMissing(t *testing.T, svc sessions.Service) {
	_, err := svc.Get(t.Context(), sessions.GetRequest{AppName: app, UserID: user, SessionID: "nope"})
	if !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("Get(missing): err = %v, want ErrNotFound", err)
	}
}

func testOtherUserIsolation(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "private", State: map[string]any{"secret": "x"}})
	appendEv(t, svc, s, newEvent("e1", time.Time{}, map[string]any{"k": "v"}))

	if _, err := svc.Get(ctx, sessions.GetRequest{AppName: app, UserID: other, SessionID: "private"}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Get as another user: err = %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, sessions.GetRequest{AppName: "app2", UserID: user, SessionID: "private"}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Get in another app: err = %v, want ErrNotFound", err)
	}
	resp, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: other})
	if err != nil {
		t.Fatalf("List as another user: %v", err)
	}
	if len(resp.Sessions) != 0 {
		t.Errorf("List as another user = %v, want none", ids(resp.Sessions))
	}
	if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: other, SessionID: "private"}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Delete as another user: err = %v, want ErrNotFound", err)
	}
	forged := &sessions.Session{ID: "private", AppName: app, UserID: other, State: map[string]any{}}
	if err := svc.AppendEvent(ctx, forged, newEvent("e2", time.Time{}, map[string]any{"k": "forged"})); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("AppendEvent as another user: err = %v, want ErrNotFound", err)
	}
	got := get(t, svc, app, user, "private")
	if len(got.Events) != 1 || got.State["k"] != "v" {
		t.Errorf("owner's session changed by another user: %d events, k = %v", len(got.Events), got.State["k"])
	}
}

func testList(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	base := future()
	// Sessions get their order from their last event; create them out of order.
	order := []int{3, 0, 4, 1, 2}
	for _, i := range order {
		id := fmt.Sprintf("s%d", i)
		s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: id, State: map[string]any{"n": float64(i)}})
		appendEv(t, svc, s, newEvent("e-"+id, base.Add(time.Duration(i)*time.Second), nil))
	}
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: other, SessionID: "not-mine"})
	create(t, svc, sessions.CreateRequest{AppName: "app2", UserID: user, SessionID: "other-app"})

	all, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := []string{"s4", "s3", "s2", "s1", "s0"}
	if diff := cmp.Diff(want, ids(all.Sessions)); diff != "" {
		t.Errorf("List ids (-want +got):\n%s", diff)
	}
	if all.NextPageToken != "" {
		t.Errorf("List without page size: NextPageToken = %q, want empty", all.NextPageToken)
	}
	for _, s := range all.Sessions {
		if len(s.Events) != 0 {
			t.Errorf("listed session %s has %d events, want none", s.ID, len(s.Events))
		}
		if s.AppName != app || s.UserID != user {
			t.Errorf("listed session %s is (%q, %q)", s.ID, s.AppName, s.UserID)
		}
		if want := float64(s.ID[1] - '0'); s.State["n"] != want {
			t.Errorf("listed session %s state n = %v, want %v", s.ID, s.State["n"], want)
		}
		if want := base.Add(time.Duration(s.ID[1]-'0') * time.Second); !s.LastUpdateTime.Equal(want) {
			t.Errorf("listed session %s LastUpdateTime = %v, want %v", s.ID, s.LastUpdateTime, want)
		}
	}

	var pages [][]string
	token := ""
	for range 10 {
		resp, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user, PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatalf("List page %d: %v", len(pages), err)
		}
		pages = append(pages, ids(resp.Sessions))
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	wantPages := [][]string{{"s4", "s3"}, {"s2", "s1"}, {"s0"}}
	if diff := cmp.Diff(wantPages, pages); diff != "" {
		t.Errorf("List pages of 2 (-want +got):\n%s", diff)
	}
}

func testListEmpty(t *testing.T, svc sessions.Service) {
	resp, err := svc.List(t.Context(), sessions.ListRequest{AppName: app, UserID: user, PageSize: 10})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(resp.Sessions) != 0 || resp.NextPageToken != "" {
		t.Errorf("List of nobody = %v, token %q; want empty", ids(resp.Sessions), resp.NextPageToken)
	}
}

func testListBadPageToken(t *testing.T, svc sessions.Service) {
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user})
	_, err := svc.List(t.Context(), sessions.ListRequest{AppName: app, UserID: user, PageSize: 1, PageToken: "not a token"})
	if !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("List with a bad token: err = %v, want ErrInvalid", err)
	}
}

func testDeleteCascades(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	for _, id := range []string{"p", "p/a", "p/a/b", "p/c", "p2", "pp/a", "q"} {
		s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: id})
		appendEv(t, svc, s, newEvent("e", time.Time{}, map[string]any{"k": id}))
	}
	// Deleting a sub-conversation takes its own children only.
	if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "p/a"}); err != nil {
		t.Fatalf("Delete(p/a): %v", err)
	}
	assertExist(t, svc, map[string]bool{"p": true, "p/a": false, "p/a/b": false, "p/c": true, "p2": true, "pp/a": true, "q": true})

	if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "p"}); err != nil {
		t.Fatalf("Delete(p): %v", err)
	}
	assertExist(t, svc, map[string]bool{"p": false, "p/c": false, "p2": true, "pp/a": true, "q": true})

	resp, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, s := range resp.Sessions {
		if s.ID == "p" || s.ID == "p/a" || s.ID == "p/a/b" || s.ID == "p/c" {
			t.Errorf("deleted session %q is still listed", s.ID)
		}
	}
}

func testDeleteMissing(t *testing.T, svc sessions.Service) {
	err := svc.Delete(t.Context(), sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "nope"})
	if !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("Delete(missing): err = %v, want ErrNotFound", err)
	}
}

func testDeleteThenRecreate(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "again", State: map[string]any{"old": true}})
	appendEv(t, svc, s, newEvent("e1", time.Time{}, map[string]any{"k": "v"}))
	if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "again"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	stale := s
	if err := svc.AppendEvent(ctx, stale, newEvent("e2", time.Time{}, map[string]any{"k": "stale"})); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("AppendEvent to a deleted session: err = %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, key(s)); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("Get after a failed append to a deleted session: err = %v, want ErrNotFound", err)
	}
	fresh := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "again"})
	if len(fresh.Events) != 0 || len(fresh.State) != 0 {
		t.Errorf("re-created session carries old data: %d events, state %v", len(fresh.Events), fresh.State)
	}
	got := get(t, svc, app, user, "again")
	if len(got.Events) != 0 || len(got.State) != 0 {
		t.Errorf("re-created session reads old data: %d events, state %v", len(got.Events), got.State)
	}
}

func testAppendScopes(t *testing.T, svc sessions.Service) {
	s1 := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"})
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s2"})
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: other, SessionID: "s3"})
	create(t, svc, sessions.CreateRequest{AppName: "app2", UserID: user, SessionID: "s4"})

	appendEv(t, svc, s1, newEvent("e1", time.Time{}, map[string]any{
		"k": "v", "app:a": 1.0, "user:u": "two",
	}))
	appendEv(t, svc, s1, newEvent("e2", time.Time{}, map[string]any{
		"k": "v2", "app:b": []any{"x"}, "user:u": "three",
	}))

	tests := []struct {
		app, user, id string
		want          map[string]any
	}{
		{app, user, "s1", state(`{"k":"v2","app:a":1,"app:b":["x"],"user:u":"three"}`)},
		{app, user, "s2", state(`{"app:a":1,"app:b":["x"],"user:u":"three"}`)},
		{app, other, "s3", state(`{"app:a":1,"app:b":["x"]}`)},
		{"app2", user, "s4", state(`{}`)},
	}
	for _, tt := range tests {
		diffState(t, tt.app+"/"+tt.user+"/"+tt.id, tt.want, get(t, svc, tt.app, tt.user, tt.id).State)
	}
	diffState(t, "caller's copy", tests[0].want, s1.State)

	// A session created later sees the shared scopes too.
	late := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s5"})
	diffState(t, "session created later", tests[1].want, late.State)
}

func testAppendTemp(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"})
	ev := newEvent("e1", time.Time{}, map[string]any{"k": "v", "temp:scratch": "x", "user:temp:odd": "kept"})
	appendEv(t, svc, s, ev)

	want := state(`{"k":"v","user:temp:odd":"kept"}`)
	diffState(t, "stored event's stateDelta", want, ev.Actions.StateDelta)
	got := get(t, svc, app, user, "s1")
	diffState(t, "state", want, got.State)
	diffState(t, "caller's copy", want, s.State)
	if len(got.Events) != 1 {
		t.Fatalf("got %d events, want 1", len(got.Events))
	}
	diffState(t, "read-back event's stateDelta", want, got.Events[0].Actions.StateDelta)
}

func testAppendPartial(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"k": "v"}})
	before := s.LastUpdateTime
	ev := newEvent("p1", future(), map[string]any{"k": "partial", "app:a": "partial", "user:u": "partial"})
	ev.Partial = true
	appendEv(t, svc, s, ev)

	got := get(t, svc, app, user, "s1")
	if len(got.Events) != 0 {
		t.Errorf("partial event stored: %d events", len(got.Events))
	}
	diffState(t, "state after a partial event", state(`{"k":"v"}`), got.State)
	diffState(t, "caller's copy after a partial event", state(`{"k":"v"}`), s.State)
	if len(s.Events) != 0 {
		t.Errorf("caller's copy got the partial event: %d events", len(s.Events))
	}
	if !got.LastUpdateTime.Equal(before) {
		t.Errorf("LastUpdateTime moved on a partial event: %v -> %v", before, got.LastUpdateTime)
	}
}

func testAppendMissing(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	ghost := &sessions.Session{ID: "ghost", AppName: app, UserID: user, State: map[string]any{}}
	if err := svc.AppendEvent(ctx, ghost, newEvent("e1", time.Time{}, map[string]any{"k": "v", "app:a": "x"})); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("AppendEvent to a missing session: err = %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, key(ghost)); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("a failed append created the session: Get err = %v", err)
	}
	if len(ghost.Events) != 0 {
		t.Errorf("a failed append changed the caller's copy: %d events", len(ghost.Events))
	}
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "real"})
	if _, ok := s.State["app:a"]; ok {
		t.Errorf("a failed append applied its app: delta: %v", s.State)
	}
}

func testEventsRoundTrip(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"})
	evs := richEvents(future())
	for _, ev := range evs {
		appendEv(t, svc, s, ev)
	}
	got := get(t, svc, app, user, "s1")
	if diff := cmp.Diff(marshalAll(t, evs), marshalAll(t, got.Events)); diff != "" {
		t.Errorf("read-back events JSON (-appended +read):\n%s", diff)
	}
	if diff := cmp.Diff(marshalAll(t, evs), marshalAll(t, s.Events)); diff != "" {
		t.Errorf("caller's copy events JSON (-appended +copy):\n%s", diff)
	}
	for i, ev := range got.Events {
		if !ev.Timestamp.Equal(evs[i].Timestamp) {
			t.Errorf("event %d timestamp = %v, want %v", i, ev.Timestamp, evs[i].Timestamp)
		}
	}
}

func testCallerCopyUpdated(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"a": "1"}})
	ts := future()
	for i := range 3 {
		ev := newEvent(fmt.Sprintf("e%d", i), ts.Add(time.Duration(i)*time.Second), map[string]any{"i": float64(i), "user:last": float64(i)})
		appendEv(t, svc, s, ev)
		if len(s.Events) != i+1 || s.Events[i].ID != ev.ID {
			t.Fatalf("after append %d the caller's copy has events %v", i, eventIDs(s.Events))
		}
		if !s.LastUpdateTime.Equal(ev.Timestamp) {
			t.Errorf("after append %d LastUpdateTime = %v, want %v", i, s.LastUpdateTime, ev.Timestamp)
		}
	}
	got := get(t, svc, app, user, "s1")
	diffState(t, "caller's copy vs store", got.State, s.State)
	if diff := cmp.Diff(marshalAll(t, got.Events), marshalAll(t, s.Events)); diff != "" {
		t.Errorf("caller's copy events vs store (-store +copy):\n%s", diff)
	}
	if !got.LastUpdateTime.Equal(s.LastUpdateTime) {
		t.Errorf("LastUpdateTime: store %v, caller's copy %v", got.LastUpdateTime, s.LastUpdateTime)
	}
}

func testReturnedCopies(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	created := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"k": "v", "app:a": "x"}})
	created.State["k"] = "changed by caller"
	created.State["app:a"] = "changed by caller"
	created.State["added"] = true
	appendEv(t, svc, &sessions.Session{ID: "s1", AppName: app, UserID: user, State: map[string]any{}},
		newEvent("e1", time.Time{}, map[string]any{"d": "1"}))

	want := state(`{"k":"v","app:a":"x","d":"1"}`)
	first := get(t, svc, app, user, "s1")
	diffState(t, "after mutating Create's result", want, first.State)

	first.State["k"] = "mutated"
	first.State["more"] = 1
	first.Events[0].Actions.StateDelta["d"] = "mutated"
	first.Events[0].ID = "mutated"
	first.Events = append(first.Events, newEvent("fake", time.Time{}, nil))
	resp, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	resp.Sessions[0].State["k"] = "mutated via list"

	second := get(t, svc, app, user, "s1")
	diffState(t, "after mutating returned sessions", want, second.State)
	if len(second.Events) != 1 || second.Events[0].ID != "e1" || second.Events[0].Actions.StateDelta["d"] != "1" {
		t.Errorf("stored events changed through a returned copy: %s", marshalAll(t, second.Events))
	}
}

func testAppendedEventNotAliased(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"})
	ev := newEvent("e1", time.Time{}, map[string]any{"k": "v"})
	appendEv(t, svc, s, ev)
	ev.Actions.StateDelta["k"] = "changed after append"
	ev.LongRunningToolIDs = append(ev.LongRunningToolIDs, "late")
	ev.ID = "changed"

	got := get(t, svc, app, user, "s1")
	if got.Events[0].ID != "e1" || got.Events[0].Actions.StateDelta["k"] != "v" || len(got.Events[0].LongRunningToolIDs) != 0 {
		t.Errorf("stored event changed through the appended value: %s", marshalAll(t, got.Events))
	}
	diffState(t, "state", state(`{"k":"v"}`), got.State)
}

func testConcurrentAppends(t *testing.T, svc sessions.Service) {
	const writers, perWriter = 16, 8
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "busy"})
	concurrently(t, svc, "busy", writers, func(ctx context.Context, s *sessions.Session, w int) error {
		for i := range perWriter {
			delta := map[string]any{
				fmt.Sprintf("w%d", w):      float64(i),
				fmt.Sprintf("app:w%d", w):  float64(i),
				fmt.Sprintf("user:w%d", w): float64(i),
			}
			if err := svc.AppendEvent(ctx, s, newEvent(fmt.Sprintf("w%d-%d", w, i), time.Time{}, delta)); err != nil {
				return err
			}
		}
		return nil
	})

	got := get(t, svc, app, user, "busy")
	if len(got.Events) != writers*perWriter {
		t.Fatalf("stored %d events, want %d", len(got.Events), writers*perWriter)
	}
	next := make([]int, writers)
	for _, ev := range got.Events {
		var w, i int
		if _, err := fmt.Sscanf(ev.ID, "w%d-%d", &w, &i); err != nil {
			t.Fatalf("unexpected event id %q", ev.ID)
		}
		if i != next[w] {
			t.Errorf("writer %d: event %d stored where %d was expected (order lost)", w, i, next[w])
		}
		next[w] = i + 1
	}
	want := map[string]any{}
	for w := range writers {
		for _, k := range []string{"w%d", "app:w%d", "user:w%d"} {
			want[fmt.Sprintf(k, w)] = float64(perWriter - 1)
		}
	}
	diffState(t, "state after concurrent appends", want, got.State)
}

func testLastUpdateTime(t *testing.T, svc sessions.Service) {
	s := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"})
	t1 := future()
	t2 := t1.Add(90 * time.Second)
	appendEv(t, svc, s, newEvent("e1", t1, nil))
	if got := get(t, svc, app, user, "s1").LastUpdateTime; !got.Equal(t1) {
		t.Errorf("after e1 LastUpdateTime = %v, want %v", got, t1)
	}
	appendEv(t, svc, s, newEvent("e2", t2, nil))
	if got := get(t, svc, app, user, "s1").LastUpdateTime; !got.Equal(t2) {
		t.Errorf("after e2 LastUpdateTime = %v, want %v", got, t2)
	}
	if !s.LastUpdateTime.Equal(t2) {
		t.Errorf("caller's copy LastUpdateTime = %v, want %v", s.LastUpdateTime, t2)
	}
}

// --- helpers ---

// concurrently runs write in writers goroutines at once, each with its own
// copy of session id (a *Session is not shared between goroutines), and
// reports their errors.
func concurrently(t *testing.T, svc sessions.Service, id string, writers int, write func(ctx context.Context, s *sessions.Session, w int) error) {
	t.Helper()
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			s, err := svc.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: id})
			if err == nil {
				err = write(ctx, s, w)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent writer: %v", err)
	}
}

func create(t *testing.T, svc sessions.Service, req sessions.CreateRequest) *sessions.Session {
	t.Helper()
	s, err := svc.Create(t.Context(), req)
	if err != nil {
		t.Fatalf("Create(%q, %q, %q): %v", req.AppName, req.UserID, req.SessionID, err)
	}
	return s
}

func get(t *testing.T, svc sessions.Service, app, user, id string) *sessions.Session {
	t.Helper()
	s, err := svc.Get(t.Context(), sessions.GetRequest{AppName: app, UserID: user, SessionID: id})
	if err != nil {
		t.Fatalf("Get(%q, %q, %q): %v", app, user, id, err)
	}
	return s
}

func appendEv(t *testing.T, svc sessions.Service, s *sessions.Session, ev *sessions.Event) {
	t.Helper()
	if err := svc.AppendEvent(t.Context(), s, ev); err != nil {
		t.Fatalf("AppendEvent(%q, %q): %v", s.ID, ev.ID, err)
	}
}

func key(s *sessions.Session) sessions.GetRequest {
	return sessions.GetRequest{AppName: s.AppName, UserID: s.UserID, SessionID: s.ID}
}

func assertExist(t *testing.T, svc sessions.Service, want map[string]bool) {
	t.Helper()
	for id, exists := range want {
		_, err := svc.Get(t.Context(), sessions.GetRequest{AppName: app, UserID: user, SessionID: id})
		switch {
		case exists && err != nil:
			t.Errorf("Get(%q): %v, want the session", id, err)
		case !exists && !errors.Is(err, sessions.ErrNotFound):
			t.Errorf("Get(%q): err = %v, want ErrNotFound", id, err)
		}
	}
}

// future returns a timestamp after anything a service's clock stamps during
// the test, at the microsecond precision of the wire format.
func future() time.Time {
	return time.Now().Add(time.Hour).Truncate(time.Microsecond).UTC()
}

func newEvent(id string, ts time.Time, delta map[string]any) *sessions.Event {
	if ts.IsZero() {
		ts = time.Now().Truncate(time.Microsecond).UTC()
	}
	return &sessions.Event{
		ID: id, InvocationID: "inv-1", Author: "user", Timestamp: ts,
		Content: genai.NewContentFromText("hello "+id, genai.RoleUser),
		Actions: sessions.EventActions{StateDelta: delta},
	}
}

// richEvents uses every field of the wire format.
func richEvents(ts time.Time) []*sessions.Event {
	call := &genai.FunctionCall{ID: "call-1", Name: "lookup", Args: map[string]any{"q": "weather", "n": 3.0}}
	return []*sessions.Event{
		{
			ID: "u1", InvocationID: "inv-1", Author: "user", Timestamp: ts,
			Content: genai.NewContentFromText("What's the weather? ☀️ \"quoted\" \n newline", genai.RoleUser),
		},
		{
			ID: "m1", InvocationID: "inv-1", Author: "coordinator", Branch: "root.coordinator",
			Timestamp:          ts.Add(1500 * time.Microsecond),
			Content:            &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "thinking", Thought: true}, {FunctionCall: call}}},
			LongRunningToolIDs: []string{"call-1"},
			ModelVersion:       "scripted-1",
			UsageMetadata:      &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15},
			Actions: sessions.EventActions{
				StateDelta:                 map[string]any{"topic": "weather", "app:calls": 1.0, "user:city": "Paris"},
				ArtifactDelta:              map[string]int64{"report.txt": 2},
				RequestedToolConfirmations: map[string]map[string]any{"call-1": {"hint": "ok?", "confirmed": false}},
			},
		},
		{
			ID: "t1", InvocationID: "inv-1", Author: "coordinator", Timestamp: ts.Add(2 * time.Second),
			Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: "call-1", Name: "lookup", Response: map[string]any{"result": map[string]any{"temp": 21.5, "tags": []any{"sunny", nil}}},
			}}}},
			Actions: sessions.EventActions{TransferToAgent: "weather_agent", SkipSummarization: true},
		},
		{
			ID: "m2", InvocationID: "inv-1", Author: "weather_agent", Timestamp: ts.Add(3 * time.Second),
			TurnComplete: true, FinishReason: genai.FinishReasonStop,
			ErrorCode: "MAX_ITERATIONS", ErrorMessage: "stopped after 16 iterations",
			Actions: sessions.EventActions{Escalate: true, RequestedAuthConfigs: map[string]any{"call-9": map[string]any{"type": "oauth2"}}},
		},
	}
}

func marshalAll(t *testing.T, evs []*sessions.Event) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal event %d: %v", i, err)
		}
		out[i] = string(b)
	}
	return out
}

// state parses a JSON object; comparing states through JSON values lets a
// backend that decodes numbers as float64 match one that keeps Go values.
func state(js string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		panic(fmt.Sprintf("sessiontest: bad state literal %s: %v", js, err))
	}
	return m
}

func diffState(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: state is nil", what)
		return
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: marshal state: %v", what, err)
	}
	if diff := cmp.Diff(state(mustJSON(want)), state(string(b))); diff != "" {
		t.Errorf("%s state (-want +got):\n%s", what, diff)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func ids(ss []*sessions.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.ID
	}
	return out
}

func eventIDs(evs []*sessions.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
