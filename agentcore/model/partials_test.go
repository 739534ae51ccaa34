package model_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentgate/agentgate/agentcore/model"
)

// A CopiedPartialsContext made in place is WithCopiedPartials's: it
// reports CopiedPartials, its parent does not, and it carries the
// parent's values and cancel, with its cause.
func TestCopiedPartialsContext(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
	var room model.CopiedPartialsContext
	for name, ctx := range map[string]context.Context{"Init": room.Init(parent), "WithCopiedPartials": model.WithCopiedPartials(parent)} {
		if !model.CopiedPartials(ctx) || model.CopiedPartials(parent) {
			t.Errorf("%s: CopiedPartials %v, its parent's %v", name, model.CopiedPartials(ctx), model.CopiedPartials(parent))
		}
		if got := ctx.Value(key{}); got != "v" {
			t.Errorf("%s: Value = %v", name, got)
		}
	}
	call, end := context.WithCancel(room.Init(parent))
	defer end()
	stopped := errors.New("stopped")
	cancel(stopped)
	<-call.Done()
	if ctx := room.Init(parent); !errors.Is(ctx.Err(), context.Canceled) || context.Cause(ctx) != stopped || context.Cause(call) != stopped {
		t.Errorf("after the cancel: Err %v, causes %v and %v", ctx.Err(), context.Cause(ctx), context.Cause(call))
	}
}
