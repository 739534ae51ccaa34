package runs_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// The memory log hands the frame slices of logs that ended to later logs:
// what a log holds and what was read from it (live, then ended) never
// change as later logs reuse them, whatever their sizes and interleaving.
func TestMemoryLogReusedFramesKeepEachLog(t *testing.T) {
	ctx := context.Background()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{})
	type held struct {
		id   string
		want []string // each frame's JSON
		live []runs.Frame
	}
	var all []held
	frameJSON := func(t *testing.T, fs []runs.Frame) []string {
		t.Helper()
		out := make([]string, len(fs))
		for i, f := range fs {
			b, err := f.JSON()
			if err != nil {
				t.Fatal(err)
			}
			out[i] = fmt.Sprintf("%d %s", f.Seq, b)
		}
		return out
	}
	// Runs of 1 to 300 frames (past the bound of a slice kept), three
	// going on at once, ending in turn.
	var open []held
	for n := range 60 {
		h := held{id: fmt.Sprint("run-", n)}
		frames := 1 + (n*37)%40
		if n%17 == 0 {
			frames = 300
		}
		for i := range frames {
			var f runs.Frame
			if i%2 == 0 {
				f = runs.Frame{Event: textEvent("e-"+h.id, fmt.Sprint(h.id, " tok ", i))}
			} else {
				f = jsonFrame(t, textEvent("e-"+h.id, fmt.Sprint(h.id, " json ", i)))
			}
			if _, err := log.Append(ctx, h.id, f); err != nil {
				t.Fatal(err)
			}
			b, _ := f.JSON()
			h.want = append(h.want, fmt.Sprintf("%d %s", i, b))
		}
		live, ended, err := log.Read(ctx, h.id, -1, 0)
		if err != nil || ended {
			t.Fatalf("%s: live read: ended %v, %v", h.id, ended, err)
		}
		h.live = live
		open = append(open, h)
		if len(open) == 3 {
			if err := log.End(ctx, open[0].id); err != nil {
				t.Fatal(err)
			}
			all, open = append(all, open[0]), open[1:]
		}
	}
	for _, h := range open {
		if err := log.End(ctx, h.id); err != nil {
			t.Fatal(err)
		}
		all = append(all, h)
	}
	for _, h := range all {
		got, ended, err := log.Read(ctx, h.id, -1, 0)
		if err != nil || !ended {
			t.Fatalf("%s: read: ended %v, %v", h.id, ended, err)
		}
		if g := frameJSON(t, got); fmt.Sprint(g) != fmt.Sprint(h.want) {
			t.Errorf("%s: ended log\n got %q\nwant %q", h.id, g, h.want)
		}
		if g := frameJSON(t, h.live); fmt.Sprint(g) != fmt.Sprint(h.want) {
			t.Errorf("%s: frames read live changed\n got %q\nwant %q", h.id, g, h.want)
		}
	}
}

// An ended log with a frame whose event cannot be encoded keeps its
// frames as they were appended, ended, whether End encodes them under its
// lock (a small log) or outside it (a large one).
func TestMemoryLogUnencodableFramesKept(t *testing.T) {
	ctx := context.Background()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{})
	for _, n := range []int{1, 100} {
		id := fmt.Sprint("run-", n)
		var want []*sessions.Event
		for i := range n {
			ev := textEvent("e-"+id, fmt.Sprint("tok ", i))
			if i == n-1 {
				ev.Actions.StateDelta = map[string]any{"x": math.NaN()}
			}
			want = append(want, ev)
			if _, err := log.Append(ctx, id, runs.Frame{Event: ev}); err != nil {
				t.Fatal(err)
			}
		}
		if err := log.End(ctx, id); err != nil {
			t.Fatal(err)
		}
		got, ended, err := log.Read(ctx, id, -1, 0)
		if err != nil || !ended || len(got) != n {
			t.Fatalf("%s: read %d frames, ended %v, %v; want %d, ended", id, len(got), ended, err, n)
		}
		for i, f := range got {
			if f.Event != want[i] || f.Seq != int64(i) {
				t.Errorf("%s: frame %d is %d %p, want %d %p", id, i, f.Seq, f.Event, i, want[i])
			}
		}
		if _, err := log.Append(ctx, id, runs.Frame{Event: want[0]}); !errors.Is(err, runs.ErrEnded) {
			t.Errorf("%s: an append after the end: %v, want ErrEnded", id, err)
		}
	}
}
