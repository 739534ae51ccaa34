package gateway

import (
	"context"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
)

// sseWriter writes a text/event-stream response, one flush per frame, or
// fewer when the turn's pacer holds a flush back (see pacer).
type sseWriter struct {
	w http.ResponseWriter
	// rc is held by value: http.NewResponseController's result is a
	// pointer to a struct of one field, an allocation a stream otherwise.
	rc   http.ResponseController
	pace *pacer // nil: every frame flushed
}

// startSSE sends the status and streaming headers. pace may be nil.
func startSSE(w http.ResponseWriter, pace *pacer) *sseWriter {
	s := newSSE(w, pace)
	_ = s.rc.Flush()
	return s
}

// newSSE is startSSE without the flush: the headers go out with the first
// frame. A stream has no write deadline: it lasts as long as its turn, and
// its keepalives find a client that went away. pace may be nil.
func newSSE(w http.ResponseWriter, pace *pacer) *sseWriter {
	s := new(sseWriter)
	s.open(w, pace)
	return s
}

// open makes s, a zero sseWriter, the writer newSSE returns, in place:
// for a writer that lives in a larger allocation of its caller's (a
// stream's).
func (s *sseWriter) open(w http.ResponseWriter, pace *pacer) {
	*s = sseWriter{w: w, rc: *http.NewResponseController(w), pace: pace}
	_ = s.rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	// The values are shared, read-only slices (as h.Set would store them,
	// but not made for every stream): a header's values are replaced
	// (Set, Del) or appended to (Add, which copies a full slice), never
	// written in place.
	h["Content-Type"] = sseContentType
	h["Cache-Control"] = sseCacheControl
	h["Connection"] = sseConnection
	h["X-Accel-Buffering"] = sseAccelBuffering
	h.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
}

// The values of the headers of every SSE response, each a slice of length
// and capacity 1 (an append copies it).
var (
	sseContentType    = []string{"text/event-stream"}
	sseCacheControl   = []string{"no-cache"}
	sseConnection     = []string{"keep-alive"}
	sseAccelBuffering = []string{"no"}
)

// data writes one "data: <payload>\n\n" frame and flushes it.
func (s *sseWriter) data(payload []byte) error {
	buf := make([]byte, 0, len(payload)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, payload...)
	buf = append(buf, '\n', '\n')
	return s.frame(buf)
}

// idData writes an id-only block, "id: <id>\n\n", and the data block
// "data: <payload>\n\n" in one write and flushes them (as frame does):
// EventSource gives the id to the data after it, and clients that accept
// only one-line data blocks skip the id block. Without an id it is data.
func (s *sseWriter) idData(id string, payload []byte) error {
	if id == "" {
		return s.data(payload)
	}
	buf := make([]byte, 0, len(id)+len(payload)+16)
	buf = append(buf, "id: "...)
	buf = append(buf, id...)
	buf = append(buf, "\n\ndata: "...)
	buf = append(buf, payload...)
	buf = append(buf, '\n', '\n')
	return s.frame(buf)
}

// frame writes bytes that are already a whole SSE frame and flushes them,
// unless the pacer holds the flush back.
func (s *sseWriter) frame(b []byte) error { return s.write(b, true) }

// comment writes a ": text" comment line (a keepalive) and flushes it.
func (s *sseWriter) comment(text string) error {
	return s.write([]byte(": "+text+"\n\n"), false)
}

// write writes b and flushes it, or, if it may be held, leaves the flush
// to the pacer when the model has more at hand.
func (s *sseWriter) write(b []byte, mayHold bool) error {
	if p := s.pace; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	if p := s.pace; p != nil {
		if p.more && mayHold {
			p.more, p.held = false, s
			return nil
		}
		p.held = nil
	}
	return s.rc.Flush()
}

// pacer is a streamed turn's model.Pacer: a frame written for a partial
// response the model says is followed by more it has already read is not
// flushed; the next frame's flush, or the model's Waiting before it reads
// the network again or ends its stream, sends it. Nothing waits for a
// flush: a delta that arrived alone is flushed before the model reads on,
// and so before its successor exists. mu serialises the writer between
// the pump and the model calls that may run on goroutines of their own.
type pacer struct {
	mu   sync.Mutex
	more bool       // the latest partial response has more read after it
	held *sseWriter // written and not flushed
}

var _ model.Pacer = (*pacer)(nil)

// Buffered implements model.Pacer.
func (p *pacer) Buffered(more bool) {
	p.mu.Lock()
	p.more = more
	p.mu.Unlock()
}

// Waiting implements model.Pacer: it flushes what was held.
func (p *pacer) Waiting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.more = false
	if w := p.held; w != nil {
		p.held = nil
		_ = w.rc.Flush() // a client gone shows at the next write
	}
}

// pumped is the consumer pump drives: event takes each event of the run,
// keepalive runs when the run has been silent, stop cancels the context
// the run was started with. One object rather than three func values: a
// method value passed on is an allocation each.
type pumped[E any] interface {
	event(ev E) error
	keepalive() error
	stop()
}

// pump ranges over a run's events on the caller's goroutine and hands each
// to p.event; p.keepalive runs (on a timer's goroutine, never at the same
// time as p.event) whenever interval passes without an event or
// keepalive. It returns the run's error, p.event's or p.keepalive's error,
// or the cause of ctx ending; once ctx has ended no event reaches p.event.
// pump calls p.stop before returning, and no keepalive runs after pump
// returns. k, a zero keepalive or one of a pump that returned, is pump's
// state: its caller's, so that a turn holds it in its own allocation.
//
// Events are handed over without a goroutine in between: a streamed answer
// is one event per delta, and a channel hand-off per delta cost a goroutine
// switch (and scheduling delay on a busy machine) each.
func pump[E any](ctx context.Context, k *keepalive[E], p pumped[E], events iter.Seq2[E, error], interval time.Duration) error {
	*k = keepalive[E]{base: time.Now(), interval: interval, p: p, ctx: ctx}
	k.mu.Lock()
	k.timer = time.AfterFunc(interval, k.fire)
	k.mu.Unlock()
	defer k.stop()
	// k.yield is the loop's body: a range over events would allocate the
	// loop's state and result besides its body's function.
	events(k.yield)
	if k.err != nil {
		return k.err
	}
	if ctx.Err() != nil {
		return k.failed(ctx)
	}
	return nil
}

// yield takes an event of pump's run (events calls it with each), and
// stops the run, its error in k.err, at the first error or once the
// context ended.
func (k *keepalive[E]) yield(ev E, err error) bool {
	if k.ctx.Err() != nil {
		k.err = k.failed(k.ctx)
		return false
	}
	if err == nil {
		k.mu.Lock()
		err = k.p.event(ev)
		k.last = time.Since(k.base)
		k.mu.Unlock()
	}
	if err != nil {
		k.err = err
		return false
	}
	return true
}

// keepalive is a pump's timer for onIdle. Its state is one object rather
// than variables captured by closures, which would each be allocated on
// their own and kept for as long as the stream is open.
type keepalive[E any] struct {
	mu sync.Mutex // serialises event and keepalive; guards the rest
	// last is when the latest event or keepalive was, after base: the
	// monotonic clock alone, read once an event (time.Now reads the wall
	// clock too).
	base     time.Time
	last     time.Duration
	stopped  bool
	idleErr  error
	timer    *time.Timer
	interval time.Duration
	p        pumped[E]
	// ctx is pump's; err is the error yield stopped the run with (both
	// the pump's goroutine's alone).
	ctx context.Context
	err error
}

// fire runs on the timer's goroutine: keepalive, when interval has passed
// since the latest event or keepalive.
func (k *keepalive[E]) fire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if wait := k.interval - (time.Since(k.base) - k.last); wait > 0 {
		k.timer.Reset(wait)
		return
	}
	if err := k.p.keepalive(); err != nil {
		k.idleErr, k.stopped = err, true
		k.p.stop()
		return
	}
	k.last = time.Since(k.base)
	k.timer.Reset(k.interval)
}

// stop ends the keepalives and cancels the run; no keepalive runs after
// it.
func (k *keepalive[E]) stop() {
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.timer.Stop()
	k.p.stop()
}

// failed is the error of a pump whose ctx ended: keepalive's, else the
// cause.
func (k *keepalive[E]) failed(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.idleErr != nil {
		return k.idleErr
	}
	return context.Cause(ctx)
}
