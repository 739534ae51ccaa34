package gateway

import (
	"context"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// sseWriter writes a text/event-stream response, one flush per frame.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE sends the status and streaming headers. extra headers are set
// before the status goes out.
func startSSE(w http.ResponseWriter, extra map[string]string) *sseWriter {
	s := newSSE(w, extra)
	_ = s.rc.Flush()
	return s
}

// newSSE is startSSE without the flush: the headers go out with the first
// frame.
func newSSE(w http.ResponseWriter, extra map[string]string) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// data writes one "data: <payload>\n\n" frame and flushes it.
func (s *sseWriter) data(payload []byte) error {
	buf := make([]byte, 0, len(payload)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, payload...)
	buf = append(buf, '\n', '\n')
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	return s.rc.Flush()
}

// frame writes bytes that are already a whole SSE frame and flushes them.
func (s *sseWriter) frame(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// comment writes a ": text" comment line (a keepalive) and flushes it.
func (s *sseWriter) comment(text string) error {
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		return err
	}
	return s.rc.Flush()
}

// pump ranges over a run's events on the caller's goroutine and hands each
// to onEvent; onIdle runs (on a timer's goroutine, never at the same time
// as onEvent) whenever interval passes without an event or keepalive. It
// returns the run's error, onEvent's or onIdle's error, or the cause of ctx
// ending; once ctx has ended no event reaches onEvent. cancel must cancel
// the context the run was started with: pump calls it before returning,
// and no onIdle runs after pump returns.
//
// Events are handed over without a goroutine in between: a streamed answer
// is one event per delta, and a channel hand-off per delta cost a goroutine
// switch (and scheduling delay on a busy machine) each.
func pump(ctx context.Context, cancel context.CancelFunc, events iter.Seq2[*sessions.Event, error], interval time.Duration,
	onEvent func(*sessions.Event) error, onIdle func() error) error {
	var (
		mu      sync.Mutex // serialises onEvent and onIdle; guards the rest
		last    = time.Now()
		stopped bool
		idleErr error
		timer   *time.Timer
	)
	mu.Lock()
	timer = time.AfterFunc(interval, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if wait := interval - time.Since(last); wait > 0 {
			timer.Reset(wait)
			return
		}
		if err := onIdle(); err != nil {
			idleErr, stopped = err, true
			cancel()
			return
		}
		last = time.Now()
		timer.Reset(interval)
	})
	mu.Unlock()
	defer func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		timer.Stop()
		cancel()
	}()
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		if idleErr != nil {
			return idleErr
		}
		return context.Cause(ctx)
	}
	for ev, err := range events {
		if ctx.Err() != nil {
			return failed()
		}
		if err != nil {
			return err
		}
		mu.Lock()
		err = onEvent(ev)
		last = time.Now()
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return failed()
	}
	return nil
}
