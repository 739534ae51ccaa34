package redis

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// heldByReplica starts two replicas (Stores on one server and prefix); the
// first holds the lease on session s1.
func heldByReplica(t *testing.T, lockTTL time.Duration) (cfg Config, holder, other *Store, release sessions.Lease) {
	t.Helper()
	srv := startServer(t)
	cfg = Config{URL: srv.URL(""), KeyPrefix: "replicas:", LockTTL: lockTTL}
	holder, other = newStore(t, cfg), newStore(t, cfg)
	release, err := holder.Acquire(t.Context(), "app", "u", "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, holder, other, release
}

func TestLeaseRenewedWhileHeld(t *testing.T) {
	// A lease of two seconds renewed every third of it: it lapses only if
	// a loaded machine runs a renewal more than 1.3 s late, or two
	// renewals in a row time out (one of a second lapsed, rarely, under
	// CI's load).
	cfg, _, b, release := heldByReplica(t, 2*time.Second)
	time.Sleep(2 * cfg.LockTTL) // two lease periods: only renewal keeps it
	if _, err := b.Acquire(t.Context(), "app", "u", "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("another replica's Acquire while the lease is renewed: err = %v, want ErrConflict", err)
	}
	release.Release()
	second, err := b.Acquire(t.Context(), "app", "u", "s1", 0)
	if err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	second.Release()
}

// A renewal that runs out of time is retried at once, a period after the
// one before began, not a whole period later: the lease, of three
// periods, would have lapsed by then.
func TestRenewalRetriedAtOnceAfterTimeout(t *testing.T) {
	const every = time.Second
	began := make(chan time.Time, 2)
	var calls atomic.Int32
	extend := func(ctx context.Context) bool {
		select {
		case began <- time.Now():
		default:
		}
		if calls.Add(1) == 1 {
			<-ctx.Done() // Redis does not answer in time
		}
		return true
	}
	var r renewal
	r.mu.Lock()
	r.timer = time.AfterFunc(0, func() { r.tick(every, extend) })
	r.mu.Unlock()
	defer r.stop()
	first, second := <-began, <-began
	if gap := second.Sub(first); gap >= 2*every {
		t.Errorf("a renewal that timed out was retried %s after it began, want less than %s", gap, 2*every)
	}
}

func TestLeaseExpiresWhenHolderDies(t *testing.T) {
	cfg, crashed, survivor, stale := heldByReplica(t, 200*time.Millisecond)
	_ = crashed.Close() // the replica is gone: no renewal, no release
	release, err := survivor.Acquire(t.Context(), "app", "u", "s1", 10*time.Second)
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	stale.Release() // a late release from the dead holder must not free the new lease
	if _, err := newStore(t, cfg).Acquire(t.Context(), "app", "u", "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire after a stale release: err = %v, want ErrConflict", err)
	}
	release.Release()
}

// A waiter whose replica dies stops polling and leaves the line after
// lineAlive: the one behind it gets the lease, and the lease is busy for
// Acquire until then (the line's marker).
func TestLineDropsWaiterThatStopsPolling(t *testing.T) {
	cfg, holder, other, lease := heldByReplica(t, 600*time.Millisecond)
	dead := newStore(t, cfg)
	if _, err := dead.Join(t.Context(), "app", "u", "s1", 0); err != nil {
		t.Fatal(err)
	}
	_ = dead.Close() // never polls, never leaves
	next, err := other.Join(t.Context(), "app", "u", "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Leave()
	lease.Release()
	if _, err := holder.Acquire(t.Context(), "app", "u", "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire with waiters in line: err = %v, want ErrConflict", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got, err := next.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire behind a waiter that died: %v", err)
	}
	got.Release()
	again, err := holder.Acquire(t.Context(), "app", "u", "s1", 0)
	if err != nil {
		t.Fatalf("Acquire once the line is empty: %v", err)
	}
	again.Release()
}

// A waiter in line is woken when the lease it waits for is released on
// another replica, not by its poll: its Store polls only every hour once
// subscribed to the line's channel, so the lease it gets within the test's
// deadline came through the message the release published.
func TestLineWaiterWokenByRelease(t *testing.T) {
	_, _, other, lease := heldByReplica(t, 10*time.Minute)
	other.bellPoll = time.Hour
	if other.waitPoll() < 15*time.Second {
		t.Fatalf("waitPoll %s: the test needs a poll longer than its deadline", other.waitPoll())
	}
	next, err := other.Join(t.Context(), "app", "u", "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Leave()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	type result struct {
		lease sessions.Lease
		err   error
	}
	got := make(chan result, 1)
	go func() {
		l, err := next.Acquire(ctx)
		got <- result{l, err}
	}()
	ch := other.lineKeys("app", "u", "s1").line
	for !other.bell.subscribed(ch) {
		select {
		case r := <-got:
			t.Fatalf("Acquire returned before the lease was released: %v", r.err)
		case <-ctx.Done():
			t.Fatal("the waiter never subscribed to its line's channel")
		case <-time.After(time.Millisecond):
		}
	}
	lease.Release()
	r := <-got
	if r.err != nil {
		t.Fatalf("Acquire once the lease was released on the other replica: %v", r.err)
	}
	r.lease.Release()
}

// subscribed reports whether the Store's subscription to ch is confirmed.
func (b *lineBell) subscribed(ch string) bool {
	b.mu.Lock()
	sub := b.subs[ch]
	b.mu.Unlock()
	if sub == nil {
		return false
	}
	ready, _ := b.state(sub)
	return ready
}
