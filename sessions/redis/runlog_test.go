package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	goredis "github.com/redis/go-redis/v9"
	"google.golang.org/genai"

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
		if i == 1 { // a frame given as its event
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

// TestRunLogFrameForms: by default a frame given as an event that packs
// is kept packed, in less than its JSON, one that does not pack (or given
// as JSON) as its JSON, and reads give each back with the same JSON and
// event; with JSONFrames every frame is its JSON; a log written as JSON
// (with JSONFrames, or by a version that did not pack: entries added here
// as it added them) reads as it did, and a packed frame that does not
// unpack is an error, not a panic.
func TestRunLogFrameForms(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{URL: srv.URL("")})
	log := st.RunLog(RunLogConfig{Retention: time.Minute}) // the default: packed
	ctx := context.Background()
	ts := time.Date(2026, 11, 26, 17, 0, 0, 123456789, time.UTC) // the wire form keeps µs
	delta := &sessions.Event{ID: "e1", InvocationID: "inv", Author: "agent", Timestamp: ts, Partial: true,
		Content: genai.NewContentFromText("hello, world", genai.RoleModel)}
	call := &sessions.Event{ID: "e2", InvocationID: "inv", Author: "agent", Timestamp: ts,
		Content: genai.NewContentFromFunctionCall("lookup", map[string]any{"q": "x"}, genai.RoleModel)}
	user, err := (&sessions.Event{ID: "e3", Author: "user", Timestamp: ts,
		Content: genai.NewContentFromText("hi", genai.RoleUser)}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	given := []runs.Frame{{Event: delta}, {Event: call}, {Data: user}}
	var want [][]byte
	for _, f := range given {
		b, err := f.JSON()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, b)
		if _, err := log.Append(ctx, "r", f); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.End(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	stored := st.client.XRange(ctx, log.key("r"), "0-2", "0-4").Val()
	if len(stored) != 3 {
		t.Fatalf("stream has %d frames, want 3", len(stored))
	}
	if d := stored[0].Values["d"].(string); d[0] != framePacked || len(d) >= len(want[0])/2 {
		t.Errorf("the delta is kept as %q (%d bytes; its JSON %d), want it packed", d, len(d), len(want[0]))
	}
	for i := 1; i < 3; i++ {
		if d := stored[i].Values["d"].(string); d != string(want[i]) {
			t.Errorf("frame %d kept as %q, want its JSON %s", i, d, want[i])
		}
	}
	check := func(name string, frames []runs.Frame, want [][]byte) {
		t.Helper()
		if len(frames) != len(want) {
			t.Fatalf("%s: %d frames, want %d", name, len(frames), len(want))
		}
		for i, f := range frames {
			b, err := f.JSON()
			if err != nil || string(b) != string(want[i]) {
				t.Errorf("%s: frame %d JSON %s, %v; want %s", name, i, b, err, want[i])
			}
			ev, err := f.Decode()
			if err != nil {
				t.Fatalf("%s: frame %d: %v", name, i, err)
			}
			if b, _ := ev.MarshalJSON(); string(b) != string(want[i]) {
				t.Errorf("%s: frame %d decodes to %s, want %s", name, i, b, want[i])
			}
		}
	}
	frames, ended, err := log.Read(ctx, "r", -1, 0)
	if err != nil || !ended {
		t.Fatalf("Read: ended %v, %v", ended, err)
	}
	check("Read", frames, want)
	frames = nil
	for f, err := range log.Follow(ctx, "r", -1) {
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	check("Follow", frames, want)

	// With JSONFrames every frame is its JSON, read back the same.
	plain := st.RunLog(RunLogConfig{Retention: time.Minute, JSONFrames: true})
	for _, f := range given {
		if _, err := plain.Append(ctx, "plain", f); err != nil {
			t.Fatal(err)
		}
	}
	if err := plain.End(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	plainStored := st.client.XRange(ctx, plain.key("plain"), "0-2", "0-4").Val()
	if len(plainStored) != 3 {
		t.Fatalf("with JSONFrames the stream has %d frames, want 3", len(plainStored))
	}
	for i, m := range plainStored {
		if d := m.Values["d"].(string); d != string(want[i]) {
			t.Errorf("with JSONFrames, frame %d kept as %q, want its JSON %s", i, d, want[i])
		}
	}
	frames, ended, err = log.Read(ctx, "plain", -1, 0)
	if err != nil || !ended {
		t.Fatalf("Read of JSON frames: ended %v, %v", ended, err)
	}
	check("Read of JSON frames", frames, want)

	// A log an earlier version wrote: every frame its JSON.
	old := log.key("old")
	st.client.XAdd(ctx, &goredis.XAddArgs{Stream: old, ID: "0-1", Values: []string{"o", ""}})
	for i, b := range want {
		st.client.XAdd(ctx, &goredis.XAddArgs{Stream: old, ID: entryID(int64(i)), Values: []string{"d", string(b)}})
	}
	st.client.XAdd(ctx, &goredis.XAddArgs{Stream: old, ID: "0-5", Values: []string{"e", ""}})
	frames, ended, err = log.Read(ctx, "old", -1, 0)
	if err != nil || !ended {
		t.Fatalf("Read of an earlier version's log: ended %v, %v", ended, err)
	}
	check("Read of an earlier version's log", frames, want)
	for _, f := range frames {
		if f.Data == nil {
			t.Errorf("frame %d of an earlier version's log read as an event, want its JSON as kept", f.Seq)
		}
	}

	// A packed frame cut short.
	bad := log.key("bad")
	st.client.XAdd(ctx, &goredis.XAddArgs{Stream: bad, ID: "0-1", Values: []string{"o", ""}})
	d := stored[0].Values["d"].(string)
	st.client.XAdd(ctx, &goredis.XAddArgs{Stream: bad, ID: entryID(0), Values: []string{"d", d[:len(d)-3]}})
	if _, _, err := log.Read(ctx, "bad", -1, 0); !errors.Is(err, errCorrupt) {
		t.Errorf("Read of a packed frame cut short: %v, want errCorrupt", err)
	}
	for _, err := range log.Follow(ctx, "bad", -1) {
		if !errors.Is(err, errCorrupt) {
			t.Errorf("Follow of a packed frame cut short: %v, want errCorrupt", err)
		}
		break
	}
}

// TestRunIndex: runs put on one store's index are read from another's (as
// from another replica), and a cancel published on one reaches the
// listener of the other.
func TestRunIndex(t *testing.T) {
	srv := startServer(t)
	prefix := fmt.Sprintf("test%d:", prefixes.Add(1))
	x1 := newStore(t, Config{URL: srv.URL(""), KeyPrefix: prefix}).RunIndex()
	x2 := newStore(t, Config{URL: srv.URL(""), KeyPrefix: prefix}).RunIndex()
	ctx := context.Background()
	t0 := time.UnixMicro(time.Now().UnixMicro())
	in := runs.Info{ID: "inv-1", App: "app", User: "u", Session: "s", Status: runs.StatusRunning, Started: t0, Updated: t0}
	if err := x1.Put(ctx, in, time.Minute); err != nil {
		t.Fatal(err)
	}
	in.Status, in.Ended, in.Updated = runs.StatusCompleted, t0.Add(time.Second), t0.Add(time.Second)
	if err := x1.Put(ctx, in, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := x2.Get(ctx, "app", "u", "s", "inv-1")
	if err != nil || !got.Started.Equal(in.Started) || !got.Ended.Equal(in.Ended) || got.Status != runs.StatusCompleted {
		t.Errorf("Get on the other store: %+v %v, want %+v", got, err, in)
	}
	if _, err := x2.Get(ctx, "app", "u", "other", "inv-1"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("another session's run: %v", err)
	}
	if list, err := x2.List(ctx, "app", "u", "s"); err != nil || len(list) != 1 || list[0].ID != "inv-1" {
		t.Errorf("List: %+v %v", list, err)
	}
	if ttl := x1.s.client.PTTL(ctx, x1.key("app", "u", "s")).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("the index expires in %v, want within a minute", ttl)
	}

	listenCtx, stop := context.WithCancel(ctx)
	heard := make(chan runs.CancelRequest, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for req := range x2.Cancels(listenCtx) {
			select {
			case heard <- req:
			case <-listenCtx.Done():
			}
		}
	}()
	// The subscription starts on the listener's goroutine: publish until
	// it is heard. A run's cancel travels as its id, a session's as JSON.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var prev runs.CancelRequest
	for _, want := range []runs.CancelRequest{{ID: "inv-2"}, {App: "app", User: "u", Session: "s", Before: 7}, {ID: `{"not":"a session"}`}} {
		for heardIt := false; !heardIt; {
			if err := x1.Cancel(ctx, want); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-heard:
				switch got {
				case want:
					heardIt = true
				case prev: // a repeat of the previous one, published before it was heard
				default:
					t.Fatalf("heard %+v, want %+v", got, want)
				}
			case <-tick.C:
			}
		}
		prev = want
	}
	stop()
	<-done // the listener returns once its context ended
}

// BenchmarkRunLogMemory reports what Redis holds (MEMORY USAGE) for one
// retained run of a streamed turn: 40 text deltas and a final event, as
// /run_sse frames.
func BenchmarkRunLogMemory(b *testing.B) {
	srv := startServer(b)
	st := newStore(b, Config{URL: srv.URL("")})
	ctx := context.Background()
	// json: frames given as their JSON (/run_sse's); events: frames given
	// as events (the OpenAI and A2A surfaces'), packed by default, or
	// their JSON with JSONFrames.
	for _, c := range []struct {
		name  string
		cfg   RunLogConfig
		asRaw bool
	}{{"json", RunLogConfig{}, true}, {"events", RunLogConfig{}, false}, {"events-json", RunLogConfig{JSONFrames: true}, false}} {
		b.Run(c.name, func(b *testing.B) {
			log := st.RunLog(c.cfg)
			frame := func(text string, partial bool) runs.Frame {
				ev := &sessions.Event{ID: "3f7df883-4197-488a-b69c-dd201d235246", InvocationID: "e-b38fa3ae-52c0-47fa-9fd1-01781af5a7aa",
					Author: "desk", Partial: partial, Timestamp: time.Now(),
					Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: text}}}}
				if !c.asRaw {
					return runs.Frame{Event: ev}
				}
				js, _ := json.Marshal(ev)
				return runs.Frame{Data: js}
			}
			var total int64
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprint("e-", c.name, "-", i)
				for range 40 {
					if _, err := log.Append(ctx, id, frame("a delta of text", true)); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := log.Append(ctx, id, frame(strings.Repeat("a delta of text", 40), false)); err != nil {
					b.Fatal(err)
				}
				if err := log.End(ctx, id); err != nil {
					b.Fatal(err)
				}
				total += st.client.MemoryUsage(ctx, log.key(id)).Val()
			}
			b.ReportMetric(float64(total)/float64(b.N), "redis-bytes/run")
		})
	}
}
