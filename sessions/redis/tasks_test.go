package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// TestTaskStore: a task's record put by one store is read by another (as
// by another replica), only for its app and user; it expires its
// retention after its latest write (at least a second); a key that holds
// something else is an error, not a record.
func TestTaskStore(t *testing.T) {
	srv := startServer(t)
	prefix := fmt.Sprintf("test%d:", prefixes.Add(1))
	x1 := newStore(t, Config{URL: srv.URL(""), KeyPrefix: prefix}).TaskStore()
	x2 := newStore(t, Config{URL: srv.URL(""), KeyPrefix: prefix}).TaskStore()
	ctx := context.Background()
	if _, err := x2.GetTask(ctx, "app", "u", "e-1"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("a task never put: %v", err)
	}
	if err := x1.PutTask(ctx, "app", "u", "e-1", []byte(`{"v":1}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	ttl := func(id string) time.Duration { return x1.s.client.PTTL(ctx, x1.key("app", "u", id)).Val() }
	if d := ttl("e-1"); d <= 50*time.Second || d > time.Minute {
		t.Errorf("the record expires in %v, want about a minute", d)
	}
	if err := x1.PutTask(ctx, "app", "u", "e-1", []byte(`{"v":2}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := x2.GetTask(ctx, "app", "u", "e-1"); err != nil || string(got) != `{"v":2}` {
		t.Errorf("the other store reads %q %v", got, err)
	}
	if d := ttl("e-1"); d <= time.Minute || d > time.Hour {
		t.Errorf("rewritten with an hour, the record expires in %v", d)
	}
	for _, other := range [][2]string{{"app", "v"}, {"other", "u"}} {
		if _, err := x2.GetTask(ctx, other[0], other[1], "e-1"); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("the task as %v's: %v", other, err)
		}
	}
	if err := x1.PutTask(ctx, "app", "u", "e-2", []byte(`{}`), 0); err != nil {
		t.Fatal(err)
	}
	if d := ttl("e-2"); d <= 0 || d > time.Second {
		t.Errorf("put without a retention, the record expires in %v, want a second", d)
	}
	x1.s.client.Del(ctx, x1.key("app", "u", "e-3"))
	x1.s.client.HSet(ctx, x1.key("app", "u", "e-3"), "f", "v")
	if got, err := x2.GetTask(ctx, "app", "u", "e-3"); err == nil || errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("a key holding a hash: %q %v, want an error", got, err)
	}
}
