package redis

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

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
			if s.oneNode {
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
	t.Run("Queue", func(t *testing.T) {
		sessiontest.RunQueue(t, func(t *testing.T) sessiontest.QueueLocker {
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

// Events are kept in their stored form (sessions.Event.StoredJSON), and
// those an earlier version kept in the wire form read as before: a
// session holding both gives back every event's wire form unchanged.
func TestEventLayouts(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ctx := t.Context()
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "layouts"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	earlier := &sessions.Event{ID: "e1", InvocationID: "i1", Author: "user", Timestamp: at,
		Content: genai.NewContentFromText("hello", genai.RoleUser)}
	now := &sessions.Event{ID: "e2", InvocationID: "i1", Author: "coordinator", Timestamp: at,
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "c1",
			Name: "transfer_to_agent", Args: map[string]any{"agent_name": "greeter"}}}}},
		Actions: sessions.EventActions{TransferToAgent: "greeter", StateDelta: map[string]any{"k": "v"}}}
	wire := func(ev *sessions.Event) string {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	events := s.keys("app", "u", "layouts").events
	if err := s.client.RPush(ctx, events, wire(earlier)).Err(); err != nil { // as an earlier version stored it
		t.Fatal(err)
	}
	if err := s.AppendEvent(ctx, sess, now); err != nil {
		t.Fatal(err)
	}
	raw, err := s.client.LRange(ctx, events, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := now.StoredJSON()
	if len(raw) != 2 || raw[1] != string(stored) {
		t.Fatalf("events list %q, want the appended event in its stored form %s", raw, stored)
	}
	got, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "layouts"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 {
		t.Fatalf("%d events read, want 2", len(got.Events))
	}
	for i, want := range []*sessions.Event{earlier, now} {
		if g, w := wire(got.Events[i]), wire(want); g != w {
			t.Errorf("event %d reads back as\n%s\nwant\n%s", i, g, w)
		}
	}
}

func TestQueueConformance(t *testing.T) {
	srv := startServer(t)
	sessiontest.RunQueue(t, func(t *testing.T) sessiontest.QueueLocker {
		return newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	})
}
