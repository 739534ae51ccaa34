package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

func runFrame(text string) runs.Frame {
	return runs.Frame{Data: []byte(`"` + text + `"`)}
}

func frameTexts(t *testing.T, frames []runs.Frame) []string {
	t.Helper()
	var out []string
	for _, f := range frames {
		var s string
		if err := json.Unmarshal(f.Data, &s); err != nil {
			t.Fatalf("frame %d: %v", f.Seq, err)
		}
		out = append(out, fmt.Sprintf("%d:%s", f.Seq, s))
	}
	return out
}

// TestRunLog: the Redis run log numbers, reads after a cursor, bounds,
// ends and expires a run's frames as the memory log does.
func TestRunLog(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{URL: srv.URL("")})
	log := st.RunLog(RunLogConfig{Retention: time.Minute, MaxFrames: 3})
	ctx := context.Background()
	if _, _, err := log.Read(ctx, "r", -1, 0); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("Read of no log: %v", err)
	}
	if err := log.Open(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if frames, ended, err := log.Read(ctx, "r", -1, 0); err != nil || ended || len(frames) != 0 {
		t.Errorf("Read of an open, empty log: %v %v %v", frames, ended, err)
	}
	if err := log.Open(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"a", "b", "c", "d"} {
		f := runFrame(text)
		if i == 1 { // a frame given as its event is stored as its JSON
			f = runs.Frame{Event: &sessions.Event{ID: "b"}}
		}
		if seq, err := log.Append(ctx, "r", f); err != nil || seq != int64(i) {
			t.Fatalf("Append %s = %d, %v", text, seq, err)
		}
	}
	for _, tc := range []struct {
		after, limit int
		want         []string
		err          error
	}{
		{after: 1, want: []string{"2:c", "3:d"}},
		{after: 1, limit: 1, want: []string{"2:c"}},
		{after: 3, want: nil},
		{after: -1, err: runs.ErrTrimmed}, // frames 0 and 1 are gone (MaxFrames 3)
		{after: 4, err: runs.ErrCursor},
		{after: -2, err: runs.ErrCursor},
	} {
		frames, ended, err := log.Read(ctx, "r", int64(tc.after), tc.limit)
		if !errors.Is(err, tc.err) || ended {
			t.Errorf("Read(after %d) ended %v err %v, want %v", tc.after, ended, err, tc.err)
		}
		if d := cmp.Diff(tc.want, frameTexts(t, frames)); d != "" {
			t.Errorf("Read(after %d) (-want +got):\n%s", tc.after, d)
		}
	}
	// Follow gets what is there, then what comes, until the end.
	got := make(chan []string, 1)
	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		var out []runs.Frame
		for f, err := range log.Follow(followCtx, "r", 2) {
			if err != nil {
				t.Errorf("Follow: %v", err)
				break
			}
			out = append(out, f)
		}
		got <- frameTexts(t, out)
	}()
	if _, err := log.Append(ctx, "r", runFrame("e")); err != nil {
		t.Fatal(err)
	}
	if err := log.End(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"3:d", "4:e"}, <-got); d != "" {
		t.Errorf("Follow (-want +got):\n%s", d)
	}
	if _, err := log.Append(ctx, "r", runFrame("x")); !errors.Is(err, runs.ErrEnded) {
		t.Errorf("Append after End: %v", err)
	}
	if err := log.End(ctx, "r"); err != nil {
		t.Errorf("End again: %v", err)
	}
	if frames, ended, err := log.Read(ctx, "r", 3, 1); err != nil || !ended || len(frames) != 1 {
		t.Errorf("a read to the end of an ended log: %v ended %v %v", frameTexts(t, frames), ended, err)
	}
	if _, ended, err := log.Read(ctx, "r", 2, 1); err != nil || ended {
		t.Errorf("a partial read of an ended log says ended %v (%v)", ended, err)
	}
	if _, _, err := log.Read(ctx, "r", 5, 0); !errors.Is(err, runs.ErrCursor) {
		t.Errorf("a cursor on the end entry: %v", err)
	}
	ttl := st.client.PTTL(ctx, log.key("r")).Val()
	if ttl <= 0 || ttl > time.Minute {
		t.Errorf("the log expires in %v, want within runs.retention (1m)", ttl)
	}
	// A follower of a live log stops with its context.
	if err := log.Open(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	liveCtx, stop := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() {
		for _, err := range log.Follow(liveCtx, "live", -1) {
			errs <- err
			return
		}
		errs <- nil
	}()
	stop()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("Follow after its context ended: %v", err)
	}
}
