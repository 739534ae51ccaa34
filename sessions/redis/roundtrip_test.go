package redis

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// roundTrips counts what a client sends: one per command sent alone, one per
// pipeline (however many commands it holds); not what opens a connection
// (HELLO, CLIENT).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (r *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if name := cmd.Name(); name != "hello" && name != "client" {
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// count returns how many round trips fn costs.
func (r *roundTrips) count(t *testing.T, fn func() error) int64 {
	t.Helper()
	before := r.n.Load()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	return r.n.Load() - before
}

// checkRoundTrips asserts the round trips of every operation in steady state
// (scripts cached, connections open); appApp is what an append carrying an
// app: key costs.
func checkRoundTrips(t *testing.T, s *Store, appApp int64) {
	rt := &roundTrips{}
	s.client.AddHook(rt)
	ctx := t.Context()
	app, user := "app", "u"
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	warm := func() error { // load every script once
		if err := s.AppendEvent(ctx, sess, event("w", map[string]any{"k": 1.0})); err != nil {
			return err
		}
		if _, err := s.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: "warm"}); err != nil {
			return err
		}
		if _, err := s.List(ctx, sessions.ListRequest{AppName: app, UserID: user}); err != nil {
			return err
		}
		release, err := s.Acquire(ctx, app, user, "warm", 0)
		if err != nil {
			return err
		}
		release.Release()
		if _, release, err = s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "warm"}, 0); err != nil {
			return err
		}
		defer release.Release()
		if err := s.AppendEventsRelease(ctx, sess, []*sessions.Event{event("w2", nil)}, release); err != nil { // releases with the write
			return err
		}
		return s.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "warm"})
	}
	rt.count(t, warm)

	var target *sessions.Session
	tests := []struct {
		name string
		want int64
		fn   func() error
	}{
		{"Create", 1, func() error {
			var err error
			target, err = s.Create(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "s1", State: map[string]any{"user:a": 1.0}})
			return err
		}},
		{"AppendEvent", 1, func() error {
			return s.AppendEvent(ctx, target, event("e1", map[string]any{"k": "v", "user:u": 1.0, "temp:t": 1.0}))
		}},
		{"AppendEvent with app: state", appApp, func() error {
			return s.AppendEvent(ctx, target, event("e2", map[string]any{"k": "v", "app:a": 1.0}))
		}},
		{"AppendEvents (3 events, session and user: state)", 1, func() error {
			return s.AppendEvents(ctx, target, []*sessions.Event{event("b1", map[string]any{"k": "b1", "temp:t": 1.0}),
				event("b2", map[string]any{"user:u": 2.0}), event("b3", nil)})
		}},
		{"AppendEvents (2 events) with app: state", appApp, func() error {
			return s.AppendEvents(ctx, target, []*sessions.Event{event("b4", map[string]any{"app:a": 2.0}), event("b5", map[string]any{"app:b": 1.0})})
		}},
		{"AppendEvent partial", 0, func() error {
			ev := event("p", map[string]any{"k": "x"})
			ev.Partial = true
			return s.AppendEvent(ctx, target, ev)
		}},
		{"Get", 1, func() error {
			_, err := s.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: "s1"})
			return err
		}},
		{"List", 1, func() error {
			_, err := s.List(ctx, sessions.ListRequest{AppName: app, UserID: user, PageSize: 10})
			return err
		}},
		{"Acquire+release", 2, func() error {
			release, err := s.Acquire(ctx, app, user, "s1", 0)
			if err == nil {
				release.Release()
			}
			return err
		}},
		{"GetOrCreate, new", 1, func() error {
			_, err := s.GetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "g1", State: map[string]any{"user:a": 2.0}})
			return err
		}},
		{"GetOrCreate, existing", 1, func() error {
			_, err := s.GetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "g1"})
			return err
		}},
		{"GetOrCreate, new, with app: state", appApp, func() error {
			_, err := s.GetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "g2", State: map[string]any{"app:a": 3.0}})
			return err
		}},
		{"AcquireGetOrCreate, new, then a write", 2, func() error {
			sess, release, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "g3"}, 0)
			if err != nil {
				return err
			}
			defer release.Release() // the write released the lease: no round trip
			return s.AppendEventsRelease(ctx, sess, []*sessions.Event{event("g3-1", map[string]any{"k": "v"})}, release)
		}},
		{"AcquireGetOrCreate, new, with app: state, and a release without a write", appApp + 1, func() error {
			_, release, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: "g4", State: map[string]any{"app:a": 4.0}}, 0)
			if err == nil {
				release.Release()
			}
			return err
		}},
		{"Delete", 1, func() error {
			return s.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: "s1"})
		}},
	}
	for _, tt := range tests {
		if got := rt.count(t, tt.fn); got != tt.want {
			t.Errorf("%s: %d round trips, want %d", tt.name, got, tt.want)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	srv := startServer(t)
	checkRoundTrips(t, newStore(t, Config{URL: srv.URL(""), TTL: time.Hour}), 1)
}
