package redis

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/agentgate/sessions"
	"github.com/agentgate/agentgate/sessions/sessiontest"
)

// prefixes keeps the stores of one test apart on a shared server.
var prefixes atomic.Int64

// newStore returns a Store on url with a key prefix of its own, closed at
// the end of the test.
func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = fmt.Sprintf("test%d:", prefixes.Add(1))
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := startServer(t)
	sessiontest.Run(t, func(t *testing.T) sessions.Service {
		return newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	})
}

func TestConformanceNoTTL(t *testing.T) {
	srv := startServer(t)
	sessiontest.Run(t, func(t *testing.T) sessions.Service {
		return newStore(t, Config{URL: srv.URL("")})
	})
}

func TestLockerConformance(t *testing.T) {
	srv := startServer(t)
	sessiontest.RunLocker(t, func(t *testing.T) sessions.Locker {
		return newStore(t, Config{URL: srv.URL("")})
	})
}

func TestLockingGetterConformance(t *testing.T) {
	srv := startServer(t)
	sessiontest.RunLockingGetter(t, func(t *testing.T) sessiontest.LockingStore {
		return newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	})
}

func TestClusterConformance(t *testing.T) {
	url := startCluster(t)
	t.Run("Service", func(t *testing.T) {
		sessiontest.Run(t, func(t *testing.T) sessions.Service {
			s := newStore(t, Config{URL: url, TTL: time.Hour})
			if s.sameSlotApp {
				t.Fatal("a cluster URL built a single-node client")
			}
			return s
		})
	})
	t.Run("Locker", func(t *testing.T) {
		sessiontest.RunLocker(t, func(t *testing.T) sessions.Locker {
			return newStore(t, Config{URL: url})
		})
	})
	t.Run("LockingGetter", func(t *testing.T) {
		sessiontest.RunLockingGetter(t, func(t *testing.T) sessiontest.LockingStore {
			return newStore(t, Config{URL: url, TTL: time.Hour})
		})
	})
	t.Run("RoundTrips", func(t *testing.T) {
		// The app: hash lives on its own node: an app: delta costs a second trip.
		checkRoundTrips(t, newStore(t, Config{URL: url, TTL: time.Hour}), 2)
	})
	t.Run("TurnRoundTrips", func(t *testing.T) {
		checkTurnRoundTrips(t, newStore(t, Config{URL: url, TTL: time.Hour}))
	})
}

func TestSentinelConformance(t *testing.T) {
	url := startSentinel(t)
	sessiontest.Run(t, func(t *testing.T) sessions.Service {
		return newStore(t, Config{URL: url, TTL: time.Hour})
	})
}
