package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/google/uuid"

	"github.com/agentgate/agentgate/limits"
)

// Limiter is the limits.Limiter every replica shares. Per user and scope
// (the user's global scope, and each model with limits of its own) it keeps
// three keys under the hash tag {limits|user}, so one script sees all of a
// user's counts (also on Cluster):
//
//   - turns: a sorted set of the running turns' ids scored by their lease's
//     deadline in the server's clock (ms). An admitted turn's holder renews
//     the deadline every LockTTL/3; a replica that dies stops renewing, and
//     its turns stop counting LockTTL after its last renewal (each
//     admission drops the members past their deadline first);
//   - rpm: INCR'd per admitted turn, expiring a minute after the first;
//   - tokens: INCRBY'd by a turn's tokens when it ends, expiring a day after
//     the first.
//
// Checks and counts happen in one script, so two replicas never both take
// the last slot.
type Limiter struct{ s *Store }

var _ limits.Limiter = (*Limiter)(nil)

// Limiter returns the store's limits.Limiter; its turn leases last the
// store's LockTTL.
func (s *Store) Limiter() *Limiter { return &Limiter{s: s} }

// The scripts take six keys: turns, rpm, tokens of the global scope, then
// of the model's; ARGV is the turn's id, the lease in ms, then the three
// limits of each scope (0: none).
var admitScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, lease = ARGV[1], tonumber(ARGV[2])
for s = 0, 1 do
  local turns, rpm, tokens = KEYS[3*s+1], KEYS[3*s+2], KEYS[3*s+3]
  local c, r, k = tonumber(ARGV[3*s+3]), tonumber(ARGV[3*s+4]), tonumber(ARGV[3*s+5])
  if c > 0 then
    redis.call('ZREMRANGEBYSCORE', turns, '-inf', now)
    if redis.call('ZCARD', turns) >= c then return {s, 'concurrent_turns', 1000} end
  end
  if r > 0 and tonumber(redis.call('GET', rpm) or '0') >= r then
    return {s, 'requests_per_minute', redis.call('PTTL', rpm)}
  end
  if k > 0 and tonumber(redis.call('GET', tokens) or '0') >= k then
    return {s, 'tokens_per_day', redis.call('PTTL', tokens)}
  end
end
for s = 0, 1 do
  local turns, rpm = KEYS[3*s+1], KEYS[3*s+2]
  if tonumber(ARGV[3*s+3]) > 0 then
    redis.call('ZADD', turns, now + lease, id)
    redis.call('PEXPIRE', turns, lease)
  end
  if tonumber(ARGV[3*s+4]) > 0 and redis.call('INCR', rpm) == 1 then
    redis.call('PEXPIRE', rpm, ARGV[#ARGV])
  end
end
return 0
`)

// renewTurnScript moves the turn's deadline on in each scope that still
// counts it.
var renewTurnScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
for s = 0, 1 do
  local turns = KEYS[3*s+1]
  if tonumber(ARGV[3*s+3]) > 0 and redis.call('ZADD', turns, 'XX', 'CH', now + lease, ARGV[1]) == 1 then
    redis.call('PEXPIRE', turns, lease)
  end
end
return 0
`)

// endTurnScript drops the turn and adds its tokens (ARGV[#ARGV]) where
// they are limited; a day's count expires a day after its first tokens.
var endTurnScript = goredis.NewScript(`
local n = tonumber(ARGV[#ARGV])
for s = 0, 1 do
  if tonumber(ARGV[3*s+3]) > 0 then redis.call('ZREM', KEYS[3*s+1], ARGV[1]) end
  if tonumber(ARGV[3*s+5]) > 0 and n > 0 then
    local tokens = KEYS[3*s+3]
    redis.call('INCRBY', tokens, n)
    if redis.call('PTTL', tokens) < 0 then redis.call('PEXPIRE', tokens, ARGV[#ARGV - 1]) end
  end
end
return 0
`)

// Admit implements limits.Limiter.
func (l *Limiter) Admit(ctx context.Context, r limits.Request) (limits.Slot, error) {
	if r.IsZero() {
		return limits.NoSlot, nil
	}
	base := l.s.prefix + "limits:{" + escaper.Replace(r.User) + "}:"
	model := "model:" + escaper.Replace(r.Model) + ":"
	keys := []string{base + "turns", base + "rpm", base + "tokens", base + model + "turns", base + model + "rpm", base + model + "tokens"}
	argv := []any{uuid.NewString(), l.s.lockTTL.Milliseconds(),
		r.Global.ConcurrentTurns, r.Global.RequestsPerMinute, r.Global.TokensPerDay,
		r.PerModel.ConcurrentTurns, r.PerModel.RequestsPerMinute, r.PerModel.TokensPerDay}
	res, err := admitScript.Run(ctx, l.s.client, keys, append(argv, limits.MinuteWindow.Milliseconds())...).Result()
	if err != nil {
		return nil, l.s.fail(ctx, "limits", err)
	}
	if refused, ok := res.([]any); ok && len(refused) == 3 {
		scope, _ := refused[0].(int64)
		name, _ := refused[1].(string)
		ms, _ := refused[2].(int64)
		return nil, &limits.ExceededError{Limit: name, PerModel: scope == 1, RetryAfter: max(time.Duration(ms)*time.Millisecond, time.Second)}
	}
	if n, ok := res.(int64); !ok || n != 0 {
		return nil, fmt.Errorf("sessions/redis: limits: unexpected reply %v", res)
	}
	slot := &turnSlot{s: l.s, keys: keys, argv: argv}
	if r.Global.ConcurrentTurns > 0 || r.PerModel.ConcurrentTurns > 0 {
		slot.mu.Lock() // the timer's first renewal reads it
		slot.timer = time.AfterFunc(slot.every(), slot.renew)
		slot.mu.Unlock()
	}
	return slot, nil
}

// turnSlot is an admitted turn: it renews the turn's lease until End.
type turnSlot struct {
	s    *Store
	keys []string
	argv []any
	renewal
}

func (t *turnSlot) every() time.Duration { return t.s.lockTTL / 3 }

// renew extends the turn's lease, on the timer's goroutine. A failed
// renewal is retried at the next tick; the lease lasts LockTTL meanwhile.
func (t *turnSlot) renew() {
	t.tick(t.every(), func(ctx context.Context) bool {
		_ = renewTurnScript.Run(ctx, t.s.client, t.keys, t.argv...).Err()
		return true
	})
}

// End implements limits.Slot: it stops the renewals, frees the turn's
// place and counts its tokens. A failure is left to the lease's expiry
// (the place) and lost (the tokens). Calls after the first do nothing.
func (t *turnSlot) End(tokens int64) {
	if !t.stop() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = endTurnScript.Run(ctx, t.s.client, t.keys, append(t.argv, limits.DayWindow.Milliseconds(), tokens)...).Err()
}
