package sessions

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// clock is a settable time for the TTL tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTTLStore(ttl time.Duration) (*MemoryService, *clock) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewMemoryService(MemoryConfig{Now: c.now, TTL: ttl}), c
}

func TestMemoryTTLExpiresIdleSessions(t *testing.T) {
	ctx := context.Background()
	s, c := newTTLStore(time.Hour)
	sess, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	get := func() error {
		_, err := s.Get(ctx, GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
		return err
	}

	// An append renews the TTL; a read does not.
	c.t = c.t.Add(50 * time.Minute)
	if err := s.AppendEvent(ctx, sess, &Event{ID: "e1", Author: "user", Timestamp: c.t}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(50 * time.Minute) // 100 minutes after create, 50 after the append
	if err := get(); err != nil {
		t.Fatalf("read 50 minutes after the last append: %v", err)
	}
	c.t = c.t.Add(10 * time.Minute) // 60 after the append, with a read between
	if err := get(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read an hour after the last append: %v, want ErrNotFound", err)
	}

	// Gone for every method, and its id free again.
	if err := s.AppendEvent(ctx, sess, &Event{ID: "e2", Author: "user"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("append to an expired session: %v", err)
	}
	if err := s.Delete(ctx, DeleteRequest{AppName: "app", UserID: "u", SessionID: "s1"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete of an expired session: %v", err)
	}
	again, err := s.GetOrCreate(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil || len(again.Events) != 0 {
		t.Fatalf("get or create after expiry: %v, %d events; want a new, empty session", err, len(again.Events))
	}
}

// A top-level session and its sub-conversations expire together, an hour
// after the last write in any of them, as in Redis.
func TestMemoryTTLTreeExpiresTogether(t *testing.T) {
	ctx := context.Background()
	s, c := newTTLStore(time.Hour)
	if _, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: "top"}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(30 * time.Minute)
	child, err := s.GetOrCreate(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: "top/helper"})
	if err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(20 * time.Minute)
	if err := s.AppendEvent(ctx, child, &Event{ID: "e1", Author: "helper"}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(50 * time.Minute) // 100 minutes after the top-level session's only write
	list, err := s.List(ctx, ListRequest{AppName: "app", UserID: "u"})
	if err != nil || len(list.Sessions) != 2 {
		t.Fatalf("list 50 minutes after the child's write: %v, %d sessions; want both", err, len(list.Sessions))
	}
	c.t = c.t.Add(10 * time.Minute)
	list, err = s.List(ctx, ListRequest{AppName: "app", UserID: "u"})
	if err != nil || len(list.Sessions) != 0 {
		t.Fatalf("list an hour after the last write: %v, %d sessions; want none", err, len(list.Sessions))
	}
}

func TestMemoryWithoutTTLKeepsSessions(t *testing.T) {
	ctx := context.Background()
	s, c := newTTLStore(0)
	if _, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.AddDate(10, 0, 0)
	if _, err := s.Get(ctx, GetRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatalf("ten years later: %v", err)
	}
}

// Sessions nobody reads again are freed by the sweep every create does.
func TestMemoryTTLSweepFreesUnreadSessions(t *testing.T) {
	ctx := context.Background()
	s, c := newTTLStore(time.Minute)
	const n = 1000
	for i := range n {
		if _, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: fmt.Sprint("u", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(time.Minute)
	for i := range n {
		if _, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: fmt.Sprint("v", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Each create examined up to sweepSample sessions; after as many creates as
	// there were expired sessions, only a few of those are left.
	left := len(held(s)) - n
	if left > n/10 {
		t.Errorf("%d of %d expired sessions still held after %d creates", left, n, n)
	}
}

// The sweep drops expired sessions from the least recently used end, up
// to sweepSample a create, and keeps every one that has not expired: after
// ceil(n/sweepSample) creates, n expired sessions are all gone.
func TestMemoryTTLSweepFromLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	s, c := newTTLStore(time.Minute)
	const n = 100
	for i := range n {
		if _, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: fmt.Sprint("old", i)}); err != nil {
			t.Fatal(err)
		}
	}
	c.t = c.t.Add(time.Minute)
	creates := (n + sweepSample - 1) / sweepSample
	for i := range creates {
		if _, err := s.Create(ctx, CreateRequest{AppName: "app", UserID: "u", SessionID: fmt.Sprint("new", i)}); err != nil {
			t.Fatal(err)
		}
		got := len(held(s))
		if want := max(n-(i+1)*sweepSample, 0) + i + 1; got != want {
			t.Fatalf("after %d creates %d sessions held, want %d", i+1, got, want)
		}
	}
}
