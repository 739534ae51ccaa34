package limits

import (
	"context"
	"sync"
	"time"
)

// concurrentRetry is the Retry-After of a refusal by concurrent_turns: when
// a running turn ends is not known.
const concurrentRetry = time.Second

// sweepEvery is how many admissions pass between sweeps of the counters
// with nothing left to count.
const sweepEvery = 1024

// Memory is the Limiter of one process (memory sessions). Safe for
// concurrent use.
type Memory struct {
	now func() time.Time

	mu     sync.Mutex
	scopes map[scopeKey]*counts
	admits int
}

var _ Limiter = (*Memory)(nil)

type scopeKey struct {
	user, model string // model "" is the user's global scope
}

// counts are one scope's counters: the running turns and the two windows.
type counts struct {
	running        int64
	minute, day    time.Time // the windows' starts
	requests, toks int64
}

// NewMemory returns an in-process Limiter; now is its clock (nil:
// time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, scopes: map[scopeKey]*counts{}}
}

// Admit implements Limiter.
func (m *Memory) Admit(_ context.Context, r Request) (Slot, error) {
	if r.IsZero() {
		return NoSlot, nil
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	scopes := []struct {
		key      scopeKey
		v        Values
		perModel bool
	}{{scopeKey{r.User, ""}, r.Global, false}, {scopeKey{r.User, r.Model}, r.PerModel, true}}
	var held [2]*counts
	for i, s := range scopes {
		if s.v.IsZero() {
			continue
		}
		c := m.scopes[s.key]
		if c == nil {
			c = &counts{}
			m.scopes[s.key] = c
		}
		c.roll(now)
		if err := c.check(s.v, now); err != nil {
			err.PerModel = s.perModel
			return nil, err
		}
		held[i] = c
	}
	for i, c := range held {
		if c == nil {
			continue
		}
		v := scopes[i].v
		if v.ConcurrentTurns > 0 {
			c.running++
		}
		if v.RequestsPerMinute > 0 {
			if c.requests == 0 {
				c.minute = now
			}
			c.requests++
		}
	}
	if m.admits++; m.admits%sweepEvery == 0 {
		m.sweep(now)
	}
	slot := &memorySlot{m: m}
	for i, c := range held {
		if c != nil {
			slot.keys = append(slot.keys, scopes[i].key)
			slot.values = append(slot.values, scopes[i].v)
		}
	}
	return slot, nil
}

// roll ends the windows that are over.
func (c *counts) roll(now time.Time) {
	if c.requests > 0 && !now.Before(c.minute.Add(MinuteWindow)) {
		c.requests = 0
	}
	if c.toks > 0 && !now.Before(c.day.Add(DayWindow)) {
		c.toks = 0
	}
}

// check reports the first of v that c's counts have reached.
func (c *counts) check(v Values, now time.Time) *ExceededError {
	switch {
	case v.ConcurrentTurns > 0 && c.running >= v.ConcurrentTurns:
		return &ExceededError{Limit: ConcurrentTurns, RetryAfter: concurrentRetry}
	case v.RequestsPerMinute > 0 && c.requests >= v.RequestsPerMinute:
		return &ExceededError{Limit: RequestsPerMinute, RetryAfter: c.minute.Add(MinuteWindow).Sub(now)}
	case v.TokensPerDay > 0 && c.toks >= v.TokensPerDay:
		return &ExceededError{Limit: TokensPerDay, RetryAfter: c.day.Add(DayWindow).Sub(now)}
	}
	return nil
}

// sweep forgets the scopes with nothing running and no window open.
func (m *Memory) sweep(now time.Time) {
	for k, c := range m.scopes {
		c.roll(now)
		if c.running == 0 && c.requests == 0 && c.toks == 0 {
			delete(m.scopes, k)
		}
	}
}

// memorySlot names its scopes rather than holding their counts: a sweep
// may replace a scope that has no turn running.
type memorySlot struct {
	m      *Memory
	keys   []scopeKey
	values []Values
	once   sync.Once
}

func (s *memorySlot) End(tokens int64) {
	s.once.Do(func() {
		now := s.m.now()
		s.m.mu.Lock()
		defer s.m.mu.Unlock()
		for i, k := range s.keys {
			c := s.m.scopes[k]
			if c == nil {
				c = &counts{}
				s.m.scopes[k] = c
			}
			v := s.values[i]
			if v.ConcurrentTurns > 0 {
				c.running--
			}
			if v.TokensPerDay > 0 && tokens > 0 {
				c.roll(now)
				if c.toks == 0 {
					c.day = now
				}
				c.toks += tokens
			}
		}
	})
}
