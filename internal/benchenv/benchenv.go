// Package benchenv is what benchmarks that compare sizes need from the
// process they run in: its CPU time, reported beside the wall time (on a
// machine shared with other work the CPU a turn costs varies less than its
// latency), and a way to leave no trace of one iteration's setup in the
// next measured operation.
package benchenv

import (
	"runtime/debug"
	"syscall"
	"time"
)

// CPU is the CPU time (user and system) the process has used so far, on
// every thread: the garbage collector's and other goroutines' included.
// Zero when the system cannot say.
func CPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Settle clears what a benchmark's setup left behind before the measured
// operation, so that the operation does not pay for it: it collects the
// garbage and returns the freed memory to the system (no collection or
// scavenging left to run in the background), then evicts the processor's
// caches by writing to every line of a buffer larger than them (64 MiB,
// made on first use). The collection reads the whole heap, which leaves a
// small heap in the caches and a large one not; after the eviction the
// data is as cold at every size, as on a server that served others since.
func Settle() {
	debug.FreeOSMemory()
	if evict == nil {
		evict = make([]byte, 64<<20)
	}
	for i := 0; i < len(evict); i += 64 {
		evict[i]++
	}
}

// evict is Settle's buffer; benchmarks run one at a time.
var evict []byte
