package runs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"sync"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// Frame is one event in a run's log. Seq numbers a run's frames from 0 in
// the order they were appended. A frame holds its event's JSON (Data), or,
// appended by a surface that never marshals it, the event itself (Event):
// JSON returns the wire form either way, Decode the event. Frames read
// from a log may hold either, whichever was appended (a log may keep an
// event as its JSON): read them through JSON or Decode.
type Frame struct {
	Seq int64
	// Data is the event in ADK's wire form, as a surface sent it. It is
	// shared with the log: read it, never change it.
	Data []byte
	// Event is the event, when Data is nil.
	Event *sessions.Event
}

// JSON returns the frame's event in ADK's wire form: Data, or Event
// encoded.
func (f Frame) JSON() ([]byte, error) {
	if f.Data != nil {
		return f.Data, nil
	}
	return f.AppendJSON(nil)
}

// AppendJSON appends the frame's event in ADK's wire form to b.
func (f Frame) AppendJSON(b []byte) ([]byte, error) {
	switch {
	case f.Data != nil:
		return append(b, f.Data...), nil
	case f.Event == nil:
		return append(b, "null"...), nil
	}
	return f.Event.AppendJSON(b)
}

// Decode returns the frame's event: Event, or Data read with
// sessions.UnmarshalEvent (a log that keeps JSON gives frames with Data
// only; the Redis one, those it kept as JSON).
func (f Frame) Decode() (*sessions.Event, error) {
	if f.Event != nil {
		return f.Event, nil
	}
	ev, err := sessions.UnmarshalEvent(string(f.Data))
	if err != nil {
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

// A FreshOpener is an EventLog that starts the log of a run whose id was
// just made (nothing can have been logged under it) without asking its
// store: the log is created with its first write, by its replica, which
// reads it as open meanwhile. A follower elsewhere that comes before that
// write finds no log yet: Follow waits for it a while (see the
// implementation), and a caller that knows the run is live (its Index
// says so) takes a Read's ErrNotFound as an empty log.
type FreshOpener interface {
	// OpenFresh starts the log of run, an id nothing was logged under.
	OpenFresh(run string)
}

// An IndexEnder is an EventLog that can record a run's final Info in an
// Index and end its log in one round trip (the Redis log, with the index
// of its own store, on a single node): Run.Finish then uses it instead of
// Index.Put and End.
type IndexEnder interface {
	// PutEnd does what idx.Put(ctx, in, retention) then End(ctx, in.ID)
	// do: a reader that finds the log ended finds in in idx. It returns
	// End's error; the record is best effort, as a Put alone is for
	// Finish.
	PutEnd(ctx context.Context, idx Index, in Info, retention time.Duration) error
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
	// MaxBytes bounds what every log together holds, roughly (a live
	// run's frames count their JSON, or an estimate of their event's; an
	// ended run's what they are encoded in and 4 bytes each; default
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
	// spare holds the emptied frame slices of logs that ended (at most
	// maxSpare, of at most maxSpareFrames each), for the next logs to
	// append to: a run's frames are held only until its end, and a
	// streamed turn would otherwise grow a new slice six times.
	spare [][]Frame
}

// The bounds of MemoryLog.spare.
const (
	maxSpare       = 8
	maxSpareFrames = 256
)

var _ EventLog = (*MemoryLog)(nil)

// endedLog names an ended log (a run's log dropped early may start anew
// under its id, and end again).
type endedLog struct {
	run string
	l   *memLog
}

// memLog is one run's frames: frame first+i is frames[i] while the run
// goes on. Once it ended they are kept encoded, one after the other in
// arena, frame first+i ending at ends[i]: two blocks that hold no pointer,
// which the garbage collector does not scan, where the frames held an
// event each (a dozen objects) or a slice. Neither changes once set.
type memLog struct {
	first   int64
	frames  []Frame
	arena   []byte
	ends    []uint32
	bytes   int64 // the size of frames, or of arena and ends
	ended   bool
	endedAt time.Time
	// wake, when not nil, is closed at the next append or end (followers
	// wait on it).
	wake chan struct{}
}

// len is the number of frames the log holds.
func (l *memLog) len() int {
	if l.ends != nil {
		return len(l.ends)
	}
	return len(l.frames)
}

// span returns frames [from, to) of the log (indexes in it).
func (l *memLog) span(from, to int) frameSpan {
	if l.ends == nil {
		return frameSpan{frames: append([]Frame(nil), l.frames[from:to]...)}
	}
	start := 0
	if from > 0 {
		start = int(l.ends[from-1])
	}
	return frameSpan{first: l.first + int64(from), arena: l.arena, start: start, ends: l.ends[from:to]}
}

// frameSpan is frames read from a log: copied from a live one, or the part
// of an ended one's arena they are encoded in (which never changes), to be
// decoded without the log's lock.
type frameSpan struct {
	frames []Frame
	// first is the number of the first frame in arena, which starts at
	// start; ends are where each frame ends.
	first int64
	arena []byte
	start int
	ends  []uint32
}

func (s frameSpan) len() int { return len(s.frames) + len(s.ends) }

// decode returns the span's frames.
func (s frameSpan) decode() ([]Frame, error) {
	if s.ends == nil {
		return s.frames, nil
	}
	frames := make([]Frame, len(s.ends))
	start := s.start
	for i, e := range s.ends {
		end := int(e)
		f, err := decodeFrame(s.arena[start:end:end])
		if err != nil {
			return nil, fmt.Errorf("runs: frame %d: %w", s.first+int64(i), err)
		}
		f.Seq = s.first + int64(i)
		frames[i], start = f, end
	}
	return frames, nil
}

// How a frame is encoded in an arena: a byte saying which, then the
// frame's JSON, or its event packed (sessions.Event.AppendPacked, a
// third of the JSON of a delta).
const (
	frameJSON byte = iota
	framePacked
)

// encodeFrames returns frames encoded one after the other, and where each
// ends.
func encodeFrames(frames []Frame) (arena []byte, ends []uint32, err error) {
	ends = make([]uint32, len(frames))
	if len(frames) == 0 {
		return nil, ends, nil
	}
	buf := arenaScratch.Get().(*[]byte)
	b := (*buf)[:0]
	defer func() {
		if cap(b) <= maxScratch {
			*buf = b[:0]
			arenaScratch.Put(buf)
		}
	}()
	for i, f := range frames {
		packed := false
		if f.Data == nil && f.Event != nil {
			b, packed = f.Event.AppendPacked(append(b, framePacked))
			if !packed {
				b = b[:len(b)-1]
			}
		}
		if !packed {
			if b, err = f.AppendJSON(append(b, frameJSON)); err != nil {
				return nil, nil, err
			}
		}
		if len(b) > math.MaxUint32 {
			return nil, nil, errors.New("runs: a run's frames take over 4 GiB")
		}
		ends[i] = uint32(len(b))
	}
	return append([]byte(nil), b...), ends, nil
}

// decodeFrame returns the frame encodeFrames wrote into b: its JSON (a
// part of b), or its event unpacked.
func decodeFrame(b []byte) (Frame, error) {
	switch {
	case len(b) > 0 && b[0] == frameJSON:
		return Frame{Data: b[1:]}, nil
	case len(b) > 0 && b[0] == framePacked:
		ev, err := sessions.UnpackEvent(b[1:])
		return Frame{Event: ev}, err
	}
	return Frame{}, errors.New("unknown encoding")
}

// arenaScratch holds the buffers frames are encoded in before they are
// copied into an arena of their size; one grown past maxScratch (a run of
// large frames) is left to the collector.
var arenaScratch = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 1 << 20

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
	f.Data = f.Data[:len(f.Data):len(f.Data)] // a reader's append copies it
	if l.frames == nil && len(m.spare) > 0 {
		last := len(m.spare) - 1
		l.frames, m.spare[last] = m.spare[last], nil
		m.spare = m.spare[:last]
	}
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
	// An append ends no log and moves no clock forward that Open, End
	// and Read do not sweep for: it sweeps only when what it added took
	// the logs past their bound (a frame of a streamed turn is appended
	// per delta; a sweep reads the clock).
	if m.bytes > m.cfg.MaxBytes {
		m.sweepLocked()
	}
	return f.Seq, nil
}

// End implements EventLog. Ending a log that does not exist starts an
// empty, ended one (a run that produced no event). The frames are then
// encoded into the log's arena (outside the lock: readers meanwhile read
// them as they were); a frame whose event cannot be encoded keeps them as
// they are.
func (m *MemoryLog) End(ctx context.Context, run string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.end(run)
}

// end is End once ctx was found live (Run.Finish's, detached from its
// request's, never ends).
func (m *MemoryLog) end(run string) error {
	m.mu.Lock()
	l := m.logLocked(run)
	if l.ended {
		m.mu.Unlock()
		return nil
	}
	l.ended, l.endedAt = true, m.cfg.Now()
	m.ended = append(m.ended, endedLog{run, l})
	l.wakeLocked()
	frames := l.frames // no frame is appended to an ended log
	m.mu.Unlock()
	arena, ends, err := encodeFrames(frames)
	if err != nil {
		return nil
	}
	size := int64(len(arena) + 4*len(ends))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs[run] == l { // not dropped meanwhile
		m.bytes += size - l.bytes
	}
	l.frames, l.arena, l.ends, l.bytes = nil, arena, ends, size
	m.reuseLocked(frames)
	m.sweepLocked()
	return nil
}

// reuseLocked keeps frames, which no log holds any more (readers copy
// what they read of a live log), for a later log to append to, emptied;
// m.mu is held.
func (m *MemoryLog) reuseLocked(frames []Frame) {
	if len(m.spare) == maxSpare || cap(frames) == 0 || cap(frames) > maxSpareFrames {
		return
	}
	clear(frames)
	m.spare = append(m.spare, frames[:0])
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
	m.sweepLocked()
	span, ended, _, err := m.afterLocked(run, after, limit)
	m.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	frames, err := span.decode()
	if err != nil {
		return nil, false, err
	}
	return frames, ended, nil
}

// afterLocked returns the frames of run after cursor (at most limit when
// limit > 0); wake is the channel to wait on for more when there are none
// and the log goes on.
func (m *MemoryLog) afterLocked(run string, after int64, limit int) (span frameSpan, ended bool, wake <-chan struct{}, err error) {
	l := m.logs[run]
	if l == nil {
		return span, false, nil, ErrNotFound
	}
	next := l.first + int64(l.len())
	switch {
	case after < -1:
		return span, false, nil, ErrCursor
	case after+1 < l.first:
		return span, false, nil, ErrTrimmed
	case after >= next:
		return span, false, nil, ErrCursor
	}
	from, to := int(after+1-l.first), l.len()
	if limit > 0 && to-from > limit {
		to = from + limit
	}
	span = l.span(from, to)
	if span.len() == 0 && !l.ended {
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake = l.wake
	}
	return span, l.ended && after+1+int64(span.len()) >= next, wake, nil
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
			span, ended, wake, err := m.afterLocked(run, after, 0)
			m.mu.Unlock()
			var frames []Frame
			if err == nil {
				frames, err = span.decode()
			}
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
