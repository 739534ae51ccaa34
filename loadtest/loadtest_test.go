package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPct(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 50, 90: 90, 99: 99, 100: 100, 0: 1} {
		if got := Pct(d, p); got != want {
			t.Errorf("Pct(%v) = %v, want %v", p, got, want)
		}
	}
	if Pct(nil, 50) != 0 {
		t.Error("Pct of nothing")
	}
}

func TestHasContent(t *testing.T) {
	for chunk, want := range map[string]bool{
		`{"choices":[{"delta":{"role":"assistant","content":""}}]}`: false,
		`{"choices":[{"delta":{"content":"tok0 "}}]}`:               true,
		`{"choices":[{"delta":{"tool_calls":[]}}]}`:                 false,
		`{"choices":[{"delta":{"content":"`:                         false,
	} {
		if got := hasContent([]byte(chunk)); got != want {
			t.Errorf("hasContent(%s) = %v", chunk, got)
		}
	}
}

// TestPrebuiltFloor runs the floor proxy from -floor-bin rather than
// building one: a path that is not there fails the run, naming it.
func TestPrebuiltFloor(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-floorproxy")
	var out, errs strings.Builder
	err := run(context.Background(), []string{"-quick", "-scenarios", "nonstream", "-sessions", "stateless", "-open-streams", "0",
		"-gateway-bin", filepath.Join(dir, "gateway"), "-floor-bin", missing}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("run with a missing -floor-bin: %v, want an error naming %s", err, missing)
	}
}

// TestSmoke runs every scenario briefly through the real gateway binary and
// checks that no turn failed. It measures nothing.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the gateway")
	}
	setups := "memory"
	if _, err := exec.LookPath("redis-server"); err == nil {
		setups += ",redis"
	}
	var out, errs strings.Builder
	args := []string{"-quick", "-sessions", setups, "-duration", "300ms", "-warmup", "0s", "-open-streams", "20", "-rate", "50", "-stream-rate", "20",
		"-c1-duration", "300ms"}
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	report := out.String()
	if strings.Contains(setups, "redis") && !strings.Contains(report, "One Redis round trip") {
		t.Errorf("report lacks the Redis round trip:\n%s", report)
	}
	if strings.Contains(report, "agent tool | memory | net/http proxy") {
		t.Errorf("the floor proxy took the agent tool's turns:\n%s", report)
	}
	if strings.Contains(report, "Errors:") {
		t.Errorf("turns failed:\n%s", report)
	}
	for _, want := range []string{"non-streaming pass-through | memory | agentgate", "agent tool | memory | agentgate", "| agentgate | memory | 20 | 20 |", "| net/http proxy | – | 20 | – |",
		// The floor proxy takes the pass-through turns, and only those.
		"non-streaming pass-through | memory | net/http proxy", "streaming pass-through | memory | net/http proxy", "The hop alone", "one TCP round trip between two processes"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	// Per delta: every streamed scenario has a row for each path it took, a
	// figure on each, and what the path adds over direct; the pass-through
	// one at c=1 too.
	deltas := deltaRows(report)
	for _, key := range []string{"streaming pass-through | memory | 20/s | direct", "streaming pass-through | memory | 20/s | net/http proxy",
		"streaming pass-through | memory | 20/s | agentgate", "streaming pass-through | memory | c=1 | direct",
		"streaming pass-through | memory | c=1 | net/http proxy", "streaming pass-through | memory | c=1 | agentgate",
		"transfer tree | memory | 20/s | direct", "transfer tree | memory | 20/s | agentgate", "agent tool | memory | 20/s | agentgate"} {
		cells, ok := deltas[key]
		if !ok {
			t.Errorf("no per-delta row %q:\n%s", key, report)
			continue
		}
		want := deltaDirectRE
		if !strings.HasSuffix(key, "| direct") {
			want = deltaAddedRE
		}
		if got := strings.Join(cells, " | "); !want.MatchString(got) {
			t.Errorf("per-delta row %q: %q", key, got)
		}
	}
	for key := range deltas {
		if strings.HasPrefix(key, "non-streaming") {
			t.Errorf("a per-delta row for a non-streamed scenario: %s", key)
		}
	}
	// The ratios to the floor: for each pass-through scenario, one row per
	// measure, with its target and a verdict; none for the others. A
	// streamed turn's latency rows are per delta.
	ratios := ratioRows(report)
	for _, sc := range []struct{ name, rate, latency string }{{"non-streaming pass-through", "50", "added latency"},
		{"streaming pass-through", "20", "added latency per delta"}} {
		for measure, target := range map[string]string{sc.latency + " p50, c=1": "≤ 1.25x", sc.latency + " p99, c=1": "≤ 2x",
			"CPU per turn, c=1": "≤ 1.5x", "CPU per turn, at " + sc.rate + "/s": "≤ 1.5x"} {
			cells, ok := ratios[sc.name+" | memory | "+measure]
			if !ok {
				t.Errorf("no ratio row %q for %s:\n%s", measure, sc.name, report)
				continue
			}
			if cells[3] != target {
				t.Errorf("%s, %s: target %q, want %q", sc.name, measure, cells[3], target)
			}
			if !verdictRE.MatchString(cells[2] + " | " + cells[4]) {
				t.Errorf("%s, %s: ratio %q and verdict %q", sc.name, measure, cells[2], cells[4])
			}
		}
	}
	for key := range ratios {
		if strings.HasPrefix(key, "transfer tree") || strings.HasPrefix(key, "agent tool") {
			t.Errorf("a ratio row for a scenario the floor proxy does not take: %s", key)
		}
	}
}

// verdictRE matches a ratio cell and its verdict: a ratio and whether it
// met its target (negative when agentgate's turns were faster than the
// direct ones: noise in a short run), or no ratio and why.
var verdictRE = regexp.MustCompile(`^(-?\d+\.\d\dx \| (met|\*\*not met\*\*)|– \| not measured.*)$`)

// A per-delta row's figures (p50, p90, p99, added p50, added p99): direct
// adds nothing over itself, the other paths a signed figure each.
var (
	deltaDirectRE = regexp.MustCompile(`^\d+ \| \d+ \| \d+ \| – \| –$`)
	deltaAddedRE  = regexp.MustCompile(`^\d+ \| \d+ \| \d+ \| [+-]\d+ \| [+-]\d+$`)
)

// deltaRows reads the rows of the per-delta table, keyed by scenario,
// sessions, load and path, each to its figures.
func deltaRows(report string) map[string][]string {
	return tableRows(report, "Per delta (streamed turns):", 4, 9)
}

// ratioRows reads the rows of the ratios table, keyed by scenario,
// sessions and measure, each to its cells: agentgate, proxy, ratio, target
// and verdict.
func ratioRows(report string) map[string][]string {
	return tableRows(report, "Against the floor:", 3, 8)
}

// tableRows reads the rows of cols cells of the table introduced by
// intro, keyed by their first key cells (joined by " | "), each to the
// others.
func tableRows(report, intro string, key, cols int) map[string][]string {
	_, table, _ := strings.Cut(report, intro)
	out := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if line == "" && len(out) > 0 {
			break // the table's end
		}
		if !strings.HasPrefix(line, "| ") || len(cells) != cols || cells[0] == "scenario" {
			continue
		}
		out[strings.Join(cells[:key], " | ")] = cells[key:]
	}
	return out
}

// micros is v in microseconds.
func micros(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Microsecond
	}
	return out
}

// checkRows checks the rows, below its header, of the one table that write
// writes.
func checkRows(t *testing.T, write func(io.Writer), want []string) {
	t.Helper()
	var b strings.Builder
	write(&b)
	_, table, _ := strings.Cut(b.String(), "|---|")
	got := strings.Split(strings.TrimSpace(table), "\n")[1:]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s\nreport:\n%s", diff, b.String())
	}
}

// The ratios to the floor, from figures whose outcome is known: added
// latency against the proxy's, CPU per turn against its, each met or not,
// and no ratio where the proxy's figure is 0.
func TestRatioReport(t *testing.T) {
	// p50 is the 1st of 2 samples, p99 the 2nd.
	direct := Result{N: 2, Lat: micros(1000, 2000)}
	floor := Result{N: 2, Lat: micros(1100, 2200)} // adds 100 and 200
	via := Result{N: 2, Lat: micros(1120, 2500)}   // adds 120 (1.20x) and 500 (2.50x)
	r := &report{rows: []row{{Scenario: scenarios[0], Setup: "memory", Rate: 100,
		phase: phase{Direct: direct, Via: Result{N: 4, Errors: 2}, Floor: &Result{N: 2}, CPU: 8 * time.Millisecond, FloorCPU: 0},
		C1:    &phase{Direct: direct, Via: via, Floor: &floor, CPU: 3 * time.Millisecond, FloorCPU: 2 * time.Millisecond}},
		{Scenario: scenarios[2], Setup: "memory", Rate: 100}, // no floor: no rows
		// A streamed turn's latency rows compare the per-delta figures
		// (adding 50 and 100 through the proxy, 60 and 240 through
		// agentgate), not the whole turn's, which here would read as
		// not measured (the proxy's turns faster than direct).
		{Scenario: scenarios[1], Setup: "memory", Rate: 20,
			C1: &phase{Direct: Result{N: 2, Lat: micros(110000, 112000), Delta: micros(40, 60)},
				Via:   Result{N: 2, Lat: micros(111000, 113000), Delta: micros(100, 300)},
				Floor: &Result{N: 2, Lat: micros(109000, 111000), Delta: micros(90, 160)}, CPU: 2 * time.Millisecond, FloorCPU: 2 * time.Millisecond}},
	}}
	checkRows(t, r.writeRatios, []string{
		"| non-streaming pass-through | memory | added latency p50, c=1 | +120 | +100 | 1.20x | ≤ 1.25x | met |",
		"| non-streaming pass-through | memory | added latency p99, c=1 | +500 | +200 | 2.50x | ≤ 2x | **not met** |",
		"| non-streaming pass-through | memory | CPU per turn, c=1 | 1.500 | 1.000 | 1.50x | ≤ 1.5x | met |",
		"| non-streaming pass-through | memory | CPU per turn, at 100/s | 4.000 | 0.000 | – | ≤ 1.5x | not measured: the proxy's figure is not above 0 |",
		"| streaming pass-through | memory | added latency per delta p50, c=1 | +60 | +50 | 1.20x | ≤ 1.25x | met |",
		"| streaming pass-through | memory | added latency per delta p99, c=1 | +240 | +100 | 2.40x | ≤ 2x | **not met** |",
		"| streaming pass-through | memory | CPU per turn, c=1 | 1.000 | 1.000 | 1.00x | ≤ 1.5x | met |",
		"| streaming pass-through | memory | CPU per turn, at 20/s | 0.000 | 0.000 | – | ≤ 1.5x | not measured |",
	})
}

// The per-delta table, from figures whose outcome is known: a row per
// path of each streamed scenario, at its rate and at c=1, with what each
// path adds over direct; nothing for a non-streamed scenario.
func TestDeltaReport(t *testing.T) {
	r := &report{rows: []row{
		{Scenario: scenarios[0], Setup: "memory", Rate: 100, phase: phase{Direct: Result{N: 1, Lat: micros(1000)}, Via: Result{N: 1, Lat: micros(1200)}}},
		{Scenario: scenarios[1], Setup: "redis", Rate: 20,
			phase: phase{Direct: Result{N: 2, Delta: micros(30, 50)}, Via: Result{N: 2, Delta: micros(130, 170)}},
			C1: &phase{Direct: Result{N: 2, Delta: micros(40, 60)}, Via: Result{N: 2, Delta: micros(100, 300)},
				Floor: &Result{N: 2, Delta: micros(90, 160)}}},
	}}
	checkRows(t, r.writeDeltas, []string{
		"| streaming pass-through | redis | 20/s | direct | 30 | 50 | 50 | – | – |",
		"| streaming pass-through | redis | 20/s | agentgate | 130 | 170 | 170 | +100 | +120 |",
		"| streaming pass-through | redis | c=1 | direct | 40 | 60 | 60 | – | – |",
		"| streaming pass-through | redis | c=1 | net/http proxy | 90 | 160 | 160 | +50 | +100 |",
		"| streaming pass-through | redis | c=1 | agentgate | 100 | 300 | 300 | +60 | +240 |",
	})
}

// readStream gives each stamped delta's age from its stamp to its read:
// at least how long ago the stamp was made, each stamp once (a line that
// repeats the text already passed on adds nothing), a stamp across events
// and beside a stray '@' read alike.
func TestReadStreamDeltaAges(t *testing.T) {
	sent := time.Since(epoch)
	time.Sleep(3 * time.Millisecond) // the stamps at least 3 ms old when read
	w0, w1, w2 := stampedWord(0, sent), stampedWord(1, sent+time.Microsecond), stampedWord(2, sent+2*time.Microsecond)
	if len(stampedWord(7, 1)) != len(stampedWord(7, 1<<50)) {
		t.Errorf("a stamp's size depends on its time: %q, %q", stampedWord(7, 1), stampedWord(7, 1<<50))
	}
	chunk := func(content string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + content + `"}}]}` + "\n\n"
	}
	body := chunk("") + chunk(w0) + chunk("mail me @ home "+w1) + chunk(w2) + chunk(w0+w1+w2) + "data: [DONE]\n\n"
	var ages []time.Duration
	first := 0
	if err := readStream(strings.NewReader(body), func() { first++ }, &ages); err != nil {
		t.Fatal(err)
	}
	if first != 1 || len(ages) != 3 {
		t.Fatalf("first content seen %d times, ages %v; want once and 3 ages", first, ages)
	}
	for i, a := range ages {
		if a < 3*time.Millisecond-2*time.Microsecond {
			t.Errorf("delta %d: age %v, below the 3 ms since it was stamped", i, a)
		}
	}
}

// The mock upstream stamps every content delta of a streamed answer, and
// the client reads each stamp once: one age per delta, none for an answer
// asked for whole.
func TestUpstreamStampsEveryDelta(t *testing.T) {
	up, err := StartUpstream(UpstreamConfig{Chunks: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	c := newClient()
	for _, sc := range scenarios {
		s := c.direct(context.Background(), up.BaseURL(), sc)
		if s.Err != nil {
			t.Fatalf("%s: %v", sc.Name, s.Err)
		}
		want := 0
		if sc.Stream {
			want = 5
		}
		if s.Deltas != want || (want > 0) != (s.Delta > 0) {
			t.Errorf("%s: %d deltas stamped (median age %v), want %d", sc.Name, s.Deltas, s.Delta, want)
		}
	}
}

// flushHook records a response and calls onFlush with what each flush
// sends.
type flushHook struct {
	*httptest.ResponseRecorder
	sent    int
	onFlush func(chunk []byte)
}

func (f *flushHook) Flush() {
	f.ResponseRecorder.Flush()
	chunk := f.Body.Bytes()[f.sent:]
	f.sent += len(chunk)
	f.onFlush(chunk)
}

// A held stream ends once Release is called after its first delta, also
// when the call comes before the handler runs again after sending it (a
// client that sees the delta at once): the flush of the first delta calls
// Release itself.
func TestUpstreamReleaseRightAfterFirstDelta(t *testing.T) {
	up, err := StartUpstream(UpstreamConfig{Chunks: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	released := false
	w := &flushHook{ResponseRecorder: httptest.NewRecorder(), onFlush: func(chunk []byte) {
		if !released && hasContent(chunk) {
			released = true
			up.Release()
		}
	}}
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(userBody("hold", true)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		up.chat(w, r)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		up.Release() // let the handler go; the test has failed
		<-done
		t.Fatal("the held stream missed the Release that came right after its first delta")
	}
	if !released || !strings.HasSuffix(w.Body.String(), "data: [DONE]\n\n") {
		t.Errorf("released %v; stream:\n%s", released, w.Body.String())
	}
}

// startRedis starts a server of its own each time (the one that answers
// reports the started process's pid), and stop ends it.
func TestStartRedisOwnServer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server")
	}
	pids := map[int]bool{}
	for range 2 {
		url, stop, err := startRedis(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		addr := strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")
		pid, err := redisPID(addr)
		if err != nil {
			stop()
			t.Fatalf("INFO from %s: %v", addr, err)
		}
		pids[pid] = true
		stop()
		if _, err := redisPID(addr); err == nil {
			t.Errorf("a server still answers on %s after stop", addr)
		}
	}
	if len(pids) != 2 {
		t.Errorf("two starts answered with pids %v, want two servers", pids)
	}
}
