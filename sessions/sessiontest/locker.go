package sessiontest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// patience bounds every wait in the locker suite that is expected to end
// early; tests never depend on how fast a wait ends, only on that it does.
const patience = 10 * time.Second

// RunLocker runs the conformance suite for a sessions.Locker. newLocker is
// called once per subtest and must return a locker that shares no leases with
// the lockers of other subtests.
func RunLocker(t *testing.T, newLocker func(t *testing.T) sessions.Locker) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, l sessions.Locker)
	}{
		{"BusyIsConflict", testLockBusy},
		{"WaitTimesOut", testLockWaitTimesOut},
		{"WaitSucceedsOnRelease", testLockWaitSucceeds},
		{"ContextCancelled", testLockContextCancelled},
		{"ReleaseIdempotent", testLockReleaseIdempotent},
		{"MutualExclusion", testLockMutualExclusion},
		{"InvalidKeys", testLockInvalid},
		{"RenewWhileHeld", testLockRenew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newLocker(t))
		})
	}
}

func acquire(t *testing.T, l sessions.Locker, user, id string) func() {
	t.Helper()
	lease, err := l.Acquire(t.Context(), app, user, id, 0)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", user, id, err)
	}
	t.Cleanup(lease.Release)
	return lease.Release
}

func testLockBusy(t *testing.T, l sessions.Locker) {
	acquire(t, l, user, "s1")
	if _, err := l.Acquire(t.Context(), app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("second Acquire: err = %v, want ErrConflict", err)
	}
	// Other sessions, users and apps are independent.
	acquire(t, l, user, "s2")
	acquire(t, l, other, "s1")
	release, err := l.Acquire(t.Context(), "app2", user, "s1", 0)
	if err != nil {
		t.Fatalf("Acquire in another app: %v", err)
	}
	release.Release()
}

func testLockWaitTimesOut(t *testing.T, l sessions.Locker) {
	acquire(t, l, user, "s1")
	if _, err := l.Acquire(t.Context(), app, user, "s1", 50*time.Millisecond); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire with a short wait on a held session: err = %v, want ErrConflict", err)
	}
}

func testLockWaitSucceeds(t *testing.T, l sessions.Locker) {
	release := acquire(t, l, user, "s1")
	go func() {
		time.Sleep(50 * time.Millisecond)
		release()
	}()
	second, err := l.Acquire(t.Context(), app, user, "s1", patience)
	if err != nil {
		t.Fatalf("Acquire while waiting for a release: %v", err)
	}
	second.Release()
}

func testLockContextCancelled(t *testing.T, l sessions.Locker) {
	acquire(t, l, user, "s1")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	_, err := l.Acquire(ctx, app, user, "s1", patience)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context: err = %v, want context.Canceled", err)
	}
	done, stop := context.WithCancel(t.Context())
	stop()
	if _, err := l.Acquire(done, app, user, "free", 0); err == nil {
		t.Error("Acquire with an already cancelled context succeeded")
	}
}

func testLockReleaseIdempotent(t *testing.T, l sessions.Locker) {
	first, err := l.Acquire(t.Context(), app, user, "s1", 0)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	first.Release()
	first.Release()
	acquire(t, l, user, "s1")
	first.Release() // a stale release must not free the new holder's lease
	if _, err := l.Acquire(t.Context(), app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire after a stale release: err = %v, want ErrConflict", err)
	}
}

func testLockMutualExclusion(t *testing.T, l sessions.Locker) {
	const runs = 12
	var inside, maxInside, done atomic.Int32
	var wg sync.WaitGroup
	for range runs {
		wg.Go(func() {
			release, err := l.Acquire(t.Context(), app, user, "shared", patience)
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			done.Add(1)
			release.Release()
		})
	}
	wg.Wait()
	if got := maxInside.Load(); got != 1 {
		t.Errorf("%d runs held the lease at once, want 1", got)
	}
	if got := done.Load(); got != runs {
		t.Errorf("%d of %d runs got the lease", got, runs)
	}
}

func testLockInvalid(t *testing.T, l sessions.Locker) {
	if _, err := l.Acquire(t.Context(), "", user, "s1", 0); !errors.Is(err, sessions.ErrInvalid) {
		t.Errorf("Acquire without app: err = %v, want ErrInvalid", err)
	}
}

// testLockRenew: a held lease renews, and keeps the session busy; a
// released one does not renew, and the session is free.
func testLockRenew(t *testing.T, l sessions.Locker) {
	lease, err := l.Acquire(t.Context(), app, user, "s1", 0)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := lease.Renew(t.Context()); err != nil {
		t.Fatalf("Renew of a held lease: %v", err)
	}
	if _, err := l.Acquire(t.Context(), app, user, "s1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("Acquire after a renewal: err = %v, want ErrConflict", err)
	}
	lease.Release()
	if err := lease.Renew(t.Context()); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Renew of a released lease: err = %v, want ErrConflict", err)
	}
	acquire(t, l, user, "s1")
	if err := lease.Renew(t.Context()); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Renew of a released lease under another holder: err = %v, want ErrConflict", err)
	}
}
