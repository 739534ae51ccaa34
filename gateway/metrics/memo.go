package metrics

import (
	"maps"
	"sync"
	"sync/atomic"
)

// memo keeps the children of metric vectors that one kind of observation
// needs, by their label values: a vector's WithLabelValues hashes its
// values and takes the vector's lock at every call (several per turn, on
// every core), a memo's read takes one atomic load and a map lookup. The
// map is never modified once published: a miss makes a copy with the new
// entry, which only happens the first time a label set is seen. Label
// values come from closed sets (see Metrics), so a memo stays small.
type memo[K comparable, V any] struct {
	mu       sync.Mutex // serialises the misses
	m        atomic.Pointer[map[K]V]
	newValue func(K) V
}

func newMemo[K comparable, V any](newValue func(K) V) *memo[K, V] {
	return &memo[K, V]{newValue: newValue}
}

// get returns k's value, made the first time k is asked for.
func (c *memo[K, V]) get(k K) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	next := map[K]V{}
	if old != nil {
		next = maps.Clone(*old)
	}
	v := c.newValue(k)
	next[k] = v
	c.m.Store(&next)
	return v
}

// handle returns the value m holds for k, kept in p once made: what one
// kind of observation of a configured agent or store operation needs,
// read with one atomic load, without hashing k. Like the memo's, the
// value is made on first use, so that a series appears only once
// observed.
func handle[K comparable, V any](p *atomic.Pointer[V], m *memo[K, V], k K) V {
	if v := p.Load(); v != nil {
		return *v
	}
	v := m.get(k)
	p.Store(&v)
	return v
}
