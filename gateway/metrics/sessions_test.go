package metrics_test

import (
	"context"
	"testing"

	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/sessions"
)

// endingStore is a memory store that is a sessions.EndingAppender: it
// writes every run end it is given.
type endingStore struct {
	*sessions.MemoryService
}

func (s endingStore) AppendEventsReleaseEnd(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, _ sessions.Lease, end sessions.RunEnd) error {
	if err := s.AppendEvents(ctx, sess, evs); err != nil {
		return err
	}
	end.Written()
	return nil
}

type writtenEnd struct{ written bool }

func (e *writtenEnd) Written() { e.written = true }

// The wrapper of a store that ends runs with its writes does too, counted
// as one append_event operation; the wrapper of one that does not is not
// one.
func TestSessionsEndingAppender(t *testing.T) {
	m, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Sessions(sessions.NewMemoryService(sessions.MemoryConfig{})).(sessions.EndingAppender); ok {
		t.Error("the wrapper of the memory store is a sessions.EndingAppender")
	}
	ctx := context.Background()
	svc := m.Sessions(endingStore{sessions.NewMemoryService(sessions.MemoryConfig{})})
	ea, ok := svc.(sessions.EndingAppender)
	if !ok {
		t.Fatal("the wrapper of an EndingAppender is not one")
	}
	sess, err := svc.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	end := &writtenEnd{}
	if err := ea.AppendEventsReleaseEnd(ctx, sess, []*sessions.Event{{ID: "e1", Author: "user"}}, nil, end); err != nil {
		t.Fatal(err)
	}
	if !end.written {
		t.Error("the run's end was not written through the wrapper")
	}
	if got := value(t, m, "agentgate_session_store_operations_total", map[string]string{"op": "append_event", "outcome": "ok"}); got != 1 {
		t.Errorf("append_event operations: %v, want 1", got)
	}
}
