package agentcore

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentgate/agentgate/sessions"
)

// A snapshot of the events keeps what it held while the session grows,
// and appending to it leaves the session alone (-race: readers and the
// writer share the backing array).
func TestLiveSessionEventsSnapshot(t *testing.T) {
	store := sessions.NewMemoryService(sessions.MemoryConfig{})
	ctx := context.Background()
	sess, err := store.Create(ctx, sessions.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	l := &liveSession{}
	l.init(sess, new(writesOf(store)))
	appendEv := func(id string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		sessions.ApplyEvent(l.sess, &sessions.Event{ID: id, Author: "user"})
	}
	appendEv("e0")
	first := l.events()
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			evs := l.events()
			for i, ev := range evs {
				if ev == nil || (i == 0 && ev.ID != "e0") {
					t.Errorf("event %d = %v", i, ev)
					return
				}
			}
			_ = append(evs, &sessions.Event{ID: "reader's"})
		}
	})
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5"} {
		appendEv(id)
	}
	wg.Wait()
	if len(first) != 1 || first[0].ID != "e0" {
		t.Errorf("first snapshot = %v", first)
	}
	if got := l.events(); len(got) != 6 || got[1].ID != "e1" {
		t.Errorf("session events = %d, second %q", len(got), got[1].ID)
	}
	// An append to a snapshot taken with room left in the session's array
	// is the caller's own.
	for len(l.sess.Events) == cap(l.sess.Events) {
		appendEv("more")
	}
	mine := append(l.events(), &sessions.Event{ID: "mine"})
	appendEv("next")
	if got := mine[len(mine)-1].ID; got != "mine" {
		t.Errorf("the snapshot's own append became %q", got)
	}
	if got := l.events(); got[len(got)-1].ID != "next" {
		t.Errorf("the session's last event is %q", got[len(got)-1].ID)
	}
}

// The context a flush writes with is context.WithoutCancel's: the
// context's values, never done, and no cause, when the turn's context
// has ended.
func TestDetachedCtxIsWithoutCancel(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	d := &detachedCtx{Context: parent}
	child, stop := context.WithCancel(d)
	defer stop()
	cancel(errors.New("gone"))
	if d.Done() != nil || d.Err() != nil || context.Cause(d) != nil || child.Err() != nil {
		t.Errorf("Done %v, Err %v, Cause %v, child's Err %v: want nil", d.Done(), d.Err(), context.Cause(d), child.Err())
	}
	if _, ok := d.Deadline(); ok {
		t.Error("a deadline")
	}
	if got := d.Value(key{}); got != "v" {
		t.Errorf("Value = %v, want v", got)
	}
}
