// Command coldcost measures what a memory access costs this machine when
// the caches are cold the way a one-at-a-time turn finds them: it follows
// a chain of N dependent loads (each load's value is the next address, so
// that no two overlap) through a 64 MiB buffer, and prints the median and
// 90th percentile time per load, for three layouts of the chain and three
// ways of spending the time between two walks:
//
//   - layouts: "lines", N cache lines next to each other (N/64 pages);
//     "8 pages", N lines spread over 8 pages; "pages", each line on a page
//     of its own;
//   - between walks: "idle", the process sleeps 5 ms (as the gateway
//     waits for the upstream at c=1: the machine idles, and its CPUs with
//     it); "partner", a child process writes through 8 MiB and sleeps 2 ms
//     while this one waits for it on a pipe; "hot", nothing.
//
// The load test's one-at-a-time figures follow the "idle" row: how many
// distinct lines (and pages) a turn touches sets what it costs there,
// whatever the instructions. testing/cachegrind-turn.sh counts a turn's
// lines.
//
//	go run ./testing/coldcost [-n 500] [-walks 400]
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"time"
)

func main() {
	if os.Getenv("COLDCOST_PARTNER") == "1" {
		partner()
		return
	}
	n := flag.Int("n", 500, "loads per walk")
	walks := flag.Int("walks", 400, "walks per layout and mode")
	flag.Parse()
	if err := run(*n, *walks); err != nil {
		fmt.Fprintln(os.Stderr, "coldcost:", err)
		os.Exit(1)
	}
}

const (
	bufSize  = 64 << 20
	pageSize = 4096
	lineSize = 64
)

func run(n, walks int) error {
	runtime.LockOSThread()
	buf := make([]uint32, bufSize/4)
	for i := range buf { // every page mapped before the first walk
		buf[i] = uint32(i)
	}
	layouts := []struct {
		name  string
		start int // the first load's offset in bytes
	}{
		{"lines", chain(buf, n, func(i int) int { return 8<<20 + i*lineSize })},
		{"8 pages", chain(buf, n, func(i int) int { return 16<<20 + (i%8)*3*pageSize + (i/8)*lineSize })},
		{"pages", chain(buf, n, func(i int) int { return 24<<20 + i*(pageSize+lineSize)%(32<<20) })},
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "COLDCOST_PARTNER=1")
	toPartner, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	fromPartner, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = toPartner.Close(); _ = cmd.Wait() }()
	one := make([]byte, 1)
	between := map[string]func() error{
		"idle": func() error { time.Sleep(5 * time.Millisecond); return nil },
		"partner": func() error {
			if _, err := toPartner.Write(one); err != nil {
				return err
			}
			_, err := fromPartner.Read(one)
			return err
		},
		"hot": func() error { return nil },
	}
	fmt.Printf("%-8s %-8s %12s %12s\n", "between", "layout", "p50 ns/load", "p90 ns/load")
	var keep uint32
	for _, mode := range []string{"idle", "partner", "hot"} {
		for _, l := range layouts {
			took := make([]time.Duration, walks)
			for w := range took {
				if err := between[mode](); err != nil {
					return err
				}
				start := time.Now()
				off := uint32(l.start)
				for range n {
					off = buf[off/4]
				}
				took[w] = time.Since(start)
				keep += off
			}
			slices.Sort(took)
			per := func(q int) float64 { return float64(took[len(took)*q/100]) / float64(n) }
			fmt.Printf("%-8s %-8s %12.0f %12.0f\n", mode, l.name, per(50), per(90))
		}
	}
	runtime.KeepAlive(keep)
	return nil
}

// chain links the n offsets at(0..n-1) into one cycle in a random order
// (so that no prefetcher guesses the next), each offset's word holding the
// next's, and returns where it starts.
func chain(buf []uint32, n int, at func(int) int) int {
	order := rand.Perm(n)
	for k, i := range order {
		buf[at(i)/4] = uint32(at(order[(k+1)%n]))
	}
	return at(order[0])
}

// partner writes through 8 MiB of its own and sleeps 2 ms for each byte it
// reads, then answers with it: what another process does between two of
// the measured process's walks.
func partner() {
	mem := make([]byte, 8<<20)
	b := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(b); err != nil {
			return
		}
		for i := 0; i < len(mem); i += lineSize {
			mem[i]++
		}
		time.Sleep(2 * time.Millisecond)
		if _, err := os.Stdout.Write(b); err != nil {
			return
		}
	}
}
