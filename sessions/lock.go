package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// EndingAppender is implemented by ReleasingAppenders that can also end
// the run a turn belongs to with the turn's final write, in one step (for
// Redis: the same script, when the run's log and index are in the same
// single-node Redis). The runtime uses it for the final write of a turn
// that ended well, when its caller hands it the run's end
// (agentcore.RunRequest.End).
//
// AppendEventsReleaseEnd does what AppendEventsRelease does and, when it
// stored the batch and released lease (its own lease on sess's session),
// writes end and calls end.Written. An end of a kind it does not
// recognise, a lease it did not release (lost, or not its own), a session
// that does not exist and a failed write leave end unwritten, to its
// holder, which writes it as it would have without this call.
type EndingAppender interface {
	AppendEventsReleaseEnd(ctx context.Context, sess *Session, evs []*Event, lease Lease, end RunEnd) error
}

// RunEnd is the end of the run a turn belongs to, as the run's driver
// hands it to the turn's final write (a runs.Ending): the runtime passes
// it through; an EndingAppender writes the kinds it knows.
type RunEnd interface {
	// Written is told that the run's end was written.
	Written()
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

// onceLease is a Lease whose Release calls r's release once; it never
// expires, and Renew succeeds until Release has been called. What release
// needs is in r, so that a lease is one allocation. The first Release
// wins a compare-and-swap and releases; a later one returns at once (its
// holder calls Release from one goroutine at a time: a sync.Once, whose
// later callers wait for the first, bought nothing but its code).
type onceLease[R interface{ release() }] struct {
	released atomic.Bool
	r        R
}

func (l *onceLease[R]) Renew(context.Context) error {
	if l.released.Load() {
		return errors.Join(ErrConflict, errors.New("lease released"))
	}
	return nil
}

func (l *onceLease[R]) Release() {
	if l.released.CompareAndSwap(false, true) {
		l.r.release()
	}
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

// Queue is implemented by Lockers whose waiters can line up for a
// session's lease, to take it in the order they came rather than whenever
// they happen to find it free: a turn sent while another runs on the
// session, to run after it.
//
// While a session's line is not empty its lease counts as busy for
// Acquire, also between two holders: a waiter in line is never overtaken
// by one that did not line up.
type Queue interface {
	// Join puts a new waiter at the end of the session's line and returns
	// its ticket. When max > 0 and max tickets already wait in the line, it
	// returns an error wrapping ErrQueueFull instead.
	Join(ctx context.Context, app, user, sessionID string, max int) (Ticket, error)
}

// Ticket is one waiter's place in a session's line (Queue.Join). Its
// holder owns it and alone calls its methods; it must Leave it unless
// Acquire succeeded.
type Ticket interface {
	// Seq orders the tickets of a session: one that joined later has a
	// larger Seq (it is positive).
	Seq() int64
	// Acquire waits until the ticket is first in line and the lease is
	// free, takes the lease (which must be released) and leaves the line.
	// When ctx ends first it returns an error wrapping ctx's, and the
	// ticket keeps its place: Acquire again, or Leave.
	Acquire(ctx context.Context) (Lease, error)
	// Leave takes the ticket out of the line. It is idempotent, and does
	// nothing once Acquire succeeded.
	Leave()
	// DropAhead takes every ticket that joined the line before this one
	// out of it, at once: their Acquire fails with ErrDropped, and this
	// ticket is the next to take the lease (a turn that interrupts those
	// ahead of it, which must not get the lease as the one holding it lets
	// go).
	DropAhead(ctx context.Context) error
}

var (
	// ErrQueueFull: a session's line (Queue) holds as many waiters as it
	// may.
	ErrQueueFull = errors.New("sessions: too many turns wait for the session")
	// ErrDropped: a ticket is no longer in its line though it did not
	// leave: a later ticket dropped it (DropAhead), or, in a line shared
	// by replicas, its waiter stopped polling for too long.
	ErrDropped = errors.New("sessions: the ticket was dropped from the line")
)

// MemoryLocker is the process-local Locker and Queue: enough for one
// gateway replica. Replicas sharing sessions need a shared lock, such as
// the Redis store's. The zero MemoryLocker is ready to use.
type MemoryLocker struct {
	mu    sync.Mutex
	locks map[memKey]*memLock // sessions held or with a line
	seq   int64               // the last ticket's Seq, of every session
	// spare is the entry last dropped, free with an empty line, for the
	// next session taken: an uncontended turn's lease then allocates no
	// entry. Entries are reached only through locks, under mu.
	spare *memLock
}

// memLock is one session's lease and line. It is dropped from its
// locker once free with an empty line.
type memLock struct {
	k    memKey // the session's, while the entry is in its locker's map
	held bool
	gen  uint64 // counts the holders: a lease releases only its own hold
	line []*memTicket
	// changed is closed when the lease is released or the line's head
	// leaves: the moments a waiter may get the lease. It is made when a
	// waiter first needs it, and a new one after each close (an
	// uncontended lease makes none).
	changed chan struct{}
}

// waitChan is the channel a waiter waits on for st to change; l.mu is
// held.
func (st *memLock) waitChan() chan struct{} {
	if st.changed == nil {
		st.changed = make(chan struct{})
	}
	return st.changed
}

var (
	_ Locker = (*MemoryLocker)(nil)
	_ Queue  = (*MemoryLocker)(nil)
)

// NewMemoryLocker returns a Locker with no session held.
func NewMemoryLocker() *MemoryLocker {
	return &MemoryLocker{}
}

// Acquire implements Locker. A waiter returns ctx's error (wrapped) when ctx
// ends first. The lease never expires: it is held until released.
func (l *MemoryLocker) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (Lease, error) {
	h, err := l.acquire(ctx, app, user, sessionID, wait)
	if err != nil {
		return nil, err
	}
	return &onceLease[heldLock]{r: h}, nil
}

// acquire does what Acquire does and returns the hold a lease releases, so
// that a store's lease can hold it with what else its release needs (one
// allocation).
func (l *MemoryLocker) acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (heldLock, error) {
	if err := ValidateKeys(app, user); err != nil {
		return heldLock{}, err
	}
	k := memKey{app, user, sessionID}
	var timer *time.Timer // made when the session is first found busy
	for {
		if err := ctx.Err(); err != nil {
			stopTimer(timer)
			return heldLock{}, fmt.Errorf("sessions: waiting for session %s: %w", sessionID, err)
		}
		l.mu.Lock()
		st := l.locks[k]
		if st == nil {
			st = l.addLocked(k)
		}
		if !st.held && len(st.line) == 0 {
			h := l.takeLocked(st)
			l.mu.Unlock()
			stopTimer(timer)
			return h, nil
		}
		if wait <= 0 {
			l.mu.Unlock()
			return heldLock{}, busyError(sessionID)
		}
		changed := st.waitChan()
		l.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-changed:
		case <-timer.C:
			return heldLock{}, busyError(sessionID)
		case <-ctx.Done():
			timer.Stop()
			return heldLock{}, fmt.Errorf("sessions: waiting for session %s: %w", sessionID, ctx.Err())
		}
	}
}

// stopTimer stops t, when there is one.
func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// lockOf returns k's lease and line, made when missing; l.mu is held.
func (l *MemoryLocker) lockOf(k memKey) *memLock {
	if st := l.locks[k]; st != nil {
		return st
	}
	return l.addLocked(k)
}

// addLocked makes k's entry, free with no line, where k has none; l.mu is
// held.
func (l *MemoryLocker) addLocked(k memKey) *memLock {
	if l.locks == nil {
		l.locks = map[memKey]*memLock{}
	}
	st := l.spare
	if st != nil {
		l.spare = nil // free, with no line and no channel; gen goes on
	} else {
		st = &memLock{}
	}
	st.k = k
	l.locks[k] = st
	return st
}

// takeLocked gives the free lease of st to a new holder, whose hold it
// returns; l.mu is held.
func (l *MemoryLocker) takeLocked(st *memLock) heldLock {
	st.held = true
	st.gen++
	return heldLock{l: l, st: st, gen: st.gen}
}

// heldLock is the lock st of l as one holder took it: generation gen.
// While st is held by generation gen it is its session's entry in l.locks
// (an entry leaves the map only when free, and a reused one counts on
// from its gen), so that a release needs no lookup.
type heldLock struct {
	l   *MemoryLocker
	st  *memLock
	gen uint64
}

// release frees the lock, unless another holder has it by now.
func (h heldLock) release() {
	h.l.mu.Lock()
	if st := h.st; st.held && st.gen == h.gen {
		st.held = false
		h.l.changedLocked(st)
	}
	h.l.mu.Unlock()
}

// changedLocked wakes st's waiters, and drops st from the locker when it
// is free with nobody in line; l.mu is held.
func (l *MemoryLocker) changedLocked(st *memLock) {
	if st.changed != nil {
		close(st.changed)
		st.changed = nil
	}
	if !st.held && len(st.line) == 0 {
		delete(l.locks, st.k)
		if l.spare == nil {
			st.line = nil
			l.spare = st
		}
	}
}

// Join implements Queue.
func (l *MemoryLocker) Join(ctx context.Context, app, user, sessionID string, max int) (Ticket, error) {
	if err := ValidateKeys(app, user); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := memKey{app, user, sessionID}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.lockOf(k)
	if max > 0 && len(st.line) >= max {
		return nil, fmt.Errorf("%w: %d turns wait for session %s", ErrQueueFull, len(st.line), sessionID)
	}
	l.seq++
	t := &memTicket{l: l, k: k, seq: l.seq}
	st.line = append(st.line, t)
	return t, nil
}

// memTicket is a place in a MemoryLocker's line.
type memTicket struct {
	l       *MemoryLocker
	k       memKey
	seq     int64
	out     bool // out of the line: by Leave, with the lease, or dropped
	dropped bool // by a later ticket's DropAhead
}

var _ Ticket = (*memTicket)(nil)

func (t *memTicket) Seq() int64 { return t.seq }

// Acquire implements Ticket.
func (t *memTicket) Acquire(ctx context.Context) (Lease, error) {
	l := t.l
	for {
		l.mu.Lock()
		if t.out {
			l.mu.Unlock()
			if t.dropped {
				return nil, fmt.Errorf("%w: session %s", ErrDropped, t.k.id)
			}
			return nil, fmt.Errorf("%w: the ticket left the line of session %s", ErrInvalid, t.k.id)
		}
		st := l.locks[t.k] // in line: the entry exists
		if !st.held && st.line[0] == t {
			st.line = st.line[1:]
			t.out = true
			lease := &onceLease[heldLock]{r: l.takeLocked(st)}
			l.mu.Unlock()
			return lease, nil
		}
		changed := st.waitChan()
		l.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("sessions: waiting in line for session %s: %w", t.k.id, ctx.Err())
		}
	}
}

// DropAhead implements Ticket.
func (t *memTicket) DropAhead(context.Context) error {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.out {
		return fmt.Errorf("%w: the ticket is out of the line of session %s", ErrInvalid, t.k.id)
	}
	st := l.locks[t.k]
	i := slices.Index(st.line, t)
	if i == 0 {
		return nil
	}
	for _, ahead := range st.line[:i] {
		ahead.out, ahead.dropped = true, true
	}
	st.line = slices.Delete(st.line, 0, i)
	l.changedLocked(st) // the dropped waiters learn it; this ticket may go
	return nil
}

// Leave implements Ticket.
func (t *memTicket) Leave() {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.out {
		return
	}
	t.out = true
	st := l.locks[t.k]
	i := slices.Index(st.line, t)
	st.line = slices.Delete(st.line, i, i+1)
	if i == 0 {
		l.changedLocked(st) // the next in line may go
	}
}

// busyError is the error every Locker returns for a session held by another run.
func busyError(sessionID string) error {
	return fmt.Errorf("%w: session %s is in use by another run", ErrConflict, sessionID)
}
