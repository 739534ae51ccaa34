package mcptoolset_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that closed toolsets leave no goroutine behind.
func TestMain(m *testing.M) {
	// opencensus (a dependency of genai) starts a worker at init.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}
