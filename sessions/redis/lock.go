package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentgate/agentgate/sessions"
)

// Poll intervals of a waiting Acquire: it retries the lease from
// minPoll, doubling up to maxPoll.
const (
	minPoll = 5 * time.Millisecond
	maxPoll = 100 * time.Millisecond
)

// releaseTimeout bounds the release of a lease after the run; a release that
// cannot reach Redis leaves the lease to expire after LockTTL.
const releaseTimeout = 2 * time.Second

// Acquire implements sessions.Locker with a lease shared by every replica:
// the key {app|user}:lock:<id> holds a random token with a LockTTL expiry
// (SET NX PX). While held, a timer extends it every LockTTL/3; Release
// stops it and deletes the key if the token still matches. A holder that
// dies stops renewing, so its lease ends within LockTTL.
func (s *Store) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (sessions.Lease, error) {
	if err := sessions.ValidateKeys(app, user); err != nil {
		return nil, err
	}
	key := s.lockKey(app, user, sessionID)
	token := uuid.NewString()
	deadline := time.Now().Add(wait)
	poll := minPoll
	for {
		ok, err := s.client.SetNX(ctx, key, token, s.lockTTL).Result()
		if err != nil {
			return nil, s.fail(ctx, "lock", err)
		}
		if ok {
			return s.hold(key, token), nil
		}
		if err := waitPoll(ctx, sessionID, deadline, &poll); err != nil {
			return nil, err
		}
	}
}

// waitPoll sleeps before the next attempt at a busy lease, or reports
// ErrConflict once the wait is over.
func waitPoll(ctx context.Context, sessionID string, deadline time.Time, poll *time.Duration) error {
	left := time.Until(deadline)
	if left <= 0 {
		return fmt.Errorf("%w: session %s is in use by another run", sessions.ErrConflict, sessionID)
	}
	t := time.NewTimer(min(*poll, left))
	select {
	case <-ctx.Done():
		t.Stop()
		return fmt.Errorf("sessions/redis: waiting for session %s: %w", sessionID, ctx.Err())
	case <-t.C:
	}
	*poll = min(2**poll, maxPoll)
	return nil
}

// AcquireGet implements sessions.LockingGetter: the lease and the session
// in one round trip, one script (see openScript) that takes the lease
// unless another token holds it and then reads the session; a busy
// session is not read. When the session does not exist the lease is still
// held and the error wraps ErrNotFound.
func (s *Store) AcquireGet(ctx context.Context, req sessions.GetRequest, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, nil, err
	}
	token := uuid.NewString()
	o, err := s.prepareOpen("lock and get", req, token, openRead, nil)
	if err != nil {
		return nil, nil, err
	}
	return s.acquireOpen(ctx, o, token, wait)
}

// AcquireGetOrCreate implements sessions.LockingGetter: AcquireGet's
// script, which creates the session once it holds the lease, when it does
// not exist, before it reads it. A call that finds the session busy
// creates nothing and an existing session is never overwritten; what it
// creates is what Create would (state, index entry, TTL). On Cluster a
// create whose state has app: keys writes them in a second round trip.
func (s *Store) AcquireGetOrCreate(ctx context.Context, req sessions.CreateRequest, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	token := uuid.NewString()
	o, err := s.prepareGetOrCreate(req, token)
	if err != nil {
		return nil, nil, err
	}
	return s.acquireOpen(ctx, o, token, wait)
}

// acquireOpen runs o, which takes the lease with token, until the lease
// is free or wait is over.
func (s *Store) acquireOpen(ctx context.Context, o *opening, token string, wait time.Duration) (*sessions.Session, sessions.Lease, error) {
	key := o.lockKey
	deadline := time.Now().Add(wait)
	poll := minPoll
	for {
		res, err := s.open(ctx, o)
		switch {
		case err != nil && res.ran && !res.busy:
			s.holdArg(key, token, o.tokenArg).Release() // the script took the lease
			return nil, nil, err
		case err != nil:
			return nil, nil, err // the lease, if a lost reply took it, expires
		case !res.busy:
			lease := s.holdArg(key, token, o.tokenArg)
			if res.sess == nil {
				return nil, lease, fmt.Errorf("%w: %s", sessions.ErrNotFound, o.get.SessionID)
			}
			return res.sess, lease, nil
		}
		if err := waitPoll(ctx, o.get.SessionID, deadline, &poll); err != nil {
			return nil, nil, err
		}
	}
}

// heldLease is a lease this process holds, renewed until released; the
// turn's final write may release it in the same round trip (see
// AppendEventsRelease). The renewal runs from a timer, not a goroutine of
// its own: a lease is held as long as its stream is open, and a parked
// goroutine's stack would cost every open stream on Redis a few KiB more.
// Its state is this one object for the same reason (variables captured by
// closures are each allocated on their own).
type heldLease struct {
	s          *Store
	key, token string
	// tokenArg is token as a script argument (boxed once).
	tokenArg any
	released atomic.Bool // released with a write
	renewal
	once sync.Once
}

// renewal renews something held (a lease) from a timer until stopped.
type renewal struct {
	mu       sync.Mutex // guards stopped and timer's resets
	stopped  bool
	timer    *time.Timer // nil: nothing to renew
	renewing sync.WaitGroup
}

// tick runs one renewal, extend, on the timer's goroutine unless stopped,
// and sets the timer for the next one unless extend reports that what it
// renews is lost. The next one is due every after this one began: a slow
// renewal does not put it off, and one that failed when its time (every)
// ran out is retried at once, while what it renews (for 3×every) still
// has a third of its time left.
func (r *renewal) tick(every time.Duration, extend func(context.Context) bool) {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.renewing.Add(1)
	r.mu.Unlock()
	defer r.renewing.Done()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), every)
	again := extend(ctx)
	cancel()
	if !again {
		return
	}
	r.mu.Lock()
	if !r.stopped {
		r.timer.Reset(every - time.Since(began))
	}
	r.mu.Unlock()
}

// stop ends the renewals, a renewal under way first; it reports whether
// this call stopped them (false: an earlier one did).
func (r *renewal) stop() bool {
	r.mu.Lock()
	first := !r.stopped
	r.stopped = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.renewing.Wait()
	return first
}

var _ sessions.Lease = (*heldLease)(nil)

// hold renews the lease until it is released.
func (s *Store) hold(key, token string) *heldLease {
	return s.holdArg(key, token, token)
}

// holdArg is hold, with the token already boxed (tokenArg).
func (s *Store) holdArg(key, token string, tokenArg any) *heldLease {
	l := &heldLease{s: s, key: key, token: token, tokenArg: tokenArg}
	l.mu.Lock()
	l.timer = time.AfterFunc(l.every(), l.renew)
	l.mu.Unlock()
	return l
}

// every is how often the lease is renewed.
func (l *heldLease) every() time.Duration { return l.s.lockTTL / 3 }

// renew extends the lease, on the timer's goroutine, and sets the timer
// for the next renewal.
func (l *heldLease) renew() {
	l.tick(l.every(), func(ctx context.Context) bool {
		return !errors.Is(l.extend(ctx), sessions.ErrConflict) // else expired, maybe someone else's now
	})
}

// extend runs the renewal script: an error wrapping ErrConflict when the
// token no longer holds the lease.
func (l *heldLease) extend(ctx context.Context) error {
	n, err := renewScript.Run(ctx, l.s.client, []string{l.key}, l.token, l.s.lockTTL.Milliseconds()).Int64()
	if err != nil {
		return l.s.fail(ctx, "renew", err)
	}
	if n == 0 {
		return fmt.Errorf("%w: the lease %s is no longer held", sessions.ErrConflict, l.key)
	}
	return nil
}

// Renew implements sessions.Lease: it extends the lease by LockTTL now
// (the timer's renewals go on).
func (l *heldLease) Renew(ctx context.Context) error {
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if stopped || l.released.Load() {
		return fmt.Errorf("%w: the lease %s was released", sessions.ErrConflict, l.key)
	}
	return l.extend(ctx)
}

// Release implements sessions.Lease: it stops the renewals and, unless a
// write released the lease already, deletes it. Calls after the first do
// nothing.
func (l *heldLease) Release() {
	l.once.Do(func() {
		l.stop()
		if l.released.Load() {
			return // released with the turn's write
		}
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		_ = releaseScript.Run(ctx, l.s.client, []string{l.key}, l.token).Err()
	})
}
