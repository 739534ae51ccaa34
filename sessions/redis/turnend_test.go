package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// A turn whose run is logged and indexed in the Redis of its session
// (cmd/gateway's wiring) ends its run with its write: the events, the
// lease's release, the run's last frames, its log's end and its final
// index entry in one script, when the turn ended well and the log and
// index are the store's own on a single node. Otherwise (a lease lost, a
// session gone, another store's index) the run ends as before, by Finish.

// runEnder is the driver's run as the runtime asks it for its end.
type runEnder struct{ run *runs.Run }

func (e runEnder) RunEnd() sessions.RunEnd {
	if end := e.run.Ending(); end != nil {
		return end
	}
	return nil
}

// endTurn runs one turn as the gateway runs a non-streamed chat turn with
// a run registry: the lease and the session's read (AcquireGetOrCreate),
// the run started and written to the index only later (PutLater), named
// by its new invocation id at its first event, every event logged as a
// frame, the runner given the run to end with its write; before runs
// between the read and the turn. It checks that, once the events are
// over, the run is still live in the registry (Finish is the gateway's
// after it answered), and then finishes it with the turn's error.
func endTurn(t *testing.T, s *Store, r *agentcore.Runner, reg *runs.Registry, id string, before func(lease sessions.Lease)) (*runs.Run, []*sessions.Event, error) {
	t.Helper()
	ctx := t.Context()
	sess, lease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: id}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(lease)
	}
	run, runCtx, err := reg.Start(ctx, runs.Spec{App: "app", User: "u", Session: id, Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run.PutLater(time.Hour)
	rt := r.Run(runCtx, agentcore.RunRequest{UserID: "u", SessionID: id, Session: sess, Lease: lease, End: runEnder{run},
		NewMessage: genai.NewContentFromText("hello", genai.RoleUser)})
	var evs []*sessions.Event
	var runErr error
	for ev, err := range rt.Events() {
		if err != nil {
			runErr = err // the last
			continue
		}
		if len(evs) == 0 {
			if err := run.SetNewID(ctx, rt.InvocationID()); err != nil {
				t.Fatal(err)
			}
		}
		evs = append(evs, ev)
		if _, err := run.Append(ctx, runs.Frame{Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	lease.Release()
	select {
	case <-run.Done():
		t.Fatal("the run was done before its driver finished it")
	default:
	}
	if reg.Live() != 1 {
		t.Errorf("live runs before Finish: %d, want 1", reg.Live())
	}
	run.Finish(ctx, runErr)
	<-run.Done()
	if reg.Live() != 0 {
		t.Errorf("live runs after Finish: %d, want 0", reg.Live())
	}
	return run, evs, runErr
}

func TestTurnEndsRunWithWrite(t *testing.T) {
	srv := startServer(t)
	prefix := fmt.Sprintf("test%d:", prefixes.Add(1))
	s := newStore(t, Config{URL: srv.URL(""), KeyPrefix: prefix, TTL: time.Hour})
	other := newStore(t, Config{URL: srv.URL(""), KeyPrefix: prefix, TTL: time.Hour}) // another replica
	ops := newOpLog()
	s.client.AddHook(ops)
	other.client.AddHook(ops)
	r := turnRunner(t, s)
	for _, tc := range []struct {
		name  string
		index *RunIndex
		// before runs before the turn, once its lease is taken.
		before func(t *testing.T, lease sessions.Lease, id string)
		want   []string
		status runs.Status
		// stored: the turn's events are in the session.
		stored bool
		// linger is the run log's (default: an hour, the frames wait for
		// the end).
		linger time.Duration
	}{
		{name: "new session", index: s.RunIndex(), want: []string{"lock+create+get", "append+release+end"},
			status: runs.StatusCompleted, stored: true},
		// Frames written as they come (no linger): the end waits for a
		// write under way and takes what is left (round trips not
		// counted: they depend on the timing).
		{name: "no linger", index: s.RunIndex(), linger: -1, status: runs.StatusCompleted, stored: true},
		// A lease lost meanwhile: the events are stored as before, the
		// lease is not released and the run not ended by the write;
		// Finish ends it (its log's end with the index entry).
		{name: "lease lost", index: s.RunIndex(), before: func(t *testing.T, _ sessions.Lease, id string) {
			if err := s.client.Set(t.Context(), s.lockKey("app", "u", id), "another", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"lock+create+get", "set", "append+release+end", "unlock", "run write"}, status: runs.StatusCompleted, stored: true},
		// A session deleted meanwhile: nothing is stored, the turn fails,
		// and Finish ends the run failed.
		{name: "session gone", index: s.RunIndex(), before: func(t *testing.T, _ sessions.Lease, id string) {
			if err := s.Delete(t.Context(), sessions.DeleteRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"lock+create+get", "delete", "append+release+end", "unlock", "run write"}, status: runs.StatusFailed},
		// Another store's index: the write releases the lease as before,
		// and Finish writes the index entry, then the log's end.
		{name: "another store's index", index: other.RunIndex(), want: []string{"lock+create+get", "append+release", "multi", "run write"},
			status: runs.StatusCompleted, stored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := runs.NewRegistry(runs.Config{Log: s.RunLog(RunLogConfig{Linger: cmp.Or(tc.linger, time.Hour)}), Index: tc.index})
			defer reg.Close()
			id := "e-" + tc.name
			before := func(id string) func(sessions.Lease) {
				if tc.before == nil {
					return nil
				}
				return func(lease sessions.Lease) { tc.before(t, lease, id) }
			}
			for i := range 2 { // scripts loaded, connections open
				warm := fmt.Sprint(id, "-warm", i)
				_, _, _ = endTurn(t, s, r, reg, warm, before(warm))
			}
			var run *runs.Run
			var evs []*sessions.Event
			var turnErr error
			got := ops.during(t, func() error {
				run, evs, turnErr = endTurn(t, s, r, reg, id, before(id))
				return nil
			})
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("round trips %v, want %v", got, tc.want)
			}
			in := run.Info()
			if in.Status != tc.status || in.Ended.IsZero() || (turnErr == nil) != (tc.status == runs.StatusCompleted) {
				t.Fatalf("run %+v, turn's error %v; want %s", in, turnErr, tc.status)
			}
			// Every replica reads the frames, the end and the final status.
			var want []string
			for i, ev := range evs {
				want = append(want, fmt.Sprintf("%d:%s", i, ev.ID))
			}
			frames, ended, err := other.RunLog(RunLogConfig{}).Read(t.Context(), in.ID, -1, 0)
			var gotFrames []string
			for _, f := range frames {
				ev := f.Event
				if ev == nil { // kept as its JSON
					if ev, err = sessions.UnmarshalEvent(string(f.Data)); err != nil {
						t.Fatal(err)
					}
				}
				gotFrames = append(gotFrames, fmt.Sprintf("%d:%s", f.Seq, ev.ID))
			}
			if err != nil || !ended || !slices.Equal(gotFrames, want) {
				t.Errorf("log read elsewhere: %v (ended %v, %v), want %v ended", gotFrames, ended, err, want)
			}
			x, err := other.RunIndex().Get(t.Context(), "app", "u", id, in.ID)
			if err != nil || x.Status != tc.status || !x.Ended.Equal(in.Ended.Truncate(time.Microsecond)) {
				t.Errorf("index entry elsewhere: %+v, %v; want %s, ended %v", x, err, tc.status, in.Ended)
			}
			stored, err := s.Get(t.Context(), sessions.GetRequest{AppName: "app", UserID: "u", SessionID: id})
			switch {
			case tc.stored && (err != nil || len(stored.Events) != len(evs)+1):
				t.Errorf("session after the turn: %v, want its %d events and the user's", err, len(evs))
			case !tc.stored && !errors.Is(err, sessions.ErrNotFound):
				t.Errorf("session deleted before the turn's write: %v, want none", err)
			}
			// Over: a cancel changes nothing.
			run.Cancel(nil)
			if in := run.Info(); in.Status != tc.status {
				t.Errorf("status after a cancel: %s, want %s", in.Status, tc.status)
			}
		})
	}
}

// A turn that ended well but whose write failed (Redis gone) leaves the
// run's end to Finish: the run fails, and the frames that waited are
// written with its end once Redis is back.
func TestTurnEndRedisDown(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(fastFail), TTL: time.Hour})
	r := turnRunner(t, s)
	reg := runs.NewRegistry(runs.Config{Log: s.RunLog(RunLogConfig{Linger: time.Hour}), Index: s.RunIndex()})
	defer reg.Close()
	if _, _, err := endTurn(t, s, r, reg, "warm", nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, lease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "down"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	run, runCtx, err := reg.Start(ctx, runs.Spec{ID: "down-run", App: "app", User: "u", Session: "down", Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	stop := runEnderFunc(func() sessions.RunEnd {
		if _, err := run.Append(ctx, runFrame("last")); err != nil {
			t.Fatal(err)
		}
		srv.Stop()
		return runEnder{run}.RunEnd()
	})
	var runErr error
	for _, err := range r.Run(runCtx, agentcore.RunRequest{UserID: "u", SessionID: "down", Session: sess, Lease: lease, End: stop,
		NewMessage: genai.NewContentFromText("hello", genai.RoleUser)}).Events() {
		if err != nil {
			runErr = err
		}
	}
	if !errors.Is(runErr, sessions.ErrUnavailable) {
		t.Fatalf("turn with Redis gone at its write: %v, want ErrUnavailable", runErr)
	}
	if in := run.Info(); in.Status != runs.StatusRunning {
		t.Errorf("run after the failed write: %s, want running until Finish", in.Status)
	}
	srv.Start()
	waitUp(t, s)
	lease.Release()
	run.Finish(ctx, runErr)
	readEnded(t, s.RunLog(RunLogConfig{}), "down-run", -1, []string{"0:last"})
	if x, err := s.RunIndex().Get(ctx, "app", "u", "down", "down-run"); err != nil || x.Status != runs.StatusFailed {
		t.Errorf("index entry: %+v, %v; want failed", x, err)
	}
}

// runEnderFunc is an agentcore.RunEnder of a function's.
type runEnderFunc func() sessions.RunEnd

func (f runEnderFunc) RunEnd() sessions.RunEnd { return f() }

// On Redis Cluster (a store that is not on one node: the run's keys and
// the session's are in different slots) the write releases the lease as
// before, and Finish writes the index entry, then the log's end.
func TestTurnEndNotOneNode(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	s.oneNode = false // as a Cluster client's store
	ops := newOpLog()
	s.client.AddHook(ops)
	r := turnRunner(t, s)
	reg := runs.NewRegistry(runs.Config{Log: s.RunLog(RunLogConfig{Linger: time.Hour}), Index: s.RunIndex()})
	defer reg.Close()
	for i := range 2 { // scripts loaded, connections open
		if _, _, err := endTurn(t, s, r, reg, fmt.Sprint("warm", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	var run *runs.Run
	got := ops.during(t, func() (err error) {
		run, _, err = endTurn(t, s, r, reg, "c1", nil)
		return err
	})
	if want := []string{"lock+create+get", "append+release", "multi", "run write"}; !slices.Equal(got, want) {
		t.Errorf("round trips %v, want %v", got, want)
	}
	if x, err := s.RunIndex().Get(t.Context(), "app", "u", "c1", run.ID()); err != nil || x.Status != runs.StatusCompleted {
		t.Errorf("index entry: %+v, %v", x, err)
	}
}
