// Package limits bounds what one user may run: concurrent turns, requests
// per minute and tokens per day, each globally (all of the user's models)
// and per virtual model. It holds the configured values, the Limiter
// interface the gateway admits turns through, and the in-process Limiter;
// the Limiter shared by replicas lives with the Redis store
// (sessions/redis). It knows nothing of HTTP or Redis.
package limits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The limits' names: the configuration keys, the param of a refusal on
// /v1 and the limit label in /metrics.
const (
	ConcurrentTurns   = "concurrent_turns"
	RequestsPerMinute = "requests_per_minute"
	TokensPerDay      = "tokens_per_day"
)

// The windows of the counted limits: each begins at the first request (or
// the first tokens) counted in it.
const (
	MinuteWindow = time.Minute
	DayWindow    = 24 * time.Hour
)

// Limits is one set of limits as configured (limits: globally, or a
// virtual model's limits:). A nil field is no limit.
type Limits struct {
	// ConcurrentTurns bounds the turns a user runs at once.
	ConcurrentTurns *int64 `yaml:"concurrent_turns"`
	// RequestsPerMinute bounds the turns a user begins in a minute.
	RequestsPerMinute *int64 `yaml:"requests_per_minute"`
	// TokensPerDay bounds the tokens (usage summed over the tree) of the
	// turns a user ran in a day; a turn is admitted while the day's total
	// is under it, and runs to its end.
	TokensPerDay *int64 `yaml:"tokens_per_day"`
}

// Validate reports each value that is not a positive number, naming its
// key below prefix (e.g. "limits" or "models[2].limits").
func (l *Limits) Validate(prefix string) error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, f := range []struct {
		name string
		v    *int64
	}{{ConcurrentTurns, l.ConcurrentTurns}, {RequestsPerMinute, l.RequestsPerMinute}, {TokensPerDay, l.TokensPerDay}} {
		if f.v != nil && *f.v < 1 {
			errs = append(errs, fmt.Errorf("%s.%s: must be at least 1 (leave it out for no limit), got %d", prefix, f.name, *f.v))
		}
	}
	return errors.Join(errs...)
}

// Values is a set of limits resolved for counting: 0 is no limit.
type Values struct {
	ConcurrentTurns, RequestsPerMinute, TokensPerDay int64
}

// Values resolves l (nil: no limits).
func (l *Limits) Values() Values {
	var v Values
	if l == nil {
		return v
	}
	get := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return Values{get(l.ConcurrentTurns), get(l.RequestsPerMinute), get(l.TokensPerDay)}
}

// IsZero reports that v limits nothing.
func (v Values) IsZero() bool { return v == Values{} }

// Request asks to admit one turn of User on Model.
type Request struct {
	User, Model string
	// Global is counted per user over every model; PerModel per user and
	// Model. Both must admit the turn, so the stricter applies.
	Global, PerModel Values
}

// IsZero reports that r limits nothing (a Limiter admits it without
// counting).
func (r Request) IsZero() bool { return r.Global.IsZero() && r.PerModel.IsZero() }

// Slot is an admitted turn's place in its user's counts. The holder calls
// End exactly once, when the turn ended, with the tokens it used.
type Slot interface {
	End(tokens int64)
}

// Limiter admits turns. Admit counts the request and returns the turn's
// slot, or an *ExceededError when a limit refuses it (and counts nothing);
// other errors are the counter store's.
type Limiter interface {
	Admit(ctx context.Context, r Request) (Slot, error)
}

// ExceededError is a refused turn: which limit, whether the model's own
// (else the global one), and when to retry.
type ExceededError struct {
	Limit    string
	PerModel bool
	// RetryAfter is when the limit may admit the turn: the end of the
	// counted window, or a second for concurrent turns.
	RetryAfter time.Duration
}

func (e *ExceededError) Error() string {
	scope := "global"
	if e.PerModel {
		scope = "model"
	}
	return fmt.Sprintf("limits: %s limit %s reached", scope, e.Limit)
}

// NoSlot is the Slot of a turn that nothing counts.
var NoSlot Slot = noSlot{}

type noSlot struct{}

func (noSlot) End(int64) {}
