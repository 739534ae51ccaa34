package sessions_test

import (
	"testing"

	"github.com/agentgate/agentgate/sessions"
	"github.com/agentgate/agentgate/sessions/sessiontest"
)

func TestMemoryServiceConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) sessions.Service {
		return sessions.NewMemoryService(sessions.MemoryConfig{})
	})
}

// A service that is not a GetOrCreator (nor a BatchAppender): GetOrCreate
// reads, creates and reads again through the Service methods alone.
func TestGetOrCreateWithoutGetOrCreator(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) sessions.Service {
		svc := struct{ sessions.Service }{sessions.NewMemoryService(sessions.MemoryConfig{})}
		if _, ok := sessions.Service(svc).(sessions.GetOrCreator); ok {
			t.Fatal("the wrapper is a GetOrCreator")
		}
		return svc
	})
}

// The bounded store passes the suite too, with every operation also
// keeping its use order (a bound no subtest reaches).
func TestBoundedMemoryServiceConformance(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) sessions.Service {
		return sessions.NewMemoryService(sessions.MemoryConfig{MaxSessions: 64})
	})
}

func TestMemoryServiceLockerConformance(t *testing.T) {
	sessiontest.RunLocker(t, func(t *testing.T) sessions.Locker {
		return sessions.NewMemoryService(sessions.MemoryConfig{MaxSessions: 64})
	})
}

func TestMemoryServiceQueueConformance(t *testing.T) {
	sessiontest.RunQueue(t, func(t *testing.T) sessiontest.QueueLocker {
		return sessions.NewMemoryService(sessions.MemoryConfig{MaxSessions: 64})
	})
}

// A new session's read gives an empty, non-nil Events (its JSON is []);
// once it has events, a read gives them.
func TestMemoryReadNoEvents(t *testing.T) {
	ctx := t.Context()
	svc := sessions.NewMemoryService(sessions.MemoryConfig{})
	req := sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}
	sess, err := svc.GetOrCreate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Events == nil || len(sess.Events) != 0 {
		t.Fatalf("new session's events: %#v, want an empty slice", sess.Events)
	}
	ev := &sessions.Event{ID: "e1", Author: "user"}
	if err := svc.AppendEvent(ctx, sess, ev); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 1 || got.Events[0].ID != "e1" {
		t.Fatalf("events after an append: %v", got.Events)
	}
}
