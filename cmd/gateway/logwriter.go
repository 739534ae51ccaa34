package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushEvery is how long a log line waits in logWriter's buffer at
// most; logBufferMax how much the buffer holds before the line that fills
// it writes it out itself. At 5 ms a client sending one turn after the
// other (a turn takes longer) had a write of its own for each line, and a
// timer's wake-up more: measured under the load test, more CPU per turn at
// c=1. At 50 ms that client's lines go out several at a time, and under any
// load the timer fires at most 20 times a second.
const (
	logFlushEvery = 50 * time.Millisecond
	logBufferMax  = 64 << 10
)

// logWriter is the logs' way to stdout: the lines are gathered and written
// in one system call every logFlushEvery (by a timer armed by the first
// line after a write), or at once by the line that fills logBufferMax,
// instead of one system call per line on the goroutine that logs. A
// request's access line is written after its answer went out, and net/http
// reads a connection's next request only when the handler has returned:
// the write was on the path of a client that sends its next request as
// soon as it has the answer, and at 1,000 requests a second it was 1,000
// system calls. Close writes what is left and makes every later line a
// write of its own: run closes it on every way out, so that a graceful
// stop loses no line.
type logWriter struct {
	w io.Writer

	out sync.Mutex // held while writing to w: batches go out in order

	mu     sync.Mutex // guards what follows
	buf    []byte
	spare  []byte // the buffer the last batch went out from, to fill next
	timer  *time.Timer
	armed  bool
	closed bool
}

func newLogWriter(w io.Writer) *logWriter { return &logWriter{w: w} }

// Write takes one line (slog's handlers write a record in one call).
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.out.Lock()
		defer l.out.Unlock()
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	if len(l.buf) >= logBufferMax {
		l.mu.Unlock()
		return len(p), l.Flush()
	}
	if !l.armed {
		l.armed = true
		if l.timer == nil {
			l.timer = time.AfterFunc(logFlushEvery, func() { _ = l.Flush() })
		} else {
			l.timer.Reset(logFlushEvery)
		}
	}
	l.mu.Unlock()
	return len(p), nil
}

// Flush writes the lines gathered so far.
func (l *logWriter) Flush() error {
	l.out.Lock()
	defer l.out.Unlock()
	l.mu.Lock()
	batch := l.buf
	l.buf, l.spare = l.spare[:0], nil
	l.armed = false // a line from now on arms the timer again (a Reset of one that fired or will find nothing)
	l.mu.Unlock()
	if len(batch) == 0 {
		l.giveBack(batch)
		return nil
	}
	_, err := l.w.Write(batch)
	l.giveBack(batch)
	return err
}

// giveBack keeps a written batch's buffer for the next one, unless it grew
// past the bound (a burst) or another is kept already.
func (l *logWriter) giveBack(b []byte) {
	if cap(b) > logBufferMax*2 {
		return
	}
	l.mu.Lock()
	if l.spare == nil {
		l.spare = b[:0]
	}
	l.mu.Unlock()
}

// Close writes what is left; lines written after it go out one by one.
func (l *logWriter) Close() error {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	return l.Flush()
}

// urgentLines is a handler whose records at slog.LevelWarn and above go
// out at once: flush writes the batch they end (the lines before them
// first, in order). A warning or an error is what an operator reads after
// a crash, and what must not wait in a buffer the crash loses; they are
// rare, so the write each costs does not show.
type urgentLines struct {
	slog.Handler
	flush func() error
}

func (h urgentLines) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h urgentLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	return urgentLines{h.Handler.WithAttrs(attrs), h.flush}
}

func (h urgentLines) WithGroup(name string) slog.Handler {
	return urgentLines{h.Handler.WithGroup(name), h.flush}
}
