package gateway

import (
	"context"
	"iter"
	"net/http"
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
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
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

// pump ranges over a run's events on its own goroutine and hands each to
// onEvent on the caller's goroutine; onIdle runs whenever interval passes
// without an event. It returns the run's error, onEvent's error, or the
// cause of ctx ending. cancel must cancel the context the run was started
// with: pump calls it and waits for the producer before returning, so no
// goroutine outlives it.
func pump(ctx context.Context, cancel context.CancelFunc, events iter.Seq2[*sessions.Event, error], interval time.Duration,
	onEvent func(*sessions.Event) error, onIdle func() error) error {
	type item struct {
		ev  *sessions.Event
		err error
	}
	ch := make(chan item)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for ev, err := range events {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for range ch {
		}
		<-done
	}()
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return nil
			}
			if it.err != nil {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return it.err
			}
			if err := onEvent(it.ev); err != nil {
				return err
			}
			timer.Reset(interval)
		case <-timer.C:
			if err := onIdle(); err != nil {
				return err
			}
			timer.Reset(interval)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
