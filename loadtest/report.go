package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// row is one scenario under one session setup.
type row struct {
	Scenario    Scenario
	Setup       string
	Rate        int
	Direct, Via Result
	// CPU is the gateway process's CPU time during the measured phase.
	CPU time.Duration
	// StoreOps is the number of session-store operations in that phase.
	StoreOps float64
}

type report struct {
	opts    options
	machine machine
	started time.Time
	rows    []row
	open    []OpenResult
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// diff formats b-a in microseconds, signed.
func diff(a, b time.Duration) string {
	return fmt.Sprintf("%+.0f", float64(b-a)/float64(time.Microsecond))
}

func (r *report) write(w io.Writer, args []string) {
	o, m := r.opts, r.machine
	cmd := "go run ./loadtest"
	if len(args) > 0 {
		cmd += " " + strings.Join(args, " ")
	}
	fmt.Fprintf(w, "### Load test, %s\n\n", r.started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Command: `%s`\n\n", cmd)
	fmt.Fprintf(w, "Machine: %d CPUs (`%s`), %s, %s; load average at start %s. The mock upstream and the load\n", m.CPUs, m.CPU, m.OS, m.Go, m.LoadAvg)
	fmt.Fprintf(w, "generator share those CPUs with agentgate.\n\n")
	fmt.Fprintf(w, "Mock upstream: %s before the first byte; streamed answers are %d deltas %s apart. Each path: %s\n",
		o.latency, o.chunks, o.interval, o.duration)
	fmt.Fprintf(w, "measured after %s of warm-up, the two paths taking turns in blocks of %s; turns start on an\n", o.warmup, o.block)
	fmt.Fprintf(w, "open-loop schedule. Session setups: `memory` and\n")
	fmt.Fprintf(w, "`redis` send every turn on a new session (`X-Session-Id`), `stateless` sends none.\n\n")

	fmt.Fprintln(w, "Latency and time to first token (TTFT: to the first content delta), in ms:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | sessions | path | turns/s | p50 | p90 | p99 | TTFT p50 | TTFT p90 | TTFT p99 | errors |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range r.rows {
		for _, p := range []struct {
			name string
			res  Result
		}{{"direct", x.Direct}, {"agentgate", x.Via}} {
			ttft := [3]string{"–", "–", "–"}
			if x.Scenario.Stream {
				ttft = [3]string{ms(Pct(p.res.TTFT, 50)), ms(Pct(p.res.TTFT, 90)), ms(Pct(p.res.TTFT, 99))}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %d |\n", x.Scenario.Name, x.Setup, p.name,
				p.res.Throughput(), ms(Pct(p.res.Lat, 50)), ms(Pct(p.res.Lat, 90)), ms(Pct(p.res.Lat, 99)),
				ttft[0], ttft[1], ttft[2], p.res.Errors)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The gateway's own cost (agentgate minus direct, in µs), its CPU time per 1,000 turns, and the")
	fmt.Fprintln(w, "session-store operations per turn (lock and unlock included; one Redis round trip each):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | sessions | turns/s | Δp50 | Δp90 | Δp99 | ΔTTFT p50 | ΔTTFT p99 | CPU s / 1,000 turns | store ops / turn |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range r.rows {
		d, v := x.Direct, x.Via
		dt := [2]string{"–", "–"}
		if x.Scenario.Stream {
			dt = [2]string{diff(Pct(d.TTFT, 50), Pct(v.TTFT, 50)), diff(Pct(d.TTFT, 99), Pct(v.TTFT, 99))}
		}
		done := v.N - v.Errors
		cpu, ops := "–", "–"
		if done > 0 {
			cpu = fmt.Sprintf("%.3f", x.CPU.Seconds()*1000/float64(done))
			ops = fmt.Sprintf("%.1f", x.StoreOps/float64(done))
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", x.Scenario.Name, x.Setup, x.Rate,
			diff(Pct(d.Lat, 50), Pct(v.Lat, 50)), diff(Pct(d.Lat, 90), Pct(v.Lat, 90)), diff(Pct(d.Lat, 99), Pct(v.Lat, 99)),
			dt[0], dt[1], cpu, ops)
	}
	if len(r.open) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Streams held open at once through agentgate (the mock holds each after its first delta):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| sessions | streams | open (gauge) | all open after | RSS before → during (MiB) | RSS / stream | Go heap in use / stream | Go stacks / stream | goroutines / stream |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, x := range r.open {
			fmt.Fprintf(w, "| %s | %d | %.0f | %s | %.1f → %.1f | %.1f KiB | %.1f KiB | %.1f KiB | %.1f |\n", x.Setup, x.N, x.Open,
				x.OpenedIn.Round(time.Millisecond), float64(x.RSSBefore)/(1<<20), float64(x.RSSDuring)/(1<<20),
				x.RSSPer/1024, x.HeapPer/1024, x.StackPer/1024, x.GoroutinesPer)
		}
	}
	var errs []string
	for _, x := range r.rows {
		for _, res := range []Result{x.Direct, x.Via} {
			if res.FirstErr != nil {
				errs = append(errs, fmt.Sprintf("%s/%s: %d errors, first: %v", x.Scenario.Name, x.Setup, res.Errors, res.FirstErr))
			}
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Errors:")
		for _, e := range errs {
			fmt.Fprintln(w, "- "+e)
		}
	}
}
