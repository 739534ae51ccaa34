package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
// (SET NX PX). While held, a timer extends it every LockTTL/3; release
// stops it and deletes the key if the token still matches. A holder that
// dies stops renewing, so its lease ends within LockTTL.
func (s *Store) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (func(), error) {
	if err := sessions.ValidateKeys(app, user); err != nil {
		return nil, err
	}
	key := s.keys(app, user, sessionID).lock
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
// in one round trip (SET NX PX GET pipelined ahead of the load; GET makes a
// retried pipeline recognise its own token). When the session does not
// exist the lease is still held and the error wraps ErrNotFound.
func (s *Store) AcquireGet(ctx context.Context, req sessions.GetRequest, wait time.Duration) (*sessions.Session, func(), error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, nil, err
	}
	return s.acquireLoad(ctx, req, nil, wait)
}

// AcquireGetOrCreate implements sessions.LockingGetter: AcquireGet's
// pipeline with the create script between the lease and the load. The
// script creates the session only while this call's token holds the lease
// and the session does not exist, so a call that finds the session busy
// creates nothing and an existing session is never overwritten; what it
// creates is what Create would (state, index entry, TTL). On Cluster a
// create whose state has app: keys writes them in a second round trip.
func (s *Store) AcquireGetOrCreate(ctx context.Context, req sessions.CreateRequest, wait time.Duration) (*sessions.Session, func(), error) {
	c, err := s.prepareGetOrCreate(req)
	if err != nil {
		return nil, nil, err
	}
	return s.acquireLoad(ctx, c.get, c, wait)
}

// acquireLoad takes the lease on req's session and loads it in one
// pipeline, creating it first when c is not nil.
func (s *Store) acquireLoad(ctx context.Context, req sessions.GetRequest, c *newSession, wait time.Duration) (*sessions.Session, func(), error) {
	key := s.keys(req.AppName, req.UserID, req.SessionID).lock
	token := uuid.NewString()
	deadline := time.Now().Add(wait)
	poll := minPoll
	for {
		var set *goredis.StatusCmd
		var res *goredis.Cmd
		sess, err := s.load(ctx, req, func(p goredis.Pipeliner, eval bool) {
			set = p.SetArgs(ctx, key, token, goredis.SetArgs{Mode: "NX", TTL: s.lockTTL, Get: true})
			if c != nil {
				res = c.queue(ctx, p, eval, token)
			}
		})
		if set == nil {
			return nil, nil, err // the pipeline never ran
		}
		old, setErr := set.Result()
		switch {
		case errors.Is(setErr, goredis.Nil) || (setErr == nil && old == token):
			release := s.hold(key, token)
			if err == nil && c != nil {
				err = s.finishCreate(ctx, c, res, sess)
			}
			if err != nil && !errors.Is(err, sessions.ErrNotFound) {
				release()
				return nil, nil, err
			}
			return sess, release, err
		case setErr != nil:
			if err == nil {
				err = s.fail(ctx, "lock", setErr)
			}
			return nil, nil, err
		}
		if err := waitPoll(ctx, req.SessionID, deadline, &poll); err != nil {
			return nil, nil, err
		}
	}
}

// heldLease is a lease this process holds, renewed until released; the
// turn's final write may release it in the same round trip (see
// AppendEvents). The renewal runs from a timer, not a goroutine of its own:
// a lease is held as long as its stream is open, and a parked goroutine's
// stack would cost every open stream on Redis a few KiB more. Its state is
// this one object for the same reason (variables captured by closures are
// each allocated on their own).
type heldLease struct {
	s          *Store
	key, token string
	released   atomic.Bool

	mu       sync.Mutex // guards stopped and timer's resets
	stopped  bool
	timer    *time.Timer
	renewing sync.WaitGroup // a renewal under way
	once     sync.Once
}

// hold renews the lease until the returned release is called.
func (s *Store) hold(key, token string) func() {
	l := &heldLease{s: s, key: key, token: token}
	s.held.Store(key, l)
	l.mu.Lock()
	l.timer = time.AfterFunc(l.every(), l.renew)
	l.mu.Unlock()
	return l.release
}

// every is how often the lease is renewed.
func (l *heldLease) every() time.Duration { return l.s.lockTTL / 3 }

// renew extends the lease, on the timer's goroutine, and sets the timer
// for the next renewal.
func (l *heldLease) renew() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.renewing.Add(1)
	l.mu.Unlock()
	defer l.renewing.Done()
	ctx, cancel := context.WithTimeout(context.Background(), l.every())
	n, err := renewScript.Run(ctx, l.s.client, []string{l.key}, l.token, l.s.lockTTL.Milliseconds()).Int64()
	cancel()
	if err == nil && n == 0 {
		return // the lease expired and may be someone else's now
	}
	l.mu.Lock()
	if !l.stopped {
		l.timer.Reset(l.every())
	}
	l.mu.Unlock()
}

// release stops the renewals and, unless the turn's write released the
// lease already, deletes it. Calls after the first do nothing.
func (l *heldLease) release() {
	l.once.Do(func() {
		l.mu.Lock()
		l.stopped = true
		l.timer.Stop()
		l.mu.Unlock()
		l.renewing.Wait() // a renewal under way ends before the release
		l.s.held.CompareAndDelete(l.key, l)
		if l.released.Load() {
			return // released with the turn's write
		}
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		_ = releaseScript.Run(ctx, l.s.client, []string{l.key}, l.token).Err()
	})
}
