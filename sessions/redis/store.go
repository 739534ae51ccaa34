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

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// sessionKeys names the keys of one session; see docs/sessions.md.
type sessionKeys struct {
	base   string // "<prefix>{app|user}:", the start of every key below
	root   string // the top-level session of the tree
	meta   string // HASH created, updated (unix µs), last (last event id), compaction (where reads since the latest compaction start, see sessions.CompactionStart)
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

// lockKey is the run-lease key of a session (sessionKeys.lock).
func (s *Store) lockKey(app, user, id string) string {
	return s.userBase(app, user) + "lock:" + id
}

// scriptCall starts a call of the open or append script (sc) with room
// for n arguments (see luaScript.call): its KEYS are the session's meta
// hash (the scripts build the session's other keys from base and the
// ids), and the app: hash unless it lives on another Cluster node.
func (s *Store) scriptCall(sc *luaScript, base, id, app string, n int) []any {
	if s.oneNode {
		return sc.call(n, base+"meta:"+id, s.appKey(app))
	}
	return sc.call(n, base+"meta:"+id)
}

// idArgs are a session id and its tree's root as script arguments: one
// value twice for a top-level session (boxed once).
func idArgs(id string) (idArg, rootArg any) {
	idArg = id
	if root := rootOf(id); root != id {
		return idArg, root
	}
	return idArg, idArg
}

// rootOf is the top-level session of the tree id belongs to.
func rootOf(id string) string {
	root, _, _ := strings.Cut(id, "/")
	return root
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

// A luaScript is a script the store calls with EVALSHA commands it builds
// itself (call, then run or queue): the keys and arguments go straight
// into the command's one slice, where goredis.Script.Run copies them into
// a slice of its own and boxes the command's name, the hash and each key
// again at every call.
type luaScript struct {
	*goredis.Script
	src, sha any // boxed once
}

func newLuaScript(src string) *luaScript {
	sc := goredis.NewScript(src)
	return &luaScript{Script: sc, src: src, sha: sc.Hash()}
}

// call starts a call with keys: EVALSHA, the hash, the number of keys and
// the keys, with room for n arguments to be appended.
func (sc *luaScript) call(n int, keys ...string) []any {
	a := make([]any, 3+len(keys), 3+len(keys)+n)
	a[0], a[1], a[2] = "evalsha", sc.sha, len(keys)
	for i, k := range keys {
		a[3+i] = k
	}
	return a
}

// cmd is the command of a call (built by call); with eval, sent whole
// (EVAL and the source), in a copy of a.
func (sc *luaScript) cmd(ctx context.Context, a []any, eval bool) *goredis.Cmd {
	if eval {
		a = slices.Clone(a)
		a[0], a[1] = "eval", sc.src
	}
	cmd := goredis.NewCmd(ctx, a...)
	if a[2] != 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// run sends a call (built by call) in one round trip, and again with EVAL
// when the server has not cached the script (NOSCRIPT: first use, restart,
// failover), as goredis.Script.Run does.
func (sc *luaScript) run(ctx context.Context, c processor, a []any) *goredis.Cmd {
	cmd := sc.cmd(ctx, a, false)
	_ = c.Process(ctx, cmd)
	if err := cmd.Err(); err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") { // (it allocates, even for nil)
		cmd = sc.cmd(ctx, a, true)
		_ = c.Process(ctx, cmd)
	}
	return cmd
}

// processor sends commands: a client.
type processor interface {
	Process(ctx context.Context, cmd goredis.Cmder) error
}

// queue queues a call (built by call) on p; with eval, sent whole.
func (sc *luaScript) queue(ctx context.Context, p goredis.Pipeliner, a []any, eval bool) *goredis.Cmd {
	cmd := sc.cmd(ctx, a, eval)
	_ = p.Process(ctx, cmd)
	return cmd
}

// run runs a call of sc (built by luaScript.call) in one round trip (sent
// again with EVAL when the server has not cached it) and returns its
// reply.
func (s *Store) run(ctx context.Context, op string, sc *luaScript, a []any) (any, error) {
	v, err := sc.run(ctx, s.client, a).Result()
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	return v, nil
}

// What the open script does besides reading the session (its mode).
const (
	openRead        = "0" // read it
	openGetOrCreate = "1" // create it when it is missing, then read it
	openCreate      = "2" // create it when it is missing; read nothing
)

// opening is one call of the open script (see openScript): its keys and
// arguments, and what the caller needs once it ran.
type opening struct {
	op  string // for errors
	get sessions.GetRequest
	// call is the script's call (luaScript.call): keys and arguments.
	call []any
	// tokenArg is the lease's token as the call has it, for the lease
	// (heldLease.tokenArg).
	tokenArg any
	// lockKey is the session's lease key (Store.lockKey), when the call
	// takes the lease.
	lockKey string
	// appDelta is the create's app: delta, written apart on Cluster.
	appDelta map[string]any
	now      time.Time
}

// prepareOpen builds the open script's call for req's session in mode;
// with a token (not "") it takes the session's run lease first. A create
// (mode openGetOrCreate, openCreate) starts the session with state.
func (s *Store) prepareOpen(op string, req sessions.GetRequest, token, mode string, state map[string]any) (*opening, error) {
	base := s.userBase(req.AppName, req.UserID)
	now := time.UnixMicro(s.now().UnixMicro()).UTC()
	since := "0"
	if req.SinceCompaction {
		since = "1"
	}
	o := &opening{op: op, get: req, now: now, tokenArg: token}
	if token != "" {
		o.lockKey = base + "lock:" + req.SessionID
	}
	id, root := idArgs(req.SessionID)
	o.call = append(s.scriptCall(openScript, base, req.SessionID, req.AppName, 13), base, id, root, o.tokenArg,
		s.lockTTLArg, mode, now.UnixMicro(), s.ttlArg, since, max(req.NumRecentEvents, 0))
	if mode == openRead {
		return o, nil
	}
	own, appDelta, userDelta := sessions.SplitDelta(state)
	var err error
	if o.call, err = deltaArgs(o.call, own, userDelta, appDelta); err != nil {
		return nil, err
	}
	o.appDelta = appDelta
	return o, nil
}

// openResult is what an opening found: the session read (nil when it
// does not exist, or when openCreate found it), and whether the lease was
// another's (busy: nothing else was done), the session was created by
// this call, or, for openCreate, existed. ran reports that the script
// replied, also when open failed after it (then a lease it took is held).
type openResult struct {
	sess                        *sessions.Session
	ran, busy, created, existed bool
}

// open runs o in one round trip: the open script, and on Cluster the app:
// hash's HGETALL beside it (on its own node, in parallel) and, after a
// create whose state has app: keys, their write (a second round trip).
func (s *Store) open(ctx context.Context, o *opening) (openResult, error) {
	var reply []any
	var app any
	if s.oneNode {
		v, err := s.run(ctx, o.op, openScript, o.call)
		if err != nil {
			return openResult{}, err
		}
		reply, _ = v.([]any)
		if len(reply) > 6 {
			app = reply[6]
		}
	} else {
		var res *goredis.Cmd
		var hash *goredis.MapStringStringCmd
		if err := s.pipeline(ctx, o.op, func(p goredis.Pipeliner, eval bool) {
			res = openScript.queue(ctx, p, o.call, eval)
			hash = p.HGetAll(ctx, s.appKey(o.get.AppName))
		}); err != nil {
			return openResult{}, err
		}
		reply, _ = res.Val().([]any)
		app = hash.Val()
	}
	if len(reply) == 0 {
		return openResult{}, corrupt("open reply")
	}
	res := openResult{ran: true}
	switch len(reply) {
	case 1:
		res.busy = reply[0] == int64(0)
		return res, nil
	case 2:
		res.existed = true
		return res, nil
	case 6, 7:
	default:
		return res, corrupt("open reply")
	}
	res.created = reply[1] == int64(1)
	sess, err := s.decodeSession(o.get, reply[2], reply[4], reply[3], reply[5], app)
	if err == nil && res.created {
		err = s.writeApp(ctx, o.get.AppName, o.appDelta, sess.State)
	}
	if err != nil {
		return res, err
	}
	res.sess = sess
	return res, nil
}

// decodeSession builds the session req names from what a read found: its
// update time, event JSON, and state, user: and app: hashes.
func (s *Store) decodeSession(req sessions.GetRequest, updated, events any, hashes ...any) (*sessions.Session, error) {
	at, err := updatedTime(updated)
	if err != nil {
		return nil, err
	}
	state := map[string]any{}
	for _, h := range hashes {
		if err := decodeState(state, h); err != nil {
			return nil, err
		}
	}
	raw, _ := events.([]any)
	evs := make([]*sessions.Event, 0, len(raw))
	for _, r := range raw {
		str, _ := r.(string)
		ev, err := sessions.UnmarshalEvent(str)
		if err != nil {
			return nil, corrupt("event: " + err.Error())
		}
		evs = append(evs, ev)
	}
	return &sessions.Session{ID: req.SessionID, AppName: req.AppName, UserID: req.UserID, State: state,
		Events: evs, LastUpdateTime: at}, nil
}

// createRequest is the read of the session req creates (a generated id
// when it names none) and whether req is valid.
func (s *Store) createRequest(req sessions.CreateRequest) (sessions.GetRequest, error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return sessions.GetRequest{}, err
	}
	id := req.SessionID
	if id == "" {
		id = s.newID()
	}
	return sessions.GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: id, Window: req.Window}, nil
}

// Create implements sessions.Service: one script, one round trip (on
// Cluster an app: delta follows in a second).
func (s *Store) Create(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	get, err := s.createRequest(req)
	if err != nil {
		return nil, err
	}
	o, err := s.prepareOpen("create", get, "", openCreate, req.State)
	if err != nil {
		return nil, err
	}
	res, err := s.open(ctx, o)
	switch {
	case err != nil:
		return nil, err
	case res.existed || !res.created:
		return nil, fmt.Errorf("%w: %s", sessions.ErrExists, get.SessionID)
	}
	return res.sess, nil
}

// GetOrCreate implements sessions.GetOrCreator in one round trip: the open
// script creates the session when it is missing and reads it. On Cluster
// a create whose state has app: keys writes them in a second round trip,
// as Create does.
func (s *Store) GetOrCreate(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	o, err := s.prepareGetOrCreate(req, "")
	if err != nil {
		return nil, err
	}
	res, err := s.open(ctx, o)
	if err == nil && res.sess == nil {
		err = corrupt("get or create found no session")
	}
	return res.sess, err
}

// prepareGetOrCreate builds the opening that reads, or creates, the
// session req names, which must be named; with token, under its lease.
func (s *Store) prepareGetOrCreate(req sessions.CreateRequest, token string) (*opening, error) {
	if req.SessionID == "" {
		return nil, fmt.Errorf("%w: get or create needs a session id", sessions.ErrInvalid)
	}
	get, err := s.createRequest(req)
	if err != nil {
		return nil, err
	}
	return s.prepareOpen("get or create", get, token, openGetOrCreate, req.State)
}

// writeApp applies an app: delta on Cluster, where the app hash lives on
// its own node and so could not join the script (a second round trip, only
// for deltas that carry app: keys), and merges it into state.
func (s *Store) writeApp(ctx context.Context, app string, delta, state map[string]any) error {
	if s.oneNode || len(delta) == 0 {
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

// Get implements sessions.Service: one script, one round trip, reads the
// session, the events of its window and its user: and app: state.
func (s *Store) Get(ctx context.Context, req sessions.GetRequest) (*sessions.Session, error) {
	if err := sessions.ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	o, err := s.prepareOpen("get", req, "", openRead, nil)
	if err != nil {
		return nil, err
	}
	res, err := s.open(ctx, o)
	if err == nil && res.sess == nil {
		err = fmt.Errorf("%w: %s", sessions.ErrNotFound, req.SessionID)
	}
	return res.sess, err
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
		res = listScript.queue(ctx, p, append(listScript.call(3, k.index, k.user), k.base, offset, max(req.PageSize, 0)), eval)
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
		res = deleteScript.queue(ctx, p, append(deleteScript.call(2, k.meta, k.index, k.tree), k.base, req.SessionID), eval)
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
	return s.appendEvents(ctx, sess, evs, nil, nil)
}

// AppendEventsRelease implements sessions.ReleasingAppender: AppendEvents,
// and the release of lease in the same script when it is this store's
// lease on sess's session. The release runs only once the batch is stored
// (or found stored by a retried call), so a retry never frees the lease
// before the write.
func (s *Store) AppendEventsRelease(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease) error {
	return s.appendEvents(ctx, sess, evs, s.ownLease(sess, lease), nil)
}

// ownLease is lease when it is this store's lease on sess's session, else
// nil (another store's or another session's: left to its holder).
func (s *Store) ownLease(sess *sessions.Session, lease sessions.Lease) *heldLease {
	l, _ := sessions.UnwrapLease(lease).(*heldLease)
	if l != nil && (l.s != s || sess == nil || !l.locks(sess)) {
		return nil
	}
	return l
}

var _ sessions.EndingAppender = (*Store)(nil)

// AppendEventsReleaseEnd implements sessions.EndingAppender:
// AppendEventsRelease, and, when end is a runs.Ending whose run log and
// index are this store's own on a single node (as RunLog.PutEnd's one
// round trip), the run's end in the same script (appendEndScript): the
// frames still waiting, the log's end and the run's final index entry,
// written only once the batch is stored and the lease released by it.
// Otherwise end is left to its holder.
func (s *Store) AppendEventsReleaseEnd(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease, end sessions.RunEnd) error {
	l := s.ownLease(sess, lease)
	e, _ := end.(*runs.Ending)
	var log *RunLog
	var x *RunIndex
	if e != nil {
		log, _ = e.Log().(*RunLog)
	}
	if log != nil && log.s == s {
		x = log.ownIndex(e.Index())
	}
	if l == nil || x == nil {
		return s.appendEvents(ctx, sess, evs, l, nil)
	}
	le := log.endBy(e.Info.ID, x.put(e.Info, e.Retention))
	if err := s.appendEvents(ctx, sess, evs, l, le); err != nil || !le.written {
		return err
	}
	e.Written()
	return nil
}

// locks reports whether l is the lease of sess's session: its key is
// s.lockKey(sess.AppName, sess.UserID, sess.ID), compared piece by piece
// rather than built.
func (l *heldLease) locks(sess *sessions.Session) bool {
	k, ok := l.key, true
	for _, part := range [...]string{l.s.prefix, "{", escaper.Replace(sess.AppName), "|", escaper.Replace(sess.UserID), "}:lock:"} {
		if k, ok = strings.CutPrefix(k, part); !ok {
			return false
		}
	}
	return k == sess.ID
}

// appendEvents stores evs on sess, releasing lease with the write when it
// is not nil, and then, when end is not nil (and lease too), writing the
// end of a run's log (end.written reports whether it was).
func (s *Store) appendEvents(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease *heldLease, end *logEnd) error {
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
	base := s.userBase(sess.AppName, sess.UserID)
	last := evs[len(evs)-1]
	// The place of the batch's last compaction event (from 1) and its end.
	comp, compEnd := 0, 0.0
	for i, ev := range evs {
		if ev.IsCompaction() {
			comp, compEnd = i+1, sessions.EpochSeconds(ev.Actions.Compaction.EndTimestamp)
		}
	}
	var token any = ""
	if lease != nil {
		token = lease.tokenArg
	}
	id, root := idArgs(sess.ID)
	sc, n := appendScript, 9+5*len(evs)
	var args []any
	if end != nil && lease != nil {
		sc = appendEndScript
		args = sc.call(n+9, base+"meta:"+sess.ID, s.appKey(sess.AppName), end.l.key(end.run), end.put.key)
	} else {
		end = nil
		args = s.scriptCall(sc, base, sess.ID, sess.AppName, n)
	}
	args = append(args, base, id, root, s.ttlArg, last.ID, len(evs), comp, compEnd, token)
	var appDeltas map[string]any
	var updated int64
	for _, ev := range evs {
		own, appDelta, userDelta := sessions.SplitDelta(ev.Actions.StateDelta)
		body, err := ev.StoredJSON()
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
		if len(appDelta) > 0 && !s.oneNode {
			if appDeltas == nil {
				appDeltas = map[string]any{}
			}
			maps.Copy(appDeltas, appDelta)
		}
	}
	if end != nil {
		end.take()
		args = end.args(args)
	}
	v, err := s.run(ctx, "append", sc, args)
	reply, _ := v.([]any)
	if end != nil {
		var last int64 // the run write's reply, when it ran
		if len(reply) == 3 {
			last, _ = reply[2].(int64)
		}
		end.done(err == nil && last > 0)
	}
	if err != nil {
		return err
	}
	if len(reply) != 2 && (end == nil || len(reply) != 3) {
		return corrupt("append reply")
	}
	if reply[1] == int64(1) {
		lease.released.Store(true)
		lease.stop()
	}
	if reply[0] == int64(0) {
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
		if len(d) == 0 {
			continue
		}
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
