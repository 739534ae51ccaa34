//go:build !race

package gateway_test

// raceEnabled reports a build with the race detector (see race_test.go and
// padFrames).
const (
	raceEnabled       = false
	padFrames         = 8
	stackMargin       = 2 << 10
	maxStackPerStream = 30 << 10
)
