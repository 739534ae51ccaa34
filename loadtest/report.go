package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// row is one scenario under one session setup: its turns at Rate, and
// one at a time.
type row struct {
	Scenario Scenario
	Setup    string
	Rate     int
	phase    // at Rate
	// StoreOps is the number of session-store operations at Rate.
	StoreOps float64
	// C1 is the same turns one at a time (c=1), for the ratios to the
	// floor proxy (nil: not run).
	C1 *phase
}

type report struct {
	opts    options
	machine machine
	started time.Time
	rows    []row
	open    []OpenResult
	// redisRTT is the private Redis server's PING round trips, and tcpRTT
	// the floor proxy's echo round trips, sorted.
	redisRTT, tcpRTT []time.Duration
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Microsecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// diff formats b-a in microseconds, signed.
func diff(a, b time.Duration) string {
	return fmt.Sprintf("%+.0f", float64(b-a)/float64(time.Microsecond))
}

// table starts a Markdown table after a blank line, intro and another
// blank line: its header row of cols, the first text columns aligned left,
// the others (figures) right.
func table(w io.Writer, text int, intro string, cols ...string) {
	fmt.Fprintf(w, "\n%s\n\n| %s |\n|", intro, strings.Join(cols, " | "))
	for i := range cols {
		if i < text {
			io.WriteString(w, "---|")
		} else {
			io.WriteString(w, "---:|")
		}
	}
	fmt.Fprintln(w)
}

// perTurn formats, with format, total divided by the turns of res that
// ended without error.
func perTurn(format string, total float64, res Result) string {
	done := res.N - res.Errors
	if done <= 0 {
		return "–"
	}
	return fmt.Sprintf(format, total/float64(done))
}

// rtt writes a line on round trips measured one at a time, 1 ms apart.
func rtt(w io.Writer, what string, sorted []time.Duration) {
	if len(sorted) > 0 {
		fmt.Fprintf(w, "\n%s, %d of them one at a time on one connection, 1 ms apart: p50 %s µs, p90 %s µs, p99 %s µs.\n",
			what, len(sorted), us(Pct(sorted, 50)), us(Pct(sorted, 90)), us(Pct(sorted, 99)))
	}
}

// writeFloor splits the gateway's cost into the hop (the floor proxy
// minus direct) and the rest (agentgate minus the floor proxy).
func (r *report) writeFloor(w io.Writer) {
	rows := slices.DeleteFunc(slices.Clone(r.rows), func(x row) bool { return x.Floor == nil })
	if len(rows) == 0 {
		return
	}
	table(w, 2, "The hop alone: the same turns through a bare net/http proxy (loadtest/floorproxy, which only\n"+
		"passes the request on and copies the answer back), minus direct; then agentgate minus that\n"+
		"proxy, what agentgate does beyond being one more HTTP hop (in µs; CPU per 1,000 turns in s):",
		"scenario", "sessions", "turns/s", "hop Δp50", "hop Δp99", "hop ΔTTFT p50", "proxy CPU", "agentgate − proxy p50", "p99", "TTFT p50", "agentgate CPU")
	for _, x := range rows {
		d, f, v := x.Direct, *x.Floor, x.Via
		hopTTFT, restTTFT := "–", "–"
		if x.Scenario.Stream {
			hopTTFT, restTTFT = diff(Pct(d.TTFT, 50), Pct(f.TTFT, 50)), diff(Pct(f.TTFT, 50), Pct(v.TTFT, 50))
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Scenario.Name, x.Setup, x.Rate,
			diff(Pct(d.Lat, 50), Pct(f.Lat, 50)), diff(Pct(d.Lat, 99), Pct(f.Lat, 99)), hopTTFT, perTurn("%.3f", x.FloorCPU.Seconds()*1000, f),
			diff(Pct(f.Lat, 50), Pct(v.Lat, 50)), diff(Pct(f.Lat, 99), Pct(v.Lat, 99)), restTTFT, perTurn("%.3f", x.CPU.Seconds()*1000, v))
	}
	rtt(w, "Under both, one TCP round trip between two processes (a line the floor proxy echoes)", r.tcpRTT)
}

// writeDeltas gives, for the streamed scenarios, what each path adds to
// every delta: a turn's figure is the median, over its content deltas, of
// the time from the mock upstream's write of the delta to the client's read
// of it; the table gives that figure's percentiles over turns, at the
// scenario's rate and one turn at a time, and each path's minus direct's.
// Unlike the whole turn's latency, it leaves out the mock's own timer
// jitter between deltas, larger than what a hop adds.
func (r *report) writeDeltas(w io.Writer) {
	var rows []row
	for _, x := range r.rows {
		if x.Scenario.Stream {
			rows = append(rows, x)
		}
	}
	if len(rows) == 0 {
		return
	}
	table(w, 4, "Per delta (streamed turns): each turn's median, over its content deltas, of the time from the\n"+
		"mock upstream's write of a delta to the client's read of it; its percentiles over turns, and\n"+
		"added: the path's minus direct's (in µs):",
		"scenario", "sessions", "load", "path", "p50", "p90", "p99", "added p50", "added p99")
	for _, x := range rows {
		phases := []struct {
			load string
			ph   *phase
		}{{fmt.Sprintf("%d/s", x.Rate), &x.phase}, {"c=1", x.C1}}
		for _, p := range phases {
			if p.ph == nil {
				continue
			}
			d := p.ph.Direct.Delta
			paths := []struct {
				name string
				res  *Result
			}{{"direct", &p.ph.Direct}, {"net/http proxy", p.ph.Floor}, {"agentgate", &p.ph.Via}}
			for _, path := range paths {
				if path.res == nil {
					continue
				}
				v := path.res.Delta
				added := [2]string{"–", "–"}
				if path.name != "direct" && len(d) > 0 && len(v) > 0 {
					added = [2]string{diff(Pct(d, 50), Pct(v, 50)), diff(Pct(d, 99), Pct(v, 99))}
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Scenario.Name, x.Setup, p.load, path.name,
					us(Pct(v, 50)), us(Pct(v, 90)), us(Pct(v, 99)), added[0], added[1])
			}
		}
	}
}

// Issue 21's targets: agentgate's added latency (over direct) at most
// these times the floor proxy's, one turn at a time, and its CPU per turn
// at most cpuTarget times the proxy's.
const (
	p50Target, p99Target, cpuTarget = 1.25, 2.0, 1.5
)

// ratio is one measure of agentgate against the floor proxy.
type ratio struct {
	measure      string
	via, floor   float64
	measured     bool // on both paths
	target       float64
	figureFormat string
}

// writeRatios sets agentgate against the floor proxy, for each scenario
// both ran one turn at a time: added latency at p50 and p99 (c=1), and
// CPU per turn (c=1 and at the scenario's rate), each as a ratio beside
// its target.
func (r *report) writeRatios(w io.Writer) {
	rows := slices.DeleteFunc(slices.Clone(r.rows), func(x row) bool { return x.C1 == nil || x.C1.Floor == nil })
	if len(rows) == 0 {
		return
	}
	table(w, 3, "Against the floor: what agentgate adds over direct, divided by what the bare net/http proxy adds,\n"+
		"one turn at a time (c=1; latency in µs), and agentgate's CPU per turn divided by the proxy's (in ms),\n"+
		"beside the targets of issue 21. For a streamed turn the latency is per delta (the figure of the\n"+
		"per-delta table: the median over a turn's deltas of the time from the mock's write to the\n"+
		"client's read), not the whole turn's, whose 5 ms gaps between deltas jitter more than a hop adds:",
		"scenario", "sessions", "measure", "agentgate", "net/http proxy", "ratio", "target", "verdict")
	for _, x := range rows {
		c, f := *x.C1, *x.C1.Floor
		// lat is the latency a row compares: the whole turn's, or for a
		// streamed turn each delta's.
		lat, measure := func(res Result) []time.Duration { return res.Lat }, "added latency"
		if x.Scenario.Stream {
			lat, measure = func(res Result) []time.Duration { return res.Delta }, "added latency per delta"
		}
		both := len(lat(c.Via)) > 0 && len(lat(f)) > 0 && len(lat(c.Direct)) > 0
		added := func(res Result, p float64) float64 { return us64(Pct(lat(res), p) - Pct(lat(c.Direct), p)) }
		lines := []ratio{
			{measure + " p50, c=1", added(c.Via, 50), added(f, 50), both, p50Target, "%+.0f"},
			{measure + " p99, c=1", added(c.Via, 99), added(f, 99), both, p99Target, "%+.0f"},
		}
		for _, p := range []struct {
			name string
			ph   phase
		}{{"c=1", c}, {fmt.Sprintf("at %d/s", x.Rate), x.phase}} {
			via, okVia := cpuPerTurn(p.ph.CPU, p.ph.Via)
			floor, okFloor := 0.0, false
			if p.ph.Floor != nil {
				floor, okFloor = cpuPerTurn(p.ph.FloorCPU, *p.ph.Floor)
			}
			lines = append(lines, ratio{"CPU per turn, " + p.name, via, floor, okVia && okFloor, cpuTarget, "%.3f"})
		}
		for _, l := range lines {
			q, verdict := "–", "not measured"
			switch {
			case !l.measured:
			case l.floor <= 0:
				verdict = "not measured: the proxy's figure is not above 0"
			default:
				q, verdict = fmt.Sprintf("%.2fx", l.via/l.floor), "**not met**"
				if l.via/l.floor <= l.target {
					verdict = "met"
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | "+l.figureFormat+" | "+l.figureFormat+" | %s | ≤ %.4gx | %s |\n", x.Scenario.Name, x.Setup, l.measure,
				l.via, l.floor, q, l.target, verdict)
		}
	}
}

// us64 is d in microseconds.
func us64(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// cpuPerTurn is cpu in milliseconds per turn of res that ended without
// error; ok is false when none did.
func cpuPerTurn(cpu time.Duration, res Result) (ms float64, ok bool) {
	done := res.N - res.Errors
	if done <= 0 {
		return 0, false
	}
	return cpu.Seconds() * 1000 / float64(done), true
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
	fmt.Fprintf(w, "measured after %s of warm-up, the paths taking turns in blocks of %s; turns start on an\n", o.warmup, o.block)
	fmt.Fprintf(w, "open-loop schedule. Session setups: `memory` and\n")
	fmt.Fprintf(w, "`redis` send every turn on a new session (`X-Session-Id`), `stateless` sends none.\n\n")

	table(w, 3, "Latency and time to first token (TTFT: to the first content delta), in ms:",
		"scenario", "sessions", "path", "turns/s", "p50", "p90", "p99", "TTFT p50", "TTFT p90", "TTFT p99", "errors")
	type path struct {
		name string
		res  Result
	}
	for _, x := range r.rows {
		paths := []path{{"direct", x.Direct}, {"agentgate", x.Via}}
		if x.Floor != nil {
			paths = slices.Insert(paths, 1, path{"net/http proxy", *x.Floor})
		}
		for _, p := range paths {
			ttft := [3]string{"–", "–", "–"}
			if x.Scenario.Stream {
				ttft = [3]string{ms(Pct(p.res.TTFT, 50)), ms(Pct(p.res.TTFT, 90)), ms(Pct(p.res.TTFT, 99))}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %d |\n", x.Scenario.Name, x.Setup, p.name,
				p.res.Throughput(), ms(Pct(p.res.Lat, 50)), ms(Pct(p.res.Lat, 90)), ms(Pct(p.res.Lat, 99)),
				ttft[0], ttft[1], ttft[2], p.res.Errors)
		}
	}
	table(w, 2, "The gateway's own cost (agentgate minus direct, in µs), its CPU time per 1,000 turns, and the\n"+
		"session-store operations per turn (lock and unlock included; one Redis round trip each):",
		"scenario", "sessions", "turns/s", "Δp50", "Δp90", "Δp99", "ΔTTFT p50", "ΔTTFT p99", "CPU s / 1,000 turns", "store ops / turn")
	for _, x := range r.rows {
		d, v := x.Direct, x.Via
		dt := [2]string{"–", "–"}
		if x.Scenario.Stream {
			dt = [2]string{diff(Pct(d.TTFT, 50), Pct(v.TTFT, 50)), diff(Pct(d.TTFT, 99), Pct(v.TTFT, 99))}
		}
		cpu, ops := perTurn("%.3f", x.CPU.Seconds()*1000, v), perTurn("%.1f", x.StoreOps, v)
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", x.Scenario.Name, x.Setup, x.Rate,
			diff(Pct(d.Lat, 50), Pct(v.Lat, 50)), diff(Pct(d.Lat, 90), Pct(v.Lat, 90)), diff(Pct(d.Lat, 99), Pct(v.Lat, 99)),
			dt[0], dt[1], cpu, ops)
	}
	rtt(w, "One Redis round trip (`PING`)", r.redisRTT)
	r.writeFloor(w)
	r.writeDeltas(w)
	r.writeRatios(w)
	if len(r.open) > 0 {
		table(w, 2, "Streams held open at once (the mock holds each after its first delta; the bare net/http proxy\n"+
			"shows what the hop alone takes):",
			"through", "sessions", "streams", "open (gauge)", "all open after", "RSS before → during (MiB)", "RSS / stream", "Go heap in use / stream", "Go stacks / stream", "goroutines / stream")
		for _, x := range r.open {
			open := "–" // the floor proxy keeps no gauge
			if x.Through == "agentgate" {
				open = fmt.Sprintf("%.0f", x.Open)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %.1f → %.1f | %.1f KiB | %.1f KiB | %.1f KiB | %.1f |\n", x.Through, x.Setup, x.N, open,
				x.OpenedIn.Round(time.Millisecond), float64(x.RSSBefore)/(1<<20), float64(x.RSSDuring)/(1<<20),
				x.RSSPer/1024, x.HeapPer/1024, x.StackPer/1024, x.GoroutinesPer)
		}
	}
	var errs []string
	for _, x := range r.rows {
		var paths []Result
		for _, ph := range []*phase{&x.phase, x.C1} {
			if ph == nil {
				continue
			}
			paths = append(paths, ph.Direct, ph.Via)
			if ph.Floor != nil {
				paths = append(paths, *ph.Floor)
			}
		}
		for _, res := range paths {
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
