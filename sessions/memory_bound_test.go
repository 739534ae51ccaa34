package sessions

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"
)

// held lists the sessions the store holds, sorted.
func held(s *MemoryService) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.trees {
		if t.top != nil {
			out = append(out, t.root.user+":"+t.root.id)
		}
	}
	for k := range s.sessions {
		out = append(out, k.user+":"+k.id)
	}
	slices.Sort(out)
	return out
}

func mustCreate(t *testing.T, s *MemoryService, user, id string) *Session {
	t.Helper()
	sess, err := s.Create(context.Background(), CreateRequest{AppName: "app", UserID: user, SessionID: id})
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	return sess
}

// Past the bound, the least recently used trees go, each with its
// sub-conversations, and nothing else: a session that was used again
// (read, written, or a sub-conversation created in it) is recent again.
func TestMemoryBoundEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryService(MemoryConfig{MaxSessions: 4})
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		mustCreate(t, s, "u", id)
	}
	mustCreate(t, s, "u", "s1/helper") // s1's tree: a sub-conversation, and used
	mustCreate(t, s, "u", "s1/helper/deeper")
	if _, err := s.Get(ctx, GetRequest{AppName: "app", UserID: "u", SessionID: "s2"}); err != nil {
		t.Fatal(err)
	}
	s3, err := s.Get(ctx, GetRequest{AppName: "app", UserID: "u", SessionID: "s3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, s3, &Event{ID: "e1", Author: "user"}); err != nil {
		t.Fatal(err)
	}
	// Use order, oldest first: s4, s1 (and its tree), s2, s3.
	want := []string{"u:s1", "u:s1/helper", "u:s1/helper/deeper", "u:s2", "u:s3", "u:s4"}
	if diff := cmp.Diff(want, held(s)); diff != "" {
		t.Fatalf("within the bound (-want +got):\n%s", diff)
	}

	mustCreate(t, s, "u", "s5")
	want = []string{"u:s1", "u:s1/helper", "u:s1/helper/deeper", "u:s2", "u:s3", "u:s5"}
	if diff := cmp.Diff(want, held(s)); diff != "" {
		t.Errorf("after one more (-want +got):\n%s", diff)
	}
	mustCreate(t, s, "other", "s6") // any user's session counts
	want = []string{"other:s6", "u:s2", "u:s3", "u:s5"}
	if diff := cmp.Diff(want, held(s)); diff != "" {
		t.Errorf("after two more: the whole tree of s1 goes (-want +got):\n%s", diff)
	}
	if _, err := s.Get(ctx, GetRequest{AppName: "app", UserID: "u", SessionID: "s1/helper"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("get of an evicted sub-conversation: %v, want ErrNotFound", err)
	}
	if got, want := s.Stats(), (StoreStats{Sessions: 4, EvictedSessions: 2}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	// An evicted id is free again.
	mustCreate(t, s, "u", "s4")
	if want := []string{"other:s6", "u:s3", "u:s4", "u:s5"}; !slices.Equal(held(s), want) {
		t.Errorf("after recreating s4: %v, want %v", held(s), want)
	}
}

// Unlisted sessions (a paused stateless turn's) count and are evicted
// like any other; List never shows them.
func TestMemoryBoundCountsUnlistedSessions(t *testing.T) {
	s := NewMemoryService(MemoryConfig{MaxSessions: 2})
	mustCreate(t, s, "u", "~tmp-1")
	mustCreate(t, s, "u", "~tmp-1/helper")
	mustCreate(t, s, "u", "s1")
	mustCreate(t, s, "u", "s2")
	if want := []string{"u:s1", "u:s2"}; !slices.Equal(held(s), want) {
		t.Errorf("held %v, want %v", held(s), want)
	}
}

// A tree under a run lease taken with the store's Acquire is not evicted,
// also when it is created under the lease; the bound is exceeded by the
// leased trees meanwhile, and the next create after the release restores
// it, evicting by use as always (the released tree was used last).
func TestMemoryBoundSparesLeasedSessions(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryService(MemoryConfig{MaxSessions: 2})
	busy, err := s.Acquire(ctx, "app", "u", "busy", 0)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "u", "busy") // created under the lease
	mustCreate(t, s, "u", "s1")
	mustCreate(t, s, "u", "s2")
	mustCreate(t, s, "u", "busy/helper")
	later, err := s.Acquire(ctx, "app", "u", "s2/helper", 0) // a sub-conversation's lease pins its tree
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "u", "s3")
	mustCreate(t, s, "u", "s4")
	// busy and s2 are pinned; s1 and s3 went, s4 is the one just created.
	if want := []string{"u:busy", "u:busy/helper", "u:s2", "u:s4"}; !slices.Equal(held(s), want) {
		t.Fatalf("with two leases held: %v, want %v", held(s), want)
	}
	later.Release()
	busy.Release()
	busy.Release() // idempotent: one unpin
	mustCreate(t, s, "u", "s5")
	// Use order now: s4, s2 (released), busy (released), s5.
	if want := []string{"u:busy", "u:busy/helper", "u:s5"}; !slices.Equal(held(s), want) {
		t.Errorf("after the releases and one more create: %v, want %v", held(s), want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pins := 0
	for _, t := range s.trees {
		pins += t.pins
	}
	if pins != 0 || s.empty != 0 || s.lru.Len() != len(s.trees) {
		t.Errorf("after every release: %d pins, %d empty trees, %d trees in use order of %d", pins, s.empty, s.lru.Len(), len(s.trees))
	}
}

// Delete removes a sub-conversation and what is under it, or a whole tree,
// from the use order too.
func TestMemoryBoundDelete(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryService(MemoryConfig{MaxSessions: 2})
	for _, id := range []string{"s1", "s1/a", "s1/a/b", "s1/c", "s2"} {
		mustCreate(t, s, "u", id)
	}
	if err := s.Delete(ctx, DeleteRequest{AppName: "app", UserID: "u", SessionID: "s1/a"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"u:s1", "u:s1/c", "u:s2"}; !slices.Equal(held(s), want) {
		t.Errorf("after deleting s1/a: %v, want %v", held(s), want)
	}
	if err := s.Delete(ctx, DeleteRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "u", "s3") // two trees: nothing to evict
	if want := []string{"u:s2", "u:s3"}; !slices.Equal(held(s), want) {
		t.Errorf("after deleting s1 and creating s3: %v, want %v", held(s), want)
	}
	if st := s.Stats(); st.EvictedSessions != 0 || st.Sessions != 2 {
		t.Errorf("stats %+v: deletes are no evictions", st)
	}
}

// A lease may come before its session, or outlive it (deleted or
// expired under the lease): the store keeps the lease's tree, empty, out
// of its count, List and bound, and a session made under the lease is
// pinned; the tree goes when the last lease on it is released empty.
func TestMemoryBoundLeaseWithoutSession(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := NewMemoryService(MemoryConfig{Now: c.now, TTL: time.Hour, MaxSessions: 1})
	acquire := func(id string) Lease {
		t.Helper()
		l, err := s.Acquire(ctx, "app", "u", id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	check := func(when string, wantHeld []string, wantStats StoreStats, wantEmpty int) {
		t.Helper()
		if got := held(s); !slices.Equal(got, wantHeld) {
			t.Errorf("%s: held %v, want %v", when, got, wantHeld)
		}
		if got := s.Stats(); got != wantStats {
			t.Errorf("%s: stats %+v, want %+v", when, got, wantStats)
		}
		list, err := s.List(ctx, ListRequest{AppName: "app", UserID: "u"})
		if err != nil || len(list.Sessions) != len(wantHeld) {
			t.Errorf("%s: list %v, %v", when, list, err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.empty != wantEmpty || len(s.trees)-s.empty != wantStats.Sessions {
			t.Errorf("%s: %d empty trees of %d, want %d", when, s.empty, len(s.trees), wantEmpty)
		}
	}
	ghost, sub := acquire("ghost"), acquire("other/helper")
	check("two leases, no session", nil, StoreStats{}, 2)
	ghost.Release()
	sub.Release()
	check("released", nil, StoreStats{}, 0)

	busy := acquire("busy")
	twice := acquire("busy/helper") // a second lease on the tree
	mustCreate(t, s, "u", "busy")
	mustCreate(t, s, "u", "s1") // past the bound: busy is pinned
	check("created under the lease", []string{"u:busy", "u:s1"}, StoreStats{Sessions: 2}, 0)
	if err := s.Delete(ctx, DeleteRequest{AppName: "app", UserID: "u", SessionID: "busy"}); err != nil {
		t.Fatal(err)
	}
	check("deleted under the lease", []string{"u:s1"}, StoreStats{Sessions: 1}, 1)
	mustCreate(t, s, "u", "busy/helper")
	mustCreate(t, s, "u", "s2") // evicts s1
	check("recreated under the lease", []string{"u:busy/helper", "u:s2"}, StoreStats{Sessions: 2, EvictedSessions: 1}, 0)
	c.t = c.t.Add(time.Hour)
	if _, err := s.Get(ctx, GetRequest{AppName: "app", UserID: "u", SessionID: "busy/helper"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of an expired session: %v", err)
	}
	mustCreate(t, s, "u", "busy") // the sweep drops s2, expired
	check("expired and recreated under the lease", []string{"u:busy"}, StoreStats{Sessions: 1, EvictedSessions: 1}, 0)
	busy.Release()
	mustCreate(t, s, "u", "s3") // busy is still pinned
	check("one lease left", []string{"u:busy", "u:s3"}, StoreStats{Sessions: 2, EvictedSessions: 1}, 0)
	twice.Release() // busy is used last: s3 goes first, then busy
	mustCreate(t, s, "u", "s4")
	check("every lease released", []string{"u:s4"}, StoreStats{Sessions: 1, EvictedSessions: 3}, 0)
}

// An expired tree at the end of the use order is dropped, not counted as
// an eviction (the sweep of a create usually finds it first).
func TestMemoryBoundExpiredAreNotEvictions(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := NewMemoryService(MemoryConfig{Now: c.now, TTL: time.Hour, MaxSessions: 2})
	mustCreate(t, s, "u", "s1")
	c.t = c.t.Add(30 * time.Minute)
	mustCreate(t, s, "u", "s2")
	c.t = c.t.Add(30 * time.Minute) // s1 expired, s2 not
	s.mu.Lock()
	s.plant(memKey{"app", "u", "s3"}, nil) // a create without its sweep
	s.plant(memKey{"app", "u", "s4"}, nil)
	s.mu.Unlock()
	if got, want := held(s), []string{"u:s3", "u:s4"}; !slices.Equal(got, want) {
		t.Errorf("sessions %v still held, want s1 and s2 gone", got)
	}
	if st := s.Stats(); st.Sessions != 2 || st.EvictedSessions != 1 {
		t.Errorf("stats %+v, want s2 alone counted as evicted", st)
	}
}

// Refs are bounded at RefsPerSession per session of the bound, evicted by
// use: a read makes a ref recent.
func TestMemoryBoundRefs(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryService(MemoryConfig{MaxSessions: 1})
	for i := range RefsPerSession {
		if err := s.PutRefs(ctx, "app", "u", map[string]Ref{fmt.Sprint("k", i): {SessionID: "s"}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetRef(ctx, "app", "u", "k0"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRefs(ctx, "app", "u", map[string]Ref{"k1": {SessionID: "again"}}, 0); err != nil { // a put is a use
		t.Fatal(err)
	}
	if err := s.PutRefs(ctx, "app", "u", map[string]Ref{"new1": {SessionID: "s"}, "new2": {SessionID: "s"}}, 0); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, k := range []string{"k0", "k1", "k2", "k3", "new1", "new2"} {
		if _, err := s.GetRef(ctx, "app", "u", k); err == nil {
			kept = append(kept, k)
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	if want := []string{"k0", "k1", "new1", "new2"}; !slices.Equal(kept, want) {
		t.Errorf("refs kept %v, want %v", kept, want)
	}
	if st := s.Stats(); st.Refs != RefsPerSession || st.EvictedRefs != 2 {
		t.Errorf("stats %+v, want %d refs and 2 evicted", st, RefsPerSession)
	}
	if err := s.DeleteRefs(ctx, "app", "u", "k0", "missing"); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Refs != RefsPerSession-1 {
		t.Errorf("after a delete: %+v", st)
	}
}

// Without a bound nothing is evicted.
func TestMemoryUnbounded(t *testing.T) {
	s := NewMemoryService(MemoryConfig{})
	for i := range 1000 {
		mustCreate(t, s, "u", fmt.Sprint("s", i))
	}
	if st := s.Stats(); st.Sessions != 1000 || st.EvictedSessions != 0 {
		t.Errorf("stats %+v", st)
	}
}

// chatTurn is what a one-turn chat session stores: the user's message and
// the model's answer, with usage.
func chatTurn(i int) []*Event {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []*Event{
		{ID: fmt.Sprintf("e-%d-u", i), InvocationID: fmt.Sprint("e-", i), Author: "user", Timestamp: now,
			Content: genai.NewContentFromText("hello, please answer", genai.RoleUser)},
		{ID: fmt.Sprintf("e-%d-m", i), InvocationID: fmt.Sprint("e-", i), Author: "assistant", Timestamp: now, TurnComplete: true,
			Content:       genai.NewContentFromText("Hello! Here is an answer of a few words, as the load test's upstream sends.", genai.RoleModel),
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 20, TotalTokenCount: 32}},
	}
}

// BenchmarkMemoryStore measures, once the store holds 100,000 one-turn
// sessions, a new session's turn ("turn": create, append the turn, read it
// back; with the bound, each create evicts one session) and a read of a
// held session ("get"), with sessions.max_sessions at 100,000 against no
// bound, and with the bound and the default sessions.ttl (every create
// then sweeps for expired sessions). It reports the live heap per session
// held.
func BenchmarkMemoryStore(b *testing.B) {
	const held = 100_000
	ctx := context.Background()
	for _, cfg := range []MemoryConfig{{}, {MaxSessions: held}, {MaxSessions: held, TTL: 168 * time.Hour}} {
		for _, op := range []string{"turn", "get"} {
			name := fmt.Sprintf("%s/max_sessions=%d", op, cfg.MaxSessions)
			if cfg.TTL > 0 {
				name += "/ttl=" + cfg.TTL.String()
			}
			b.Run(name, func(b *testing.B) {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s := NewMemoryService(cfg)
				id := func(i int) GetRequest {
					return GetRequest{AppName: "app", UserID: "u", SessionID: "s" + strconv.Itoa(i)}
				}
				turn := func(i int) {
					req := id(i)
					sess, err := s.Create(ctx, CreateRequest{AppName: req.AppName, UserID: req.UserID, SessionID: req.SessionID})
					if err != nil {
						b.Fatal(err)
					}
					if err := s.AppendEvents(ctx, sess, chatTurn(i)); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Get(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				for i := range held {
					turn(i)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if op == "turn" {
						turn(held + i)
					} else if _, err := s.Get(ctx, id(i*7919%held)); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/held, "heapB/session")
			})
		}
	}
}

// BenchmarkMemoryStoreHistory measures a read of a session that holds 40
// events (20 turns of chatTurn's), what each turn of a long conversation
// reads before it runs.
func BenchmarkMemoryStoreHistory(b *testing.B) {
	ctx := context.Background()
	s := NewMemoryService(MemoryConfig{})
	req := GetRequest{AppName: "app", UserID: "u", SessionID: "s"}
	sess, err := s.Create(ctx, CreateRequest{AppName: req.AppName, UserID: req.UserID, SessionID: req.SessionID})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		if err := s.AppendEvents(ctx, sess, chatTurn(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, err := s.Get(ctx, req); err != nil || len(got.Events) != 40 {
			b.Fatal(len(got.Events), err)
		}
	}
}
