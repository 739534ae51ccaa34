package runs

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// Frame is one event in a run's log. Seq numbers a run's frames from 0 in
// the order they were appended.
type Frame struct {
	Seq   int64
	Event *sessions.Event
}

// EventLog keeps the events of runs, partial ones included, in order, so
// that a client can attach to a run after the fact: read what it missed
// after a cursor, then follow the rest live. A log is ended when its run
// is, and kept for a retention after that. Implementations may be shared
// by every replica (the Redis one is); the memory one serves one process.
type EventLog interface {
	// Open starts run's log, empty, so that followers can wait on it
	// before its first event; opening a log that exists does nothing.
	Open(ctx context.Context, run string) error
	// Append adds ev to run's log (starting it if need be) and returns its
	// number. The log keeps its own copy. ErrEnded once the log ended.
	Append(ctx context.Context, run string, ev *sessions.Event) (int64, error)
	// End marks run's log complete: followers get what is left and stop.
	End(ctx context.Context, run string) error
	// Read returns up to limit frames after cursor (-1 for the first
	// frame on; limit <= 0 means all), and whether the log has ended.
	Read(ctx context.Context, run string, after int64, limit int) ([]Frame, bool, error)
	// Follow yields the frames after cursor, then each new one as it is
	// appended, until the log ends (the sequence then returns) or ctx is
	// done (it yields ctx's error last).
	Follow(ctx context.Context, run string, after int64) iter.Seq2[Frame, error]
}

// Errors of an EventLog, beside ErrNotFound (no log of that run, or it
// expired).
var (
	// ErrEnded: the log was ended; nothing more is appended to it.
	ErrEnded = errors.New("runs: the run's log has ended")
	// ErrTrimmed: the cursor points before the oldest frame kept (the log
	// is bounded); the frames after it are no longer all there.
	ErrTrimmed = errors.New("runs: the cursor is older than the log")
	// ErrCursor: the cursor points past the last frame.
	ErrCursor = errors.New("runs: the cursor is past the end of the log")
)

// MemoryLogConfig configures a MemoryLog. Zero fields mean the defaults.
type MemoryLogConfig struct {
	// Retention is how long a log is kept after it ended (default 10
	// minutes).
	Retention time.Duration
	// MaxFrames bounds each log; beyond it the oldest frames go
	// (default 10,000).
	MaxFrames int
	// Now replaces the clock (tests).
	Now func() time.Time
}

// MemoryLog is an EventLog in this process's memory.
type MemoryLog struct {
	cfg MemoryLogConfig

	mu    sync.Mutex
	logs  map[string]*memLog
	ended []string // ended logs in the order they ended
}

var _ EventLog = (*MemoryLog)(nil)

// memLog is one run's frames: frames[i] has number first+i.
type memLog struct {
	first   int64
	frames  []Frame
	ended   bool
	endedAt time.Time
	// wake, when not nil, is closed at the next append or end (followers
	// wait on it).
	wake chan struct{}
}

// NewMemoryLog returns an empty log.
func NewMemoryLog(cfg MemoryLogConfig) *MemoryLog {
	if cfg.Retention <= 0 {
		cfg.Retention = 10 * time.Minute
	}
	if cfg.MaxFrames <= 0 {
		cfg.MaxFrames = 10000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MemoryLog{cfg: cfg, logs: map[string]*memLog{}}
}

// Open implements EventLog.
func (m *MemoryLog) Open(ctx context.Context, run string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	m.logLocked(run)
	return nil
}

// logLocked returns run's log, started if need be.
func (m *MemoryLog) logLocked(run string) *memLog {
	l := m.logs[run]
	if l == nil {
		l = &memLog{}
		m.logs[run] = l
	}
	return l
}

// Append implements EventLog.
func (m *MemoryLog) Append(ctx context.Context, run string, ev *sessions.Event) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ev = ev.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	l := m.logLocked(run)
	if l.ended {
		return 0, ErrEnded
	}
	seq := l.first + int64(len(l.frames))
	l.frames = append(l.frames, Frame{Seq: seq, Event: ev})
	if over := len(l.frames) - m.cfg.MaxFrames; over > 0 {
		clear(l.frames[:over])
		l.frames = l.frames[over:]
		l.first += int64(over)
	}
	l.wakeLocked()
	return seq, nil
}

// End implements EventLog. Ending a log that does not exist starts an
// empty, ended one (a run that produced no event).
func (m *MemoryLog) End(ctx context.Context, run string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logLocked(run)
	if l.ended {
		return nil
	}
	l.ended, l.endedAt = true, m.cfg.Now()
	m.ended = append(m.ended, run)
	l.wakeLocked()
	m.sweepLocked()
	return nil
}

func (l *memLog) wakeLocked() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// Read implements EventLog.
func (m *MemoryLog) Read(ctx context.Context, run string, after int64, limit int) ([]Frame, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked()
	frames, ended, _, err := m.afterLocked(run, after, limit)
	return frames, ended, err
}

// afterLocked copies the frames of run after cursor (at most limit when
// limit > 0); wake is the channel to wait on for more when there are none
// and the log goes on.
func (m *MemoryLog) afterLocked(run string, after int64, limit int) (frames []Frame, ended bool, wake <-chan struct{}, err error) {
	l := m.logs[run]
	if l == nil {
		return nil, false, nil, ErrNotFound
	}
	next := l.first + int64(len(l.frames))
	switch {
	case after < -1:
		return nil, false, nil, ErrCursor
	case after+1 < l.first:
		return nil, false, nil, ErrTrimmed
	case after >= next:
		return nil, false, nil, ErrCursor
	}
	rest := l.frames[after+1-l.first:]
	if limit > 0 && len(rest) > limit {
		rest = rest[:limit]
	}
	frames = append([]Frame(nil), rest...)
	if len(frames) == 0 && !l.ended {
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake = l.wake
	}
	return frames, l.ended && after+1+int64(len(frames)) >= next, wake, nil
}

// Follow implements EventLog. It holds no lock while it yields and starts
// no goroutine.
func (m *MemoryLog) Follow(ctx context.Context, run string, after int64) iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		for {
			if err := ctx.Err(); err != nil {
				yield(Frame{}, err)
				return
			}
			m.mu.Lock()
			frames, ended, wake, err := m.afterLocked(run, after, 0)
			m.mu.Unlock()
			if err != nil {
				yield(Frame{}, err)
				return
			}
			for _, f := range frames {
				if !yield(f, nil) {
					return
				}
				after = f.Seq
			}
			if ended {
				return
			}
			if wake != nil {
				select {
				case <-wake:
				case <-ctx.Done():
				}
			}
		}
	}
}

// sweepLocked drops ended logs past their retention.
func (m *MemoryLog) sweepLocked() {
	now := m.cfg.Now()
	n := 0
	for ; n < len(m.ended); n++ {
		l := m.logs[m.ended[n]]
		if l != nil && now.Sub(l.endedAt) <= m.cfg.Retention {
			break
		}
		delete(m.logs, m.ended[n])
	}
	if n > 0 {
		clear(m.ended[:n])
		m.ended = m.ended[n:]
	}
}
