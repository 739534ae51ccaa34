//go:build race

package gateway_test

// raceEnabled reports a build with the race detector, whose instrumented
// frames are larger: TestHeldStreamsMemory pads the request goroutine to
// just short of 32 KiB instead of 16 (see padFrames).
const (
	raceEnabled       = true
	padFrames         = 49
	stackMargin       = 2 << 10
	maxStackPerStream = 56 << 10
)
