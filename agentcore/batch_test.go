package agentcore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/sessions"
)

// unbatched hides a store's AppendEvents: the runner stores each event on
// its own.
type unbatched struct{ sessions.Service }

func perEventStore(c *agentcore.RunnerConfig) { c.Sessions = unbatched{c.Sessions} }

// countingStore counts the writes that reach a batching store and can make
// batches fail.
type countingStore struct {
	sessions.Service
	b sessions.BatchAppender

	mu      sync.Mutex
	appends int
	batches [][]string // event ids of each AppendEvents call, with the session id first
	fail    error
}

func (c *countingStore) AppendEvent(ctx context.Context, sess *sessions.Session, ev *sessions.Event) error {
	c.mu.Lock()
	c.appends++
	c.mu.Unlock()
	return c.Service.AppendEvent(ctx, sess, ev)
}

func (c *countingStore) AppendEvents(ctx context.Context, sess *sessions.Session, evs []*sessions.Event) error {
	c.mu.Lock()
	c.batches = append(c.batches, append([]string{sess.ID}, ids(evs)...))
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return fail
	}
	return c.b.AppendEvents(ctx, sess, evs)
}

func (c *countingStore) writes() (appends int, batches [][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.appends, slices.Clone(c.batches)
}

func counting(store *countingStore) harnessOpt {
	return func(c *agentcore.RunnerConfig) {
		store.Service, store.b = c.Sessions, c.Sessions.(sessions.BatchAppender)
		c.Sessions = store
	}
}

func ids(evs []*sessions.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func nonPartial(evs []*sessions.Event) []*sessions.Event {
	return slices.DeleteFunc(slices.Clone(evs), func(e *sessions.Event) bool { return e.Partial })
}

// With a store that cannot batch, every non-partial event of the turn is
// stored before the caller sees it; partial events never are.
func TestEventsStoredBeforeYielded(t *testing.T) {
	h := newHarness(t, coordinatorTree(t), perEventStore)
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("hello"),
		Config: agentcore.RunConfig{Streaming: true}})
	partials := 0
	for ev, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		stored := map[string]bool{}
		for _, e := range h.session("s1").Events {
			stored[e.ID] = true
		}
		if ev.Partial {
			partials++
		}
		if stored[ev.ID] == ev.Partial {
			t.Errorf("event %s (partial %v) stored = %v when yielded", ev.ID, ev.Partial, stored[ev.ID])
		}
	}
	if partials == 0 {
		t.Error("no partial events streamed")
	}
	if run.StartAgent() != "coordinator" || run.InvocationID() == "" {
		t.Errorf("StartAgent %q InvocationID %q", run.StartAgent(), run.InvocationID())
	}
}

// With a batching store a turn is one write: the user's message and every
// non-partial event, stored when the turn ends, never while it streams. A
// sub-conversation is one write of its own, when its turn ends.
func TestTurnStoredInOneBatch(t *testing.T) {
	t.Run("transfer", func(t *testing.T) {
		store := &countingStore{}
		h := newHarness(t, coordinatorTree(t), counting(store))
		if _, err := h.svc.Create(context.Background(), sessions.CreateRequest{AppName: h.app, UserID: "u1", SessionID: "s1"}); err != nil {
			t.Fatal(err)
		}
		for turn, text := range []string{"hello", "a task: tidy up"} {
			before := len(h.session("s1").Events)
			run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText(text),
				Config: agentcore.RunConfig{Streaming: true}})
			var evs []*sessions.Event
			for ev, err := range run.Events() {
				if err != nil {
					t.Fatal(err)
				}
				if n := len(h.session("s1").Events); n != before {
					t.Fatalf("turn %d: %d events stored while the turn streams, want %d", turn, n, before)
				}
				evs = append(evs, ev)
			}
			stored := h.session("s1").Events[before:]
			if diff := cmp.Diff(append([]string{"user"}, authors(nonPartial(evs))...), authors(stored)); diff != "" {
				t.Errorf("turn %d: stored (-want +got):\n%s", turn, diff)
			}
			if diff := cmp.Diff(ids(nonPartial(evs)), ids(stored[1:])); diff != "" {
				t.Errorf("turn %d: stored ids (-yielded +stored):\n%s", turn, diff)
			}
		}
		appends, batches := store.writes()
		if appends != 0 || len(batches) != 2 {
			t.Errorf("two turns: %d single appends and %d batches %v, want 0 and 2", appends, len(batches), batches)
		}
	})
	t.Run("agent tool", func(t *testing.T) {
		store := &countingStore{}
		h := newHarness(t, analystTree(t), counting(store))
		evs := h.mustRun("s1", userText("please summarize this long text"), agentcore.RunConfig{})
		appends, batches := store.writes()
		if appends != 0 || len(batches) != 2 {
			t.Fatalf("%d single appends and batches %v, want 0 and 2 (the sub-conversation's, then the turn's)", appends, batches)
		}
		child := h.session("s1/summarizer")
		if diff := cmp.Diff(append([]string{"s1/summarizer"}, ids(child.Events)...), batches[0]); diff != "" {
			t.Errorf("first batch (-sub-conversation +batch):\n%s", diff)
		}
		parent := h.session("s1")
		if diff := cmp.Diff(append([]string{"s1"}, ids(parent.Events)...), batches[1]); diff != "" {
			t.Errorf("second batch (-session +batch):\n%s", diff)
		}
		if diff := cmp.Diff(ids(nonPartial(evs)), ids(parent.Events[1:])); diff != "" {
			t.Errorf("stored ids (-yielded +stored):\n%s", diff)
		}
	})
}

// A consumer that stops early: what it was given is stored (the user's
// message and the events up to the last one it saw), nothing after.
func TestBatchFlushedWhenConsumerStops(t *testing.T) {
	store := &countingStore{}
	h := newHarness(t, coordinatorTree(t), counting(store))
	run := h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("hello"),
		Config: agentcore.RunConfig{Streaming: true}})
	var seen []*sessions.Event
	for ev, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev)
		if !ev.Partial {
			break
		}
	}
	stored := h.session("s1").Events
	if diff := cmp.Diff([]string{"user", "coordinator"}, authors(stored)); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if stored[1].ID != seen[len(seen)-1].ID {
		t.Errorf("stored %s, the consumer's last event was %s", stored[1].ID, seen[len(seen)-1].ID)
	}
	if _, batches := store.writes(); len(batches) != 1 {
		t.Errorf("batches %v, want 1", batches)
	}
}

// A cancelled turn stores what it produced before the cancellation, and
// reports the cancellation.
func TestBatchFlushedOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	work := fnTool(t, "work", func(ctx context.Context, _ *agentcore.ToolContext, _ map[string]any) (string, error) {
		cancel()
		<-ctx.Done()
		return "", ctx.Err()
	})
	store := &countingStore{}
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "caller", Model: &blocker{cancel: cancel}, Tools: []agentcore.Tool{work}}), counting(store))
	_, err := h.runReq(ctx, agentcore.RunRequest{SessionID: "s1", NewMessage: userText("hi")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	stored := h.session("s1").Events
	if len(stored) < 2 || stored[0].Author != "user" || len(stored[1].FunctionCalls()) != 1 {
		t.Errorf("stored %v, want the user's message and the call made before the cancellation", authors(stored))
	}
}

// A batch that cannot be written: the consumer has seen the events, then
// gets the store's error; nothing of the turn is stored. When the consumer
// has stopped, the failure is logged.
func TestBatchFlushFailure(t *testing.T) {
	down := fmt.Errorf("%w: redis append: connection refused", sessions.ErrUnavailable)
	t.Run("reported", func(t *testing.T) {
		store := &countingStore{fail: down}
		h := newHarness(t, coordinatorTree(t), counting(store))
		evs, err := h.run("s1", userText("hello"), agentcore.RunConfig{})
		if !errors.Is(err, sessions.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if diff := cmp.Diff([]string{"coordinator", "coordinator", "greeter"}, authors(evs)); diff != "" {
			t.Errorf("yielded before the error (-want +got):\n%s", diff)
		}
		if n := len(h.session("s1").Events); n != 0 {
			t.Errorf("%d events stored, want none", n)
		}
	})
	t.Run("logged", func(t *testing.T) {
		var logs bytes.Buffer
		store := &countingStore{fail: down}
		h := newHarness(t, coordinatorTree(t), counting(store), func(c *agentcore.RunnerConfig) {
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		for _, err := range h.runner.Run(context.Background(), agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("hello")}).Events() {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if out := logs.String(); !strings.Contains(out, "could not be stored") || !strings.Contains(out, "connection refused") {
			t.Errorf("log = %q, want the failed write", out)
		}
	})
}

// endingStore is a batching store that is a sessions.EndingAppender: it
// records the run ends it is given and writes them (Written).
type endingStore struct {
	countingStore
	ends []sessions.RunEnd
}

func (e *endingStore) AppendEventsReleaseEnd(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease, end sessions.RunEnd) error {
	if err := e.AppendEvents(ctx, sess, evs); err != nil {
		return err
	}
	e.mu.Lock()
	e.ends = append(e.ends, end)
	e.mu.Unlock()
	lease.Release()
	end.Written()
	return nil
}

// askedEnd is a run (agentcore.RunEnder) that counts how often the runtime
// asked for its end, and whether the end it gave was written.
type askedEnd struct {
	asked   int
	written bool
}

func (a *askedEnd) RunEnd() sessions.RunEnd { a.asked++; return a }
func (a *askedEnd) Written()                { a.written = true }

type noLease struct{}

func (noLease) Renew(context.Context) error { return nil }
func (noLease) Release()                    {}

// A turn that ended well asks its caller for its run's end and hands it
// to its write, when the store can write it (sessions.EndingAppender) and
// the turn holds a lease; a turn that failed, or whose consumer stopped,
// does not ask, nor does one on a store that cannot.
func TestTurnEndWrittenWithWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plain  bool // a store that is no EndingAppender
		lease  bool
		stop   bool // the consumer stops at the first event
		fail   bool // the turn fails (cancelled)
		asked  bool
		stored int
	}{
		{name: "ended well", lease: true, asked: true, stored: 4},
		{name: "no lease", asked: false, stored: 4},
		{name: "store that cannot", plain: true, lease: true, asked: false, stored: 4},
		{name: "consumer stopped", lease: true, stop: true, asked: false, stored: 2},
		{name: "failed", lease: true, fail: true, asked: false, stored: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &endingStore{}
			root := agentcore.Agent(coordinatorTree(t))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.fail {
				work := fnTool(t, "work", func(ctx context.Context, _ *agentcore.ToolContext, _ map[string]any) (string, error) {
					cancel()
					<-ctx.Done()
					return "", ctx.Err()
				})
				root = mustLlm(t, agentcore.LlmConfig{Name: "caller", Model: &blocker{cancel: cancel}, Tools: []agentcore.Tool{work}})
			}
			opt := func(c *agentcore.RunnerConfig) {
				store.Service, store.b = c.Sessions, c.Sessions.(sessions.BatchAppender)
				c.Sessions = store
				if tc.plain {
					c.Sessions = &store.countingStore
				}
			}
			h := newHarness(t, root, opt)
			run := &askedEnd{}
			req := agentcore.RunRequest{UserID: "u1", SessionID: "s1", NewMessage: userText("hello"), End: run}
			if tc.lease {
				req.Lease = noLease{}
			}
			var err error
			for _, e := range h.runner.Run(ctx, req).Events() {
				err = e
				if tc.stop {
					break
				}
			}
			if (err != nil) != tc.fail {
				t.Fatalf("turn: %v", err)
			}
			if got := len(h.session("s1").Events); got != tc.stored {
				t.Errorf("%d events stored, want %d", got, tc.stored)
			}
			want := 0
			if tc.asked {
				want = 1
			}
			if run.asked != want || run.written != tc.asked || len(store.ends) != want {
				t.Errorf("asked %d, written %v, the store given %d ends; want %d", run.asked, run.written, len(store.ends), want)
			}
		})
	}
}
