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
