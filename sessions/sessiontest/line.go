package sessiontest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// QueueLocker is a Locker whose waiters can line up (sessions.Queue).
type QueueLocker interface {
	sessions.Locker
	sessions.Queue
}

// RunQueue runs the conformance suite for a sessions.Queue: tickets take
// the lease in the order they joined, whatever order they ask in; a line
// keeps the lease busy for Acquire, also between two holders; a ticket
// whose wait ended keeps its place; Leave lets the next one go; max bounds
// the line; DropAhead takes the tickets ahead out of it. A locker that is also a LockingStore is checked to hand its
// lease to the line when a turn's write releases it
// (AppendEventsRelease). newLocker is called once per subtest and must
// return a locker that shares no leases with those of other subtests.
func RunQueue(t *testing.T, newLocker func(t *testing.T) QueueLocker) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, l QueueLocker)
	}{
		{"ArrivalOrder", testLineOrder},
		{"LineKeepsLeaseBusy", testLineBusy},
		{"WaitEndedKeepsPlace", testLineKeepsPlace},
		{"LeaveLetsNextGo", testLineLeave},
		{"DropAhead", testLineDropAhead},
		{"Full", testLineFull},
		{"SessionsApart", testLineApart},
		{"WriteHandsLeaseToLine", testLineAfterWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newLocker(t)) })
	}
}

func join(t *testing.T, l sessions.Queue, id string, max int) sessions.Ticket {
	t.Helper()
	tk, err := l.Join(t.Context(), app, user, id, max)
	if err != nil {
		t.Fatalf("Join(%q): %v", id, err)
	}
	t.Cleanup(tk.Leave)
	return tk
}

// busy checks that Acquire finds the session busy.
func busy(t *testing.T, l sessions.Locker, id, when string) {
	t.Helper()
	if lease, err := l.Acquire(t.Context(), app, user, id, 0); !errors.Is(err, sessions.ErrConflict) {
		if lease != nil {
			lease.Release()
		}
		t.Fatalf("Acquire %s: err = %v, want ErrConflict", when, err)
	}
}

// noLease checks that tk cannot take the lease within a short wait.
func noLease(t *testing.T, tk sessions.Ticket, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if lease, err := tk.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		if lease != nil {
			lease.Release()
		}
		t.Fatalf("ticket %d's Acquire %s: err = %v, want the context's deadline", tk.Seq(), when, err)
	}
}

// testLineOrder: three tickets that ask for the lease last-joined first
// get it first-joined first, one at a time.
func testLineOrder(t *testing.T, l QueueLocker) {
	release := acquire(t, l, user, "s1")
	tickets := []sessions.Ticket{join(t, l, "s1", 0), join(t, l, "s1", 0), join(t, l, "s1", 0)}
	for i := 1; i < len(tickets); i++ {
		if tickets[i].Seq() <= tickets[i-1].Seq() {
			t.Fatalf("Seq %d after %d", tickets[i].Seq(), tickets[i-1].Seq())
		}
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := len(tickets) - 1; i >= 0; i-- {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), patience)
			defer cancel()
			lease, err := tickets[i].Acquire(ctx)
			if err != nil {
				t.Errorf("ticket %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			lease.Release()
		})
		time.Sleep(20 * time.Millisecond) // the later tickets ask first
	}
	release()
	wg.Wait()
	if !slices.Equal(order, []int{0, 1, 2}) {
		t.Errorf("the tickets got the lease in the order %v, want [0 1 2]", order)
	}
}

// testLineBusy: with a ticket in line the session is busy for Acquire,
// also once the holder released it and before the ticket took it; free
// again once the line is empty and the lease released.
func testLineBusy(t *testing.T, l QueueLocker) {
	release := acquire(t, l, user, "s1")
	tk := join(t, l, "s1", 0)
	release()
	busy(t, l, "s1", "with a ticket in line")
	lease, err := tk.Acquire(t.Context())
	if err != nil {
		t.Fatalf("the first ticket's Acquire on a released lease: %v", err)
	}
	busy(t, l, "s1", "while the ticket's lease is held")
	lease.Release()
	acquire(t, l, user, "s1")
}

// testLineKeepsPlace: a ticket whose wait ended keeps its place: the
// ticket behind it cannot take the free lease, and it still can.
func testLineKeepsPlace(t *testing.T, l QueueLocker) {
	release := acquire(t, l, user, "s1")
	first, second := join(t, l, "s1", 0), join(t, l, "s1", 0)
	noLease(t, first, "while the lease is held")
	release()
	noLease(t, second, "behind a ticket that stopped waiting")
	lease, err := first.Acquire(t.Context())
	if err != nil {
		t.Fatalf("the first ticket's second Acquire: %v", err)
	}
	noLease(t, second, "while the first ticket holds the lease")
	lease.Release()
	lease, err = second.Acquire(t.Context())
	if err != nil {
		t.Fatalf("the second ticket's Acquire after the first released: %v", err)
	}
	lease.Release()
}

// testLineLeave: a ticket that leaves lets the next one take the lease;
// Leave is idempotent and an Acquire after it fails.
func testLineLeave(t *testing.T, l QueueLocker) {
	release := acquire(t, l, user, "s1")
	first, second := join(t, l, "s1", 0), join(t, l, "s1", 0)
	release()
	first.Leave()
	first.Leave()
	lease, err := second.Acquire(t.Context())
	if err != nil {
		t.Fatalf("Acquire behind a ticket that left: %v", err)
	}
	lease.Release()
	if lease, err := first.Acquire(t.Context()); err == nil {
		lease.Release()
		t.Fatal("Acquire of a ticket that left succeeded")
	}
	second.Leave() // after its Acquire: nothing
	acquire(t, l, user, "s1")
}

// testLineDropAhead: a ticket that drops those ahead of it takes the
// lease next; theirs fail with ErrDropped, the ones behind it keep their
// places.
func testLineDropAhead(t *testing.T, l QueueLocker) {
	release := acquire(t, l, user, "s1")
	first, second, third, fourth := join(t, l, "s1", 0), join(t, l, "s1", 0), join(t, l, "s1", 0), join(t, l, "s1", 0)
	if err := third.DropAhead(t.Context()); err != nil {
		t.Fatalf("DropAhead: %v", err)
	}
	for _, tk := range []sessions.Ticket{first, second} {
		if lease, err := tk.Acquire(t.Context()); !errors.Is(err, sessions.ErrDropped) {
			if lease != nil {
				lease.Release()
			}
			t.Fatalf("Acquire of ticket %d, dropped: err = %v, want ErrDropped", tk.Seq(), err)
		}
		tk.Leave() // nothing
	}
	release()
	noLease(t, fourth, "behind the ticket that dropped the others")
	lease, err := third.Acquire(t.Context())
	if err != nil {
		t.Fatalf("Acquire of the ticket that dropped those ahead: %v", err)
	}
	lease.Release()
	lease, err = fourth.Acquire(t.Context())
	if err != nil {
		t.Fatalf("Acquire of the ticket behind it: %v", err)
	}
	lease.Release()
}

// testLineFull: max bounds the tickets waiting in a session's line.
func testLineFull(t *testing.T, l QueueLocker) {
	acquire(t, l, user, "s1")
	first := join(t, l, "s1", 2)
	join(t, l, "s1", 2)
	if _, err := l.Join(t.Context(), app, user, "s1", 2); !errors.Is(err, sessions.ErrQueueFull) {
		t.Fatalf("a third Join with max 2: err = %v, want ErrQueueFull", err)
	}
	join(t, l, "s1", 0) // no bound
	first.Leave()
	if _, err := l.Join(t.Context(), app, user, "s1", 3); err != nil {
		t.Fatalf("Join once one left: %v", err)
	}
}

// testLineApart: lines are per session, user and app; a line on one
// leaves the others free.
func testLineApart(t *testing.T, l QueueLocker) {
	acquire(t, l, user, "s1")
	join(t, l, "s1", 1)
	acquire(t, l, user, "s2")
	acquire(t, l, other, "s1")
	tk, err := l.Join(t.Context(), app, other, "s1", 1)
	if err != nil {
		t.Fatalf("Join on another user's session: %v", err)
	}
	tk.Leave()
	if _, err := l.Join(t.Context(), "", user, "s1", 0); !errors.Is(err, sessions.ErrInvalid) {
		t.Errorf("Join without app: err = %v, want ErrInvalid", err)
	}
}

// testLineAfterWrite: a lease released with a turn's write
// (AppendEventsRelease) goes to the line, not to an Acquire.
func testLineAfterWrite(t *testing.T, l QueueLocker) {
	s, ok := l.(LockingStore)
	if !ok {
		t.Skip("not a LockingStore")
	}
	ctx := t.Context()
	sess, lease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1"}, 0)
	if err != nil {
		t.Fatalf("AcquireGetOrCreate: %v", err)
	}
	tk := join(t, l, "s1", 0)
	ra, ok := l.(sessions.ReleasingAppender)
	if !ok {
		lease.Release()
		t.Skip("not a ReleasingAppender")
	}
	ev := &sessions.Event{ID: "e1", InvocationID: "i1", Author: "user", Timestamp: time.Now(),
		Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: "hi"}}}}
	if err := ra.AppendEventsRelease(ctx, sess, []*sessions.Event{ev}, lease); err != nil {
		t.Fatalf("AppendEventsRelease: %v", err)
	}
	lease.Release()
	if _, l2, err := s.AcquireGet(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: "s1"}, 0); !errors.Is(err, sessions.ErrConflict) {
		if l2 != nil {
			l2.Release()
		}
		t.Fatalf("AcquireGet after the write, with a ticket in line: err = %v, want ErrConflict", err)
	}
	next, err := tk.Acquire(ctx)
	if err != nil {
		t.Fatalf("the ticket's Acquire after the write: %v", err)
	}
	next.Release()
	got, err := s.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: "s1"})
	if err != nil || len(got.Events) != 1 {
		t.Fatalf("the session after the write: %v, %v", got, err)
	}
}
