package redis

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/sessions"
)

// treeKeys lists every key of the sessions ids in (app, u), plus the user's
// shared keys.
func treeKeys(s *Store, root string, ids ...string) []string {
	k := s.keys("app", "u", root)
	keys := []string{k.index, k.user, k.tree}
	for _, id := range ids {
		k := s.keys("app", "u", id)
		keys = append(keys, k.meta, k.state, k.events)
	}
	return keys
}

func seedTree(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	for _, id := range []string{"p", "p/a", "p/a/b"} {
		sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: id})
		if err != nil {
			t.Fatalf("Create(%s): %v", id, err)
		}
		if err := s.AppendEvent(ctx, sess, event("e-"+id, map[string]any{"k": id, "user:k": id, "app:k": id})); err != nil {
			t.Fatalf("AppendEvent(%s): %v", id, err)
		}
	}
}

func TestTTLRenewedForWholeTree(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ctx := t.Context()
	seedTree(t, s)
	keys := treeKeys(s, "p", "p", "p/a", "p/a/b")
	for _, key := range keys {
		if err := s.client.PExpire(ctx, key, 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Activity in a sub-conversation renews the parent, its siblings' subtree
	// and the user's shared keys.
	sess, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "p/a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, sess, event("again", map[string]any{"k": "again"})); err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		ttl, err := s.client.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl < 10*time.Minute {
			t.Errorf("PTTL %s = %v after activity, want about 1h", key, ttl)
		}
	}
	if ttl, _ := s.client.PTTL(ctx, s.appKey("app")).Result(); ttl != -1 {
		t.Errorf("PTTL of the app: hash = %v, want none (-1)", ttl)
	}
}

func TestNoTTLKeepsKeys(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("")})
	seedTree(t, s)
	for _, key := range treeKeys(s, "p", "p", "p/a", "p/a/b") {
		if ttl, _ := s.client.PTTL(t.Context(), key).Result(); ttl != -1 {
			t.Errorf("PTTL %s = %v with TTL 0, want none (-1)", key, ttl)
		}
	}
}

func TestIdleSessionsExpireWithSubConversations(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: 300 * time.Millisecond})
	ctx := t.Context()
	seedTree(t, s)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "p"})
		if errors.Is(err, sessions.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session p did not expire: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range []string{"p/a", "p/a/b"} {
		if _, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: id}); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("Get(%s) after its parent expired: err = %v, want ErrNotFound", id, err)
		}
	}
	resp, err := s.List(ctx, sessions.ListRequest{AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Sessions) != 0 {
		t.Errorf("List after expiry: %d sessions, want 0", len(resp.Sessions))
	}
}

func TestListSkipsAndPrunesExpiredEntries(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("")})
	ctx := t.Context()
	for _, id := range []string{"a", "b", "c", "d"} {
		if _, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // distinct update times: d newest
	}
	// b and c expire as if idle; their index entries stay behind.
	for _, id := range []string{"b", "c"} {
		k := s.keys("app", "u", id)
		if err := s.client.Del(ctx, k.meta, k.state, k.events).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var pages [][]string
	token := ""
	for range 5 {
		resp, err := s.List(ctx, sessions.ListRequest{AppName: "app", UserID: "u", PageSize: 1, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range resp.Sessions {
			ids = append(ids, x.ID)
		}
		pages = append(pages, ids)
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	if len(pages) != 2 || pages[0][0] != "d" || pages[1][0] != "a" {
		t.Errorf("pages = %v, want [[d] [a]]", pages)
	}
	if n, _ := s.client.ZCard(ctx, s.keys("app", "u", "").index).Result(); n != 2 {
		t.Errorf("index holds %d entries after listing, want the 2 live ones", n)
	}
}

func TestRetriedAppendIsStoredOnce(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("")})
	ctx := t.Context()
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ev := event("once", map[string]any{"n": 1.0})
	// A retry after a lost reply sends the same event again.
	for range 2 {
		if err := s.AppendEvent(ctx, &sessions.Session{ID: "s", AppName: "app", UserID: "u"}, ev); err != nil {
			t.Fatal(err)
		}
	}
	// Events without an id are never taken for retries.
	for range 2 {
		if err := s.AppendEvent(ctx, sess, event("", nil)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 3 {
		t.Errorf("stored %d events, want 3 (the retried one once, both anonymous ones)", len(got.Events))
	}
}

func TestRetriedBatchIsStoredOnce(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("")})
	ctx := t.Context()
	if _, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	batch := []*sessions.Event{event("b1", map[string]any{"n": 1.0}), event("b2", map[string]any{"n": 2.0})}
	// A retry after a lost reply sends the same batch again: the batch is
	// atomic, so its last event being the session's last means all of it
	// was stored.
	for range 2 {
		if err := s.AppendEvents(ctx, &sessions.Session{ID: "s", AppName: "app", UserID: "u"}, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range got.Events {
		ids = append(ids, ev.ID)
	}
	if len(ids) != 2 || ids[0] != "b1" || ids[1] != "b2" {
		t.Errorf("stored %v, want [b1 b2]", ids)
	}
}

// A session made by GetOrCreate or AcquireGetOrCreate is laid out in Redis
// exactly as one made by Create: the same hashes, index entry, tree
// membership and expiry.
func TestGetOrCreateLayoutLikeCreate(t *testing.T) {
	srv := startServer(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour, Now: func() time.Time { return now }})
	ctx := t.Context()
	st := map[string]any{"k": "v", "user:u": 1.0}
	req := func(id string) sessions.CreateRequest {
		return sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: id, State: st}
	}
	made := map[string]func(id string) error{
		"Create": func(id string) error { _, err := s.Create(ctx, req(id)); return err },
		"GetOrCreate": func(id string) error {
			_, err := s.GetOrCreate(ctx, req(id))
			return err
		},
		"AcquireGetOrCreate": func(id string) error {
			_, release, err := s.AcquireGetOrCreate(ctx, req(id), 0)
			if release != nil {
				release.Release()
			}
			return err
		},
	}
	// layout describes what Redis holds for one session, ttls rounded to
	// "set" or "none".
	layout := func(id string) map[string]any {
		k := s.keys("app", "u", id)
		out := map[string]any{}
		for name, key := range map[string]string{"meta": k.meta, "state": k.state, "events": k.events, "tree": k.tree, "index": k.index, "user": k.user} {
			typ, _ := s.client.Type(ctx, key).Result()
			ttl, _ := s.client.PTTL(ctx, key).Result()
			out[name+" type"] = typ
			out[name+" ttl set"] = ttl > 0
		}
		out["meta"], _ = s.client.HGetAll(ctx, k.meta).Result()
		out["state"], _ = s.client.HGetAll(ctx, k.state).Result()
		out["index score"], _ = s.client.ZScore(ctx, k.index, id).Result()
		out["in tree"], _ = s.client.SIsMember(ctx, k.tree, id).Result()
		return out
	}
	want := map[string]map[string]any{}
	for _, how := range []string{"Create", "GetOrCreate", "AcquireGetOrCreate"} {
		root := "root-" + how
		for _, id := range []string{root, sessions.ChildID(root, "helper")} {
			if err := made[how](id); err != nil {
				t.Fatalf("%s(%s): %v", how, id, err)
			}
			got := layout(id)
			kind := "root"
			if id != root {
				kind = "sub-conversation"
			}
			if w, ok := want[kind]; !ok {
				want[kind] = got
			} else if diff := cmp.Diff(w, got); diff != "" {
				t.Errorf("%s of a %s: layout (-Create +%s):\n%s", how, kind, how, diff)
			}
		}
	}
	if got := want["sub-conversation"]["in tree"]; got != true {
		t.Errorf("a sub-conversation made by Create is not in its tree: %v", got)
	}
}
