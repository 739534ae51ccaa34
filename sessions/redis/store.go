package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// sessionKeys names the keys of one session; see docs/sessions.md.
type sessionKeys struct {
	base   string // "<prefix>{app|user}:", the start of every key below
	root   string // the top-level session of the tree
	meta   string // HASH created, updated (unix µs), last (last event id), compaction (index of the latest compaction event)
	state  string // HASH session-scope state: key -> JSON value
	events string // LIST of event JSON, oldest first
	index  string // ZSET session id -> updated (unix µs), for List
	user   string // HASH user: state of the user in the app: key -> JSON value
	tree   string // SET of the sub-conversation ids under root
	lock   string // STRING run-lease token, with PX expiry
	// A ref (sessions.Refs) is the STRING base+"ref:"+key, see refKey.
}

// escaper keeps app and user names from ending the hash tag early or
// colliding with the separator.
var escaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D", "|", "%7C")

// userBase is "<prefix>{app|user}:", the start of every key of a user in
// an app.
func (s *Store) userBase(app, user string) string {
	return s.prefix + "{" + escaper.Replace(app) + "|" + escaper.Replace(user) + "}:"
}

func (s *Store) keys(app, user, id string) sessionKeys {
	base := s.userBase(app, user)
	root, _, _ := strings.Cut(id, "/")
	return sessionKeys{
		base: base, root: root,
		meta: base + "meta:" + id, state: base + "state:" + id, events: base + "events:" + id,
		index: base + "index", user: base + "user", tree: base + "tree:" + root, lock: base + "lock:" + id,
	}
}

// appKey is the app: state hash, shared by every user of the app.
func (s *Store) appKey(app string) string {
	return s.prefix + "{" + escaper.Replace(app) + "}:app"
}

// writeKeys are the KEYS of the create and append scripts; the app: hash
// joins them unless it lives on another Cluster node.
func (s *Store) writeKeys(k sessionKeys, app string) []string {
	keys := []string{k.meta, k.state, k.events, k.index, k.user, k.tree}
	if s.sameSlotApp {
		keys = append(keys, s.appKey(app))
	}
	return keys
}

// pipeline sends what build queues in one round trip. When the server has
// not cached a script yet (first use, restart, failover) it sends it again
// with EVAL: scripts that got NOSCRIPT did not run, and the rest are reads.
func (s *Store) pipeline(ctx context.Context, op string, build func(p goredis.Pipeliner, eval bool)) error {
	for _, eval := range []bool{false, true} {
		p := s.client.Pipeline()
		build(p, eval)
		cmds, err := p.Exec(ctx)
		if !eval && slices.ContainsFunc(cmds, func(c goredis.Cmder) bool { return goredis.HasErrorPrefix(c.Err(), "NOSCRIPT") }) {
			continue
		}
		// A nil reply (SET NX GET on a free key) is a value, not a failure:
		// each command keeps its own result.
		if err != nil && !errors.Is(err, goredis.Nil) {
			return s.fail(ctx, op, err)
		}
		break
	}
	return nil
}

func script(ctx context.Context, p goredis.Pipeliner, sc *goredis.Script, eval bool, keys []string, args ...any) *goredis.Cmd {
	if eval {
		return sc.Eval(ctx, p, keys, args...)
	}
	return sc.EvalSha(ctx, p, keys, args...)
}

// newSession is a session to create: the create script's keys and
// arguments (without the lease token that starts them), and what the
// caller needs once it ran.
type newSession struct {
	get      sessions.GetRequest
	keys     []string
	args     []any
	appDelta map[string]any
	now      time.Time
}

// prepareCreate validates req and builds its create; an empty id is
// generated.
func (s *Store) prepareCreate(req sessions.CreateRequest) (*newSession, error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	id := req.SessionID
	if id == "" {
		id = s.newID()
	}
	own, appDelta, userDelta := sessions.SplitDelta(req.State)
	now := time.UnixMicro(s.now().UnixMicro()).UTC()
	k := s.keys(req.AppName, req.UserID, id)
	args, err := deltaArgs([]any{k.base, id, k.root, now.UnixMicro(), s.ttl.Milliseconds()}, own, userDelta, appDelta)
	if err != nil {
		return nil, err
	}
	return &newSession{get: sessions.GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: id, Window: req.Window},
		keys: append([]string{k.lock}, s.writeKeys(k, req.AppName)...), args: args, appDelta: appDelta, now: now}, nil
}

// queue adds the create script to a pipeline; with a token it creates only
// while that token holds the session's run lease.
func (c *newSession) queue(ctx context.Context, p goredis.Pipeliner, eval bool, token string) *goredis.Cmd {
	return script(ctx, p, createScript, eval, c.keys, append([]any{token}, c.args...)...)
}

// created reports whether the create script's reply is a new session: {1,
// state, user}, {0} when it existed.
func created(res *goredis.Cmd) (reply []any, ok bool, err error) {
	reply, _ = res.Val().([]any)
	if len(reply) == 0 {
		return nil, false, corrupt("create reply")
	}
	if n, _ := reply[0].(int64); n == 0 {
		return reply, false, nil
	}
	if len(reply) != 3 {
		return nil, false, corrupt("create reply")
	}
	return reply, true, nil
}

// Create implements sessions.Service.
func (s *Store) Create(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	c, err := s.prepareCreate(req)
	if err != nil {
		return nil, err
	}
	var res *goredis.Cmd
	var app *goredis.MapStringStringCmd
	if err := s.pipeline(ctx, "create", func(p goredis.Pipeliner, eval bool) {
		res = c.queue(ctx, p, eval, "")
		app = p.HGetAll(ctx, s.appKey(req.AppName))
	}); err != nil {
		return nil, err
	}
	reply, ok, err := created(res)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", sessions.ErrExists, c.get.SessionID)
	}
	state := map[string]any{}
	for _, h := range []any{reply[1], reply[2], app.Val()} {
		if err := decodeState(state, h); err != nil {
			return nil, err
		}
	}
	if err := s.writeApp(ctx, req.AppName, c.appDelta, state); err != nil {
		return nil, err
	}
	return &sessions.Session{ID: c.get.SessionID, AppName: req.AppName, UserID: req.UserID, State: state,
		Events: []*sessions.Event{}, LastUpdateTime: c.now}, nil
}

// GetOrCreate implements sessions.GetOrCreator in one round trip: the
// create script (a no-op when the session exists) pipelined ahead of the
// load. On Cluster a create whose state has app: keys writes them in a
// second round trip, as Create does.
func (s *Store) GetOrCreate(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	c, err := s.prepareGetOrCreate(req)
	if err != nil {
		return nil, err
	}
	var res *goredis.Cmd
	sess, err := s.load(ctx, c.get, func(p goredis.Pipeliner, eval bool) { res = c.queue(ctx, p, eval, "") })
	if err != nil {
		return nil, err
	}
	if err := s.finishCreate(ctx, c, res, sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// prepareGetOrCreate is prepareCreate for a session that must be named.
func (s *Store) prepareGetOrCreate(req sessions.CreateRequest) (*newSession, error) {
	if req.SessionID == "" {
		return nil, fmt.Errorf("%w: get or create needs a session id", sessions.ErrInvalid)
	}
	return s.prepareCreate(req)
}

// finishCreate completes, on sess (read after the create script in the
// same pipeline), a create that took place: on Cluster its app: delta.
func (s *Store) finishCreate(ctx context.Context, c *newSession, res *goredis.Cmd, sess *sessions.Session) error {
	_, ok, err := created(res)
	if err != nil || !ok {
		return err
	}
	return s.writeApp(ctx, c.get.AppName, c.appDelta, sess.State)
}

// writeApp applies an app: delta on Cluster, where the app hash lives on
// its own node and so could not join the script (a second round trip, only
// for deltas that carry app: keys), and merges it into state.
func (s *Store) writeApp(ctx context.Context, app string, delta, state map[string]any) error {
	if s.sameSlotApp || len(delta) == 0 {
		return nil
	}
	args, err := deltaArgs(nil, delta)
	if err != nil {
		return err
	}
	if err := s.client.HSet(ctx, s.appKey(app), args[1:]...).Err(); err != nil {
		return s.fail(ctx, "write app state", err)
	}
	for i := 1; i < len(args); i += 2 {
		if err := decodeValue(state, args[i].(string), args[i+1].(string)); err != nil {
			return err
		}
	}
	return nil
}

// Get implements sessions.Service: one round trip reads the session, its
// events and its user: and app: state.
func (s *Store) Get(ctx context.Context, req sessions.GetRequest) (*sessions.Session, error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	return s.load(ctx, req, nil)
}

// load reads a session in one round trip; with, when not nil, queues more
// commands in the same pipeline ahead of the read (the run lease, a create).
func (s *Store) load(ctx context.Context, req sessions.GetRequest, with func(p goredis.Pipeliner, eval bool)) (*sessions.Session, error) {
	k := s.keys(req.AppName, req.UserID, req.SessionID)
	since := "0"
	if req.SinceCompaction {
		since = "1"
	}
	var res *goredis.Cmd
	var app *goredis.MapStringStringCmd
	if err := s.pipeline(ctx, "get", func(p goredis.Pipeliner, eval bool) {
		if with != nil {
			with(p, eval)
		}
		res = script(ctx, p, getScript, eval, []string{k.meta, k.state, k.events, k.user}, since, max(req.NumRecentEvents, 0))
		app = p.HGetAll(ctx, s.appKey(req.AppName))
	}); err != nil {
		return nil, err
	}
	reply, _ := res.Val().([]any)
	if len(reply) == 0 {
		return nil, fmt.Errorf("%w: %s", sessions.ErrNotFound, req.SessionID)
	}
	if len(reply) != 4 {
		return nil, corrupt("get reply")
	}
	updated, err := updatedTime(hashOf(reply[0])["updated"])
	if err != nil {
		return nil, err
	}
	state := map[string]any{}
	for _, h := range []any{reply[1], reply[3], app.Val()} {
		if err := decodeState(state, h); err != nil {
			return nil, err
		}
	}
	raw, _ := reply[2].([]any)
	events := make([]*sessions.Event, 0, len(raw))
	for _, r := range raw {
		str, _ := r.(string)
		ev := &sessions.Event{}
		if err := json.Unmarshal([]byte(str), ev); err != nil {
			return nil, corrupt("event: " + err.Error())
		}
		events = append(events, ev)
	}
	return &sessions.Session{ID: req.SessionID, AppName: req.AppName, UserID: req.UserID, State: state,
		Events: events, LastUpdateTime: updated}, nil
}

// List implements sessions.Service from the user's index; the page token is
// the offset of the next page.
func (s *Store) List(ctx context.Context, req sessions.ListRequest) (*sessions.ListResponse, error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: bad page token", sessions.ErrInvalid)
		}
		offset = n
	}
	k := s.keys(req.AppName, req.UserID, "")
	var res *goredis.Cmd
	var app *goredis.MapStringStringCmd
	if err := s.pipeline(ctx, "list", func(p goredis.Pipeliner, eval bool) {
		res = script(ctx, p, listScript, eval, []string{k.index, k.user}, k.base, offset, max(req.PageSize, 0))
		app = p.HGetAll(ctx, s.appKey(req.AppName))
	}); err != nil {
		return nil, err
	}
	reply, _ := res.Val().([]any)
	if len(reply) != 3 {
		return nil, corrupt("list reply")
	}
	shared := map[string]any{}
	for _, h := range []any{reply[1], app.Val()} {
		if err := decodeState(shared, h); err != nil {
			return nil, err
		}
	}
	rows, _ := reply[2].([]any)
	out := &sessions.ListResponse{Sessions: make([]*sessions.Session, 0, len(rows))}
	for _, r := range rows {
		row, _ := r.([]any)
		if len(row) != 3 {
			return nil, corrupt("list row")
		}
		id, _ := row[0].(string)
		updated, err := updatedTime(row[1])
		if err != nil {
			return nil, err
		}
		state := map[string]any{}
		if err := decodeState(state, row[2]); err != nil {
			return nil, err
		}
		maps.Copy(state, shared)
		out.Sessions = append(out.Sessions, &sessions.Session{ID: id, AppName: req.AppName, UserID: req.UserID,
			State: state, Events: []*sessions.Event{}, LastUpdateTime: updated})
	}
	if more, _ := reply[0].(int64); more == 1 {
		out.NextPageToken = strconv.Itoa(offset + len(rows))
	}
	return out, nil
}

// Delete implements sessions.Service; sub-conversations go with their parent
// in the same script.
func (s *Store) Delete(ctx context.Context, req sessions.DeleteRequest) error {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return err
	}
	k := s.keys(req.AppName, req.UserID, req.SessionID)
	var res *goredis.Cmd
	if err := s.pipeline(ctx, "delete", func(p goredis.Pipeliner, eval bool) {
		res = script(ctx, p, deleteScript, eval, []string{k.meta, k.index, k.tree}, k.base, req.SessionID)
	}); err != nil {
		return err
	}
	if n, _ := res.Val().(int64); n == 0 {
		return fmt.Errorf("%w: %s", sessions.ErrNotFound, req.SessionID)
	}
	return nil
}

// AppendEvent implements sessions.Service: one script, one round trip,
// stores the event and applies its session, user: and app: deltas (on
// Cluster an app: delta follows in a second round trip). An append whose
// event id is already the session's last event is taken as a retry of an
// append whose reply was lost and is not stored twice.
func (s *Store) AppendEvent(ctx context.Context, sess *sessions.Session, ev *sessions.Event) error {
	return s.AppendEvents(ctx, sess, []*sessions.Event{ev})
}

// AppendEvents implements sessions.BatchAppender: one script over the whole
// batch, one round trip, atomic (on Cluster the batch's app: deltas follow
// in a second round trip). A batch whose last event id is already the
// session's last event is taken as a retry and not stored twice.
func (s *Store) AppendEvents(ctx context.Context, sess *sessions.Session, evs []*sessions.Event) error {
	return s.appendEvents(ctx, sess, evs, nil)
}

// AppendEventsRelease implements sessions.ReleasingAppender: AppendEvents,
// and the release of lease in the same round trip when it is this store's
// lease on sess's session. The release runs only once the batch is stored
// (it checks the session's last event id), so a retried pipeline never
// frees the lease before the write.
func (s *Store) AppendEventsRelease(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease) error {
	l, _ := sessions.UnwrapLease(lease).(*heldLease)
	if l != nil && (l.s != s || sess == nil || l.key != s.keys(sess.AppName, sess.UserID, sess.ID).lock) {
		l = nil // another store's or another session's: left to its holder
	}
	return s.appendEvents(ctx, sess, evs, l)
}

// appendEvents stores evs on sess, releasing lease with the write when it
// is not nil.
func (s *Store) appendEvents(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease *heldLease) error {
	if sess == nil {
		return fmt.Errorf("%w: nil session", sessions.ErrInvalid)
	}
	evs, err := sessions.Storable(evs)
	if err != nil || len(evs) == 0 {
		return err
	}
	if err := sessions.ValidateKeys(sess.AppName, sess.UserID); err != nil {
		return err
	}
	k := s.keys(sess.AppName, sess.UserID, sess.ID)
	last := evs[len(evs)-1]
	comp := 0 // the place of the batch's last compaction event, from 1
	for i, ev := range evs {
		if ev.IsCompaction() {
			comp = i + 1
		}
	}
	args := []any{k.base, sess.ID, k.root, s.ttl.Milliseconds(), last.ID, len(evs), comp}
	appDeltas := map[string]any{}
	var updated int64
	for _, ev := range evs {
		own, appDelta, userDelta := sessions.SplitDelta(ev.Actions.StateDelta)
		body, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("%w: event %s: %v", sessions.ErrInvalid, ev.ID, err)
		}
		ts := ev.Timestamp
		if ts.IsZero() {
			ts = s.now()
		}
		updated = ts.UnixMicro()
		if args, err = deltaArgs(append(args, updated, body), own, userDelta, appDelta); err != nil {
			return err
		}
		maps.Copy(appDeltas, appDelta)
	}
	var res, rel *goredis.Cmd
	if err := s.pipeline(ctx, "append", func(p goredis.Pipeliner, eval bool) {
		res = script(ctx, p, appendScript, eval, s.writeKeys(k, sess.AppName), args...)
		if lease != nil {
			rel = script(ctx, p, releaseWrittenScript, eval, []string{k.lock, k.meta}, lease.token, last.ID)
		}
	}); err != nil {
		return err
	}
	if rel != nil {
		if n, _ := rel.Val().(int64); n == 1 {
			lease.released.Store(true)
			lease.stop()
		}
	}
	if n, _ := res.Val().(int64); n == 0 {
		return fmt.Errorf("%w: %s", sessions.ErrNotFound, sess.ID)
	}
	if err := s.writeApp(ctx, sess.AppName, appDeltas, map[string]any{}); err != nil {
		return err
	}
	sess.Events = slices.Grow(sess.Events, len(evs))
	for _, ev := range evs {
		sessions.ApplyEvent(sess, ev)
	}
	sess.LastUpdateTime = time.UnixMicro(updated).UTC()
	return nil
}

// deltaArgs appends each delta as "<n> k1 v1 ... kn vn", keys sorted and
// values JSON-encoded.
func deltaArgs(args []any, deltas ...map[string]any) ([]any, error) {
	for _, d := range deltas {
		args = append(args, len(d))
		for _, key := range slices.Sorted(maps.Keys(d)) {
			b, err := json.Marshal(d[key])
			if err != nil {
				return nil, fmt.Errorf("%w: state key %q: %v", sessions.ErrInvalid, key, err)
			}
			args = append(args, key, string(b))
		}
	}
	return args, nil
}

// hashOf reads a flat HGETALL reply.
func hashOf(v any) map[string]string {
	switch h := v.(type) {
	case map[string]string:
		return h
	case []any:
		out := make(map[string]string, len(h)/2)
		for i := 0; i+1 < len(h); i += 2 {
			k, _ := h[i].(string)
			v, _ := h[i+1].(string)
			out[k] = v
		}
		return out
	}
	return nil
}

// decodeState merges a hash of JSON values into dst.
func decodeState(dst map[string]any, hash any) error {
	for k, v := range hashOf(hash) {
		if err := decodeValue(dst, k, v); err != nil {
			return err
		}
	}
	return nil
}

func decodeValue(dst map[string]any, key, js string) error {
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		return corrupt(fmt.Sprintf("state key %q: %v", key, err))
	}
	dst[key] = v
	return nil
}

func updatedTime(v any) (time.Time, error) {
	str, _ := v.(string)
	us, err := strconv.ParseInt(str, 10, 64)
	if err != nil {
		return time.Time{}, corrupt("update time " + strconv.Quote(str))
	}
	return time.UnixMicro(us).UTC(), nil
}

// errCorrupt marks data in Redis that this package did not write.
var errCorrupt = errors.New("sessions/redis: unexpected data in redis")

func corrupt(what string) error { return fmt.Errorf("%w: %s", errCorrupt, what) }
