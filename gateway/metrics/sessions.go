package metrics

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// Sessions wraps a session store so that every operation is counted and
// timed. The wrapper is a sessions.Pinger: it forwards Ping when svc is
// one and reports ready otherwise. It is a sessions.GetOrCreator, counted
// as one "get_or_create" operation (one round trip on stores that are one
// themselves; on others sessions.GetOrCreate's read and create). When svc is a sessions.BatchAppender so
// is the wrapper (and a sessions.ReleasingAppender, which releases only
// when svc is one; a sessions.EndingAppender when svc is one), and a batch counts as one "append_event" operation
// (one store round trip, like a single append). When svc is a
// sessions.StatsReporter (the in-memory store), its sessions held and
// evicted are reported too.
func (m *Metrics) Sessions(svc sessions.Service) sessions.Service {
	m.bounded.add(svc, true)
	s := &instrumentedStore{svc: svc, m: m}
	if b, ok := svc.(sessions.BatchAppender); ok {
		bs := &instrumentedBatchStore{instrumentedStore: s, b: b}
		bs.r, _ = b.(sessions.ReleasingAppender)
		if e, ok := svc.(sessions.EndingAppender); ok {
			return &instrumentedEndingStore{instrumentedBatchStore: bs, e: e}
		}
		return bs
	}
	return s
}

// Locker wraps a run lock so that every acquisition is counted and timed
// as the "lock" operation, and every release as "unlock".
func (m *Metrics) Locker(l sessions.Locker) sessions.Locker {
	return &instrumentedLocker{l: l, m: m}
}

type instrumentedStore struct {
	svc sessions.Service
	m   *Metrics
}

var (
	_ sessions.Service      = (*instrumentedStore)(nil)
	_ sessions.Pinger       = (*instrumentedStore)(nil)
	_ sessions.GetOrCreator = (*instrumentedStore)(nil)
	_ sessions.Locker       = (*instrumentedLocker)(nil)
)

func (s *instrumentedStore) Create(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	start := time.Now()
	sess, err := s.svc.Create(ctx, req)
	s.m.storeOp(opCreate, start, err)
	return sess, err
}

func (s *instrumentedStore) Get(ctx context.Context, req sessions.GetRequest) (*sessions.Session, error) {
	start := time.Now()
	sess, err := s.svc.Get(ctx, req)
	s.m.storeOp(opGet, start, err)
	return sess, err
}

func (s *instrumentedStore) GetOrCreate(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	start := time.Now()
	sess, err := sessions.GetOrCreate(ctx, s.svc, req)
	s.m.storeOp(opGetOrCreate, start, err)
	return sess, err
}

func (s *instrumentedStore) List(ctx context.Context, req sessions.ListRequest) (*sessions.ListResponse, error) {
	start := time.Now()
	resp, err := s.svc.List(ctx, req)
	s.m.storeOp(opList, start, err)
	return resp, err
}

func (s *instrumentedStore) Delete(ctx context.Context, req sessions.DeleteRequest) error {
	start := time.Now()
	err := s.svc.Delete(ctx, req)
	s.m.storeOp(opDelete, start, err)
	return err
}

func (s *instrumentedStore) AppendEvent(ctx context.Context, sess *sessions.Session, ev *sessions.Event) error {
	if ev != nil && ev.Partial {
		return s.svc.AppendEvent(ctx, sess, ev) // never stored: not a store operation
	}
	start := time.Now()
	err := s.svc.AppendEvent(ctx, sess, ev)
	s.m.storeOp(opAppendEvent, start, err)
	return err
}

type instrumentedBatchStore struct {
	*instrumentedStore
	b sessions.BatchAppender
	r sessions.ReleasingAppender // b, when it is one: found once, not at each call
}

var (
	_ sessions.BatchAppender     = (*instrumentedBatchStore)(nil)
	_ sessions.ReleasingAppender = (*instrumentedBatchStore)(nil)
)

func (s *instrumentedBatchStore) AppendEvents(ctx context.Context, sess *sessions.Session, evs []*sessions.Event) error {
	return s.appendEvents(evs, func() error { return s.b.AppendEvents(ctx, sess, evs) })
}

// AppendEventsRelease implements sessions.ReleasingAppender: the wrapped
// store's, when it is one, else AppendEvents (the lease is left to its
// holder). Counted as one "append_event" operation.
func (s *instrumentedBatchStore) AppendEventsRelease(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease) error {
	if s.r == nil {
		return s.AppendEvents(ctx, sess, evs)
	}
	return s.appendEvents(evs, func() error { return s.r.AppendEventsRelease(ctx, sess, evs, lease) })
}

// instrumentedEndingStore is the wrapper of a store that is a
// sessions.EndingAppender, and one itself.
type instrumentedEndingStore struct {
	*instrumentedBatchStore
	e sessions.EndingAppender
}

var _ sessions.EndingAppender = (*instrumentedEndingStore)(nil)

// AppendEventsReleaseEnd implements sessions.EndingAppender: the wrapped
// store's, counted as one "append_event" operation (the run's end it may
// write with it is not a session operation).
func (s *instrumentedEndingStore) AppendEventsReleaseEnd(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease, end sessions.RunEnd) error {
	return s.appendEvents(evs, func() error { return s.e.AppendEventsReleaseEnd(ctx, sess, evs, lease, end) })
}

// appendEvents counts write, a batch append of evs, as one "append_event"
// operation, unless it has nothing to store.
func (s *instrumentedBatchStore) appendEvents(evs []*sessions.Event, write func() error) error {
	if !slices.ContainsFunc(evs, func(ev *sessions.Event) bool { return ev == nil || !ev.Partial }) {
		return write() // nothing to store: not a store operation
	}
	start := time.Now()
	err := write()
	s.m.storeOp(opAppendEvent, start, err)
	return err
}

// Refs wraps a refs index so that every operation is counted and timed:
// "put_refs", "get_ref" and "delete_refs". When r is a
// sessions.StatsReporter, its evicted refs are reported too.
func (m *Metrics) Refs(r sessions.Refs) sessions.Refs {
	m.bounded.add(r, false)
	return &instrumentedRefs{r: r, m: m}
}

// boundedStores are the stores whose sessions (and, apart, whose refs)
// the metrics report, summed: every store wrapped with this Metrics.
type boundedStores struct {
	mu             sync.Mutex
	sessions, refs []sessions.StatsReporter
}

// add reports store's sessions (ofSessions) or refs, if it is a
// sessions.StatsReporter.
func (b *boundedStores) add(store any, ofSessions bool) {
	r, ok := store.(sessions.StatsReporter)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ofSessions {
		b.sessions = append(b.sessions, r)
	} else {
		b.refs = append(b.refs, r)
	}
}

// sum returns a reading of field summed over the stores added for their
// sessions (ofSessions) or their refs.
func (b *boundedStores) sum(field func(sessions.StoreStats) uint64, ofSessions bool) func() float64 {
	return func() float64 {
		b.mu.Lock()
		stores := b.refs
		if ofSessions {
			stores = b.sessions
		}
		stores = slices.Clip(stores)
		b.mu.Unlock()
		var n uint64
		for _, r := range stores {
			n += field(r.Stats())
		}
		return float64(n)
	}
}

type instrumentedRefs struct {
	r sessions.Refs
	m *Metrics
}

var _ sessions.Refs = (*instrumentedRefs)(nil)

func (r *instrumentedRefs) PutRefs(ctx context.Context, app, user string, refs map[string]sessions.Ref, ttl time.Duration) error {
	start := time.Now()
	err := r.r.PutRefs(ctx, app, user, refs, ttl)
	r.m.storeOp(opPutRefs, start, err)
	return err
}

func (r *instrumentedRefs) GetRef(ctx context.Context, app, user, key string) (sessions.Ref, error) {
	start := time.Now()
	ref, err := r.r.GetRef(ctx, app, user, key)
	r.m.storeOp(opGetRef, start, err)
	return ref, err
}

func (r *instrumentedRefs) DeleteRefs(ctx context.Context, app, user string, keys ...string) error {
	start := time.Now()
	err := r.r.DeleteRefs(ctx, app, user, keys...)
	r.m.storeOp(opDeleteRefs, start, err)
	return err
}

// Ping implements sessions.Pinger.
func (s *instrumentedStore) Ping(ctx context.Context) error {
	p, ok := s.svc.(sessions.Pinger)
	if !ok {
		return nil
	}
	start := time.Now()
	err := p.Ping(ctx)
	s.m.storeOp(opPing, start, err)
	return err
}

// Unwrap returns the wrapped store.
func (s *instrumentedStore) Unwrap() sessions.Service { return s.svc }

type instrumentedLocker struct {
	l sessions.Locker
	m *Metrics
}

func (l *instrumentedLocker) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (sessions.Lease, error) {
	start := time.Now()
	lease, err := l.l.Acquire(ctx, app, user, sessionID, wait)
	l.m.storeOp(opLock, start, err)
	if err != nil {
		return nil, err
	}
	return &instrumentedLease{Lease: lease, m: l.m}, nil
}

// instrumentedLease counts its first Release as "unlock" and each Renew as
// "renew". The first Release wins a compare-and-swap, as the memory
// store's own lease does: its holder calls it from one goroutine at a
// time.
type instrumentedLease struct {
	sessions.Lease
	m        *Metrics
	released atomic.Bool
}

func (l *instrumentedLease) Renew(ctx context.Context) error {
	start := time.Now()
	err := l.Lease.Renew(ctx)
	l.m.storeOp(opRenew, start, err)
	return err
}

func (l *instrumentedLease) Release() {
	if !l.released.CompareAndSwap(false, true) {
		return
	}
	start := time.Now()
	l.Lease.Release()
	l.m.storeOp(opUnlock, start, nil)
}

// Unwrap returns the wrapped lease, for the store to recognise its own
// (sessions.ReleasingAppender).
func (l *instrumentedLease) Unwrap() sessions.Lease { return l.Lease }

// storeOp is a session-store operation, as counted.
type storeOp int

// The operations counted, each with its label value in storeOpNames.
const (
	opCreate storeOp = iota
	opGet
	opGetOrCreate
	opList
	opDelete
	opAppendEvent
	opPutRefs
	opGetRef
	opDeleteRefs
	opPing
	opLock
	opRenew
	opUnlock
	numStoreOps
)

var storeOpNames = [numStoreOps]string{"create", "get", "get_or_create", "list", "delete", "append_event", "put_refs", "get_ref",
	"delete_refs", "ping", "lock", "renew", "unlock"}

func (m *Metrics) storeOp(op storeOp, start time.Time, err error) {
	var o opMetrics
	if err == nil {
		o = handle(&m.okOps[op], m.ops, opKey{storeOpNames[op], outcomeOK})
	} else {
		o = m.ops.get(opKey{storeOpNames[op], storeOutcome(err)})
	}
	o.count.Inc()
	o.duration.Observe(time.Since(start).Seconds())
}

func storeOutcome(err error) string {
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, sessions.ErrNotFound):
		return "not_found"
	case errors.Is(err, sessions.ErrExists):
		return "exists"
	case errors.Is(err, sessions.ErrConflict):
		return "conflict"
	case errors.Is(err, sessions.ErrInvalid):
		return "invalid"
	case errors.Is(err, sessions.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

// LockingGetter wraps a store's combined lock-and-read (and its
// lock-and-read-or-create): one "lock" operation (one round trip). The
// lease is released by the turn's write (or by release, which is then not
// counted).
func (m *Metrics) LockingGetter(lg sessions.LockingGetter) sessions.LockingGetter {
	return &instrumentedLockGetter{lg: lg, m: m}
}

type instrumentedLockGetter struct {
	lg sessions.LockingGetter
	m  *Metrics
}

func (l *instrumentedLockGetter) AcquireGet(ctx context.Context, req sessions.GetRequest, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	start := time.Now()
	sess, release, err := l.lg.AcquireGet(ctx, req, wait)
	outcome := err
	if errors.Is(err, sessions.ErrNotFound) {
		outcome = nil // the lease is held; a missing session is an answer
	}
	l.m.storeOp(opLock, start, outcome)
	return sess, release, err
}

func (l *instrumentedLockGetter) AcquireGetOrCreate(ctx context.Context, req sessions.CreateRequest, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	start := time.Now()
	sess, release, err := l.lg.AcquireGetOrCreate(ctx, req, wait)
	l.m.storeOp(opLock, start, err)
	return sess, release, err
}
