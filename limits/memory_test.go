package limits_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/limits/limitstest"
)

func TestMemoryConformance(t *testing.T) {
	limitstest.Run(t, func(*testing.T) limits.Limiter { return limits.NewMemory(nil) })
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// The windows begin at the first request (tokens) counted and end a
// minute (a day) later; Retry-After is what is left of them.
func TestMemoryWindows(t *testing.T) {
	c := &clock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	l := limits.NewMemory(c.Now)
	r := limits.Request{User: "u", Model: "m", Global: limits.Values{RequestsPerMinute: 1, TokensPerDay: 10}}
	retry := func() (string, time.Duration) {
		t.Helper()
		s, err := l.Admit(context.Background(), r)
		var ex *limits.ExceededError
		if errors.As(err, &ex) {
			return ex.Limit, ex.RetryAfter
		}
		if err != nil {
			t.Fatal(err)
		}
		s.End(0)
		return "", 0
	}
	s, err := l.Admit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	c.add(20 * time.Second)
	if name, after := retry(); name != limits.RequestsPerMinute || after != 40*time.Second {
		t.Fatalf("20s into the minute: %q after %v, want requests_per_minute after 40s", name, after)
	}
	s.End(10)
	c.add(40 * time.Second) // the minute is over; the day began at the End
	if name, after := retry(); name != limits.TokensPerDay || after != 24*time.Hour-40*time.Second {
		t.Fatalf("after the tokens: %q after %v, want tokens_per_day after 23h59m20s", name, after)
	}
	c.add(24*time.Hour - 40*time.Second)
	if name, _ := retry(); name != "" {
		t.Fatalf("a day after the tokens: refused by %s", name)
	}
}

// BenchmarkMemoryAdmit measures one turn's admission and end with every
// limit set, both scopes.
func BenchmarkMemoryAdmit(b *testing.B) {
	l := limits.NewMemory(nil)
	limitstest.Bench(b, l)
}
