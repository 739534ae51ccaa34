package agentcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Records carry the context's attributes: a set's as they are when the
// record is logged, a derived context's as they were when it was made plus
// its own; a later attribute of the same key replaces the earlier.
func TestLogAttrs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewJSONHandler(&buf, nil)))
	records := func() []map[string]any {
		var out []map[string]any
		dec := json.NewDecoder(&buf)
		for dec.More() {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			delete(m, "time")
			out = append(out, m)
		}
		return out
	}
	base := WithLogAttrs(context.Background(), slog.String("a", "1"))
	ctx, set := WithLogAttrSet(base)
	if got, ok := LogAttrSetOf(ctx); !ok || got != set {
		t.Fatal("LogAttrSetOf does not find the set")
	}
	set.Add(slog.String("request_id", "r1"))
	derived := WithLogAttrs(ctx, slog.String("agent", "x"))
	set.Add(slog.String("model", "m"), slog.String("a", "2"))
	// Derived again: its own attributes replace the parent's of the same
	// keys, more than fit in place too.
	nested := WithLogAttrs(derived, slog.String("agent", "y"), slog.String("a", "3"), slog.String("b", "4"))
	log.InfoContext(ctx, "live")
	log.InfoContext(derived, "derived")
	log.InfoContext(nested, "nested")
	if _, ok := LogAttrSetOf(derived); ok {
		t.Error("a derived context reports the set")
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "live", "request_id": "r1", "model": "m", "a": "2"},
		{"level": "INFO", "msg": "derived", "a": "1", "request_id": "r1", "agent": "x"},
		{"level": "INFO", "msg": "nested", "request_id": "r1", "agent": "y", "a": "3", "b": "4"},
	}
	if diff := cmp.Diff(want, records()); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// A log context made on another goes past it in lookups (the other
// answers no key but the one both answer) and keeps all the rest: what
// the contexts above carry, their deadline, their cancel and its cause,
// and the other's attributes.
func TestLogAttrsNestedSkipsParent(t *testing.T) {
	type key struct{}
	deadline := time.Now().Add(time.Hour)
	above, stop := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
	defer stop()
	run, cancel := context.WithCancelCause(above)
	outer := WithLogAttrs(run, slog.String("a", "1"))
	inner := WithLogAttrs(outer, slog.String("b", "2"), slog.String("a", "3"))
	if got := inner.(*logCtx).Context; got != run {
		t.Errorf("the nested context's parent is %T, not the run's context", got)
	}
	if got := inner.Value(key{}); got != "v" {
		t.Errorf("Value = %v", got)
	}
	if got, ok := inner.Deadline(); !ok || !got.Equal(deadline) {
		t.Errorf("Deadline = %v, %v", got, ok)
	}
	want := []slog.Attr{slog.String("b", "2"), slog.String("a", "3")}
	if diff := cmp.Diff(want, LogAttrs(inner), cmp.Comparer(func(x, y slog.Attr) bool { return x.Equal(y) })); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	call, end := context.WithCancel(inner)
	defer end()
	stopped := errors.New("stopped")
	cancel(stopped)
	<-call.Done()
	if !errors.Is(inner.Err(), context.Canceled) || context.Cause(inner) != stopped || context.Cause(call) != stopped {
		t.Errorf("after the cancel: Err %v, causes %v and %v", inner.Err(), context.Cause(inner), context.Cause(call))
	}
}

// Attributes added while others read the set (run with -race): a reader
// sees a prefix of what was added, never a torn or changed attribute.
func TestLogAttrSetConcurrent(t *testing.T) {
	ctx, set := WithLogAttrSet(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				got := LogAttrs(ctx)
				for i, a := range got {
					if want := strconv.Itoa(i); a.Key != want || a.Value.String() != want {
						t.Errorf("attribute %d = %v", i, a)
						return
					}
				}
				_ = append(got, slog.String("mine", "x")) // copies: the set is not touched
			}
		})
	}
	for i := range 20 {
		set.Add(slog.String(strconv.Itoa(i), strconv.Itoa(i)))
	}
	wg.Wait()
	if got := len(set.Attrs()); got != 20 {
		t.Errorf("%d attributes, want 20", got)
	}
}

// The contexts WithLogAttrSet and turn.begin make carry the parent's
// values, deadline and cancellation as a derived context does.
func TestLogAttrContextsPassThrough(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	set, _ := WithLogAttrSet(parent)
	var l logCtx
	l.init(set, slog.String("a", "1"))
	for _, ctx := range []context.Context{set, &l} {
		if ctx.Value(key{}) != "v" || ctx.Err() != nil {
			t.Fatalf("%T: value %v, err %v", ctx, ctx.Value(key{}), ctx.Err())
		}
	}
	cause := context.DeadlineExceeded
	cancel(cause)
	for _, ctx := range []context.Context{set, &l} {
		<-ctx.Done()
		if ctx.Err() != context.Canceled || context.Cause(ctx) != cause {
			t.Fatalf("%T: err %v, cause %v", ctx, ctx.Err(), context.Cause(ctx))
		}
	}
}

// A request's log set, then a turn's and an agent's attributes, as a
// served turn makes them (no record logged: the usual case).
func BenchmarkLogAttrContexts(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		ctx, set := WithLogAttrSet(context.Background())
		set.Add(slog.String("request_id", "req_1"))
		var l logCtx
		l.init(ctx, slog.String("session_id", "s"), slog.String("invocation_id", "e-1"))
		if WithLogAttrs(&l, slog.String("agent", "a")) == nil {
			b.Fatal("no context")
		}
	}
}
