package model

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff between the attempts of a failed model call: FirstRetryDelay,
// doubling, at most MaxRetryDelay, each less up to a quarter of jitter. An
// upstream that asks for a wait (Retry-After) is waited for instead, unless
// it asks for more than MaxRetryDelay: then the call is not retried and its
// error carries the delay.
const (
	FirstRetryDelay = 500 * time.Millisecond
	MaxRetryDelay   = 10 * time.Second
)

// RetryDelay reports whether a call whose attempt (0-based) failed with
// err, before producing any output, may be tried again when retries
// attempts beyond the first are allowed, and after how long. Only a
// *Error that says a retry helps is retried, and never the provider's own
// timeout (an attempt that ran out of time would run out again; an
// upstream's 408 is retried).
func RetryDelay(err error, attempt, retries int) (time.Duration, bool) {
	me, ok := AsError(err)
	if !ok || !me.Retryable || (me.Code == "timeout" && me.Status == 0) || attempt >= retries {
		return 0, false
	}
	if me.RetryAfter > 0 {
		return me.RetryAfter, me.RetryAfter <= MaxRetryDelay
	}
	delay := min(FirstRetryDelay<<attempt, MaxRetryDelay)
	return delay - time.Duration(rand.Int64N(int64(delay/4)+1)), true
}

// Sleep waits d, or less if ctx ends first (then it returns ctx's error).
// Providers wait between retries with it; tests replace it.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
