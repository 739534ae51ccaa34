package agentcore

import (
	"context"
	"errors"
	"sync"
)

// errStopped is the cause of the context of background work that
// Background.Stop cancelled.
var errStopped = errors.New("agentcore: background work stopped")

// Background runs the work that goes on after a turn's response is
// complete (the runners' compactions), so that whoever stops the process
// can wait for it, and stop it. The zero value is ready to use. One
// Background may serve several runners (RunnerConfig.Background): a
// server's, whose catalog reloads replace its runners while their work
// still runs.
type Background struct {
	mu      sync.Mutex
	running int
	// idle is closed when running drops to 0; made by the first Wait
	// that finds work running.
	idle   chan struct{}
	stop   context.Context
	cancel context.CancelCauseFunc
}

// start counts one more piece of work and returns the context that Stop
// cancels; ok is false after Stop.
func (b *Background) start() (stop context.Context, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stop == nil {
		b.stop, b.cancel = context.WithCancelCause(context.Background())
	}
	if b.stop.Err() != nil {
		return nil, false
	}
	b.running++
	return b.stop, true
}

func (b *Background) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running--; b.running == 0 && b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
}

// Go runs f on a goroutine of its own, with a context that keeps ctx's
// values but not its deadline or cancellation (the turn that asked for
// the work is over) and that Stop cancels. After Stop it runs nothing.
func (b *Background) Go(ctx context.Context, f func(ctx context.Context)) {
	stop, ok := b.start()
	if !ok {
		return
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unlink := context.AfterFunc(stop, func() { cancel(context.Cause(stop)) })
	go func() {
		defer b.done()
		defer cancel(nil)
		defer unlink()
		f(ctx)
	}()
}

// Running is how many pieces of work run now.
func (b *Background) Running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

// Wait waits until no work runs, or until ctx ends: then it returns ctx's
// error, and the work goes on.
func (b *Background) Wait(ctx context.Context) error {
	b.mu.Lock()
	if b.running == 0 {
		b.mu.Unlock()
		return nil
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	idle := b.idle
	b.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop cancels the work running (its context ends; work that honours it
// returns soon after, which Wait tells) and starts no more.
func (b *Background) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stop == nil {
		b.stop, b.cancel = context.WithCancelCause(context.Background())
	}
	b.cancel(errStopped)
}
