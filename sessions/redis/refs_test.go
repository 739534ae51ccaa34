package redis

import (
	"errors"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// A ref is one STRING under the user's hash tag; put without a TTL of its
// own it expires with the store's TTL, or never when the store keeps
// sessions.
func TestRefKeysAndExpiry(t *testing.T) {
	srv := startServer(t)
	for _, tt := range []struct {
		name     string
		storeTTL time.Duration
		ttl      time.Duration
		min, max time.Duration // PTTL bounds; -1 for none
	}{
		{"store TTL", time.Hour, 0, 59 * time.Minute, time.Hour},
		{"own TTL", time.Hour, time.Minute, 59 * time.Second, time.Minute},
		{"no TTL", 0, 0, -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, Config{URL: srv.URL(""), KeyPrefix: "refs-" + tt.name + ":", TTL: tt.storeTTL})
			ctx := t.Context()
			if err := s.PutRefs(ctx, "app", "u", map[string]sessions.Ref{"call:x": {SessionID: "s"}}, tt.ttl); err != nil {
				t.Fatal(err)
			}
			key := "refs-" + tt.name + ":{app|u}:ref:call:x"
			ttl, err := s.client.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if tt.min == -1 && ttl != -1 || tt.min != -1 && (ttl < tt.min || ttl > tt.max) {
				t.Errorf("PTTL %s = %v, want within [%v, %v]", key, ttl, tt.min, tt.max)
			}
		})
	}
}

// Index entries of unlisted ("~") sessions, as versions before unlisted
// sessions wrote them, are not listed; the first List drops them from the
// index without reading the sessions, which stay readable until they
// expire. New unlisted sessions get no entry at all.
func TestListDropsLegacyUnlistedEntries(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ctx := t.Context()
	if _, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "~call-x", State: map[string]any{"session_id": "a"}}); err != nil {
		t.Fatal(err)
	}
	k := s.keys("app", "u", "")
	if n, _ := s.client.ZCard(ctx, k.index).Result(); n != 1 {
		t.Fatalf("index holds %d entries, want only the listed session's", n)
	}
	// What an earlier version wrote: an index entry for the "~" session.
	if err := s.client.ZAdd(ctx, k.index, goredis.Z{Score: float64(time.Now().UnixMicro()), Member: "~call-x"}).Err(); err != nil {
		t.Fatal(err)
	}
	resp, err := s.List(ctx, sessions.ListRequest{AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range resp.Sessions {
		ids = append(ids, x.ID)
	}
	if !slices.Equal(ids, []string{"a"}) {
		t.Errorf("listed %v, want [a]", ids)
	}
	if _, err := s.client.ZScore(ctx, k.index, "~call-x").Result(); err == nil {
		t.Error("the legacy index entry is still there after a List")
	}
	got, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "~call-x"})
	if err != nil || got.State["session_id"] != "a" {
		t.Errorf("the legacy session after the List: %v, %v; want it readable", got, err)
	}
}

// A plain append does not end the run lease; an append that names it ends
// it in the same round trip, also under a wrapper (the gateway's metrics).
func TestReleaseOnlyWhenNamed(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ops := newOpLog()
	s.client.AddHook(ops)
	ctx := t.Context()
	// Load the scripts once: a first use costs a NOSCRIPT retry.
	warm, warmLease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "warm"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEventsRelease(ctx, warm, []*sessions.Event{event("w", nil)}, warmLease); err != nil {
		t.Fatal(err)
	}
	warmLease.Release()
	sess, lease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	if err := s.AppendEvents(ctx, sess, []*sessions.Event{event("e1", nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(ctx, "app", "u", "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire after a plain append: err = %v, want ErrConflict", err)
	}
	got := ops.during(t, func() error {
		return s.AppendEventsRelease(ctx, sess, []*sessions.Event{event("e2", nil)}, wrappedLease{lease})
	})
	if !slices.Equal(got, []string{"append+release"}) {
		t.Errorf("round trips of the releasing append %v, want [append+release]", got)
	}
	next, err := s.Acquire(ctx, "app", "u", "s1", 0)
	if err != nil {
		t.Fatalf("Acquire after the releasing append: %v", err)
	}
	defer next.Release()
	if got := ops.during(t, func() error { lease.Release(); return nil }); len(got) != 0 {
		t.Errorf("Release after the releasing append made round trips %v", got)
	}
	if err := lease.Renew(ctx); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Renew of the released lease: err = %v, want ErrConflict", err)
	}
}

// wrappedLease is a Lease under a wrapper, as the gateway's metrics make.
type wrappedLease struct{ sessions.Lease }

func (w wrappedLease) Unwrap() sessions.Lease { return w.Lease }
