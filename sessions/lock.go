package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Locker serialises runs on one session.
type Locker interface {
	// Acquire takes the run lease on a session. If it is busy it waits up to wait (0: not at all) and then returns an error wrapping ErrConflict. release is idempotent and must be called.
	Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (release func(), err error)
}

// LockingGetter is implemented by stores that take a session's run lock
// and read the session in one round trip. When the session does not exist
// the lock is still held (release is not nil) and the error wraps
// ErrNotFound.
//
// AcquireGetOrCreate does what AcquireGet does for the session req names
// and, when it does not exist, creates it in the same round trip, as
// GetOrCreate would: never over an existing session, and only once the
// lease is this call's (a call that finds the session busy creates
// nothing). req.SessionID must be set.
type LockingGetter interface {
	AcquireGet(ctx context.Context, req GetRequest, wait time.Duration) (sess *Session, release func(), err error)
	AcquireGetOrCreate(ctx context.Context, req CreateRequest, wait time.Duration) (sess *Session, release func(), err error)
}

// MemoryLocker is the process-local Locker: enough for one gateway replica.
// Replicas sharing sessions need a shared lock, such as the Redis store's.
type MemoryLocker struct {
	mu   sync.Mutex
	held map[memKey]chan struct{} // closed when the holder releases
}

var _ Locker = (*MemoryLocker)(nil)

// NewMemoryLocker returns a Locker with no session held.
func NewMemoryLocker() *MemoryLocker {
	return &MemoryLocker{held: map[memKey]chan struct{}{}}
}

// Acquire implements Locker. A waiter returns ctx's error (wrapped) when ctx
// ends first.
func (l *MemoryLocker) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (func(), error) {
	if err := ValidateKeys(app, user); err != nil {
		return nil, err
	}
	k := memKey{app, user, sessionID}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sessions: waiting for session %s: %w", sessionID, err)
		}
		l.mu.Lock()
		busy, ok := l.held[k]
		if !ok {
			done := make(chan struct{})
			l.held[k] = done
			l.mu.Unlock()
			return l.releaser(k, done), nil
		}
		l.mu.Unlock()
		if timeout == nil {
			return nil, busyError(sessionID)
		}
		select {
		case <-busy:
		case <-timeout:
			return nil, busyError(sessionID)
		case <-ctx.Done():
			return nil, fmt.Errorf("sessions: waiting for session %s: %w", sessionID, ctx.Err())
		}
	}
}

// releaser frees k once, and only while done is still its holder's lease.
// The lease in held is what makes it once: the first call takes it out, so
// a later one finds it gone, or another holder's, and does nothing.
func (l *MemoryLocker) releaser(k memKey, done chan struct{}) func() {
	return func() {
		l.mu.Lock()
		held := l.held[k] == done
		if held {
			delete(l.held, k)
		}
		l.mu.Unlock()
		if held {
			close(done)
		}
	}
}

// busyError is the error every Locker returns for a session held by another run.
func busyError(sessionID string) error {
	return fmt.Errorf("%w: session %s is in use by another run", ErrConflict, sessionID)
}
