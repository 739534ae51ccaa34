package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// Frame is one event in a run's log. Seq numbers a run's frames from 0 in
// the order they were appended. A frame holds its event's JSON (Data), or,
// appended by a surface that never marshals it, the event itself (Event):
// JSON returns the wire form either way.
type Frame struct {
	Seq int64
	// Data is the event in ADK's wire form, as a surface sent it.
	Data []byte
	// Event is the event, when Data is nil.
	Event *sessions.Event
}

// JSON returns the frame's event in ADK's wire form: Data, or Event
// marshalled.
func (f Frame) JSON() ([]byte, error) {
	if f.Data != nil {
		return f.Data, nil
	}
	return json.Marshal(f.Event)
}

// Decode returns the frame's event: Event, or Data unmarshalled (a log
// that keeps JSON, as a shared one does, gives frames with Data only).
func (f Frame) Decode() (*sessions.Event, error) {
	if f.Event != nil {
		return f.Event, nil
	}
	ev := new(sessions.Event)
	if err := json.Unmarshal(f.Data, ev); err != nil {
		return nil, fmt.Errorf("runs: frame %d: %w", f.Seq, err)
	}
	return ev, nil
}

// size is what the frame holds, roughly, in bytes: its JSON, or an
// estimate of the event's (a fixed part and the content's payloads).
func (f Frame) size() int64 {
	const frameOverhead = 64 // the Frame in its log's slice
	if f.Data != nil || f.Event == nil {
		return frameOverhead + int64(len(f.Data))
	}
	n := int64(frameOverhead + 512)
	if c := f.Event.Content; c != nil {
		for _, p := range c.Parts {
			if p == nil {
				continue
			}
			n += int64(len(p.Text))
			if p.InlineData != nil {
				n += int64(len(p.InlineData.Data))
			}
			if p.FunctionCall != nil || p.FunctionResponse != nil {
				n += 256
			}
		}
	}
	return n
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
	// Append adds f (Data or Event; Seq is ignored) to run's log
	// (starting it if need be) and returns its number. The log keeps
	// what it is given: the caller changes neither Data nor Event
	// afterwards (the runtime's events are not changed once yielded; a
	// surface's view clones one before it changes it). ErrEnded once the
	// log ended.
	Append(ctx context.Context, run string, f Frame) (int64, error)
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

// The bounds of a MemoryLog when its config leaves them zero.
const (
	DefaultMaxEndedRuns = 10000
	DefaultMaxBytes     = 64 << 20
)

// MemoryLogConfig configures a MemoryLog. Zero fields mean the defaults.
type MemoryLogConfig struct {
	// Retention is how long a log is kept after it ended (default 10
	// minutes).
	Retention time.Duration
	// MaxFrames bounds each log; beyond it the oldest frames go
	// (default 10,000).
	MaxFrames int
	// MaxEndedRuns bounds the ended logs kept (default
	// DefaultMaxEndedRuns); beyond it the oldest ended go first.
	MaxEndedRuns int
	// MaxBytes bounds what every log together holds, roughly (Frame
	// sizes: a frame's JSON, or an estimate of its event's; default
	// DefaultMaxBytes): beyond it the oldest ended logs go first. Logs
	// of live runs are never dropped (each is bounded by MaxFrames), so
	// they alone may go over it.
	MaxBytes int64
	// Now replaces the clock (tests).
	Now func() time.Time
}

// MemoryLog is an EventLog in this process's memory.
type MemoryLog struct {
	cfg MemoryLogConfig

	mu    sync.Mutex
	logs  map[string]*memLog
	ended []endedLog // ended logs in the order they ended
	bytes int64      // the size of every log's frames
}

var _ EventLog = (*MemoryLog)(nil)

// endedLog names an ended log (a run's log dropped early may start anew
// under its id, and end again).
type endedLog struct {
	run string
	l   *memLog
}

// memLog is one run's frames: frames[i] has number first+i.
type memLog struct {
	first   int64
	frames  []Frame
	bytes   int64 // the size of frames
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
	if cfg.MaxEndedRuns <= 0 {
		cfg.MaxEndedRuns = DefaultMaxEndedRuns
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
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
func (m *MemoryLog) Append(ctx context.Context, run string, f Frame) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	size := f.size()
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logLocked(run)
	if l.ended {
		return 0, ErrEnded
	}
	f.Seq = l.first + int64(len(l.frames))
	l.frames = append(l.frames, f)
	l.bytes += size
	m.bytes += size
	if over := len(l.frames) - m.cfg.MaxFrames; over > 0 {
		for _, old := range l.frames[:over] {
			l.bytes -= old.size()
			m.bytes -= old.size()
		}
		clear(l.frames[:over])
		l.frames = l.frames[over:]
		l.first += int64(over)
	}
	l.wakeLocked()
	m.sweepLocked()
	return f.Seq, nil
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
	m.ended = append(m.ended, endedLog{run, l})
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

// sweepLocked drops ended logs past their retention, then the oldest
// ended ones while there are more than MaxEndedRuns or the logs hold more
// than MaxBytes.
func (m *MemoryLog) sweepLocked() {
	now := m.cfg.Now()
	n := 0
	for ; n < len(m.ended); n++ {
		e := m.ended[n]
		if now.Sub(e.l.endedAt) <= m.cfg.Retention && len(m.ended)-n <= m.cfg.MaxEndedRuns && m.bytes <= m.cfg.MaxBytes {
			break
		}
		m.bytes -= e.l.bytes
		if m.logs[e.run] == e.l {
			delete(m.logs, e.run)
		}
	}
	if n > 0 {
		clear(m.ended[:n])
		m.ended = m.ended[n:]
	}
}
