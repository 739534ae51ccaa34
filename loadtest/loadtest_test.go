package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
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
	args := []string{"-quick", "-sessions", setups, "-duration", "300ms", "-warmup", "0s", "-open-streams", "20", "-rate", "50", "-stream-rate", "20"}
	if err := run(context.Background(), args, &out, &errs); err != nil {
		t.Fatalf("run: %v\n%s", err, errs.String())
	}
	report := out.String()
	if strings.Contains(report, "Errors:") {
		t.Errorf("turns failed:\n%s", report)
	}
	for _, want := range []string{"non-streaming pass-through | memory | agentgate", "agent tool | memory | agentgate", "| memory | 20 | 20 |"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}
