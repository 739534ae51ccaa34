package redis

import (
	"context"
	"fmt"
	"sync"
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
// (SET NX PX). While held, a goroutine extends it every LockTTL/3; release
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
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("%w: session %s is in use by another run", sessions.ErrConflict, sessionID)
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("sessions/redis: waiting for session %s: %w", sessionID, ctx.Err())
		case <-t.C:
		}
		poll = min(2*poll, maxPoll)
	}
}

// hold renews the lease until the returned release is called.
func (s *Store) hold(key, token string) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	every := s.lockTTL / 3
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			n, err := renewScript.Run(ctx, s.client, []string{key}, token, s.lockTTL.Milliseconds()).Int64()
			cancel()
			if err == nil && n == 0 {
				return // the lease expired and may be someone else's now
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			defer cancel()
			_ = releaseScript.Run(ctx, s.client, []string{key}, token).Err()
		})
	}
}
