package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func textEvent(inv, text string) *sessions.Event {
	return &sessions.Event{ID: "ev-" + text, InvocationID: inv, Author: "a",
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: text}}}}
}

// jsonFrame is a frame holding ev's JSON.
func jsonFrame(t testing.TB, ev *sessions.Event) runs.Frame {
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return runs.Frame{Data: b}
}

// frameText is the text of a frame's event, read from its JSON.
func frameText(f runs.Frame) string {
	b, err := f.JSON()
	if err != nil {
		return err.Error()
	}
	var ev sessions.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		return err.Error()
	}
	return ev.Text()
}

func texts(frames []runs.Frame) []string {
	var out []string
	for _, f := range frames {
		out = append(out, fmt.Sprintf("%d:%s", f.Seq, frameText(f)))
	}
	return out
}

func TestRegistryLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	reg := runs.NewRegistry(runs.Config{Now: clk.Now})

	done, doneCtx, err := reg.Start(ctx, runs.Spec{ID: "inv-1", App: "app", User: "u", Session: "s", Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// A run started without its id is live but not found by id until named.
	late, _, err := reg.Start(ctx, runs.Spec{App: "app", User: "u", Session: "s", Queued: true, Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Live(); got != 2 {
		t.Fatalf("live runs %d, want 2", got)
	}
	if got := late.Info().Status; got != runs.StatusQueued {
		t.Errorf("queued run is %s", got)
	}
	_ = late.Begin(ctx)
	clk.add(time.Second)
	if err := late.SetID(ctx, "inv-2"); err != nil {
		t.Fatal(err)
	}
	if err := late.SetID(ctx, "inv-3"); err != nil || late.ID() != "inv-2" {
		t.Errorf("a named run renamed: %q %v", late.ID(), err)
	}
	got, err := reg.Get(ctx, "inv-2")
	if err != nil || got != late {
		t.Fatalf("Get(inv-2) = %v, %v", got, err)
	}

	done.Finish(ctx, nil)
	if doneCtx.Err() == nil {
		t.Error("a finished run's context is still live")
	}
	select {
	case <-done.Done():
	default:
		t.Error("Done is not closed after Finish")
	}
	late.Cancel(errors.New("stop"))
	late.Finish(ctx, context.Canceled)
	late.Cancel(errors.New("again")) // a finished run: nothing happens

	list, err := reg.List(ctx, "app", "u", "s")
	if err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now().Add(-time.Second)
	want := []runs.Info{
		{ID: "inv-1", App: "app", User: "u", Session: "s", Status: runs.StatusCompleted, Started: t0, Updated: clk.Now(), Ended: clk.Now()},
		{ID: "inv-2", App: "app", User: "u", Session: "s", Status: runs.StatusCancelled, Started: t0, Updated: clk.Now(), Ended: clk.Now()},
	}
	if d := cmp.Diff(want, list); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
	if reg.Live() != 0 {
		t.Errorf("live runs after both finished: %d", reg.Live())
	}
	// Kept for their retention, then forgotten.
	clk.add(time.Minute + time.Second)
	if _, err := reg.Get(ctx, "inv-1"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("Get after retention: %v, want ErrNotFound", err)
	}
}

func TestRegistryStatusOfTheEnd(t *testing.T) {
	ctx := context.Background()
	reg := runs.NewRegistry(runs.Config{})
	for _, tc := range []struct {
		name   string
		cancel error
		err    error
		want   runs.Status
	}{
		{"completed", nil, nil, runs.StatusCompleted},
		{"failed", nil, errors.New("model down"), runs.StatusFailed},
		{"client gone", nil, context.Canceled, runs.StatusCancelled},
		{"cancelled by id", errors.New("by user"), errors.New("by user"), runs.StatusCancelled},
		{"cancelled, then completed", errors.New("late"), nil, runs.StatusCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, runCtx, err := reg.Start(ctx, runs.Spec{ID: tc.name, Retention: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if tc.cancel != nil {
				if err := reg.Cancel(ctx, tc.name, tc.cancel); err != nil {
					t.Fatal(err)
				}
				if !errors.Is(context.Cause(runCtx), tc.cancel) {
					t.Errorf("cause %v, want %v", context.Cause(runCtx), tc.cancel)
				}
			}
			run.Finish(ctx, tc.err)
			if got := run.Info().Status; got != tc.want {
				t.Errorf("status %s, want %s", got, tc.want)
			}
			if !errors.Is(run.Err(), tc.err) {
				t.Errorf("Err() = %v, want %v", run.Err(), tc.err)
			}
		})
	}
	if err := reg.Cancel(ctx, "nobody", nil); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("Cancel of an unknown run: %v", err)
	}
}

func TestRegistryMaxEndedAndReplace(t *testing.T) {
	ctx := context.Background()
	reg := runs.NewRegistry(runs.Config{MaxEnded: 2})
	var first *runs.Run
	for i := range 3 {
		run, _, err := reg.Start(ctx, runs.Spec{ID: fmt.Sprint("r", i), Retention: time.Hour, Value: i})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = run
		}
		run.Finish(ctx, nil)
	}
	if _, err := reg.Get(ctx, "r0"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("the oldest of three ended runs beyond MaxEnded 2 is kept: %v", err)
	}
	// A new run of an ended run's id replaces it.
	again, _, err := reg.Start(ctx, runs.Spec{ID: "r1", Value: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := reg.Get(ctx, "r1"); got != again || got.Value() != "again" {
		t.Errorf("Get(r1) after a restart = %v", got.Value())
	}
	again.Finish(ctx, nil) // no retention: forgotten at once
	if _, err := reg.Get(ctx, "r1"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("a run without retention is kept: %v", err)
	}
	_ = first
}

// An unreachable run (a stateless turn's) is found by id while it runs,
// and forgotten by the registry as it ends; the index is told its end
// with the run's retention all the same.
func TestRegistryForgetsUnreachableRuns(t *testing.T) {
	ctx := context.Background()
	idx := &retentionIndex{fakeIndex: &fakeIndex{runs: map[string]runs.Info{}}}
	reg := runs.NewRegistry(runs.Config{Index: idx})
	t.Cleanup(reg.Close)
	run, _, err := reg.Start(ctx, runs.Spec{ID: "inv", App: "app", User: "u", Session: "~tmp-1", Retention: time.Hour, Unreachable: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := reg.Get(ctx, "inv"); got != run || err != nil {
		t.Errorf("Get of the live run = %v, %v", got, err)
	}
	run.Finish(ctx, nil)
	if _, err := reg.Get(ctx, "inv"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("an ended unreachable run is kept: %v", err)
	}
	if got := idx.putsOf("inv"); !slices.Equal(got, []runs.Status{runs.StatusRunning, runs.StatusCompleted}) {
		t.Errorf("index puts %v", got)
	}
	if idx.retention != time.Hour {
		t.Errorf("the index keeps it for %v", idx.retention)
	}
}

// retentionIndex is a fakeIndex that remembers the retention of the last
// put.
type retentionIndex struct {
	*fakeIndex
	retention time.Duration
}

func (x *retentionIndex) Put(ctx context.Context, in runs.Info, retention time.Duration) error {
	x.mu.Lock()
	x.retention = retention
	x.mu.Unlock()
	return x.fakeIndex.Put(ctx, in, retention)
}

// A run cancelled (by id, by the registry closing, or by its context)
// while its driver blocks: the driver sees the cause, finishes, and no
// goroutine is left.
func TestRegistryCancelPathsLeakNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, how := range []string{"cancel", "close", "parent"} {
		t.Run(how, func(t *testing.T) {
			reg := runs.NewRegistry(runs.Config{Log: runs.NewMemoryLog(runs.MemoryLogConfig{})})
			parent, stopParent := context.WithCancel(context.Background())
			defer stopParent()
			run, runCtx, err := reg.Start(parent, runs.Spec{ID: "inv"})
			if err != nil {
				t.Fatal(err)
			}
			// A follower attached before the run produced anything.
			frames, err := reg.Attach(context.Background(), "inv", -1)
			if err != nil {
				t.Fatal(err)
			}
			followed := make(chan []string)
			go func() {
				var got []string
				for f, err := range frames {
					if err != nil {
						got = append(got, "error: "+err.Error())
						break
					}
					got = append(got, frameText(f))
				}
				followed <- got
			}()
			if seq, err := run.Append(runCtx, runs.Frame{Event: textEvent("inv", "hello")}); err != nil || seq != 0 {
				t.Fatal(seq, err)
			}
			driven := make(chan error)
			go func() { // the driver, blocked until the run is cancelled
				<-runCtx.Done()
				err := context.Cause(runCtx)
				run.Finish(context.Background(), err)
				driven <- err
			}()
			var want error
			switch how {
			case "cancel":
				want = errors.New("stop it")
				if err := reg.Cancel(context.Background(), "inv", want); err != nil {
					t.Fatal(err)
				}
			case "close":
				want = runs.ErrShutdown
				if err := reg.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, _, err := reg.Start(context.Background(), runs.Spec{ID: "late"}); !errors.Is(err, runs.ErrShutdown) {
					t.Errorf("Start after Shutdown: %v", err)
				}
			case "parent":
				want = context.Canceled
				stopParent()
			}
			if err := <-driven; !errors.Is(err, want) {
				t.Errorf("the driver saw %v, want %v", err, want)
			}
			<-run.Done()
			wantStatus := runs.StatusCancelled
			if how == "close" {
				wantStatus = runs.StatusFailed // shutdown is no one's choice to stop
			}
			if got := run.Info().Status; got != wantStatus {
				t.Errorf("status %s, want %s", got, wantStatus)
			}
			if d := cmp.Diff([]string{"hello"}, <-followed); d != "" {
				t.Errorf("follower (-want +got):\n%s", d)
			}
		})
	}
}

func TestRegistryWithoutLog(t *testing.T) {
	ctx := context.Background()
	reg := runs.NewRegistry(runs.Config{})
	run, _, err := reg.Start(ctx, runs.Spec{ID: "inv"})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Finish(ctx, nil)
	if _, err := run.Append(ctx, runs.Frame{Event: textEvent("inv", "x")}); !errors.Is(err, runs.ErrNoLog) {
		t.Errorf("Append without a log: %v", err)
	}
	if _, err := reg.Attach(ctx, "inv", -1); !errors.Is(err, runs.ErrNoLog) {
		t.Errorf("Attach without a log: %v", err)
	}
}

func TestShutdownWaitsForRuns(t *testing.T) {
	reg := runs.NewRegistry(runs.Config{})
	run, runCtx, err := reg.Start(context.Background(), runs.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		<-runCtx.Done()
		close(ended)
		run.Finish(context.Background(), context.Cause(runCtx))
	}()
	if err := reg.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Shutdown returned before the run ended")
	}
	if reg.Live() != 0 {
		t.Errorf("live runs after Shutdown: %d", reg.Live())
	}
	// A run that does not end: Shutdown gives up with its context.
	reg2 := runs.NewRegistry(runs.Config{})
	stuck, _, _ := reg2.Start(context.Background(), runs.Spec{})
	defer stuck.Finish(context.Background(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := reg2.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown with a stuck run: %v", err)
	}
}

// Wait gives the runs their grace: it cancels none, waits for a run
// started while it waits too, and gives up with its context; Close after
// it ends the rest as shutdown (failed), and no run starts after that.
func TestWaitIsTheGraceBeforeClose(t *testing.T) {
	ctx := context.Background()
	reg := runs.NewRegistry(runs.Config{})
	first, firstCtx, err := reg.Start(ctx, runs.Spec{ID: "first"})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- reg.Wait(ctx) }()
	// A run starts while Wait waits, and the first finishes on its own.
	late, lateCtx, err := reg.Start(ctx, runs.Spec{ID: "late"})
	if err != nil {
		t.Fatal(err)
	}
	first.Finish(ctx, nil)
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while a run started meanwhile still runs", err)
	case <-time.After(50 * time.Millisecond):
	}
	if firstCtx.Err() != context.Canceled || lateCtx.Err() != nil {
		t.Errorf("Wait cancelled a run: first %v (ended by its Finish), late %v", firstCtx.Err(), lateCtx.Err())
	}
	late.Finish(ctx, nil)
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}

	// The grace runs out on a run that goes on: Close ends it.
	stuck, stuckCtx, err := reg.Start(ctx, runs.Spec{ID: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	grace, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := reg.Wait(grace); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its grace: %v", err)
	}
	go func() {
		<-stuckCtx.Done()
		stuck.Finish(ctx, context.Cause(stuckCtx))
	}()
	if err := reg.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if in := stuck.Info(); in.Status != runs.StatusFailed || !errors.Is(stuck.Err(), runs.ErrShutdown) {
		t.Errorf("a run ended by shutdown: %s %v, want failed with ErrShutdown", in.Status, stuck.Err())
	}
	if _, _, err := reg.Start(ctx, runs.Spec{ID: "after"}); !errors.Is(err, runs.ErrShutdown) {
		t.Errorf("Start after Shutdown: %v", err)
	}
}

func TestMemoryLogReadAfterCursor(t *testing.T) {
	ctx := context.Background()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{MaxFrames: 3})
	if _, _, err := log.Read(ctx, "r", -1, 0); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("Read of no log: %v", err)
	}
	for i, text := range []string{"a", "b", "c", "d"} {
		f := runs.Frame{Event: textEvent("r", text)}
		if i%2 == 1 { // a frame given as its JSON
			f = jsonFrame(t, f.Event)
		}
		if seq, err := log.Append(ctx, "r", f); err != nil || seq != int64(i) {
			t.Fatalf("Append %s = %d, %v", text, seq, err)
		}
	}
	for _, tc := range []struct {
		after, limit int
		want         []string
		ended        bool
		err          error
	}{
		{after: 0, want: []string{"1:b", "2:c", "3:d"}},
		{after: 1, limit: 1, want: []string{"2:c"}},
		{after: 3, want: nil},
		{after: -1, err: runs.ErrTrimmed}, // frame 0 is gone (MaxFrames 3)
		{after: 4, err: runs.ErrCursor},
		{after: -2, err: runs.ErrCursor},
	} {
		frames, ended, err := log.Read(ctx, "r", int64(tc.after), tc.limit)
		if !errors.Is(err, tc.err) || ended != tc.ended {
			t.Errorf("Read(after %d) ended %v err %v, want %v %v", tc.after, ended, err, tc.ended, tc.err)
		}
		if d := cmp.Diff(tc.want, texts(frames)); d != "" {
			t.Errorf("Read(after %d) (-want +got):\n%s", tc.after, d)
		}
	}
	if err := log.End(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, "r", runs.Frame{Event: textEvent("r", "e")}); !errors.Is(err, runs.ErrEnded) {
		t.Errorf("Append after End: %v", err)
	}
	frames, ended, err := log.Read(ctx, "r", 1, 1)
	if err != nil || ended || len(frames) != 1 {
		t.Errorf("a partial read of an ended log: %v ended %v %v", texts(frames), ended, err)
	}
	if _, ended, _ := log.Read(ctx, "r", 1, 0); !ended {
		t.Error("a read to the end of an ended log does not say it ended")
	}
}

// An ended log keeps its frames encoded: read after the end, they give
// the JSON of what was appended (the events', or the JSON as given),
// numbered as before, whatever the cursor and the limit.
func TestMemoryLogEndedFrames(t *testing.T) {
	ctx := context.Background()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{MaxFrames: 3})
	var want []string // the JSON of frames 2 to 4 (0 and 1 are trimmed)
	for i := range 5 {
		ev := textEvent("r", fmt.Sprint("<e", i, ">"))
		f := runs.Frame{Event: ev}
		switch i {
		case 1, 3: // given as JSON
			f = jsonFrame(t, ev)
		case 4: // an event with more than text
			ev.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 7}
		}
		if _, err := log.Append(ctx, "r", f); err != nil {
			t.Fatal(err)
		}
		if i >= 2 {
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf("%d:%s", i, b))
		}
	}
	if err := log.End(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	read := func(after int64, limit int) ([]runs.Frame, []string, bool) {
		t.Helper()
		frames, ended, err := log.Read(ctx, "r", after, limit)
		if err != nil {
			t.Fatalf("Read(after %d, limit %d): %v", after, limit, err)
		}
		var got []string
		for _, f := range frames {
			b, err := f.JSON()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d:%s", f.Seq, b))
		}
		return frames, got, ended
	}
	frames, got, ended := read(1, 0)
	if d := cmp.Diff(want, got); d != "" || !ended {
		t.Errorf("Read after the end, ended %v (-want +got):\n%s", ended, d)
	}
	if _, got, ended := read(2, 1); !cmp.Equal(want[1:2], got) || ended {
		t.Errorf("Read(after 2, limit 1) = %v, ended %v", got, ended)
	}
	if _, _, err := log.Read(ctx, "r", 0, 0); !errors.Is(err, runs.ErrTrimmed) {
		t.Errorf("a trimmed cursor after the end: %v", err)
	}
	if _, _, err := log.Read(ctx, "r", 5, 0); !errors.Is(err, runs.ErrCursor) {
		t.Errorf("a cursor past the end: %v", err)
	}
	// A reader that appends to a frame's JSON does not write into the
	// next frame's.
	for _, f := range frames {
		_ = append(f.Data, "garbage"...)
	}
	if _, again, _ := read(1, 0); !cmp.Equal(want, again) {
		t.Errorf("frames changed by a reader's append: %v", again)
	}
	// Decode gives the events back.
	for _, f := range frames {
		ev, err := f.Decode()
		if err != nil || !strings.HasPrefix(ev.Text(), "<e") || ev.InvocationID != "r" {
			t.Errorf("Decode(frame %d) = %+v, %v", f.Seq, ev, err)
		}
	}
	var last error
	var seqs []int64
	for f, err := range log.Follow(ctx, "r", 2) {
		if err != nil {
			last = err
			break
		}
		seqs = append(seqs, f.Seq)
	}
	if last != nil || !cmp.Equal([]int64{3, 4}, seqs) {
		t.Errorf("Follow of an ended log: %v %v", seqs, last)
	}
}

// TestMemoryLogEndedRunsHoldFewObjects: what an ended run's log leaves on
// the heap for every collection to mark is a few objects, not one set per
// event (a streamed turn is dozens of events of a dozen objects each).
func TestMemoryLogEndedRunsHoldFewObjects(t *testing.T) {
	ctx := context.Background()
	const runCount, frames = 1000, 20
	log := runs.NewMemoryLog(runs.MemoryLogConfig{MaxBytes: 1 << 30})
	ids := make([]string, runCount) // the ids are the test's: not counted
	for i := range ids {
		ids[i] = fmt.Sprint("e-", i)
	}
	before := liveObjects()
	for _, id := range ids {
		for i := range frames {
			if _, err := log.Append(ctx, id, runs.Frame{Event: textEvent(id, fmt.Sprint("delta ", i))}); err != nil {
				t.Fatal(err)
			}
		}
		if err := log.End(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	perRun := float64(liveObjects()-before) / runCount
	// The block its frames are encoded in, and the run's share of the
	// map and of the list of ended logs (a fraction of an object).
	if perRun > 1.5 {
		t.Errorf("an ended run of %d frames leaves %.1f objects live, want at most 1.5", frames, perRun)
	}
	if frames, _, err := log.Read(ctx, ids[0], -1, 0); err != nil || len(frames) != 20 {
		t.Fatalf("the oldest run: %d frames, %v", len(frames), err)
	}
	runtime.KeepAlive(log)
}

func liveObjects() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapObjects
}

func TestMemoryLogRetention(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{Retention: time.Minute, Now: clk.Now})
	for _, id := range []string{"old", "new"} {
		if _, err := log.Append(ctx, id, runs.Frame{Event: textEvent(id, id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.End(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Minute)
	if _, _, err := log.Read(ctx, "old", -1, 0); err != nil {
		t.Errorf("read within retention: %v", err)
	}
	clk.add(time.Second)
	if _, _, err := log.Read(ctx, "old", -1, 0); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("read after retention: %v, want ErrNotFound", err)
	}
	if frames, _, err := log.Read(ctx, "new", -1, 0); err != nil || len(frames) != 1 {
		t.Errorf("a live log is dropped with an ended one: %v %v", frames, err)
	}
}

// Follow gets what was logged, then the rest live, in order, while one
// goroutine appends; it ends with the log.
func TestMemoryLogFollowLive(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{})
	if err := log.Open(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, "r", runs.Frame{Event: textEvent("r", "e0")}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	got := make(chan []string, 2)
	for range 2 {
		go func() {
			var out []string
			for f, err := range log.Follow(ctx, "r", -1) {
				if err != nil {
					out = append(out, err.Error())
					break
				}
				out = append(out, fmt.Sprintf("%d:%s", f.Seq, frameText(f)))
			}
			got <- out
		}()
	}
	for i := 1; i < n; i++ {
		if _, err := log.Append(ctx, "r", runs.Frame{Event: textEvent("r", fmt.Sprint("e", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.End(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("%d:e%d", i, i))
	}
	for range 2 {
		if d := cmp.Diff(want, <-got); d != "" {
			t.Errorf("follower (-want +got):\n%s", d)
		}
	}
}

// A follower whose context ends while it waits returns with the context's
// error, and leaves no goroutine behind; one that stops ranging returns.
func TestMemoryLogFollowCancelled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	log := runs.NewMemoryLog(runs.MemoryLogConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := log.Append(ctx, "r", runs.Frame{Event: textEvent("r", "only")}); err != nil {
		t.Fatal(err)
	}
	res := make(chan error)
	go func() {
		var last error
		for _, err := range log.Follow(ctx, "r", 0) {
			last = err
		}
		res <- last
	}()
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("follower ended with %v", err)
	}
	for f := range log.Follow(context.Background(), "r", -1) {
		if f.Event.Text() != "only" {
			t.Errorf("frame %v", f)
		}
		break
	}
	var last error
	for _, err := range log.Follow(context.Background(), "none", -1) {
		last = err
	}
	if !errors.Is(last, runs.ErrNotFound) {
		t.Errorf("Follow of no log: %v", last)
	}
}

// TestMemoryLogBound drives the log past its bounds on ended logs and on
// bytes: the oldest ended logs go, one at a time, and nothing else (not a
// live log, however old).
func TestMemoryLogBound(t *testing.T) {
	ctx := context.Background()
	kept := func(log *runs.MemoryLog, ids ...string) []string {
		var out []string
		for _, id := range ids {
			if _, _, err := log.Read(ctx, id, -1, 0); err == nil {
				out = append(out, id)
			} else if !errors.Is(err, runs.ErrNotFound) {
				t.Fatalf("Read %s: %v", id, err)
			}
		}
		return out
	}
	appendEnd := func(log *runs.MemoryLog, id string, data []byte) {
		t.Helper()
		if _, err := log.Append(ctx, id, runs.Frame{Data: data}); err != nil {
			t.Fatal(err)
		}
		if err := log.End(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("ended runs", func(t *testing.T) {
		log := runs.NewMemoryLog(runs.MemoryLogConfig{MaxEndedRuns: 3})
		if _, err := log.Append(ctx, "live", runs.Frame{Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		all := []string{"live"}
		for i := range 5 {
			id := fmt.Sprint("r", i)
			all = append(all, id)
			appendEnd(log, id, []byte(`{}`))
		}
		if d := cmp.Diff([]string{"live", "r2", "r3", "r4"}, kept(log, all...)); d != "" {
			t.Errorf("kept logs (-want +got):\n%s", d)
		}
	})

	t.Run("an id ended again", func(t *testing.T) {
		// A run's log dropped early starts anew under its id, and ends
		// again: the second is the one kept, and read.
		log := runs.NewMemoryLog(runs.MemoryLogConfig{MaxEndedRuns: 1})
		appendEnd(log, "a", []byte(`1`))
		appendEnd(log, "b", []byte(`2`)) // a goes
		appendEnd(log, "a", []byte(`3`)) // b goes
		if d := cmp.Diff([]string{"a"}, kept(log, "a", "b")); d != "" {
			t.Errorf("kept logs (-want +got):\n%s", d)
		}
		frames, ended, err := log.Read(ctx, "a", -1, 0)
		if err != nil || !ended || len(frames) != 1 || string(frames[0].Data) != `3` {
			t.Errorf("Read(a) = %v, ended %v, %v; want frame 3, ended", frames, ended, err)
		}
	})

	t.Run("bytes", func(t *testing.T) {
		// A live log counts each frame's JSON and a fixed overhead, under
		// 200 bytes for 100 of JSON; an ended one what its frames are
		// encoded in and 4 bytes each: 105. A live frame and two ended fit
		// in 450, a third ended does not.
		data := []byte(`"` + strings.Repeat("x", 98) + `"`)
		log := runs.NewMemoryLog(runs.MemoryLogConfig{MaxBytes: 450})
		if _, err := log.Append(ctx, "live", runs.Frame{Data: data}); err != nil {
			t.Fatal(err)
		}
		all := []string{"live"}
		for i := range 2 {
			id := fmt.Sprint("r", i)
			all = append(all, id)
			appendEnd(log, id, data)
		}
		if d := cmp.Diff(all, kept(log, all...)); d != "" {
			t.Errorf("under the bound (-want +got):\n%s", d)
		}
		appendEnd(log, "r2", data) // past the bound: r0 goes
		all = append(all, "r2")
		if d := cmp.Diff([]string{"live", "r1", "r2"}, kept(log, all...)); d != "" {
			t.Errorf("past the bound (-want +got):\n%s", d)
		}
		// Live logs alone may go over it: appending to one drops the
		// ended ones, oldest first, and never the live one.
		for range 4 {
			if _, err := log.Append(ctx, "live", runs.Frame{Data: data}); err != nil {
				t.Fatal(err)
			}
		}
		if d := cmp.Diff([]string{"live"}, kept(log, all...)); d != "" {
			t.Errorf("live log over the bound (-want +got):\n%s", d)
		}
		if frames, _, err := log.Read(ctx, "live", -1, 0); err != nil || len(frames) != 5 {
			t.Errorf("the live log holds %d frames (%v), want 5", len(frames), err)
		}
		// Once ended (525 bytes) it goes too at the next sweep past the
		// bound.
		if err := log.End(ctx, "live"); err != nil {
			t.Fatal(err)
		}
		if got := kept(log, "live"); got != nil {
			t.Errorf("ended log over the bound kept: %v", got)
		}
	})
}

// fakeIndex is a runs.Index in memory, shared by registries as Redis is by
// replicas.
type fakeIndex struct {
	mu   sync.Mutex
	runs map[string]runs.Info
	puts map[string][]runs.Status  // each run's puts, in order
	subs []chan runs.CancelRequest // one per listener: a cancel reaches all
}

func (x *fakeIndex) Put(_ context.Context, in runs.Info, _ time.Duration) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.runs[in.ID] = in
	if x.puts == nil {
		x.puts = map[string][]runs.Status{}
	}
	x.puts[in.ID] = append(x.puts[in.ID], in.Status)
	return nil
}

// putsOf is the statuses run id was put with, in order.
func (x *fakeIndex) putsOf(id string) []runs.Status {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.puts[id])
}

func (x *fakeIndex) Get(_ context.Context, app, user, session, id string) (runs.Info, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	in, ok := x.runs[id]
	if !ok || in.App != app || in.User != user || in.Session != session {
		return runs.Info{}, runs.ErrNotFound
	}
	return in, nil
}

func (x *fakeIndex) List(_ context.Context, app, user, session string) ([]runs.Info, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []runs.Info
	for _, in := range x.runs {
		if in.App == app && in.User == user && in.Session == session {
			out = append(out, in)
		}
	}
	return out, nil
}

// waitListeners waits until n registries listen to the index's cancels
// (they subscribe on their listeners' goroutines).
func (x *fakeIndex) waitListeners(n int) {
	for subscribed := 0; subscribed < n; time.Sleep(time.Millisecond) {
		x.mu.Lock()
		subscribed = len(x.subs)
		x.mu.Unlock()
	}
}

func (x *fakeIndex) Cancel(_ context.Context, req runs.CancelRequest) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range x.subs {
		c <- req
	}
	return nil
}

func (x *fakeIndex) Cancels(ctx context.Context) iter.Seq[runs.CancelRequest] {
	c := make(chan runs.CancelRequest, 8)
	x.mu.Lock()
	x.subs = append(x.subs, c)
	x.mu.Unlock()
	return func(yield func(runs.CancelRequest) bool) {
		for {
			select {
			case req := <-c:
				if !yield(req) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}
}

// twoRegistries are two registries on one index (as two replicas on one
// Redis), both listening to its cancels; closed at the end of the test.
func twoRegistries(t *testing.T) (a, b *runs.Registry) {
	idx := &fakeIndex{runs: map[string]runs.Info{}}
	a, b = runs.NewRegistry(runs.Config{Index: idx}), runs.NewRegistry(runs.Config{Index: idx})
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	idx.waitListeners(2)
	return a, b
}

// Two registries on one index: each records its runs' status there, the
// other finds and lists them, and a cancel asked on one cancels the run
// on the other (as ErrCancelled); Close stops the listener.
func TestRegistryIndex(t *testing.T) {
	ctx := context.Background()
	a, b := twoRegistries(t)
	run, runCtx, err := a.Start(ctx, runs.Spec{ID: "inv", App: "app", User: "u", Session: "s", Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	in, local, err := b.Lookup(ctx, "app", "u", "s", "inv")
	if err != nil || local != nil || in.Status != runs.StatusRunning {
		t.Errorf("Lookup on the other registry: %+v %v %v", in, local, err)
	}
	if _, _, err := b.Lookup(ctx, "app", "u", "other", "inv"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("another session's run: %v", err)
	}
	if err := b.CancelElsewhere(ctx, "inv"); err != nil {
		t.Fatal(err)
	}
	<-runCtx.Done()
	if cause := context.Cause(runCtx); !errors.Is(cause, runs.ErrCancelled) {
		t.Errorf("cause %v", cause)
	}
	run.Finish(ctx, context.Cause(runCtx))
	list, err := b.List(ctx, "app", "u", "s")
	if err != nil || len(list) != 1 || list[0].Status != runs.StatusCancelled {
		t.Errorf("List on the other registry: %+v %v", list, err)
	}
}

// A run put later (PutLater) that ends before its delay is put once, at
// its end; one that outlives it is found running on another registry,
// then ended; and the late put never lands after the end's.
func TestRegistryPutLater(t *testing.T) {
	ctx := context.Background()
	idx := &fakeIndex{runs: map[string]runs.Info{}}
	a, b := runs.NewRegistry(runs.Config{Index: idx}), runs.NewRegistry(runs.Config{Index: idx})
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	start := func(id string, delay time.Duration) *runs.Run {
		t.Helper()
		run, _, err := a.Start(ctx, runs.Spec{App: "app", User: "u", Session: "s", Retention: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		run.PutLater(delay)
		if err := run.SetNewID(ctx, id); err != nil {
			t.Fatal(err)
		}
		return run
	}

	short := start("short", time.Hour)
	if _, _, err := b.Lookup(ctx, "app", "u", "s", "short"); !errors.Is(err, runs.ErrNotFound) {
		t.Errorf("a run within its delay, on the other registry: %v, want not found", err)
	}
	short.Finish(ctx, nil)
	if got := idx.putsOf("short"); !slices.Equal(got, []runs.Status{runs.StatusCompleted}) {
		t.Errorf("a run that ended within its delay was put %v, want once, completed", got)
	}

	long := start("long", time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		in, _, err := b.Lookup(ctx, "app", "u", "s", "long")
		if err == nil && in.Status == runs.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a run past its delay is not found running on the other registry: %+v %v", in, err)
		}
	}
	long.Finish(ctx, errors.New("boom"))
	if got := idx.putsOf("long"); !slices.Equal(got, []runs.Status{runs.StatusRunning, runs.StatusFailed}) {
		t.Errorf("a run that outlived its delay was put %v, want running then failed", got)
	}

	// Ends racing their late puts: whatever was put, the end comes last,
	// also once a late put that was due has had its time to land.
	const racing = 200
	for i := range racing {
		start(fmt.Sprint("race-", i), time.Duration(i%4)*time.Microsecond+time.Nanosecond).Finish(ctx, nil)
	}
	time.Sleep(50 * time.Millisecond)
	for i := range racing {
		id := fmt.Sprint("race-", i)
		if got := idx.putsOf(id); len(got) == 0 || len(got) > 2 || got[len(got)-1] != runs.StatusCompleted {
			t.Fatalf("run %s was put %v, want its end last", id, got)
		}
	}
}

// A frame gives its event back whichever form its log kept: the event
// itself, or its JSON (as the Redis log does).
func TestFrameDecode(t *testing.T) {
	ev := &sessions.Event{ID: "e1", InvocationID: "inv", Author: "desk", Partial: true,
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "hi"}}}}
	raw, err := runs.Frame{Event: ev}.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []runs.Frame{{Event: ev}, {Seq: 3, Data: raw}} {
		got, err := f.Decode()
		if err != nil {
			t.Fatalf("frame %d: %v", f.Seq, err)
		}
		if diff := cmp.Diff(ev, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("frame %d decoded (-want +got):\n%s", f.Seq, diff)
		}
	}
	if _, err := (runs.Frame{Seq: 4, Data: []byte("{")}).Decode(); err == nil || !strings.Contains(err.Error(), "frame 4") {
		t.Errorf("a frame that is not an event: %v", err)
	}
}

// A queued run waits under the context Start gave it (its request's,
// say) and runs under Begin's: the first may end without ending the
// second; a cancel while it waits reaches the context Begin returns.
func TestRegistryBeginRunsUnderItsOwnContext(t *testing.T) {
	reg := runs.NewRegistry(runs.Config{})
	defer reg.Close()
	req, leave := context.WithCancel(context.Background())
	run, waitCtx, err := reg.Start(req, runs.Spec{ID: "q", App: "app", User: "u", Session: "s", Queued: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx := run.Begin(context.WithoutCancel(req))
	if waitCtx.Err() == nil {
		t.Error("the waiting context outlives Begin")
	}
	leave()
	if runCtx.Err() != nil || run.Info().Status != runs.StatusRunning {
		t.Fatalf("the run after its request ended: %v, %s", runCtx.Err(), run.Info().Status)
	}
	run.Cancel(runs.ErrCancelled)
	if cause := context.Cause(runCtx); !errors.Is(cause, runs.ErrCancelled) {
		t.Errorf("Begin's context after Cancel: cause %v", cause)
	}
	run.Finish(context.Background(), runs.ErrCancelled)

	early, _, err := reg.Start(context.Background(), runs.Spec{ID: "q2", App: "app", User: "u", Session: "s", Queued: true})
	if err != nil {
		t.Fatal(err)
	}
	early.Cancel(runs.ErrCancelled) // while it waits
	if cause := context.Cause(early.Begin(context.Background())); !errors.Is(cause, runs.ErrCancelled) {
		t.Errorf("Begin after a cancel while waiting: cause %v", cause)
	}
	early.Finish(context.Background(), runs.ErrCancelled)
}

// CancelSession cancels the live runs of one session ahead of a ticket:
// those that did not wait in line and those that joined it earlier, named
// or not, on this registry and, through the index, on the others; it
// spares later tickets and other sessions.
func TestRegistryCancelSession(t *testing.T) {
	ctx := context.Background()
	a, b := twoRegistries(t)
	start := func(reg *runs.Registry, spec runs.Spec) context.Context {
		t.Helper()
		spec.App, spec.User = "app", "u"
		run, runCtx, err := reg.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Finish(ctx, context.Cause(runCtx)) })
		return runCtx
	}
	running := start(a, runs.Spec{ID: "running", Session: "s"})
	unnamed := start(a, runs.Spec{Session: "s"})
	earlier := start(b, runs.Spec{ID: "earlier", Session: "s", Queued: true, Ticket: 5})
	self := start(b, runs.Spec{ID: "self", Session: "s", Queued: true, Ticket: 7})
	later := start(a, runs.Spec{ID: "later", Session: "s", Queued: true, Ticket: 8})
	elsewhere := start(a, runs.Spec{ID: "elsewhere", Session: "s2"})
	if err := b.CancelSession(ctx, "app", "u", "s", 7); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]context.Context{"running": running, "unnamed": unnamed, "earlier": earlier} {
		select {
		case <-c.Done():
			if cause := context.Cause(c); !errors.Is(cause, runs.ErrCancelled) {
				t.Errorf("%s: cause %v", name, cause)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s was not cancelled", name)
		}
	}
	// Closing the registries waits for their listeners (which cancelled
	// the runs above with the same message), then shuts the rest down.
	a.Close()
	b.Close()
	for name, c := range map[string]context.Context{"self": self, "later": later, "elsewhere": elsewhere} {
		if cause := context.Cause(c); !errors.Is(cause, runs.ErrShutdown) {
			t.Errorf("%s: cause %v, want only the shutdown's", name, cause)
		}
	}
}

// openLog is a MemoryLog that records how each run's log was opened, and
// starts a fresh one as a FreshOpener may: without opening it.
type openLog struct {
	*runs.MemoryLog
	mu     sync.Mutex
	opened []string
}

var _ runs.FreshOpener = (*openLog)(nil)

func (l *openLog) record(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = append(l.opened, s)
}

func (l *openLog) Open(ctx context.Context, run string) error {
	l.record("Open " + run)
	return l.MemoryLog.Open(ctx, run)
}

func (l *openLog) OpenFresh(run string) { l.record("OpenFresh " + run) }

// A run named by an id it just made (SetNewID) has its log started
// fresh when the log can (FreshOpener); one named by its caller (Spec.ID)
// or by an id made before (SetID: a resumed invocation) opens it, so that
// the log learns where it stands. A log that is no FreshOpener is opened
// either way.
func TestSetNewIDOpensFresh(t *testing.T) {
	ctx := context.Background()
	log := &openLog{MemoryLog: runs.NewMemoryLog(runs.MemoryLogConfig{})}
	reg := runs.NewRegistry(runs.Config{Log: log})
	named, _, err := reg.Start(ctx, runs.Spec{ID: "given", App: "app", User: "u", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := reg.Start(ctx, runs.Spec{App: "app", User: "u", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	resumed, _, err := reg.Start(ctx, runs.Spec{App: "app", User: "u", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.SetNewID(ctx, "made"); err != nil {
		t.Fatal(err)
	}
	if err := resumed.SetID(ctx, "paused-before"); err != nil {
		t.Fatal(err)
	}
	if err := fresh.SetNewID(ctx, "again"); err != nil || fresh.ID() != "made" {
		t.Errorf("a named run renamed: %q %v", fresh.ID(), err)
	}
	for _, run := range []*runs.Run{named, fresh, resumed} {
		run.Finish(ctx, nil)
	}
	if d := cmp.Diff([]string{"Open given", "OpenFresh made", "Open paused-before"}, log.opened); d != "" {
		t.Errorf("logs opened (-want +got):\n%s", d)
	}

	mem := runs.NewMemoryLog(runs.MemoryLogConfig{})
	run, _, err := runs.NewRegistry(runs.Config{Log: mem}).Start(ctx, runs.Spec{App: "app", User: "u", Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.SetNewID(ctx, "made"); err != nil {
		t.Fatal(err)
	}
	if frames, ended, err := mem.Read(ctx, "made", -1, 0); err != nil || ended || len(frames) != 0 {
		t.Errorf("memory log of a fresh run: %v %v %v, want open and empty", frames, ended, err)
	}
	run.Finish(ctx, nil)
}

// BenchmarkMemoryLogTurn: a streamed turn's frames in the memory log, 22
// events appended one by one (the role, 20 deltas, the answer), then the
// log ended; per turn, on a log that keeps the turns before it.
func BenchmarkMemoryLogTurn(b *testing.B) {
	ctx := context.Background()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{})
	evs := make([]*sessions.Event, 22)
	for i := range evs {
		evs[i] = textEvent("e-1", fmt.Sprint("tok", i, " "))
	}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		id := fmt.Sprint("run-", n)
		for _, ev := range evs {
			if _, err := log.Append(ctx, id, runs.Frame{Event: ev}); err != nil {
				b.Fatal(err)
			}
		}
		if err := log.End(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// An ended run kept for its retention does not keep the context it was
// started under (a request's, with its values) reachable: the registry
// holds thousands of them, for an hour by default.
func TestRegistryEndedRunDropsItsContext(t *testing.T) {
	reg := runs.NewRegistry(runs.Config{})
	defer reg.Close()
	type payload struct{ b [1 << 10]byte }
	type key struct{}
	for _, begin := range []bool{false, true} {
		t.Run(fmt.Sprintf("begin=%v", begin), func(t *testing.T) {
			p := &payload{}
			held := weak.Make(p)
			id := fmt.Sprintf("kept-%v", begin)
			ctx, stop := context.WithCancel(context.WithValue(context.Background(), key{}, p))
			run, _, err := reg.Start(ctx, runs.Spec{ID: id, App: "app", User: "u", Session: "s", Retention: time.Hour, Queued: begin})
			if err != nil {
				t.Fatal(err)
			}
			if begin {
				_ = run.Begin(ctx)
			}
			run.Finish(context.Background(), nil)
			stop()
			ctx, p = nil, nil
			runtime.GC()
			runtime.GC()
			if held.Value() != nil {
				t.Error("the ended run still holds the context it was started under")
			}
			kept, err := reg.Get(context.Background(), id)
			if err != nil || kept.Info().Status != runs.StatusCompleted {
				t.Fatalf("the ended run is not kept: %v", err)
			}
			kept.Cancel(runs.ErrCancelled) // an ended run: nothing happens
			kept.Stop()
			if kept.Info().Status != runs.StatusCompleted {
				t.Errorf("status after a late cancel: %s", kept.Info().Status)
			}
		})
	}
}

// A run whose end is written by its turn's last write (Ending, as the
// Redis store's append writes it): the Ending is the run completed, the
// run over once it is written (a cancel does nothing) but live until
// Finish, which then writes neither the index entry nor the log's end; an
// Ending not written leaves them to Finish. A late put (PutLater) never
// lands after the end written.
func TestRegistryEnding(t *testing.T) {
	ctx := context.Background()
	idx := &fakeIndex{runs: map[string]runs.Info{}}
	log := runs.NewMemoryLog(runs.MemoryLogConfig{})
	reg := runs.NewRegistry(runs.Config{Log: log, Index: idx})
	t.Cleanup(reg.Close)
	start := func(id string, delay time.Duration) (*runs.Run, context.Context) {
		t.Helper()
		run, runCtx, err := reg.Start(ctx, runs.Spec{App: "app", User: "u", Session: "s", Retention: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		run.PutLater(delay)
		if run.Ending() != nil {
			t.Error("an Ending of a run without its id")
		}
		if err := run.SetNewID(ctx, id); err != nil {
			t.Fatal(err)
		}
		return run, runCtx
	}
	done := func(run *runs.Run) bool {
		select {
		case <-run.Done():
			return true
		default:
			return false
		}
	}

	run, runCtx := start("written", time.Hour)
	if _, err := run.Append(ctx, runs.Frame{Data: []byte(`"a"`)}); err != nil {
		t.Fatal(err)
	}
	e := run.Ending()
	if e == nil || e.Info.ID != "written" || e.Info.Status != runs.StatusCompleted || e.Info.Ended.IsZero() || e.Retention != time.Minute ||
		e.Log() != runs.EventLog(log) || e.Index() != runs.Index(idx) {
		t.Fatalf("Ending: %+v", e)
	}
	if in := run.Info(); in.Status != runs.StatusRunning {
		t.Errorf("status before the ending is written: %s, want running", in.Status)
	}
	e.Written()
	run.Cancel(errors.New("too late"))
	if in := run.Info(); in.Status != runs.StatusCompleted || !in.Ended.Equal(e.Info.Ended) || runCtx.Err() != nil {
		t.Errorf("once written, then cancelled: %+v (context %v), want completed as written, its context going on", in, runCtx.Err())
	}
	if done(run) || reg.Live() != 1 {
		t.Errorf("once written, before Finish: done %v, %d live; want live", done(run), reg.Live())
	}
	if run.Ending() != nil {
		t.Error("a second Ending of a run over")
	}
	run.Finish(ctx, nil)
	if !done(run) || reg.Live() != 0 || runCtx.Err() == nil || run.Err() != nil {
		t.Errorf("after Finish: done %v, %d live, context %v, err %v", done(run), reg.Live(), runCtx.Err(), run.Err())
	}
	if got := idx.putsOf("written"); len(got) != 0 {
		t.Errorf("Finish of a run whose end was written put %v, want nothing", got)
	}
	if _, ended, err := log.Read(ctx, "written", -1, 0); err != nil || ended {
		t.Errorf("Finish of a run whose end was written ended its log: %v, %v", ended, err)
	}

	for _, err := range []error{nil, errors.New("boom")} {
		id := fmt.Sprint("unwritten-", err)
		run, _ := start(id, time.Hour)
		if run.Ending() == nil {
			t.Fatal("no Ending")
		}
		run.Finish(ctx, err)
		want := runs.StatusCompleted
		if err != nil {
			want = runs.StatusFailed
		}
		if got := idx.putsOf(id); !slices.Equal(got, []runs.Status{want}) {
			t.Errorf("Finish(%v) of a run whose Ending was not written put %v, want %s", err, got, want)
		}
		if _, ended, err := log.Read(ctx, id, -1, 0); err != nil || !ended {
			t.Errorf("Finish of a run whose Ending was not written: log ended %v, %v", ended, err)
		}
	}

	// Endings racing their late puts: the end written comes last.
	const racing = 200
	for i := range racing {
		id := fmt.Sprint("race-", i)
		run, _ := start(id, time.Duration(i%4)*time.Microsecond+time.Nanosecond)
		e := run.Ending()
		_ = idx.Put(ctx, e.Info, e.Retention) // the write of the end
		e.Written()
		run.Finish(ctx, nil)
	}
	time.Sleep(50 * time.Millisecond)
	for i := range racing {
		id := fmt.Sprint("race-", i)
		if got := idx.putsOf(id); len(got) == 0 || len(got) > 2 || got[len(got)-1] != runs.StatusCompleted {
			t.Fatalf("run %s was put %v, want its end last", id, got)
		}
	}

	bare := runs.NewRegistry(runs.Config{Log: log})
	t.Cleanup(bare.Close)
	run, _, err := bare.Start(ctx, runs.Spec{ID: "no-index"})
	if err != nil {
		t.Fatal(err)
	}
	if run.Ending() != nil {
		t.Error("an Ending of a run without an index")
	}
	run.Finish(ctx, nil)
}

// Runs and logs that ended one after another are forgotten one after
// another, each once its own retention ran out: a sweep that forgot the
// oldest goes on from the next one's end, and one that finds nothing due
// forgets nothing.
func TestSweepsForgetInTurn(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	log := runs.NewMemoryLog(runs.MemoryLogConfig{Retention: time.Minute, Now: clk.Now})
	reg := runs.NewRegistry(runs.Config{Log: log, Now: clk.Now})
	t.Cleanup(reg.Close)
	ids := []string{"r0", "r1", "r2"}
	for _, id := range ids {
		run, _, err := reg.Start(ctx, runs.Spec{ID: id, App: "app", User: "u", Session: "s", Retention: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Append(ctx, runs.Frame{Event: textEvent(id, id)}); err != nil {
			t.Fatal(err)
		}
		run.Finish(ctx, nil)
		clk.add(10 * time.Second)
	}
	kept := func() (out []string) {
		for _, id := range ids {
			_, errRun := reg.Get(ctx, id)
			_, _, errLog := log.Read(ctx, id, -1, 0)
			switch {
			case errRun == nil && errLog == nil:
				out = append(out, id)
			case !errors.Is(errRun, runs.ErrNotFound) || !errors.Is(errLog, runs.ErrNotFound):
				t.Fatalf("%s: run %v, log %v: kept by one and not the other", id, errRun, errLog)
			}
		}
		return out
	}
	// r0 ended at 0s, r1 at 10s, r2 at 20s; it is 30s.
	for _, step := range []struct {
		to   time.Duration // how far the clock goes
		want []string
	}{
		{20 * time.Second, []string{"r0", "r1", "r2"}}, // 50s: none is due
		{15 * time.Second, []string{"r1", "r2"}},       // 65s
		{time.Second, []string{"r1", "r2"}},            // 66s: nothing more is due
		{5 * time.Second, []string{"r2"}},              // 71s
		{10 * time.Second, nil},                        // 81s
	} {
		clk.add(step.to)
		if d := cmp.Diff(step.want, kept()); d != "" {
			t.Errorf("at %v, kept (-want +got):\n%s", clk.Now().Sub(newClock().Now()), d)
		}
	}
	// A run that ends once all were forgotten is kept for its own retention.
	run, _, err := reg.Start(ctx, runs.Spec{ID: "r3", App: "app", User: "u", Session: "s", Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run.Finish(ctx, nil)
	ids = []string{"r3"}
	clk.add(time.Minute)
	if d := cmp.Diff([]string{"r3"}, kept()); d != "" {
		t.Errorf("within its retention, kept (-want +got):\n%s", d)
	}
	clk.add(time.Second)
	if d := cmp.Diff([]string(nil), kept()); d != "" {
		t.Errorf("past its retention, kept (-want +got):\n%s", d)
	}
}
