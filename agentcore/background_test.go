package agentcore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore"
)

type ctxKey struct{}

// Background work outlives the turn's context but keeps its values; Wait
// waits for it or gives up with its context; Stop cancels it and starts no
// more.
func TestBackground(t *testing.T) {
	noLeaks(t)
	var bg agentcore.Background
	if err := bg.Wait(t.Context()); err != nil {
		t.Fatalf("Wait with nothing running: %v", err)
	}
	turn, endTurn := context.WithCancel(context.WithValue(t.Context(), ctxKey{}, "turn value"))
	started, release := make(chan context.Context, 1), make(chan struct{})
	finished := make(chan struct{})
	bg.Go(turn, func(ctx context.Context) {
		defer close(finished)
		started <- ctx
		<-release
	})
	ctx := <-started
	endTurn()
	if ctx.Err() != nil || ctx.Value(ctxKey{}) != "turn value" {
		t.Errorf("work's context after its turn ended: err %v, value %v; want alive, with the turn's values", ctx.Err(), ctx.Value(ctxKey{}))
	}
	if n := bg.Running(); n != 1 {
		t.Errorf("Running = %d, want 1", n)
	}
	short, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := bg.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait while work runs = %v, want its context's error", err)
	}
	close(release)
	if err := bg.Wait(t.Context()); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	select {
	case <-finished:
	default:
		t.Fatal("Wait returned before the work did")
	}

	// Stop cancels what runs; Wait then sees it return.
	bg.Go(t.Context(), func(ctx context.Context) { started <- ctx; <-ctx.Done() })
	ctx = <-started
	bg.Stop()
	if err := bg.Wait(t.Context()); err != nil {
		t.Fatalf("Wait after Stop: %v", err)
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("work's context after Stop: %v, want cancelled", ctx.Err())
	}
	ran := false
	bg.Go(t.Context(), func(context.Context) { ran = true })
	if err := bg.Wait(t.Context()); err != nil || ran || bg.Running() != 0 {
		t.Errorf("after Stop, Go ran its work (%v) or counts it (%d)", ran, bg.Running())
	}
}
