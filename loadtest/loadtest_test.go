package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
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
	// The ratios to the floor: for each pass-through scenario, one row per
	// measure, with its target and a verdict; none for the others.
	ratios := ratioRows(report)
	for _, sc := range []struct{ name, rate string }{{"non-streaming pass-through", "50"}, {"streaming pass-through", "20"}} {
		for measure, target := range map[string]string{"added latency p50, c=1": "≤ 1.25x", "added latency p99, c=1": "≤ 2x",
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

// ratioRows reads the rows of the ratios table, keyed by scenario,
// sessions and measure, each to its cells: agentgate, proxy, ratio, target
// and verdict.
func ratioRows(report string) map[string][]string {
	_, table, _ := strings.Cut(report, "Against the floor:")
	out := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 8 || cells[0] == "scenario" {
			continue
		}
		out[strings.Join(cells[:3], " | ")] = cells[3:]
	}
	return out
}

// The ratios to the floor, from figures whose outcome is known: added
// latency against the proxy's, CPU per turn against its, each met or not,
// and no ratio where the proxy's figure is 0.
func TestRatioReport(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Microsecond
		}
		return out
	}
	// p50 is the 1st of 2 samples, p99 the 2nd.
	direct := Result{N: 2, Lat: ms(1000, 2000)}
	floor := Result{N: 2, Lat: ms(1100, 2200)} // adds 100 and 200
	via := Result{N: 2, Lat: ms(1120, 2500)}   // adds 120 (1.20x) and 500 (2.50x)
	r := &report{rows: []row{{Scenario: scenarios[0], Setup: "memory", Rate: 100,
		phase: phase{Direct: direct, Via: Result{N: 4, Errors: 2}, Floor: &Result{N: 2}, CPU: 8 * time.Millisecond, FloorCPU: 0},
		C1:    &phase{Direct: direct, Via: via, Floor: &floor, CPU: 3 * time.Millisecond, FloorCPU: 2 * time.Millisecond}},
		{Scenario: scenarios[2], Setup: "memory", Rate: 100}, // no floor: no rows
	}}
	var b strings.Builder
	r.writeRatios(&b)
	want := []string{
		"| non-streaming pass-through | memory | added latency p50, c=1 | +120 | +100 | 1.20x | ≤ 1.25x | met |",
		"| non-streaming pass-through | memory | added latency p99, c=1 | +500 | +200 | 2.50x | ≤ 2x | **not met** |",
		"| non-streaming pass-through | memory | CPU per turn, c=1 | 1.500 | 1.000 | 1.50x | ≤ 1.5x | met |",
		"| non-streaming pass-through | memory | CPU per turn, at 100/s | 4.000 | 0.000 | – | ≤ 1.5x | not measured: the proxy's figure is not above 0 |",
	}
	_, table, _ := strings.Cut(b.String(), "|---|")
	got := strings.Split(strings.TrimSpace(table), "\n")[1:]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ratio rows (-want +got):\n%s\nreport:\n%s", diff, b.String())
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
