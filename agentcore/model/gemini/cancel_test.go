package gemini

import (
	"testing"

	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

// TestCancellation: when the caller's context ends (or the caller stops
// iterating), the upstream request is aborted at once. Nothing is left
// running.
func TestCancellation(t *testing.T) { providertest.Cancellation(t, harness) }
