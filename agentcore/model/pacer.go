package model

import "context"

// Pacer lets the consumer of a streamed call hold back the flush of what it
// wrote for a partial response while the next one is already at hand, and
// flush before the model waits: a burst of deltas that arrived together
// goes out in one write, and a delta that arrived alone goes out at once.
// A streaming provider that reads its upstream itself finds the Pacer on
// its context (PacerFrom) and tells it both; a provider that does not is
// flushed after every response, as if it always waited.
//
// Its methods may be called from the goroutine of any model call under the
// context (parallel agents), so an implementation serialises them with its
// own writes.
type Pacer interface {
	// Buffered is called before each partial response is yielded: more
	// reports that more of the stream is already read from the network,
	// so the consumer may hold that response's flush.
	Buffered(more bool)
	// Waiting is called before the model waits on its upstream (a read
	// that may block) and when its stream has ended: whatever was held
	// back goes out now.
	Waiting()
}

type pacerKey struct{}

// WithPacer returns ctx carrying p for the model calls made under it.
func WithPacer(ctx context.Context, p Pacer) context.Context {
	return context.WithValue(ctx, pacerKey{}, p)
}

// PacerFrom returns the Pacer ctx carries, nil if none.
func PacerFrom(ctx context.Context) Pacer {
	p, _ := ctx.Value(pacerKey{}).(Pacer)
	return p
}
