package sessiontest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/sessions"
)

// refsTests check sessions.Refs; Run skips them for a service that does
// not implement it.
var refsTests = []struct {
	name string
	fn   func(t *testing.T, r sessions.Refs)
}{
	{"RefsPutGetDelete", testRefsPutGetDelete},
	{"RefsScopedPerUserAndApp", testRefsScoped},
	{"RefsExpire", testRefsExpire},
	{"RefsInvalid", testRefsInvalid},
}

// testRefsPutGetDelete: refs put together are read one by one, a put
// replaces a key's ref, a delete removes only the keys it names.
func testRefsPutGetDelete(t *testing.T, r sessions.Refs) {
	ctx := t.Context()
	want := map[string]sessions.Ref{
		"call:a": {SessionID: "s1", InvocationID: "e-1", CallID: "fc-a"},
		"call:b": {SessionID: "~tmp-2/agent", InvocationID: "e-2"},
		"c":      {SessionID: "s3"},
	}
	if err := r.PutRefs(ctx, app, user, want, time.Hour); err != nil {
		t.Fatalf("PutRefs: %v", err)
	}
	for k, w := range want {
		got, err := r.GetRef(ctx, app, user, k)
		if err != nil {
			t.Fatalf("GetRef(%q): %v", k, err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("GetRef(%q) (-want +got):\n%s", k, diff)
		}
	}
	if _, err := r.GetRef(ctx, app, user, "nope"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("GetRef of a missing key: err = %v, want ErrNotFound", err)
	}
	// A put replaces the key's ref; a put of nothing does nothing.
	if err := r.PutRefs(ctx, app, user, map[string]sessions.Ref{"c": {SessionID: "s4", InvocationID: "e-4"}}, 0); err != nil {
		t.Fatalf("PutRefs over a key: %v", err)
	}
	if err := r.PutRefs(ctx, app, user, nil, 0); err != nil {
		t.Fatalf("PutRefs of nothing: %v", err)
	}
	if got, err := r.GetRef(ctx, app, user, "c"); err != nil || got != (sessions.Ref{SessionID: "s4", InvocationID: "e-4"}) {
		t.Errorf("GetRef after a second put = %+v, %v; want the second ref", got, err)
	}
	if err := r.DeleteRefs(ctx, app, user, "call:a", "c", "nope"); err != nil {
		t.Fatalf("DeleteRefs: %v", err)
	}
	if err := r.DeleteRefs(ctx, app, user); err != nil {
		t.Fatalf("DeleteRefs of nothing: %v", err)
	}
	for k, exists := range map[string]bool{"call:a": false, "c": false, "call:b": true} {
		_, err := r.GetRef(ctx, app, user, k)
		if exists != (err == nil) || (!exists && !errors.Is(err, sessions.ErrNotFound)) {
			t.Errorf("GetRef(%q) after the delete: err = %v, want it there: %v", k, err, exists)
		}
	}
}

// testRefsScoped: another user, or the same user in another app, neither
// reads nor deletes a user's refs, and may hold the same key.
func testRefsScoped(t *testing.T, r sessions.Refs) {
	ctx := t.Context()
	mine := sessions.Ref{SessionID: "mine"}
	if err := r.PutRefs(ctx, app, user, map[string]sessions.Ref{"k": mine}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, who := range [][2]string{{app, other}, {"app2", user}} {
		if _, err := r.GetRef(ctx, who[0], who[1], "k"); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("GetRef as %v: err = %v, want ErrNotFound", who, err)
		}
		if err := r.DeleteRefs(ctx, who[0], who[1], "k"); err != nil {
			t.Fatalf("DeleteRefs as %v: %v", who, err)
		}
	}
	if err := r.PutRefs(ctx, app, other, map[string]sessions.Ref{"k": {SessionID: "theirs"}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := r.GetRef(ctx, app, user, "k"); err != nil || got != mine {
		t.Errorf("GetRef of the owner = %+v, %v; want %+v", got, err, mine)
	}
}

// testRefsExpire: a ref put with a TTL is gone once it has passed (the
// test waits up to patience for it), while one put with a longer TTL is
// still there.
func testRefsExpire(t *testing.T, r sessions.Refs) {
	ctx := t.Context()
	if err := r.PutRefs(ctx, app, user, map[string]sessions.Ref{"short": {SessionID: "s"}}, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := r.PutRefs(ctx, app, user, map[string]sessions.Ref{"long": {SessionID: "s"}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		_, err := r.GetRef(ctx, app, user, "short")
		if errors.Is(err, sessions.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatalf("GetRef: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a ref with a 20ms TTL is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := r.GetRef(ctx, app, user, "long"); err != nil {
		t.Errorf("GetRef of a ref with an hour to live: %v", err)
	}
}

func testRefsInvalid(t *testing.T, r sessions.Refs) {
	ctx := t.Context()
	for name, err := range map[string]error{
		"put without app":     r.PutRefs(ctx, "", user, map[string]sessions.Ref{"k": {}}, 0),
		"put an empty key":    r.PutRefs(ctx, app, user, map[string]sessions.Ref{"": {}}, 0),
		"get without user":    func() error { _, err := r.GetRef(ctx, app, "", "k"); return err }(),
		"get an empty key":    func() error { _, err := r.GetRef(ctx, app, user, ""); return err }(),
		"delete an empty key": r.DeleteRefs(ctx, app, user, ""),
	} {
		if !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

// testUnlisted: sessions whose ids start with "~", and the sessions under
// them, are read, written and deleted like others, and never listed.
func testUnlisted(t *testing.T, svc sessions.Service) {
	ctx := t.Context()
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "a"})
	hidden := create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "~x", State: map[string]any{"k": "v"}})
	create(t, svc, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "~x/agent"})
	appendEv(t, svc, hidden, newEvent("e1", future(), map[string]any{"k": "w"}))
	list, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if got := ids(list.Sessions); !slices.Equal(got, []string{"a"}) {
		t.Errorf("listed %v, want [a]: unlisted sessions shown", got)
	}
	page, err := svc.List(ctx, sessions.ListRequest{AppName: app, UserID: user, PageSize: 1})
	if err != nil {
		t.Fatalf("List of one page: %v", err)
	}
	if got := ids(page.Sessions); !slices.Equal(got, []string{"a"}) || page.NextPageToken != "" {
		t.Errorf("first page %v (next %q), want [a] alone", got, page.NextPageToken)
	}
	got := get(t, svc, app, user, "~x")
	if len(got.Events) != 1 || got.State["k"] != "w" {
		t.Errorf("unlisted session read back with %d events and k = %v, want 1 and w", len(got.Events), got.State["k"])
	}
	if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "~x"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertExist(t, svc, map[string]bool{"~x": false, "~x/agent": false, "a": true})
}
