package redis

import (
	"testing"
	"time"
)

// BenchmarkLineHandoff: how long after a lease held on one replica is
// released the waiter first in line on another replica holds it (the
// wait a queued turn adds once the turn ahead ended), as handoff-ns/op.
// The lease is held 150 to 240 ms first (10 ms more each time, round
// again): long enough for a polling waiter to poll at its slowest, and not
// always just before one of its polls. Its ns/op is mostly that hold.
func BenchmarkLineHandoff(b *testing.B) {
	srv := startServer(b)
	cfg := Config{URL: srv.URL(""), KeyPrefix: "handoff:", LockTTL: 30 * time.Second}
	holder, other := newStore(b, cfg), newStore(b, cfg)
	ctx := b.Context()
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		lease, err := holder.Acquire(ctx, "app", "u", "s1", 0)
		if err != nil {
			b.Fatal(err)
		}
		ticket, err := other.Join(ctx, "app", "u", "s1", 0)
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			l, err := ticket.Acquire(ctx)
			at := time.Now()
			if err != nil {
				b.Error(err)
			} else {
				l.Release()
			}
			got <- at
		}()
		time.Sleep(150*time.Millisecond + time.Duration(i%10)*10*time.Millisecond)
		released := time.Now()
		lease.Release()
		total += (<-got).Sub(released)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "handoff-ns/op")
}
