package redis

import (
	"context"
	"errors"
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
	// A lease of a second renewed every third of it: a shorter one can lapse
	// when a loaded machine runs the renewal timer late.
	cfg, _, b, release := heldByReplica(t, time.Second)
	time.Sleep(3 * cfg.LockTTL) // several lease periods: only renewal keeps it
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
