package redis

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/runs"
)

// RunLog is a runs.EventLog in Redis Streams, shared by every replica on
// one Redis: a run's frames are the stream "<prefix>{run|<id>}:frames".
// Its first entry, "0-1" {"o":""}, opens it; frame n is the entry "0-<n+2>"
// {"d": <the frame's JSON>}; the entry {"e":""} ends it. Each append trims
// the stream to its last MaxFrames entries (MAXLEN, exact) and sets it to
// expire Retention later, so a log expires Retention after its last write,
// ended or not (a replica that died mid-run leaves no log behind for
// longer). See docs/sessions.md.
type RunLog struct {
	s         *Store
	retention time.Duration
	maxFrames int
	// block is how long one XREAD of Follow waits before it checks its
	// context again.
	block time.Duration
}

var _ runs.EventLog = (*RunLog)(nil)

// RunLogConfig configures a RunLog. Zero fields mean the defaults.
type RunLogConfig struct {
	// Retention is how long a log is kept after its last write (default
	// one hour).
	Retention time.Duration
	// MaxFrames bounds each log (default 10,000); beyond it the oldest
	// frames go.
	MaxFrames int
}

// RunLog returns the store's run log, on its client and key prefix.
func (s *Store) RunLog(cfg RunLogConfig) *RunLog {
	if cfg.Retention <= 0 {
		cfg.Retention = time.Hour
	}
	if cfg.MaxFrames <= 0 {
		cfg.MaxFrames = 10000
	}
	return &RunLog{s: s, retention: cfg.Retention, maxFrames: cfg.MaxFrames, block: time.Second}
}

func (l *RunLog) key(run string) string {
	return l.s.prefix + "{run|" + escaper.Replace(run) + "}:frames"
}

// runAppendScript adds one entry to a run's stream (KEYS[1]), opening it
// first if need be: ARGV[1] the field ("o", "d" or "e"), ARGV[2] its
// value, ARGV[3] MAXLEN, ARGV[4] the expiry in ms. It answers the entry's
// id, or "ENDED" when the stream ended.
var runAppendScript = goredis.NewScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if last == nil then
  if ARGV[1] == 'o' and redis.call('EXISTS', KEYS[1]) == 1 then return '' end
  redis.call('XADD', KEYS[1], '0-1', 'o', '')
  if ARGV[1] == 'o' then
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    return '0-1'
  end
elseif last[2][1] == 'e' then
  if ARGV[1] == 'e' then return last[1] end
  return 'ENDED'
elseif ARGV[1] == 'o' then
  return last[1]
end
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[3], '0-*', ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return id
`)

func (l *RunLog) add(ctx context.Context, run, field string, value []byte) (string, error) {
	res, err := runAppendScript.Run(ctx, l.s.client, []string{l.key(run)}, field, value, l.maxFrames,
		l.retention.Milliseconds()).Text()
	switch {
	case err != nil:
		return "", l.s.fail(ctx, "run log", err)
	case res == "ENDED":
		return "", runs.ErrEnded
	}
	return res, nil
}

// Open implements runs.EventLog.
func (l *RunLog) Open(ctx context.Context, run string) error {
	_, err := l.add(ctx, run, "o", nil)
	return err
}

// Append implements runs.EventLog: it stores the frame's JSON.
func (l *RunLog) Append(ctx context.Context, run string, f runs.Frame) (int64, error) {
	b, err := f.JSON()
	if err != nil {
		return 0, err
	}
	id, err := l.add(ctx, run, "d", b)
	if err != nil {
		return 0, err
	}
	n, ok := entrySeq(id)
	if !ok {
		return 0, corrupt("run log entry id " + id)
	}
	return n, nil
}

// End implements runs.EventLog.
func (l *RunLog) End(ctx context.Context, run string) error {
	_, err := l.add(ctx, run, "e", nil)
	return err
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
	if len(first.Val()) == 0 {
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
	frames, end := entryFrames(rest.Val())
	if limit > 0 && len(frames) > limit {
		frames, end = frames[:limit], false
	}
	return frames, end, nil
}

// entryFrames turns stream entries into frames, and reports whether they
// reach the end entry.
func entryFrames(msgs []goredis.XMessage) ([]runs.Frame, bool) {
	var frames []runs.Frame
	for _, m := range msgs {
		if _, ok := m.Values["e"]; ok {
			return frames, true
		}
		d, ok := m.Values["d"].(string)
		seq, okID := entrySeq(m.ID)
		if !ok || !okID {
			continue // the open entry
		}
		frames = append(frames, runs.Frame{Seq: seq, Data: []byte(d)})
	}
	return frames, false
}

// Follow implements runs.EventLog: what Read has after the cursor, then
// XREAD BLOCK for the rest, on one of the client's connections while it
// waits.
func (l *RunLog) Follow(ctx context.Context, run string, after int64) iter.Seq2[runs.Frame, error] {
	return func(yield func(runs.Frame, error) bool) {
		frames, ended, err := l.Read(ctx, run, after, 0)
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
			frames, ended = entryFrames(res[0].Messages)
			if len(frames) > 0 && frames[0].Seq != after+1 {
				yield(runs.Frame{}, fmt.Errorf("%w: frame %d after %d", runs.ErrTrimmed, frames[0].Seq, after))
				return
			}
		}
	}
}
