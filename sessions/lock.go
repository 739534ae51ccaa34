package sessions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Locker serialises runs on one session with run leases.
type Locker interface {
	// Acquire takes the run lease on a session. If it is busy it waits up
	// to wait (0: not at all) and then returns an error wrapping
	// ErrConflict. The lease must be released.
	Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (Lease, error)
}

// Lease is a run lease on one session, held from its Locker's Acquire
// until Release. The store keeps a held lease alive on its own (the Redis
// store renews it from a timer); a lease that can expire is lost only when
// its holder stops renewing it. The holder owns the lease and alone calls
// its methods; a lease is safe for concurrent use.
//
// A wrapper of a Lease (one that counts its releases, say) implements
// Unwrap() Lease, so that a store can recognise its own lease under it
// (see ReleasingAppender).
type Lease interface {
	// Renew extends the lease now, on top of the store's own renewals. It
	// returns an error wrapping ErrConflict when the lease is no longer
	// held (released, or expired and perhaps taken by another run).
	Renew(ctx context.Context) error
	// Release gives the lease up. It is idempotent, and costs nothing
	// when the lease was released with a write (ReleasingAppender).
	Release()
}

// ReleasingAppender is implemented by BatchAppenders that can end a run
// lease with a write, in one step (for Redis: in the same round trip, a
// turn's final write). The runtime uses it for a turn's last write when
// the caller passed the turn's lease.
//
// AppendEventsRelease does what AppendEvents does and, once the batch is
// stored, releases lease: its own lease (possibly under wrappers, see
// Lease) on sess's session. A lease it does not recognise, a batch with
// nothing to store and a failed append leave the lease held, to its
// holder's Release, which must be called in every case.
type ReleasingAppender interface {
	AppendEventsRelease(ctx context.Context, sess *Session, evs []*Event, lease Lease) error
}

// UnwrapLease returns the innermost lease under l's wrappers.
func UnwrapLease(l Lease) Lease {
	for {
		u, ok := l.(interface{ Unwrap() Lease })
		if !ok {
			return l
		}
		l = u.Unwrap()
	}
}

// funcLease is a Lease whose Release calls release once; it never
// expires, and Renew succeeds until Release has been called.
func newFuncLease(release func()) Lease {
	return &funcLease{release: release}
}

type funcLease struct {
	once     sync.Once
	released atomic.Bool
	release  func()
}

func (l *funcLease) Renew(context.Context) error {
	if l.released.Load() {
		return errors.Join(ErrConflict, errors.New("lease released"))
	}
	return nil
}

func (l *funcLease) Release() {
	l.once.Do(func() {
		l.released.Store(true)
		l.release()
	})
}

// LockingGetter is implemented by stores that take a session's run lock
// and read the session in one round trip. When the session does not exist
// the lock is still held (lease is not nil) and the error wraps
// ErrNotFound.
//
// AcquireGetOrCreate does what AcquireGet does for the session req names
// and, when it does not exist, creates it in the same round trip, as
// GetOrCreate would: never over an existing session, and only once the
// lease is this call's (a call that finds the session busy creates
// nothing). req.SessionID must be set.
type LockingGetter interface {
	AcquireGet(ctx context.Context, req GetRequest, wait time.Duration) (sess *Session, lease Lease, err error)
	AcquireGetOrCreate(ctx context.Context, req CreateRequest, wait time.Duration) (sess *Session, lease Lease, err error)
}

// MemoryLocker is the process-local Locker: enough for one gateway replica.
// Replicas sharing sessions need a shared lock, such as the Redis store's.
// The zero MemoryLocker is ready to use.
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
// ends first. The lease never expires: it is held until released.
func (l *MemoryLocker) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (Lease, error) {
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
			if l.held == nil {
				l.held = map[memKey]chan struct{}{}
			}
			done := make(chan struct{})
			l.held[k] = done
			l.mu.Unlock()
			return newFuncLease(l.releaser(k, done)), nil
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
