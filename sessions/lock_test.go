package sessions_test

import (
	"testing"

	"github.com/agentgate/agentgate/sessions"
	"github.com/agentgate/agentgate/sessions/sessiontest"
)

func TestMemoryLockerConformance(t *testing.T) {
	sessiontest.RunLocker(t, func(t *testing.T) sessions.Locker {
		return sessions.NewMemoryLocker()
	})
}

func TestMemoryLockerQueueConformance(t *testing.T) {
	sessiontest.RunQueue(t, func(t *testing.T) sessiontest.QueueLocker {
		return sessions.NewMemoryLocker()
	})
}
