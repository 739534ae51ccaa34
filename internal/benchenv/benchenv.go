// Package benchenv is what benchmarks that compare sizes need from the
// process they run in: its CPU time, reported beside the wall time (on a
// machine shared with other work the CPU a turn costs varies less than its
// latency), operations measured one at a time (Ops), and a way to leave no
// trace of one iteration's setup in the next measured operation.
package benchenv

import (
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"syscall"
	"testing"
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

// IdleGC is the CPU time the garbage collector's idle mark workers have
// used so far, as the runtime estimates it: marking done on a processor
// that had nothing else to run. A benchmark that waits on a server (Redis)
// leaves one of its two processors idle most of the time, and an idle
// worker then takes it for the rest of each collection's mark phase, which
// lasts longer the busier the machine is: a part of CPU that a loaded
// server, with no idle processor, does not pay, and that varies with the
// machine's load more than with the code. Zero when the runtime cannot say.
func IdleGC() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
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

// Ops measures operations one at a time, between Start and Stop (with the
// benchmark's timer running): the wall and CPU time of each.
type Ops struct {
	walls, cpus []time.Duration
	wall0       time.Time
	cpu0        time.Duration
}

// Start starts measuring an operation.
func (o *Ops) Start() { o.wall0, o.cpu0 = time.Now(), CPU() }

// Stop ends the operation Start began.
func (o *Ops) Stop() {
	o.walls, o.cpus = append(o.walls, time.Since(o.wall0)), append(o.cpus, CPU()-o.cpu0)
}

// Report reports the operations' CPU time on b, the mean (cpu-ns/op) and
// the median (p50-cpu-ns/op), and the median of their time (p50-ns/op,
// beside the mean the benchmark gives): on a machine shared with other
// work the medians move less with a few slow operations.
func (o *Ops) Report(b *testing.B) {
	if len(o.cpus) == 0 {
		return
	}
	var sum time.Duration
	for _, c := range o.cpus {
		sum += c
	}
	b.ReportMetric(float64(sum)/float64(len(o.cpus)), "cpu-ns/op")
	b.ReportMetric(float64(median(o.cpus)), "p50-cpu-ns/op")
	b.ReportMetric(float64(median(o.walls)), "p50-ns/op")
}

// median is the middle of ds (sorted in place).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// evictBuf is written through by EvictCaches: twice the largest per-core
// cache of the machines the benchmarks run on (4 MiB of L2).
var evictBuf = make([]byte, 8<<20)

// EvictCaches writes a byte of each cache line of an 8 MiB buffer, which
// replaces whatever the processor's caches held (reading alone does not:
// the caches keep lines in use against a stream of reads). A benchmark
// calls it, untimed, before each operation to measure the operation as it
// runs after other work has taken the caches over.
func EvictCaches() {
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}

// EvictCachesUntimed is EvictCaches with b's timer stopped meanwhile.
func EvictCachesUntimed(b *testing.B) {
	b.StopTimer()
	EvictCaches()
	b.StartTimer()
}
