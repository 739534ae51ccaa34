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
