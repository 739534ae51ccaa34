package redis

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// RunLog is a runs.EventLog in Redis Streams, shared by every replica on
// one Redis: a run's frames are the stream "<prefix>{run|<id>}:frames".
// Its first entry, "0-1" {"o":""}, opens it; frame n is the entry "0-<n+2>"
// {"d": <the frame>} (its event packed, or its JSON: see appendFrame); the
// entry {"e":""} ends it. Each write trims
// the stream to its last MaxFrames entries (MAXLEN, exact) and sets it to
// expire Retention later, so a log expires Retention after its last write,
// ended or not (a replica that died mid-run leaves no log behind for
// longer). See docs/sessions.md.
//
// The replica that runs a run is its log's only writer: it learns where
// the stream stands when it opens it (one round trip; none for a run id
// just made, see OpenFresh), then numbers the frames itself, so that Append answers at once, and writes them in
// batches, one script each, in order: those appended within Linger of the
// first one waiting (the log's one linger timer then writes them, see
// lingerLater), or at once when End, a
// Read or Follow on this replica, or an Append beyond MaxPending needs
// them (written on the caller's goroutine). A failed write keeps its
// frames and is tried again with the next Append, Read or End; while the
// last one failed an Append beyond MaxPending fails (that frame is not
// logged and gets no number, so the log has no hole). End writes what is
// left and the end, and waits for it. Every log this process opens or
// appends to must be ended (the runs.Registry does): until then its
// writer's state stays.
type RunLog struct {
	s *Store
	// block is how long one XREAD of Follow waits before it checks its
	// context again.
	block      time.Duration
	maxPending int
	linger     time.Duration
	pack       bool
	failed     func(run string, err error)
	// maxLenArg and expiryArg are MaxFrames and Retention (in ms) as the
	// write script takes them, boxed once rather than at each write.
	maxLenArg, expiryArg any

	mu      sync.Mutex
	writers map[string]*runWriter

	// lingerMu guards lingering, the writers whose frames wait for the
	// linger, in the order they are due, and lingerTimer, armed (when
	// lingerArmed) for the first of them: one timer for the log, not one
	// per run (see lingerLater).
	lingerMu    sync.Mutex
	lingering   []lingerEntry
	lingerTimer *time.Timer
	lingerArmed bool
}

// lingerEntry is a writer whose frames are due to be written at due, if
// it still lingers in the same round (gen) by then: an End, a Read or an
// Append beyond MaxPending may have written them meanwhile, which leaves
// the entry stale.
type lingerEntry struct {
	w   *runWriter
	gen uint64
	due time.Time
}

var _ runs.EventLog = (*RunLog)(nil)

// DefaultLinger is RunLogConfig.Linger's default: a streamed answer's
// deltas, tens of milliseconds apart, are written a few at a time.
const DefaultLinger = 20 * time.Millisecond

// RunLogConfig configures a RunLog. Zero fields mean the defaults.
type RunLogConfig struct {
	// Retention is how long a log is kept after its last write (default
	// one hour).
	Retention time.Duration
	// MaxFrames bounds each log (default 10,000); beyond it the oldest
	// frames go.
	MaxFrames int
	// MaxPending bounds the frames of a run appended and not yet written
	// (default 1,024).
	MaxPending int
	// Linger is how long a frame may wait for others to be written with
	// (default DefaultLinger; negative: none, each is written as soon as
	// the write before it is done). Followers on any replica see a frame
	// that much later at most; End and a Read on this replica do not
	// wait for it.
	Linger time.Duration
	// JSONFrames keeps every frame as its JSON. By default a frame's event
	// is kept packed when it packs (appendFrame), its JSON otherwise.
	// Every version from the one that first read packed frames reads both;
	// a replica of an earlier one sharing the Redis (a rolling upgrade)
	// reads JSON only, hence this.
	JSONFrames bool
	// Failed, when set, is told when the writes of a run's frames start
	// failing (the first failure after a write that succeeded, or the
	// first write), by the run's flusher.
	Failed func(run string, err error)
}

// RunLog returns the store's run log, on its client and key prefix.
func (s *Store) RunLog(cfg RunLogConfig) *RunLog {
	if cfg.Retention <= 0 {
		cfg.Retention = time.Hour
	}
	if cfg.MaxFrames <= 0 {
		cfg.MaxFrames = 10000
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 1024
	}
	if cfg.Linger == 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.Failed == nil {
		cfg.Failed = func(string, error) {}
	}
	return &RunLog{s: s, block: time.Second, maxPending: cfg.MaxPending,
		linger: cfg.Linger, pack: !cfg.JSONFrames, failed: cfg.Failed, writers: map[string]*runWriter{},
		maxLenArg: strconv.Itoa(cfg.MaxFrames), expiryArg: strconv.FormatInt(cfg.Retention.Milliseconds(), 10)}
}

func (l *RunLog) key(run string) string {
	return l.s.prefix + "{run|" + escaper.Replace(run) + "}:frames"
}

// runWriteLib is the write of a run's stream, as runWriteScript and
// appendEndScript make it: writeRun(frames, index, argv, o) takes the
// stream's key, the index hash's (nil: none) and runWriteScript's ARGV from
// argv[o+1] on, and returns the number of the last entry, -1 when the log
// had ended, or nil and an error message when the frames would leave a
// hole.
const runWriteLib = `
local function writeRun(frames, index, argv, o)
  if index then
    redis.call('HSET', index, argv[o + 7], argv[o + 8])
    redis.call('PEXPIRE', index, argv[o + 9])
  end
  local last = redis.call('XREVRANGE', frames, '+', '-', 'COUNT', 1)[1]
  local n = tonumber(argv[o + 3]) + 2
  local lastn
  if last == nil then
    if n == 2 then
      redis.call('XADD', frames, '0-1', 'o', '')
      lastn = 1
    else
      lastn = n - 1
    end
  elseif last[2][1] == 'e' then
    if argv[o + 6] == '1' then return tonumber(string.sub(last[1], 3)) end
    return -1
  else
    lastn = tonumber(string.sub(last[1], 3))
  end
  local from = 1
  for to in string.gmatch(argv[o + 5], '%d+') do
    to = tonumber(to)
    if n > lastn then
      if n ~= lastn + 1 then
        return nil, 'run log: frame ' .. (n - 2) .. ' after ' .. (lastn - 2)
      end
      redis.call('XADD', frames, '0-' .. n, 'd', string.sub(argv[o + 4], from, to))
      lastn = n
    end
    n = n + 1
    from = to + 1
  end
  if argv[o + 6] == '1' then
    lastn = lastn + 1
    redis.call('XADD', frames, '0-' .. lastn, 'e', '')
  end
  if lastn > tonumber(argv[o + 1]) then
    redis.call('XTRIM', frames, 'MAXLEN', argv[o + 1])
  end
  redis.call('PEXPIRE', frames, argv[o + 2])
  return lastn
end
`

// runWriteScript writes to a run's stream (KEYS[1]) the frames numbered
// from ARGV[3] on, their values (appendFrame) one after the other in ARGV[4] and where
// each ends (1-based, inclusive) in ARGV[5], comma-separated; with ARGV[6]
// "1" it ends the log after them. ARGV[1] is MAXLEN, ARGV[2] the expiry in
// ms. With KEYS[2] it first puts a run's index entry (indexPut): field
// ARGV[7] of the hash KEYS[2] set to ARGV[8], expiring ARGV[9] ms later. A stream that does not exist is opened first ("0-1"), unless the
// frames do not start at 0 (it expired while its run went on: they are
// written where they belong, and older cursors are answered as trimmed).
// Frames already there are skipped (a write tried again after a lost
// reply). It trims only a stream whose last entry's number is beyond
// MAXLEN: one that holds no more entries than that needs none. It answers
// the number of the last entry, -1 when the log had ended, or an
// error when the frames would leave a hole.
var runWriteScript = newLuaScript(runWriteLib + `
local last, err = writeRun(KEYS[1], KEYS[2], ARGV, 0)
if err then return redis.error_reply(err) end
return last
`)

// write runs runWriteScript: frames first on (data, ends), and the end,
// after put when not nil. ended reports a log that had ended; last is the
// number of its last entry otherwise.
func (l *RunLog) write(ctx context.Context, run string, first int64, data, ends []byte, end bool, put *indexPut) (last int64, ended bool, err error) {
	var endArg any = "0" // a constant: boxed without an allocation
	if end {
		endArg = "1"
	}
	var a []any
	if put != nil {
		a = append(runWriteScript.call(9, l.key(run), put.key), l.maxLenArg, l.expiryArg, first,
			data, ends, endArg, put.field, put.value, put.ttl.Milliseconds())
	} else {
		a = append(runWriteScript.call(6, l.key(run)), l.maxLenArg, l.expiryArg, first,
			data, ends, endArg)
	}
	// The reply is an integer, not a string to parse: nothing to allocate.
	res, err := runWriteScript.run(ctx, l.s.client, a).Int64()
	switch {
	case err != nil:
		return 0, false, l.s.fail(ctx, "run log", err)
	case res == -1:
		return 0, true, nil
	case res < 1:
		return 0, false, corrupt("run log reply " + strconv.FormatInt(res, 10))
	}
	return res, false, nil
}

// runWriter is this process's writing of one run's log: the frames
// numbered next-len(ends) to next-1 wait in buf, frame i ending at
// ends[i], to be written in order, one write at a time.
type runWriter struct {
	run string

	mu   sync.Mutex
	next int64
	*writeBuffers
	// ending: End asked for the end entry; ended: it was written.
	ending, ended bool
	// put, when set, is the run's index entry, written by the script
	// that writes the end (see PutEnd).
	put *indexPut
	// sending: a write is due after the linger (lingering) or under way.
	sending bool
	// lingering is the round (gen, counted from 1) whose frames wait for
	// the log's linger timer, 0 when none does (see lingerEntry); set with
	// mu held, read by the timer without it.
	lingering atomic.Uint64
	gen       uint64
	// opened: the stream was opened in Redis (a write succeeded, or the
	// writer was made by reading where it stood); a fresh writer's is not
	// until its first write.
	opened bool
	// err is the last write's failure, nil once one succeeded.
	err error
	// changed, made when a caller waits for a write under way, is closed
	// (and dropped) when that write finished.
	changed chan struct{}
}

// writeBuffers are a writer's: the frames that wait (buf, ends) and the
// offsets argument of its script (offsets). A writer done with them gives
// them back to writeBufferPool (unless they grew past maxPooledBuffer).
type writeBuffers struct {
	buf     []byte
	ends    []int
	offsets []byte
}

var writeBufferPool = sync.Pool{New: func() any { return new(writeBuffers) }}

const maxPooledBuffer = 1 << 20

// writer returns this process's writer of run's log, opening the log
// when there is none (one round trip: the log may go on from another
// replica's frames, or have ended). nil and no error: the log ended.
func (l *RunLog) writer(ctx context.Context, run string) (*runWriter, error) {
	l.mu.Lock()
	w := l.writers[run]
	l.mu.Unlock()
	if w != nil {
		return w, nil
	}
	last, ended, err := l.write(ctx, run, 0, nil, nil, false, nil)
	if err != nil || ended {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.writers[run]; w != nil { // opened meanwhile
		return w, nil
	}
	w = l.newWriterLocked(run, last-1)
	w.opened = true
	return w, nil
}

// newWriterLocked makes and records the writer of run, its next frame
// numbered next.
func (l *RunLog) newWriterLocked(run string, next int64) *runWriter {
	w := &runWriter{run: run, next: next, writeBuffers: writeBufferPool.Get().(*writeBuffers)}
	l.writers[run] = w
	return w
}

// localWriter is this process's writer of run's log, if any.
func (l *RunLog) localWriter(run string) *runWriter {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writers[run]
}

// Open implements runs.EventLog: it opens the log in Redis when this
// process has not, so that followers find it before its first frame.
func (l *RunLog) Open(ctx context.Context, run string) error {
	_, err := l.writer(ctx, run)
	return err
}

// OpenFresh implements runs.FreshOpener: it starts this process's writer
// of run's log at frame 0, without a round trip; the first write, with
// the first frames or the end, opens the stream (its script opens one
// that does not exist). Until then a Read here finds the log open and
// empty, and a Follow anywhere waits for it (see Follow).
func (l *RunLog) OpenFresh(run string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writers[run] == nil {
		l.newWriterLocked(run, 0)
	}
}

// Append implements runs.EventLog: it numbers the frame and leaves it
// (appendFrame) to be written after the linger.
func (l *RunLog) Append(ctx context.Context, run string, f runs.Frame) (_ int64, err error) {
	w, err := l.writer(ctx, run)
	if err != nil {
		return 0, err
	}
	if w == nil {
		return 0, runs.ErrEnded
	}
	var failure error
	defer l.tell(run, &failure)
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.ending && len(w.ends) >= l.maxPending {
		if w.err != nil {
			return 0, fmt.Errorf("%w (%d frames wait)", w.err, len(w.ends))
		}
		if err := l.waitLocked(ctx, w, &failure); err != nil {
			return 0, err
		}
	}
	if w.ending {
		return 0, runs.ErrEnded
	}
	n := len(w.buf)
	if w.buf, err = appendFrame(w.buf, f, l.pack); err != nil {
		w.buf = w.buf[:n]
		return 0, err
	}
	w.ends = append(w.ends, len(w.buf))
	seq := w.next
	w.next++
	if !w.sending {
		w.sending = true
		if l.linger > 0 {
			w.gen++
			w.lingering.Store(w.gen)
			l.lingerLater(w, w.gen)
		} else {
			go l.flush(w, 0)
		}
	}
	return seq, nil
}

// lingerLater has w's frames written one linger from now, by the log's
// linger timer, unless they were by then (see lingerEntry). The timer is
// one for the log, armed for the first writer due, and left to fire when
// the writers it was armed for have been written meanwhile (a run that
// ended within its linger): a timer of each run's own, stopped when the
// run ended before it, cost a wake-up of a sleeping thread or two per run
// (its arming breaks the network poller's sleep; stopped, it stays in the
// runtime's heap until its time, when it wakes the poller again), about
// as much CPU as the rest of the log's work on a turn that ends quickly.
func (l *RunLog) lingerLater(w *runWriter, gen uint64) {
	l.lingerMu.Lock()
	defer l.lingerMu.Unlock()
	// Taken under the lock: the entries are due in the order they are.
	l.lingering = append(l.lingering, lingerEntry{w: w, gen: gen, due: time.Now().Add(l.linger)})
	switch {
	case l.lingerArmed:
	case l.lingerTimer == nil:
		l.lingerTimer = time.AfterFunc(l.linger, l.lingered)
	default:
		l.lingerTimer.Reset(l.linger)
	}
	l.lingerArmed = true
}

// lingered is the linger timer's: it drops the writers written meanwhile
// (most, when runs end within their linger), writes those now due (each
// on a goroutine of its own but the last, which it writes itself), and
// arms the timer again for the next one, if any: when runs end within
// their linger, the timer fires about once a linger, not once a run.
func (l *RunLog) lingered() {
	now := time.Now()
	var due []lingerEntry
	l.lingerMu.Lock()
	keep := l.lingering[:0]
	for _, e := range l.lingering {
		switch {
		case e.w.lingering.Load() != e.gen:
		case !e.due.After(now):
			due = append(due, e)
		default:
			keep = append(keep, e)
		}
	}
	clear(l.lingering[len(keep):])
	l.lingering = keep
	if len(keep) > 0 {
		l.lingerTimer.Reset(keep[0].due.Sub(now))
	} else {
		l.lingerArmed = false
	}
	l.lingerMu.Unlock()
	for i, e := range due {
		if i == len(due)-1 {
			l.flush(e.w, e.gen)
		} else {
			go l.flush(e.w, e.gen)
		}
	}
}

// tell tells Failed of *failure, if any: deferred before the writer's
// lock is taken, it runs once it is let go of.
func (l *RunLog) tell(run string, failure *error) {
	if *failure != nil {
		l.failed(run, *failure)
	}
}

// flush writes what waits, once the linger of round gen passed (nothing
// when its frames were written meanwhile), or, without a linger (gen 0),
// at once on a goroutine of its own.
func (l *RunLog) flush(w *runWriter, gen uint64) {
	var failure error
	defer l.tell(w.run, &failure)
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != 0 {
		if w.lingering.Load() != gen { // written meanwhile
			return
		}
		w.lingering.Store(0)
	}
	failure = l.drainLocked(w)
}

// waitLocked has what waits written now and returns once a write
// finished: the caller writes when no write is under way (cutting a
// linger short), else waits for the one that is, w.mu released
// meanwhile. A write's failure to tell is set in *failure.
func (l *RunLog) waitLocked(ctx context.Context, w *runWriter, failure *error) error {
	if w.lingering.Load() != 0 { // written here and now: its linger entry goes stale
		w.lingering.Store(0)
		w.sending = false
	}
	if !w.sending {
		if f := l.drainLocked(w); f != nil {
			*failure = f
		}
		return nil
	}
	changed := w.changedLocked()
	w.mu.Unlock()
	defer w.mu.Lock()
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// changedLocked is the channel closed once the write under way is done
// (wroteLocked), made when first asked for.
func (w *runWriter) changedLocked() chan struct{} {
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

// drainLocked writes what waits, in one script a round, until nothing
// does or a write failed; w.mu is let go of during each write. It returns
// the failure to tell: the first after a write that succeeded.
func (l *RunLog) drainLocked(w *runWriter) (failure error) {
	w.sending = true
	for len(w.ends) > 0 || w.ending && !w.ended {
		b := w.batchLocked()
		var put *indexPut
		if b.end {
			put = w.put
		}
		w.mu.Unlock()
		_, ended, err := l.write(context.Background(), w.run, b.first, b.data, b.offsets, b.end, put)
		w.mu.Lock()
		if err != nil && w.err == nil {
			failure = err
		}
		w.err = err
		w.wroteLocked(b, err == nil, ended)
		if err != nil {
			break // tried again by the next Append, Read or End
		}
	}
	w.sending = false
	return failure
}

// writeBatch is one write of a run's log: the k frames numbered from
// first on, their values one after the other in data and where each ends
// in offsets (runWriteScript's arguments), and the end when end is set.
type writeBatch struct {
	first         int64
	k             int
	data, offsets []byte
	end           bool
}

// batchLocked is the write of what waits (and of the end, when End asked
// for it); the frames stay in w until it is done (wroteLocked).
func (w *runWriter) batchLocked() writeBatch {
	k := len(w.ends)
	b := writeBatch{first: w.next - int64(k), k: k, end: w.ending}
	offsets := w.offsets[:0]
	if k > 0 {
		b.data = w.buf[:w.ends[k-1]] // appends write after it
		for i, e := range w.ends {
			if i > 0 {
				offsets = append(offsets, ',')
			}
			offsets = strconv.AppendInt(offsets, int64(e), 10)
		}
	}
	w.offsets, b.offsets = offsets, offsets
	return b
}

// wroteLocked records that the write of b is done: written (its frames
// go, those appended meanwhile move up) or not (they wait), the log found
// ended by another writer (nothing more is written); whoever waits for it
// is woken.
func (w *runWriter) wroteLocked(b writeBatch, written, ended bool) {
	if written {
		n := copy(w.buf, w.buf[len(b.data):])
		w.buf = w.buf[:n]
		m := copy(w.ends, w.ends[b.k:])
		for i := range w.ends[:m] {
			w.ends[i] -= len(b.data)
		}
		w.ends = w.ends[:m]
		w.ended, w.opened = b.end, true
	}
	if ended {
		w.buf, w.ends, w.ending, w.ended = w.buf[:0], w.ends[:0], true, true
	}
	if w.changed != nil {
		close(w.changed)
		w.changed = nil
	}
}

// End implements runs.EventLog: it writes the frames still waiting and
// the end, and returns once they are written, or failed to be (after a
// write of its own: one that failed before is tried again); ctx's end
// does not stop it.
func (l *RunLog) End(ctx context.Context, run string) error {
	return l.end(context.WithoutCancel(ctx), run, nil)
}

var _ runs.IndexEnder = (*RunLog)(nil)

// PutEnd implements runs.IndexEnder: with this store's own RunIndex on a
// single node, the script that writes the log's end (with the frames
// still waiting) puts the index entry first, in the same round trip;
// otherwise (Redis Cluster, where the two keys are in different slots,
// or another index) it is idx.Put, then End.
func (l *RunLog) PutEnd(ctx context.Context, idx runs.Index, in runs.Info, retention time.Duration) error {
	ctx = context.WithoutCancel(ctx) // as End
	x := l.ownIndex(idx)
	if x == nil {
		_ = idx.Put(ctx, in, retention)
		return l.end(ctx, in.ID, nil)
	}
	return l.end(ctx, in.ID, x.put(in, retention))
}

// ownIndex is idx when it is this log's store's own RunIndex on a single
// node: one script can then write the log's end and the run's index entry
// (PutEnd, Store.AppendEventsReleaseEnd); nil otherwise (Redis Cluster,
// where the two keys are in different slots, or another index).
func (l *RunLog) ownIndex(idx runs.Index) *RunIndex {
	x, ok := idx.(*RunIndex)
	if !ok || x.s != l.s || !l.s.oneNode {
		return nil
	}
	return x
}

// end is End, with the run's index entry put by the write of the end when
// put is set.
func (l *RunLog) end(ctx context.Context, run string, put *indexPut) error {
	w := l.localWriter(run)
	if w == nil { // opened elsewhere, or never: end it as it is
		_, _, err := l.write(ctx, run, 0, nil, nil, true, put)
		return err
	}
	defer l.forget(run)
	var failure error
	defer l.tell(run, &failure)
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.recycleLocked()
	w.ending, w.put = true, put
	for tried := false; !w.ended; {
		if !w.sending || w.lingering.Load() != 0 {
			if tried && w.err != nil {
				return w.err
			}
			tried = true
		}
		if err := l.waitLocked(ctx, w, &failure); err != nil {
			return err
		}
	}
	return nil
}

// forget drops this process's writer of run's log, which ended.
func (l *RunLog) forget(run string) {
	l.mu.Lock()
	delete(l.writers, run)
	l.mu.Unlock()
}

// A logEnd is the end of a run's log written by the store's append
// (Store.AppendEventsReleaseEnd, appendEndScript) rather than by End: the
// frames that wait here, the end, and the run's index entry, in the
// store's script. take holds this process's writer (no other write of it
// meanwhile), done lets go of it.
type logEnd struct {
	l   *RunLog
	run string
	put *indexPut
	w   *runWriter // nil: no writer here (the end alone is written)
	b   writeBatch
	// written: the store's script wrote the end (see done).
	written bool
}

// endBy is the end of run's log, with its index entry put, for the
// store's append to write.
func (l *RunLog) endBy(run string, put *indexPut) *logEnd {
	return &logEnd{l: l, run: run, put: put, b: writeBatch{end: true}}
}

// take takes what waits of the log, once a write of it under way is done
// (one that waits for its linger is not: its frames go with the end).
// Appends from then on find the log ended.
func (e *logEnd) take() {
	w := e.l.localWriter(e.run)
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.sending && w.lingering.Load() == 0 {
		changed := w.changedLocked()
		w.mu.Unlock()
		<-changed // a write has no deadline of its own but the client's
		w.mu.Lock()
	}
	w.lingering.Store(0) // its linger entry goes stale
	w.sending, w.ending = true, true
	e.w, e.b = w, w.batchLocked()
}

// args appends runWriteScript's arguments for the end (its KEYS are the
// log's key and e.put.key) to a.
func (e *logEnd) args(a []any) []any {
	return append(a, e.l.maxLenArg, e.l.expiryArg, e.b.first, e.b.data, e.b.offsets, "1",
		e.put.field, e.put.value, e.put.ttl.Milliseconds())
}

// done lets go of the writer taken, the end written (the writer goes) or
// not (what waits is left to End, and appends go on).
func (e *logEnd) done(written bool) {
	e.written = written
	w := e.w
	if w == nil {
		return
	}
	w.mu.Lock()
	w.wroteLocked(e.b, written, false)
	w.sending = false
	if written {
		w.err = nil
		w.recycleLocked()
	} else {
		w.ending = false
	}
	w.mu.Unlock()
	if written {
		e.l.forget(e.run)
	}
}

// recycleLocked gives an ended writer's buffers back to the pool, unless
// a write may still read them.
func (w *runWriter) recycleLocked() {
	if w.sending {
		return
	}
	b := w.writeBuffers
	w.writeBuffers = &writeBuffers{}
	if cap(b.buf) <= maxPooledBuffer {
		b.buf, b.ends, b.offsets = b.buf[:0], b.ends[:0], b.offsets[:0]
		writeBufferPool.Put(b)
	}
}

// settle has the frames this process appended to run before the call
// written, and waits for them (or for their write to fail), so that
// reading Redis after it finds them.
func (l *RunLog) settle(ctx context.Context, run string) error {
	w := l.localWriter(run)
	if w == nil {
		return nil
	}
	var failure error
	defer l.tell(run, &failure)
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.next
	for tried := false; w.next-int64(len(w.ends)) < target; {
		if !w.sending || w.lingering.Load() != 0 {
			if tried && w.err != nil {
				return nil // what Redis has is all there is
			}
			tried = true
		}
		if err := l.waitLocked(ctx, w, &failure); err != nil {
			return err
		}
	}
	return nil
}

// entrySeq is the frame number of the entry "0-<n+2>".
func entrySeq(id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, "0-")
	n, err := strconv.ParseInt(rest, 10, 64)
	return n - 2, ok && err == nil && n >= 1
}

func entryID(seq int64) string { return "0-" + strconv.FormatInt(seq+2, 10) }

// Read implements runs.EventLog.
func (l *RunLog) Read(ctx context.Context, run string, after int64, limit int) ([]runs.Frame, bool, error) {
	if after < -1 {
		return nil, false, runs.ErrCursor
	}
	if err := l.settle(ctx, run); err != nil {
		return nil, false, err
	}
	// A fresh writer here that has not written yet: a stream not found
	// is one not yet opened, rather than one gone.
	unopened := false
	if w := l.localWriter(run); w != nil {
		w.mu.Lock()
		unopened = !w.opened
		w.mu.Unlock()
	}
	key := l.key(run)
	var first, last, rest *goredis.XMessageSliceCmd
	_, err := l.s.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		first = p.XRangeN(ctx, key, "-", "+", 1)
		last = p.XRevRangeN(ctx, key, "+", "-", 1)
		if limit > 0 {
			rest = p.XRangeN(ctx, key, "("+entryID(after), "+", int64(limit)+1)
		} else {
			rest = p.XRange(ctx, key, "("+entryID(after), "+")
		}
		return nil
	})
	if err != nil {
		return nil, false, l.s.fail(ctx, "run log", err)
	}
	switch {
	case len(first.Val()) > 0:
	case unopened && after == -1:
		return nil, false, nil
	case unopened:
		return nil, false, runs.ErrCursor
	default:
		return nil, false, runs.ErrNotFound
	}
	firstSeq, ok1 := entrySeq(first.Val()[0].ID)
	lastSeq, ok2 := entrySeq(last.Val()[0].ID)
	if !ok1 || !ok2 {
		return nil, false, corrupt("run log entry ids")
	}
	_, ended := last.Val()[0].Values["e"]
	if ended {
		lastSeq-- // the end entry is no frame
	}
	switch {
	case after+1 < firstSeq:
		return nil, false, runs.ErrTrimmed
	case after > lastSeq:
		return nil, false, runs.ErrCursor
	}
	frames, end, err := entryFrames(rest.Val())
	if err != nil {
		return nil, false, err
	}
	if limit > 0 && len(frames) > limit {
		frames, end = frames[:limit], false
	}
	return frames, end, nil
}

// framePacked starts a frame's value in its stream when the rest is its
// event packed (sessions.Event.AppendPacked); any other value is the
// event's JSON, which starts with '{'. The tag names the pack format: one
// that changes gets a new tag, so that frames stay readable across
// versions.
const framePacked = 0x01

// appendFrame appends f as its stream entry keeps it to b: with pack
// (unless RunLogConfig.JSONFrames), its event packed after framePacked when it is
// given as an event that packs (a delta packs into about a third of its
// JSON, and in less time), else its JSON.
func appendFrame(b []byte, f runs.Frame, pack bool) ([]byte, error) {
	if pack && f.Data == nil && f.Event != nil {
		if p, ok := f.Event.AppendPacked(append(b, framePacked)); ok {
			return p, nil
		}
	}
	return f.AppendJSON(b)
}

// entryFrames turns stream entries into frames, and reports whether they
// reach the end entry. A packed frame is unpacked (its Event); one kept as
// JSON, as every frame was before frames were packed, is its Data.
func entryFrames(msgs []goredis.XMessage) ([]runs.Frame, bool, error) {
	var frames []runs.Frame
	for _, m := range msgs {
		if _, ok := m.Values["e"]; ok {
			return frames, true, nil
		}
		d, ok := m.Values["d"].(string)
		seq, okID := entrySeq(m.ID)
		if !ok || !okID {
			continue // the open entry
		}
		f := runs.Frame{Seq: seq}
		if len(d) > 0 && d[0] == framePacked {
			ev, err := sessions.UnpackEvent([]byte(d[1:]))
			if err != nil {
				return nil, false, corrupt(fmt.Sprintf("run log frame %d: %v", seq, err))
			}
			f.Event = ev
		} else {
			f.Data = []byte(d)
		}
		frames = append(frames, f)
	}
	return frames, false, nil
}

// Follow implements runs.EventLog: what Read has after the cursor, then
// XREAD BLOCK for the rest, on one of the client's connections while it
// waits. A log not found is waited for one XREAD (a second): a run whose
// id was just made has its log created by its first write, within Linger
// (see OpenFresh); ErrNotFound if it is still not there then.
func (l *RunLog) Follow(ctx context.Context, run string, after int64) iter.Seq2[runs.Frame, error] {
	return func(yield func(runs.Frame, error) bool) {
		frames, ended, err := l.Read(ctx, run, after, 0)
		if errors.Is(err, runs.ErrNotFound) {
			err = nil // not yet, perhaps: the XREAD below waits for it
		}
		if err != nil {
			yield(runs.Frame{}, err)
			return
		}
		key := l.key(run)
		for {
			for _, f := range frames {
				if !yield(f, nil) {
					return
				}
				after = f.Seq
			}
			if ended {
				return
			}
			if err := ctx.Err(); err != nil {
				yield(runs.Frame{}, err)
				return
			}
			res, err := l.s.client.XRead(ctx, &goredis.XReadArgs{Streams: []string{key, entryID(max(after, -1))}, Block: l.block}).Result()
			switch {
			case errors.Is(err, goredis.Nil):
				frames = nil
				if n, _ := l.s.client.Exists(ctx, key).Result(); n == 0 && ctx.Err() == nil {
					yield(runs.Frame{}, runs.ErrNotFound) // expired meanwhile
					return
				}
				continue
			case ctx.Err() != nil:
				yield(runs.Frame{}, ctx.Err())
				return
			case err != nil:
				yield(runs.Frame{}, l.s.fail(ctx, "run log", err))
				return
			}
			if len(res) == 0 {
				frames = nil
				continue
			}
			if frames, ended, err = entryFrames(res[0].Messages); err != nil {
				yield(runs.Frame{}, err)
				return
			}
			if len(frames) > 0 && frames[0].Seq != after+1 {
				yield(runs.Frame{}, fmt.Errorf("%w: frame %d after %d", runs.ErrTrimmed, frames[0].Seq, after))
				return
			}
		}
	}
}
