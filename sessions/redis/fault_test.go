package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// storeOps calls every operation of a Store once; each returns the error it
// got.
func storeOps(ctx context.Context, s *Store, sess *sessions.Session) map[string]error {
	errs := map[string]error{}
	errs["Ping"] = s.Ping(ctx)
	_, errs["Create"] = s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "new"})
	_, errs["Get"] = s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: sess.ID})
	_, errs["List"] = s.List(ctx, sessions.ListRequest{AppName: "app", UserID: "u"})
	errs["AppendEvent"] = s.AppendEvent(ctx, sess, event("lost", map[string]any{"k": "lost", "user:k": "lost", "app:k": "lost"}))
	_, errs["Acquire"] = s.Acquire(ctx, "app", "u", sess.ID, 0)
	errs["Delete"] = s.Delete(ctx, sessions.DeleteRequest{AppName: "app", UserID: "u", SessionID: sess.ID})
	return errs
}

// fastFail makes a client give up on a down server without retrying, to keep
// the fault tests short; the behaviour is the same with go-redis's retries.
const fastFail = "max_retries=-1&dial_timeout=1s"

// waitUp waits until the Store reaches Redis again by itself: go-redis stops
// dialling a server that refused PoolSize dials and probes it once a second.
func waitUp(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Ping(t.Context())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Store did not reconnect: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func event(id string, delta map[string]any) *sessions.Event {
	return &sessions.Event{ID: id, Author: "user", Timestamp: time.Now().Truncate(time.Microsecond).UTC(),
		Actions: sessions.EventActions{StateDelta: delta}}
}

func TestDownAtStart(t *testing.T) {
	port := freePort(t)
	s := newStore(t, Config{URL: "redis://127.0.0.1:" + itoa(port) + "/0?" + fastFail})
	ctx := t.Context()
	for op, err := range storeOps(ctx, s, &sessions.Session{ID: "s1", AppName: "app", UserID: "u"}) {
		if !errors.Is(err, sessions.ErrUnavailable) {
			t.Errorf("%s with Redis down: err = %v, want ErrUnavailable", op, err)
		}
	}

	startServerOn(t, port)
	waitUp(t, s)
	if _, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatalf("Create once Redis is up: %v", err)
	}
}

func TestDownMidUse(t *testing.T) {
	// Persistence on, so that what Redis held before the crash is there after
	// the restart and a half-written append would show.
	srv := startServer(t, "--appendonly", "yes", "--appendfsync", "always")
	s := newStore(t, Config{URL: srv.URL(fastFail), TTL: time.Hour})
	ctx := t.Context()
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for i, id := range []string{"e0", "e1", "e2"} {
		if err := s.AppendEvent(ctx, sess, event(id, map[string]any{"k": float64(i), "user:k": float64(i), "app:k": float64(i)})); err != nil {
			t.Fatalf("AppendEvent(%s): %v", id, err)
		}
	}

	srv.Stop()
	for op, err := range storeOps(ctx, s, sess) {
		if !errors.Is(err, sessions.ErrUnavailable) {
			t.Errorf("%s with Redis stopped: err = %v, want ErrUnavailable", op, err)
		}
	}
	if len(sess.Events) != 3 || sess.State["k"] != float64(2) {
		t.Errorf("a failed append changed the caller's copy: %d events, k = %v", len(sess.Events), sess.State["k"])
	}

	srv.Start() // same port, same data; the Store is not re-created
	waitUp(t, s)
	got, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatalf("Get after Redis came back: %v", err)
	}
	var ids []string
	for _, ev := range got.Events {
		ids = append(ids, ev.ID)
	}
	if len(ids) != 3 || ids[2] != "e2" {
		t.Errorf("events after the outage = %v, want [e0 e1 e2]", ids)
	}
	for _, k := range []string{"k", "user:k", "app:k"} {
		if got.State[k] != float64(2) {
			t.Errorf("state %s after the outage = %v, want 2", k, got.State[k])
		}
	}
	if err := s.AppendEvent(ctx, got, event("e3", map[string]any{"k": 3.0})); err != nil {
		t.Fatalf("AppendEvent after Redis came back: %v", err)
	}
	release, err := s.Acquire(ctx, "app", "u", "s1", 0)
	if err != nil {
		t.Fatalf("Acquire after Redis came back: %v", err)
	}
	release.Release()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after Redis came back: %v", err)
	}
}

func TestCancelledContextIsNotUnavailable(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("")})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, sessions.ErrUnavailable) {
		t.Fatalf("Get with a cancelled context: err = %v, want context.Canceled only", err)
	}
}

func TestCorruptDataIsAnErrorNotAPanic(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("")})
	ctx := t.Context()
	for _, id := range []string{"badjson", "wrongtype"} {
		if _, err := s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
			t.Fatalf("Create: %v", err)
		}
	}
	if err := s.client.RPush(ctx, s.keys("app", "u", "badjson").events, "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Set(ctx, s.keys("app", "u", "wrongtype").state, "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"badjson", "wrongtype"} {
		_, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: id})
		if err == nil || errors.Is(err, sessions.ErrUnavailable) || errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("Get(%s) over bad data: err = %v, want an internal error", id, err)
		}
	}
}
