package redis

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentgate/agentgate/sessions"
)

// lineSeqRetention is how long a session's line counter outlives its last
// ticket: a run that took the lease through the line keeps its Seq
// comparable with later tickets' for that long.
const lineSeqRetention = 24 * time.Hour

var _ sessions.Queue = (*Store)(nil)

// lineAlive is how long a session's line keeps a waiter after its last
// poll (a waiter polls at least every waitPoll, at most a tenth of it): a
// waiter whose replica died leaves the line within it.
func (s *Store) lineAlive() time.Duration { return max(s.lockTTL/3, 10*maxPoll) }

// lineKeys are the keys of a session's lease and line (see lineLib).
type lineKeys struct {
	lock, line, waiting string
	seq                 string // STRING the counter of the line's Seq
}

func (s *Store) lineKeys(app, user, id string) lineKeys {
	base := s.userBase(app, user)
	return lineKeys{lock: base + "lock:" + id, line: base + "line:" + id, waiting: base + "waiting:" + id, seq: base + "lineseq:" + id}
}

// Join implements sessions.Queue with a line shared by every replica: the
// tickets of a session are numbered by one counter in Redis and wait in a
// sorted set in that order (see lineLib). A waiter is woken by a message
// when the line may let it in (see lineBell) and polls its ticket all the
// same; one that stops polling for lineAlive leaves the line.
func (s *Store) Join(ctx context.Context, app, user, sessionID string, max int) (sessions.Ticket, error) {
	if err := sessions.ValidateKeys(app, user); err != nil {
		return nil, err
	}
	k := s.lineKeys(app, user, sessionID)
	token := uuid.NewString()
	seq, err := joinScript.Run(ctx, s.client, []string{k.lock, k.line, k.waiting, k.seq}, token, max,
		s.lineAlive().Milliseconds(), lineSeqRetention.Milliseconds()).Int64()
	if err != nil {
		return nil, s.fail(ctx, "join line", err)
	}
	if seq < 0 {
		return nil, fmt.Errorf("%w: %d turns wait for session %s", sessions.ErrQueueFull, max, sessionID)
	}
	return &ticket{s: s, k: k, id: sessionID, token: token, seq: seq}, nil
}

// ticket is a place in a session's line in Redis.
type ticket struct {
	s     *Store
	k     lineKeys
	id    string
	token string
	seq   int64
	// out: the ticket left the line, with the lease (Acquire) or by Leave.
	out bool
}

var _ sessions.Ticket = (*ticket)(nil)

func (t *ticket) Seq() int64 { return t.seq }

// Acquire implements sessions.Ticket. A ticket that must wait polls from
// minPoll doubling up to maxPoll until the Store's subscription to its
// line's channel is confirmed (see lineBell), then waits for a message on
// it, polling every bellPoll all the same.
func (t *ticket) Acquire(ctx context.Context) (sessions.Lease, error) {
	if t.out {
		return nil, fmt.Errorf("%w: the ticket left the line of session %s", sessions.ErrInvalid, t.id)
	}
	keys := []string{t.k.lock, t.k.line, t.k.waiting}
	poll := minPoll
	var sub *bellSub // subscribed once the first poll must wait
	defer func() { t.s.bell.leave(t.k.line, sub) }()
	var ready bool
	var rung <-chan struct{}
	for {
		if sub != nil {
			// Before the poll: a message that comes after it wakes the
			// wait below.
			ready, rung = t.s.bell.state(sub)
		}
		n, err := takeScript.Run(ctx, t.s.client, keys, t.token, t.s.lockTTL.Milliseconds(), t.s.lineAlive().Milliseconds()).Int64()
		switch {
		case err != nil:
			return nil, t.s.fail(ctx, "line", err)
		case n == 1:
			t.out = true
			return t.s.hold(t.k.lock, t.token), nil
		case n < 0:
			t.out = true
			return nil, fmt.Errorf("%w: session %s", sessions.ErrDropped, t.id)
		}
		if sub == nil {
			sub = t.s.bell.join(t.k.line)
		}
		var confirmed <-chan struct{} // a subscription confirmed: poll again at once
		wait := poll
		switch {
		case ready:
			wait = t.s.waitPoll()
		case sub != nil:
			confirmed = sub.ready
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("sessions/redis: waiting in line for session %s: %w", t.id, ctx.Err())
		case <-timer.C:
		case <-rung:
			timer.Stop()
		case <-confirmed:
			timer.Stop()
		}
		poll = min(2*poll, maxPoll)
	}
}

// waitPoll is how often a waiter the bell can wake polls: bellPoll, at
// most a tenth of lineAlive (a waiter must poll within it; a tenth leaves
// a stalled replica the margin maxPoll left it before).
func (s *Store) waitPoll() time.Duration {
	return min(cmp.Or(s.bellPoll, defaultBellPoll), s.lineAlive()/10)
}

// DropAhead implements sessions.Ticket.
func (t *ticket) DropAhead(ctx context.Context) error {
	if t.out {
		return fmt.Errorf("%w: the ticket is out of the line of session %s", sessions.ErrInvalid, t.id)
	}
	n, err := dropAheadScript.Run(ctx, t.s.client, []string{t.k.line, t.k.waiting}, t.token).Int64()
	switch {
	case err != nil:
		return t.s.fail(ctx, "line", err)
	case n < 0:
		return fmt.Errorf("%w: session %s", sessions.ErrDropped, t.id)
	}
	return nil
}

// Leave implements sessions.Ticket. A leave that cannot reach Redis
// leaves the ticket to drop out after lineAlive.
func (t *ticket) Leave() {
	if t.out {
		return
	}
	t.out = true // nothing more to do, whatever the outcome
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = leaveScript.Run(ctx, t.s.client, []string{t.k.lock, t.k.line, t.k.waiting}, t.token).Err()
}
