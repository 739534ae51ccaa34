package redis

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/internal/jsonenc"
	"github.com/agentgate/agentgate/runs"
)

// RunIndex is a runs.Index in Redis: a session's runs are the HASH
// "<prefix>{app|user}:runs:<session>" (invocation id -> the run's status
// and times as JSON), expiring the retention of its latest write later;
// a cancel is a message on the channel "<prefix>runs:cancel", which every
// replica's registry listens to: the run's id, or the JSON of a session's
// cancel (see sessionCancel). See docs/sessions.md.
type RunIndex struct{ s *Store }

var _ runs.Index = (*RunIndex)(nil)

// RunIndex returns the store's run index, on its client and key prefix.
func (s *Store) RunIndex() *RunIndex { return &RunIndex{s: s} }

// indexedRun is a run as its index field holds it (times in unix µs).
type indexedRun struct {
	Status  runs.Status `json:"status"`
	Started int64       `json:"started"`
	Updated int64       `json:"updated"`
	Ended   int64       `json:"ended,omitempty"`
}

func (x *RunIndex) key(app, user, session string) string {
	return x.s.userBase(app, user) + "runs:" + session
}

func (x *RunIndex) channel() string { return x.s.prefix + "runs:cancel" }

// indexPut is a Put of a RunIndex: field of the hash key set to value,
// which then expires ttl later.
type indexPut struct {
	key, field string
	value      []byte
	ttl        time.Duration
}

// put is what Put writes.
func (x *RunIndex) put(in runs.Info, retention time.Duration) *indexPut {
	v := indexedRun{Status: in.Status, Started: in.Started.UnixMicro(), Updated: in.Updated.UnixMicro()}
	if !in.Ended.IsZero() {
		v.Ended = in.Ended.UnixMicro()
	}
	return &indexPut{key: x.key(in.App, in.User, in.Session), field: in.ID, value: v.appendJSON(make([]byte, 0, 112)),
		ttl: max(retention, time.Second)}
}

// appendJSON appends v's JSON, what json.Marshal makes of it, to b (an
// ended run's is about 100 bytes, hence put's 112).
func (v *indexedRun) appendJSON(b []byte) []byte {
	b = jsonenc.AppendString(append(b, `{"status":`...), string(v.Status))
	b = strconv.AppendInt(append(b, `,"started":`...), v.Started, 10)
	b = strconv.AppendInt(append(b, `,"updated":`...), v.Updated, 10)
	if v.Ended != 0 {
		b = strconv.AppendInt(append(b, `,"ended":`...), v.Ended, 10)
	}
	return append(b, '}')
}

// Put implements runs.Index.
func (x *RunIndex) Put(ctx context.Context, in runs.Info, retention time.Duration) error {
	put := x.put(in, retention)
	_, err := x.s.client.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSet(ctx, put.key, put.field, put.value)
		p.PExpire(ctx, put.key, put.ttl)
		return nil
	})
	if err != nil {
		return x.s.fail(ctx, "run index", err)
	}
	return nil
}

func decodeRun(app, user, session, id, js string) (runs.Info, error) {
	var v indexedRun
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		return runs.Info{}, corrupt("run index entry " + id)
	}
	in := runs.Info{ID: id, App: app, User: user, Session: session, Status: v.Status,
		Started: time.UnixMicro(v.Started), Updated: time.UnixMicro(v.Updated)}
	if v.Ended != 0 {
		in.Ended = time.UnixMicro(v.Ended)
	}
	return in, nil
}

// Get implements runs.Index.
func (x *RunIndex) Get(ctx context.Context, app, user, session, id string) (runs.Info, error) {
	js, err := x.s.client.HGet(ctx, x.key(app, user, session), id).Result()
	switch {
	case errors.Is(err, goredis.Nil):
		return runs.Info{}, runs.ErrNotFound
	case err != nil:
		return runs.Info{}, x.s.fail(ctx, "run index", err)
	}
	return decodeRun(app, user, session, id, js)
}

// List implements runs.Index.
func (x *RunIndex) List(ctx context.Context, app, user, session string) ([]runs.Info, error) {
	all, err := x.s.client.HGetAll(ctx, x.key(app, user, session)).Result()
	if err != nil {
		return nil, x.s.fail(ctx, "run index", err)
	}
	out := make([]runs.Info, 0, len(all))
	for id, js := range all {
		in, err := decodeRun(app, user, session, id, js)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// sessionCancel is the message of a cancel of a session's runs
// (runs.CancelRequest without an ID).
type sessionCancel struct {
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
	Before  int64  `json:"before,omitempty"`
}

// Cancel implements runs.Index: it publishes the run's id, or a session's
// cancel as JSON.
func (x *RunIndex) Cancel(ctx context.Context, req runs.CancelRequest) error {
	msg := req.ID
	if msg == "" {
		b, err := json.Marshal(sessionCancel{App: req.App, User: req.User, Session: req.Session, Before: req.Before})
		if err != nil {
			return err
		}
		msg = string(b)
	}
	if err := x.s.client.Publish(ctx, x.channel(), msg).Err(); err != nil {
		return x.s.fail(ctx, "run cancel", err)
	}
	return nil
}

// decodeCancel reads a message of the cancel channel: a session's cancel
// (JSON naming a session), else a run's id.
func decodeCancel(msg string) runs.CancelRequest {
	var sc sessionCancel
	if strings.HasPrefix(msg, "{") && json.Unmarshal([]byte(msg), &sc) == nil && sc.Session != "" {
		return runs.CancelRequest{App: sc.App, User: sc.User, Session: sc.Session, Before: sc.Before}
	}
	return runs.CancelRequest{ID: msg}
}

// Cancels implements runs.Index: the cancels published on the channel,
// while subscribed (go-redis resubscribes after a lost connection; a
// cancel published meanwhile is missed).
func (x *RunIndex) Cancels(ctx context.Context) iter.Seq[runs.CancelRequest] {
	return func(yield func(runs.CancelRequest) bool) {
		sub := x.s.client.Subscribe(ctx, x.channel())
		defer sub.Close()
		// A read blocked on the connection ends when it is closed.
		defer context.AfterFunc(ctx, func() { _ = sub.Close() })()
		for {
			msg, err := sub.ReceiveMessage(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// Receive reconnects on its own; wait a little before
				// the next try so that a Redis down is no busy loop.
				select {
				case <-ctx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			if !yield(decodeCancel(msg.Payload)) {
				return
			}
		}
	}
}
