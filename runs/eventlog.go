package runs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
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
	// It is called as the run finishes, under the run's context, which
	// has ended by then: the log is ended whatever ctx says (ctx's values
	// are kept), and a log that goes to a store detaches from its
	// cancellation itself.
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
	// do, whatever ctx says, as End: a reader that finds the log ended finds in in idx. It returns
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
	logs  map[string]logEntry
	ended []endedLog // ended logs in the order they ended
	bytes int64      // the size of every log's frames
	// endings counts the logs that ended, numbering each (logEntry.end).
	endings uint64
	// spare holds the memLogs of logs that ended, emptied (at most
	// maxSpare, their frame slices of at most maxSpareFrames each), for
	// the next logs to start with: a run's frames are held only until its
	// end, and a streamed turn would otherwise grow a new slice six times.
	spare []*memLog
}

// The bounds of MemoryLog.spare.
const (
	maxSpare       = 8
	maxSpareFrames = 256
)

var _ EventLog = (*MemoryLog)(nil)

// endedLog names an ended log in MemoryLog.ended: the log of run that
// ended end-th (a run's log dropped early may start anew under its id,
// and end again), at at.
type endedLog struct {
	run string
	end uint64
	at  time.Time
}

// logEntry is one run's log in MemoryLog.logs: live while the run goes
// on (and until its frames are encoded once it ended), then its frames
// encoded, frame first+i the i-th in data (see encodeFrames), in one block
// that holds no pointer, which the garbage collector marks without
// scanning, where live frames held an event each (a dozen objects); an
// ended log holds nothing else of its own. data never changes once set.
type logEntry struct {
	live  *memLog
	first int64
	n     int    // the number of frames in data
	data  []byte // the encoded frames, once live is nil
	end   uint64 // which ending this is (endedLog.end); zero while live
}

// ended reports whether the log has ended.
func (e logEntry) ended() bool { return e.live == nil || e.live.ended }

// size is what the log holds, roughly, in bytes: its frames' sizes while
// they are kept as they were appended, what they are encoded in once not.
func (e logEntry) size() int64 {
	if e.live != nil {
		return e.live.bytes
	}
	return int64(len(e.data))
}

// len is the number of frames the log holds, and first is the number of
// the first.
func (e logEntry) len() (first int64, n int) {
	if e.live != nil {
		return e.live.first, len(e.live.frames)
	}
	return e.first, e.n
}

// span returns frames [from, to) of the log (indexes in it).
func (e logEntry) span(from, to int) frameSpan {
	if e.live != nil {
		return frameSpan{frames: append([]Frame(nil), e.live.frames[from:to]...)}
	}
	return frameSpan{first: e.first + int64(from), data: e.data, from: from, to: to, n: e.n}
}

// memLog is the frames of a run that goes on: frame first+i is frames[i].
type memLog struct {
	first  int64
	frames []Frame
	bytes  int64 // the size of frames
	ended  bool
	// wake, when not nil, is closed at the next append or end (followers
	// wait on it).
	wake chan struct{}
}

// frameSpan is frames read from a log: copied from a live one, or frames
// [from, to) of the n an ended one's data encodes (which never changes),
// the first of them numbered first, to be decoded without the log's lock.
type frameSpan struct {
	frames      []Frame
	first       int64
	data        []byte
	from, to, n int
}

func (s frameSpan) len() int { return len(s.frames) + s.to - s.from }

// decode returns the span's frames.
func (s frameSpan) decode() ([]Frame, error) {
	if s.data == nil {
		return s.frames, nil
	}
	frames := make([]Frame, s.to-s.from)
	start := 4 * s.n
	if s.from > 0 {
		start = frameEnd(s.data, s.from-1)
	}
	for i := range frames {
		end := frameEnd(s.data, s.from+i)
		f, err := decodeFrame(s.data[start:end:end])
		if err != nil {
			return nil, fmt.Errorf("runs: frame %d: %w", s.first+int64(i), err)
		}
		f.Seq = s.first + int64(i)
		frames[i], start = f, end
	}
	return frames, nil
}

// How a frame is encoded: a byte saying which, then the frame's JSON, or
// its event packed (sessions.Event.AppendPacked, a third of the JSON of a
// delta).
const (
	frameJSON byte = iota
	framePacked
)

// encodeFrames returns frames encoded in one block: where each ends (4
// bytes each, little-endian, from the block's start: frameEnd), then the
// frames one after the other.
func encodeFrames(frames []Frame) (data []byte, err error) {
	if len(frames) == 0 {
		return nil, nil
	}
	buf := arenaScratch.Get().(*[]byte)
	b := slices.Grow((*buf)[:0], 4*len(frames))[:4*len(frames)]
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
				break
			}
		}
		if len(b) > math.MaxUint32 {
			err = errors.New("runs: a run's frames take over 4 GiB")
			break
		}
		binary.LittleEndian.PutUint32(b[4*i:], uint32(len(b)))
	}
	if err == nil {
		data = append([]byte(nil), b...)
	}
	if cap(b) <= maxScratch {
		*buf = b[:0]
		arenaScratch.Put(buf)
	}
	return data, err
}

// frameEnd is where frame i of the block encodeFrames made ends.
func frameEnd(data []byte, i int) int { return int(binary.LittleEndian.Uint32(data[4*i:])) }

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
// copied into a block of their size; one grown past maxScratch (a run of
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
	return &MemoryLog{cfg: cfg, logs: map[string]logEntry{}}
}

// Open implements EventLog.
func (m *MemoryLog) Open(ctx context.Context, run string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(m.cfg.Now())
	m.liveLocked(run)
	return nil
}

var _ FreshOpener = (*MemoryLog)(nil)

// OpenFresh implements FreshOpener: it starts run's log as Open does,
// without Open's sweep of the ended logs (each End sweeps), which reads
// the clock.
func (m *MemoryLog) OpenFresh(run string) {
	m.mu.Lock()
	m.liveLocked(run)
	m.mu.Unlock()
}

// liveLocked returns run's log while it is live (or ended but its frames
// not yet encoded), started if there is none (with a spare memLog when
// there is one); nil once it ended.
func (m *MemoryLog) liveLocked(run string) *memLog {
	if e, ok := m.logs[run]; ok {
		return e.live
	}
	return m.startLocked(run)
}

// startLocked starts run's log, which does not exist, with a spare
// memLog when there is one. It is kept out of liveLocked, which Append
// inlines: a turn's appends find their log started, and would otherwise
// fetch this code with theirs.
//
//go:noinline
func (m *MemoryLog) startLocked(run string) *memLog {
	var e logEntry
	if n := len(m.spare) - 1; n >= 0 {
		e.live, m.spare[n] = m.spare[n], nil
		m.spare = m.spare[:n]
	} else {
		e.live = &memLog{}
	}
	m.logs[run] = e
	return e.live
}

// Append implements EventLog.
func (m *MemoryLog) Append(ctx context.Context, run string, f Frame) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	size := f.size()
	m.mu.Lock()
	l := m.liveLocked(run)
	if l == nil || l.ended {
		m.mu.Unlock()
		return 0, ErrEnded
	}
	f.Seq = l.first + int64(len(l.frames))
	f.Data = f.Data[:len(f.Data):len(f.Data)] // a reader's append copies it
	l.frames = append(l.frames, f)
	l.bytes += size
	m.bytes += size
	if len(l.frames) > m.cfg.MaxFrames {
		m.trimLocked(l)
	}
	l.wakeLocked()
	// An append ends no log and moves no clock forward that Open, End
	// and Read do not sweep for: it sweeps only when what it added took
	// the logs past their bound (a frame of a streamed turn is appended
	// per delta; a sweep reads the clock).
	if m.bytes > m.cfg.MaxBytes {
		m.sweepLocked(m.cfg.Now())
	}
	m.mu.Unlock()
	return f.Seq, nil
}

// trimLocked drops l's oldest frames beyond MaxFrames (one, after the
// append that went past it).
func (m *MemoryLog) trimLocked(l *memLog) {
	over := len(l.frames) - m.cfg.MaxFrames
	for _, old := range l.frames[:over] {
		l.bytes -= old.size()
		m.bytes -= old.size()
	}
	clear(l.frames[:over])
	l.frames = l.frames[over:]
	l.first += int64(over)
}

// End implements EventLog. Ending a log that does not exist starts an
// empty, ended one (a run that produced no event). The frames are then
// encoded into the log's block: a small log's at once, a larger one's
// outside the lock (readers meanwhile read them as they were); a frame
// whose event cannot be encoded keeps them as they are. It needs nothing
// of ctx.
func (m *MemoryLog) End(_ context.Context, run string) error {
	m.mu.Lock()
	e, ok := m.logs[run]
	if ok && e.ended() {
		m.mu.Unlock()
		return nil
	}
	now := m.cfg.Now()
	m.endings++
	e.end = m.endings
	m.ended = append(m.ended, endedLog{run: run, end: e.end, at: now})
	switch l := e.live; {
	case ok && l.bytes > maxLockedEncode:
		m.endOutside(run, e) // a streamed turn's, say
	case ok:
		l.ended = true
		l.wakeLocked()
		if data, err := encodeFrames(l.frames); err == nil {
			m.encodedLocked(run, l, e.end, data)
			break
		}
		fallthrough // it keeps its frames as they are
	default: // or nothing was logged: the log is ended and empty
		m.logs[run] = e
	}
	m.sweepLocked(now)
	m.mu.Unlock()
	return nil
}

// endOutside ends e, the large live log of run, and encodes its frames
// with m.mu let go of meanwhile (it is held on entry and on return):
// readers read them as they were appended until they are encoded. When
// they cannot be, they stay as they are.
func (m *MemoryLog) endOutside(run string, e logEntry) {
	l := e.live
	l.ended = true
	l.wakeLocked()
	m.logs[run] = e
	m.mu.Unlock()
	data, err := encodeFrames(l.frames) // no frame is appended to an ended log
	m.mu.Lock()
	switch {
	case err != nil:
	case m.logs[run].live == l: // not dropped meanwhile
		m.encodedLocked(run, l, e.end, data)
	default:
		m.reuseLocked(l)
	}
}

// encodedLocked replaces run's log, l, ended end-th, by its frames
// encoded in data, and keeps l for a later log.
func (m *MemoryLog) encodedLocked(run string, l *memLog, end uint64, data []byte) {
	m.bytes += int64(len(data)) - l.bytes
	m.logs[run] = logEntry{first: l.first, n: len(l.frames), data: data, end: end}
	m.reuseLocked(l)
}

// maxLockedEncode is the size (Frame.size summed) up to which End encodes
// a log's frames under the lock, which a larger log lets go of meanwhile.
const maxLockedEncode = 8 << 10

// reuseLocked keeps l, which no log holds any more (readers copy what
// they read of a live log), for a later log to start with, emptied (its
// frame slice kept when it is not too large); m.mu is held.
func (m *MemoryLog) reuseLocked(l *memLog) {
	if len(m.spare) == maxSpare {
		return
	}
	frames := l.frames
	if cap(frames) > maxSpareFrames {
		frames = nil
	}
	clear(frames)
	*l = memLog{frames: frames[:0]}
	m.spare = append(m.spare, l)
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
	m.sweepLocked(m.cfg.Now())
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
	e, ok := m.logs[run]
	if !ok {
		return span, false, nil, ErrNotFound
	}
	first, n := e.len()
	next := first + int64(n)
	switch {
	case after < -1:
		return span, false, nil, ErrCursor
	case after+1 < first:
		return span, false, nil, ErrTrimmed
	case after >= next:
		return span, false, nil, ErrCursor
	}
	from, to := int(after+1-first), n
	if limit > 0 && to-from > limit {
		to = from + limit
	}
	span, ended = e.span(from, to), e.ended()
	if l := e.live; span.len() == 0 && !ended {
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		wake = l.wake
	}
	return span, ended && after+1+int64(span.len()) >= next, wake, nil
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

// sweepLocked drops ended logs past their retention at now, then the
// oldest ended ones while there are more than MaxEndedRuns or the logs
// hold more than MaxBytes. Most calls (every End) find nothing to drop:
// they read the oldest log's end and the bounds, and call nothing.
func (m *MemoryLog) sweepLocked(now time.Time) {
	if len(m.ended) > 0 && (now.Sub(m.ended[0].at) > m.cfg.Retention || len(m.ended) > m.cfg.MaxEndedRuns || m.bytes > m.cfg.MaxBytes) {
		m.dropLocked(now)
	}
}

// dropLocked is sweepLocked's drop, once one is due.
func (m *MemoryLog) dropLocked(now time.Time) {
	n := 0
	for ; n < len(m.ended); n++ {
		e := m.ended[n]
		if now.Sub(e.at) <= m.cfg.Retention && len(m.ended)-n <= m.cfg.MaxEndedRuns && m.bytes <= m.cfg.MaxBytes {
			break
		}
		if l := m.logs[e.run]; l.end == e.end {
			m.bytes -= l.size()
			delete(m.logs, e.run)
		}
	}
	if n > 0 {
		clear(m.ended[:n])
		m.ended = m.ended[n:]
	}
}
