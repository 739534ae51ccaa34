package redis

import (
	"errors"
	"testing"
	"time"

	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/limits/limitstest"
	"github.com/agentgate/agentgate/sessions"
)

func TestLimiterConformance(t *testing.T) {
	srv := startServer(t)
	limitstest.Run(t, func(t *testing.T) limits.Limiter { return newStore(t, Config{URL: srv.URL("")}).Limiter() })
}

// A turn's place is renewed while it runs; a replica that dies holding it
// (its renewals stop) frees it once the lease is over, and no sooner than
// its last renewal allows.
func TestLimiterTurnLeaseExpiresWhenHolderDies(t *testing.T) {
	srv := startServer(t)
	// A lease long enough that a renewal starved by a loaded machine
	// (every LockTTL/3) still lands before it expires.
	cfg := Config{URL: srv.URL(""), KeyPrefix: "replicas:", LockTTL: time.Second}
	holder, other := newStore(t, cfg), newStore(t, cfg)
	r := limits.Request{User: "u", Model: "m", Global: limits.Values{ConcurrentTurns: 1}}
	slot, err := holder.Limiter().Admit(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	key := "replicas:limits:{u}:turns"
	first := holder.client.ZRangeWithScores(t.Context(), key, 0, -1).Val()
	if len(first) != 1 {
		t.Fatalf("running turns %v, want one", first)
	}
	// Renewed: the deadline moves on while the holder lives.
	renewedBy := time.Now().Add(20 * time.Second)
	for {
		now := holder.client.ZRangeWithScores(t.Context(), key, 0, -1).Val()
		if len(now) == 1 && now[0].Score > first[0].Score {
			break
		}
		if time.Now().After(renewedBy) {
			t.Fatalf("the running turn's deadline was never renewed: %v, first %v", now, first)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := other.Limiter().Admit(t.Context(), r); err == nil {
		t.Fatal("a second turn was admitted while the first runs")
	}
	// The holder dies: its renewals stop (End is never called).
	slot.(*turnSlot).stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := other.Limiter().Admit(t.Context(), r)
		if err == nil {
			s.End(0)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead holder's turn is still counted: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With Redis down a turn is neither admitted nor refused by a limit: the
// store is unavailable (503 at the gateway).
func TestLimiterRedisDown(t *testing.T) {
	s := newStore(t, Config{URL: "redis://127.0.0.1:" + itoa(freePort(t)) + "/0?" + fastFail})
	_, err := s.Limiter().Admit(t.Context(), limits.Request{User: "u", Model: "m", Global: limits.Values{ConcurrentTurns: 1}})
	if !errors.Is(err, sessions.ErrUnavailable) {
		t.Fatalf("Admit with Redis down: %v, want ErrUnavailable", err)
	}
}

// BenchmarkLimiterAdmit measures one turn's admission and end with every
// limit set, both scopes: two round trips to a private Redis.
func BenchmarkLimiterAdmit(b *testing.B) {
	l := newStore(b, Config{URL: startServer(b).URL("")}).Limiter()
	limitstest.Bench(b, l)
}
