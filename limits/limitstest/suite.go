// Package limitstest is the conformance suite every limits.Limiter passes:
// the in-process one and the one replicas share through Redis.
package limitstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/limits"
)

// Run runs the suite; newLimiter returns an empty Limiter (a fresh key
// space) for each subtest.
func Run(t *testing.T, newLimiter func(t *testing.T) limits.Limiter) {
	t.Run("NoLimitsCountNothing", func(t *testing.T) {
		l := newLimiter(t)
		for range 5 {
			admit(t, l, limits.Request{User: "u", Model: "m"}).End(1 << 40)
		}
	})
	t.Run("ConcurrentTurns", func(t *testing.T) {
		l := newLimiter(t)
		r := limits.Request{User: "u", Model: "m", Global: limits.Values{ConcurrentTurns: 2}}
		a, b := admit(t, l, r), admit(t, l, r)
		refused(t, l, r, limits.ConcurrentTurns, false, time.Second)
		other := r
		other.User = "v"
		admit(t, l, other).End(0) // users are counted apart
		a.End(0)
		a.End(0) // a second End frees nothing more
		c := admit(t, l, r)
		refused(t, l, r, limits.ConcurrentTurns, false, time.Second)
		b.End(0)
		c.End(0)
	})
	t.Run("RequestsPerMinute", func(t *testing.T) {
		l := newLimiter(t)
		r := limits.Request{User: "u", Model: "m", Global: limits.Values{RequestsPerMinute: 3}}
		for range 3 {
			admit(t, l, r).End(0) // an ended turn still counted
		}
		refused(t, l, r, limits.RequestsPerMinute, false, limits.MinuteWindow)
	})
	t.Run("TokensPerDay", func(t *testing.T) {
		l := newLimiter(t)
		r := limits.Request{User: "u", Model: "m", Global: limits.Values{TokensPerDay: 100}}
		a, b := admit(t, l, r), admit(t, l, r)
		a.End(60)
		c := admit(t, l, r) // 60 < 100
		b.End(60)           // a turn that began under the limit runs to its end
		refused(t, l, r, limits.TokensPerDay, false, limits.DayWindow)
		c.End(1)
	})
	t.Run("TheStricterScopeApplies", func(t *testing.T) {
		l := newLimiter(t)
		strict := limits.Request{User: "u", Model: "m", Global: limits.Values{ConcurrentTurns: 3}, PerModel: limits.Values{ConcurrentTurns: 1}}
		other := limits.Request{User: "u", Model: "n", Global: limits.Values{ConcurrentTurns: 3}}
		a := admit(t, l, strict)
		refused(t, l, strict, limits.ConcurrentTurns, true, time.Second)
		b, c := admit(t, l, other), admit(t, l, other) // the model's limit is its own
		refused(t, l, other, limits.ConcurrentTurns, false, time.Second)
		a.End(0)
		d := admit(t, l, other)
		refused(t, l, strict, limits.ConcurrentTurns, false, time.Second) // now the global one binds
		b.End(0)
		admit(t, l, strict).End(0)
		c.End(0)
		d.End(0)
	})
	t.Run("RacingAdmissionsStayWithinTheLimit", func(t *testing.T) {
		l := newLimiter(t)
		r := limits.Request{User: "u", Model: "m", Global: limits.Values{ConcurrentTurns: 3, RequestsPerMinute: 5}}
		var mu sync.Mutex
		var slots []limits.Slot
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if s, err := l.Admit(context.Background(), r); err == nil {
					mu.Lock()
					slots = append(slots, s)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(slots) != 3 {
			t.Fatalf("%d of 16 racing turns admitted, want 3", len(slots))
		}
		for _, s := range slots {
			s.End(0)
		}
		admit(t, l, r).End(0)
		admit(t, l, r).End(0)
		refused(t, l, r, limits.RequestsPerMinute, false, limits.MinuteWindow)
	})
	t.Run("ARefusalCountsNothing", func(t *testing.T) {
		l := newLimiter(t)
		r := limits.Request{User: "u", Model: "m", Global: limits.Values{RequestsPerMinute: 2}, PerModel: limits.Values{ConcurrentTurns: 1}}
		a := admit(t, l, r)
		refused(t, l, r, limits.ConcurrentTurns, true, time.Second)
		a.End(0)
		admit(t, l, r).End(0) // the refusal took no request of the minute
		refused(t, l, r, limits.RequestsPerMinute, false, limits.MinuteWindow)
	})
}

func admit(t *testing.T, l limits.Limiter, r limits.Request) limits.Slot {
	t.Helper()
	s, err := l.Admit(context.Background(), r)
	if err != nil {
		t.Fatalf("Admit(%+v): %v", r, err)
	}
	return s
}

// refused checks that r is refused by limit (of the model's scope or the
// global one), with a Retry-After in (0, most].
func refused(t *testing.T, l limits.Limiter, r limits.Request, limit string, perModel bool, most time.Duration) {
	t.Helper()
	s, err := l.Admit(context.Background(), r)
	var ex *limits.ExceededError
	if !errors.As(err, &ex) {
		if s != nil {
			s.End(0)
		}
		t.Fatalf("Admit(%+v) = %v, want a refusal by %s", r, err, limit)
	}
	if ex.Limit != limit || ex.PerModel != perModel || ex.RetryAfter <= 0 || ex.RetryAfter > most {
		t.Fatalf("refused with %+v, want limit %s, per model %v, retry after in (0, %v]", ex, limit, perModel, most)
	}
}

// Bench measures l admitting and ending one turn with every limit set, in
// both scopes (none of them reached).
func Bench(b *testing.B, l limits.Limiter) {
	v := limits.Values{ConcurrentTurns: 1 << 30, RequestsPerMinute: 1 << 40, TokensPerDay: 1 << 40}
	r := limits.Request{User: "u", Model: "m", Global: v, PerModel: v}
	b.ReportAllocs()
	for b.Loop() {
		s, err := l.Admit(context.Background(), r)
		if err != nil {
			b.Fatal(err)
		}
		s.End(15)
	}
}
