package gateway

// One turn's lifecycle, whatever surface asked for it. A surface decodes
// its request into a turnRequest; beginTurn decides what every surface
// decides alike (may the token use the model, whose sessions, is the
// session id one a turn may run on, the parameters, the session's lock and
// read, the runtime's RunRequest) and releases the lock on every error; a
// turn that began is then run into the surface's turnSink by runTurn (or
// startRun and driveRun, for a surface that answers in between), which
// registers it as a run, pumps its events, persists, releases and ends it.
// The surface's handler is left with decoding and encoding.

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"

	"github.com/google/uuid"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// turnRequest is a turn as a surface describes it, decoded.
type turnRequest struct {
	app *app
	// user is the user the request names (named: the native routes'
	// userId; with a token it must be the token's user, or "me") or
	// suggests (a hint used only without a token); empty is anonymous.
	user  string
	named bool
	// create starts a missing session (holding the turn's parameters)
	// with the lock and the read.
	create bool
	// detached: the turn is answered before it runs (a background
	// response). When it must wait in its session's line, it begins
	// queued without its session (turn.line) and waits, without its
	// request, in awaitSession.
	detached bool
	// sessionID is the session to run on; empty asks the surface's
	// findSession for one. sessionField is where the request carried it.
	sessionID, sessionField string
	// missing is the error for a session that does not exist, without
	// create (default: session not found).
	missing error
	message *genai.Content
	// stateDelta is applied with the message.
	stateDelta map[string]any
	// metadata holds the caller's parameters ("param.<name>" entries).
	metadata    map[string]string
	overrides   *agentcore.Overrides
	clientTools []*genai.FunctionDeclaration
	config      agentcore.RunConfig
	// invocationID names a new invocation (see RunRequest.InvocationID).
	invocationID string
	// multitask is what the turn does when its session has a run going,
	// as the request chose (empty: the model's multitask).
	multitask spec.Multitask
	// idle, when set, is the stream whose keepalive is called every
	// Config.KeepaliveInterval while the turn waits in its session's line,
	// on the goroutine that waits (its headers and a comment); its error
	// is ignored, the request's end ending the wait.
	idle streamSink
	// runID names the run when it is known before it starts (an A2A
	// task's id, also when the turn resumes it); otherwise the run is
	// named by its invocation id at its first event.
	runID string
	// retention keeps the run in the registry after it ended (A2A tasks,
	// for tasks/get); value is the surface's record of it there.
	retention time.Duration
	value     any
}

// turnHooks is what a surface adds to beginTurn: its own turn type, which
// embeds the turn being begun.
type turnHooks interface {
	// findSession is called when the request names no session: it sets
	// the turn's sessionID to the stored session to run on (stored true:
	// the lifecycle locks and reads it), or makes the turn run on a
	// session of its own (stored false: nothing to lock).
	findSession(ctx context.Context, s *Server) (stored bool, err error)
	// loaded checks the session read under its lock (req.Session) against
	// the request and completes req; an error releases the lock.
	loaded(ctx context.Context, s *Server) error
	// prepare makes the surface's checks that need the model allowed and
	// the user known, before anything is locked: it maps the request's
	// per-turn settings on app a into the turn's overrides (nil for none).
	// It is not handed the turnRequest, so that no call through an
	// interface lets that escape: a surface's turnRequest stays on its
	// stack. Every surface has one (a no-op where it maps nothing): a
	// call, where an optional one was found by a type assertion first.
	prepare(ctx context.Context, a *app) (*agentcore.Overrides, error)
}

// turn is one turn between beginTurn and the end of its run. Surfaces
// embed it in their own turn types.
type turn struct {
	app    *app
	runner *agentcore.Runner
	req    agentcore.RunRequest
	// sessionID is the session the turn runs on.
	sessionID string
	// slot is the turn's place in its user's limits, ended with the
	// turn's tokens once it ran (see limits.go).
	slot limits.Slot

	runID     string
	retention time.Duration
	value     any
	// line is a detached turn's place in its session's line while it
	// waits there (see turnRequest.detached), nil otherwise.
	line *lineWait
	// rec is the turn's entry in the run registry, run the runtime's run:
	// both set once it started.
	rec *runs.Run
	run *agentcore.Run
	// unrun, set by a surface with a record of its own of the turn (nil
	// otherwise), records the end of a turn registered as a run that never
	// ran, with its error: endUnrun calls it before the run ends, so that
	// whoever waits for that end (a cancel) reads the final record.
	unrun func(ctx context.Context, err error)
	// invID is the run's invocation id once read (see invocationID).
	invID string
	sink  turnSink
	// drained is the error drain stopped the run with.
	drained error
	// named reports that rec has its id.
	named bool
	// ownLog: the sink logs the frames its clients see itself (logFrame);
	// otherwise every event of the run is logged as it is.
	ownLog bool
	// unlogged: no route can reach the run's frames (its session is one
	// no client can name, as a stateless turn's), so none are kept, nor
	// is the run in the registry once it ended (runs.Spec.Unreachable).
	unlogged bool
	// errSeq is the number of the run's last frame, the error event it
	// ended with, once it failed (-1 when it has none).
	errSeq int64
	// pace coalesces a streamed turn's flushes (its writer's and its
	// model calls' Pacer).
	pace pacer
}

var _ pumped[*sessions.Event] = (*turn)(nil)

// release lets go of the session's lock, t.req.Lease (a no-op when there
// is none); the lifecycle calls it exactly once.
func (t *turn) release() {
	if t.req.Lease != nil {
		t.req.Lease.Release()
	}
}

// beginTurn decides the turn d describes into t: on success t's session
// is locked (when it is stored), the user's limits admitted it, and its
// lease (t.release) and t.slot must be let go of, which runTurn or
// startRun does; on error nothing is held. A detached turn may instead
// begin waiting in its session's line (t.line), its lock and read still
// to come from awaitSession.
func (s *Server) beginTurn(ctx context.Context, d *turnRequest, t *turn, h turnHooks) (err error) {
	a := d.app
	if err := allowModel(ctx, a.ID); err != nil {
		return err
	}
	user, err := turnUser(ctx, d.user, d.named)
	if err != nil {
		return err
	}
	if d.sessionID != "" {
		if ownSession(d.sessionID) && !d.create {
			return d.notFound() // the gateway's own records are invisible
		}
		if err := checkSessionID(d.sessionID, d.sessionField); err != nil {
			return err
		}
	}
	if d.overrides, err = h.prepare(ctx, a); err != nil {
		return err
	}
	params, err := s.chatParams(ctx, a, d.metadata)
	if err != nil {
		return err
	}
	// The limits count a turn that was understood, before it waits for
	// its session.
	if t.slot, err = s.admitTurn(ctx, a, user); err != nil {
		return err
	}
	t.app, t.runner, t.sessionID = a, a.runner, d.sessionID
	defer func() {
		if err != nil {
			t.abandon(ctx, err)
		}
	}()
	t.runID, t.retention, t.value = d.runID, d.retention, d.value
	t.req = agentcore.RunRequest{UserID: user, NewMessage: d.message, StateDelta: d.stateDelta, Config: d.config,
		ClientTools: d.clientTools, Params: params, Overrides: d.overrides, InvocationID: d.invocationID}
	if t.sessionID == "" {
		stored, err := h.findSession(ctx, s) // holds no lock
		t.req.SessionID = t.sessionID
		if err != nil || !stored {
			return err
		}
	}
	t.req.SessionID = t.sessionID
	// The session is read under its run lock (one round trip when the
	// store can) and handed to the runner, which need not read it again.
	// A turn reads it from the latest compaction on (the model requests
	// show that compaction's summary in place of the events before it).
	window := sessions.Window{SinceCompaction: true}
	var create *sessions.CreateRequest
	if d.create {
		create = &sessions.CreateRequest{AppName: a.ID, UserID: user, SessionID: t.sessionID, State: paramsState(params), Window: window}
	}
	get := sessions.GetRequest{AppName: a.ID, UserID: user, SessionID: t.sessionID, Window: window}
	sess, lease, err := s.lockTurn(ctx, d, t, get, create)
	if t.line != nil {
		// Detached, it waits in the line: what is left of its begin
		// happens once it holds the session.
		// Copies, so that a turn that does not wait keeps its own on the
		// stack.
		rest, get, later := *d, get, (*sessions.CreateRequest)(nil)
		if create != nil {
			c := *create
			later = &c
		}
		t.line.then = func(ctx context.Context, lease sessions.Lease) error {
			sess, err := s.readLocked(ctx, get, later)
			return s.holdSession(ctx, &rest, t, h, sess, lease, err)
		}
		return nil
	}
	return s.holdSession(ctx, d, t, h, sess, lease, err)
}

// holdSession completes the begin of turn t, which took its session's lock
// (lease; nil when it did not, err saying why) and read the session (sess,
// or err): the surface checks the session (h.loaded). On error the lock is
// let go of.
func (s *Server) holdSession(ctx context.Context, d *turnRequest, t *turn, h turnHooks, sess *sessions.Session, lease sessions.Lease, err error) error {
	if lease == nil {
		return err // not locked
	}
	// The runner releases the lease with the turn's last write when the
	// store can; releasing it again once the run is over costs nothing.
	t.req.Lease = lease
	if errors.Is(err, sessions.ErrNotFound) {
		err = d.notFound()
	}
	if err == nil {
		t.req.Session = sess
		err = h.loaded(ctx, s)
	}
	if err != nil {
		t.release()
		return err
	}
	return nil
}

// notFound is the error for a session that does not exist.
func (d *turnRequest) notFound() error {
	if d.missing != nil {
		return d.missing
	}
	return sessionNotFound(d.sessionID)
}

// turnUser is whose sessions a turn reaches: with a token, the token's
// user (a request that names a user must name that one, or "me"); without
// one, the user as given, else anonymous.
func turnUser(ctx context.Context, user string, named bool) (string, error) {
	if p := principalOf(ctx); p != nil && !named {
		return p.User, nil
	}
	if named {
		return ownUser(ctx, user)
	}
	return cmpOr(user, "anonymous"), nil
}

// checkSessionID is the one rule for the session a turn runs on: a valid
// id (not one of the gateway's own, which where the session must exist are
// reported missing instead), and a top-level session. A sub-conversation
// (the session of an agent called as a tool) can be read on every surface
// but never run: its turns belong to the parent's.
func checkSessionID(id, field string) error {
	switch {
	case !validSessionID(id):
		return badRequest(field, "Session ids are at most 256 characters, without control characters, and may not start with '~'.")
	case sessions.ParentID(id) != "":
		return badRequest(field, "Session "+id+" is a sub-conversation of an agent called as a tool; it can be read but not run. Run on "+rootSessionID(id)+" instead.")
	}
	return nil
}

// turnSink is where the events of a turn's run go: a surface's encoder.
// Its methods run on the goroutine that drives the run. A sink that also
// has keepalive(), called when the run has been silent for the keepalive
// interval (never at the same time as event), is pumped as a stream; one
// that has persist(ctx), called under the session's lock once the run
// completed, stores what must outlive the turn.
type turnSink interface {
	// event hands over one event of the run; an error stops the run.
	event(ev *sessions.Event) error
	// end is called once the run is over and its session released, with
	// how it ended (nil when it completed) and the run's context, before
	// the run is marked finished. t.run is nil when it never started.
	end(ctx context.Context, err error)
	// traits are the optional abilities of the sink's type: its
	// traitsOf, found once, in a variable of its own.
	traits() sinkTraits
}

// sinkTraits are which of the optional interfaces a turnSink's type has
// (frameLogger, streamSink, wholeAnswer, endingSink, persistSink), found
// once per type by traitsOf: driveRun reads them with one call, where a
// type assertion to each, on every turn, was a lookup each in the
// runtime's table of the types that implement an interface.
type sinkTraits uint8

const (
	traitLogsFrames sinkTraits = 1 << iota
	traitStream
	traitWhole
	traitEnding
	traitPersist
)

// traitsOf finds the optional interfaces sink type S has.
func traitsOf[S turnSink]() sinkTraits {
	var sink any = *new(S)
	var tr sinkTraits
	if _, ok := sink.(frameLogger); ok {
		tr |= traitLogsFrames
	}
	if _, ok := sink.(streamSink); ok {
		tr |= traitStream
	}
	if _, ok := sink.(wholeAnswer); ok {
		tr |= traitWhole
	}
	if _, ok := sink.(endingSink); ok {
		tr |= traitEnding
	}
	if _, ok := sink.(persistSink); ok {
		tr |= traitPersist
	}
	return tr
}

type streamSink interface{ keepalive() error }

// pumpStater is a streamSink that holds its pump's state (see pump) in
// its own allocation, which a stream would otherwise allocate apart.
type pumpStater interface {
	pumpState() *keepalive[*sessions.Event]
}

// wholeAnswer is a turnSink that answers its client only once the run is
// over (a non-streamed answer): no client learns the run's id before, so
// the shared run index learns of the run wholeAnswerPut after it is named
// rather than at once (runs.Run.PutLater), and a turn that ends sooner,
// as most such turns do, writes its index entry once, at its end. Other
// replicas list a longer one running that much later, on top of its
// first model call, before which it has no id to list.
type wholeAnswer interface{ answersWhole() }

const wholeAnswerPut = time.Second

type persistSink interface {
	persist(ctx context.Context) error
}

// An endingSink is a turnSink that logs nothing once its run's events are
// over, is not a stream (drain ends a run that yielded no error well,
// whatever its context says then; pump does not), and whose persist, if it
// has one, cannot fail when endsWithWrite says so at the run's end: the run
// then completes whatever follows, and its end (its log's end and its final
// index entry) may be written with the turn's last events (turn.RunEnd).
type endingSink interface {
	endsWithWrite() bool
}

var _ agentcore.RunEnder = (*turn)(nil)

// RunEnd implements agentcore.RunEnder for a turn whose sink is an
// endingSink: once its run ended well, its end, as Finish with a nil
// error would write it, to be written with its last events when the
// store can (sessions.EndingAppender); nil when the sink has more to do
// that may fail, or the run keeps no shared log and index.
func (t *turn) RunEnd() sessions.RunEnd {
	if !t.sink.(endingSink).endsWithWrite() {
		return nil
	}
	if e := t.rec.Ending(); e != nil {
		return e
	}
	return nil
}

// runTurn runs a turn that began into sink: the whole rest of its
// lifecycle.
func (s *Server) runTurn(ctx context.Context, t *turn, sink turnSink) {
	runCtx, err := s.startRun(ctx, t)
	if err != nil {
		sink.end(ctx, err)
		return
	}
	s.driveRun(runCtx, t, sink)
}

// startRun registers a turn that began as a run, and returns the context
// to drive it with (ctx decides what ends it besides a cancel: a request's
// context, or one detached from it). On error the turn is released.
func (s *Server) startRun(ctx context.Context, t *turn) (context.Context, error) {
	if t.rec != nil { // it waited in the session's line (see multitask.go)
		runCtx := t.rec.Begin(ctx)
		if runCtx.Err() != nil {
			// Cancelled (interrupted, say) as it got its session: it
			// never runs, and stores nothing.
			err := context.Cause(runCtx)
			t.abandon(ctx, err)
			return nil, err
		}
		return runCtx, nil
	}
	rec, runCtx, err := s.runs.Start(ctx, t.spec(t.runID))
	if err != nil {
		t.abandon(ctx, err)
		return nil, err
	}
	t.rec, t.named, t.errSeq = rec, t.runID != "", -1
	return runCtx, nil
}

// abandon lets go of what a turn that began holds (its session's lock and
// its limits slot, its place in its session's line, and the run it is
// registered as when it waited there, ended with err) when it is not to
// run after all.
func (t *turn) abandon(ctx context.Context, err error) {
	if t.line != nil {
		t.line.ticket.Leave()
	}
	t.release()
	t.slot.End(0)
	if t.rec != nil {
		t.endUnrun(ctx, err)
	}
}

// spec describes the turn's run, named id (empty: named by its invocation
// id once the runtime knows it).
func (t *turn) spec(id string) runs.Spec {
	return runs.Spec{ID: id, App: t.app.ID, User: t.req.UserID, Session: t.sessionID,
		Retention: max(t.retention, runIndexRetention), Unreachable: t.unlogged, Value: t.value}
}

// driveRun runs a started turn into sink on the calling goroutine: events,
// then persist, release (the session's lock, then the turn's limits
// slot), end, and the run's finish, in that order.
func (s *Server) driveRun(ctx context.Context, t *turn, sink turnSink) {
	t.sink = sink
	tr := sink.traits()
	t.ownLog = tr&traitLogsFrames != 0
	streamed := tr&traitStream != 0
	if tr&traitWhole != 0 {
		t.rec.PutLater(wholeAnswerPut)
	}
	if tr&traitEnding != 0 {
		t.req.End = t
	}
	if streamed {
		t.run = t.runner.Run(model.WithPacer(ctx, &t.pace), t.req)
	} else {
		t.run = t.runner.Run(ctx, t.req)
	}
	var err error
	if streamed {
		k, ok := sink.(pumpStater)
		var state *keepalive[*sessions.Event]
		if ok {
			state = k.pumpState()
		} else {
			state = new(keepalive[*sessions.Event])
		}
		err = pump(ctx, state, t, t.run.Events(), s.cfg.KeepaliveInterval)
	} else {
		err = drain(ctx, t.run.Events(), t)
	}
	if tr&traitPersist != 0 && err == nil {
		err = sink.(persistSink).persist(ctx)
	}
	t.release()
	if t.slot != limits.NoSlot { // a turn no limit counts copies no usage
		t.slot.End(tokensOf(t.run.Usage()))
	}
	if err != nil {
		t.errSeq = t.logError(err)
	}
	sink.end(ctx, err)
	t.rec.Finish(ctx, err)
}

// event hands an event of the run to the sink, naming the run by its
// invocation id at the first one (the runtime knows it from then on).
func (t *turn) event(ev *sessions.Event) error {
	t.name()
	if !t.ownLog {
		t.logFrame(ev)
	}
	return t.sink.event(ev)
}

// name names the run by its invocation id once the runtime knows it.
func (t *turn) name() {
	if t.named || t.run == nil {
		return
	}
	if id := t.invocationID(); id != "" {
		t.named = true
		if t.run.NewInvocation() {
			_ = t.rec.SetNewID(context.Background(), id)
		} else {
			_ = t.rec.SetID(context.Background(), id)
		}
	}
}

// invocationID is the run's invocation id, "" while it is not known: read
// from the run until it is, then kept (it does not change once set), so
// that a turn's events do not take the run's lock each. Every read of the
// turn's own id goes through it.
func (t *turn) invocationID() string {
	if t.invID == "" {
		t.invID = t.run.InvocationID()
	}
	return t.invID
}

// frameLogger is a turnSink that logs the frames of its run as its
// clients see them (t.logFrame), rather than the runtime's events.
type frameLogger interface{ logsFrames() }

// logFrame appends a frame to the run's log, the event itself (the log
// keeps it: events are not changed once yielded); see logData.
func (t *turn) logFrame(ev *sessions.Event) int64 { return t.logData(runs.Frame{Event: ev}) }

// logData appends a frame (an event or its JSON) to the run's log and
// returns its number; -1 when it could not be logged (the run has no id
// yet, or the log failed: the run goes on, without a cursor for that
// frame). The log outlives the run's context: a run's last frames are
// logged after it was cancelled.
func (t *turn) logData(f runs.Frame) int64 {
	if t.unlogged {
		return -1
	}
	seq, err := t.rec.Append(context.Background(), f)
	if err != nil {
		return -1
	}
	return seq
}

// logError logs the event a failed run ends with, errorCode CANCELLED
// (cancelled by id, or its client went away), SHUTDOWN (the server
// stopped it) or the code of the failure, and returns its number.
func (t *turn) logError(err error) int64 {
	t.name()
	if !t.named {
		return -1 // never started: nothing to attach to
	}
	ev := &sessions.Event{ID: uuid.NewString(), InvocationID: t.rec.ID(), Author: t.app.Root.Name(), Timestamp: time.Now(),
		ErrorCode: runErrorCode(err), ErrorMessage: classify(err).message}
	return t.logFrame(ev)
}

// endUnrun ends a run that never ran (it failed while it waited in its
// session's line, or once it got the session) with err: the surface
// records it (t.unrun), then its log ends with the error event, and the
// run with err.
func (t *turn) endUnrun(ctx context.Context, err error) {
	if t.unrun != nil {
		t.unrun(ctx, err)
	}
	t.errSeq = t.logError(err)
	t.rec.Finish(ctx, err)
}

// runErrorCode is the errorCode of the event a failed run ends with.
func runErrorCode(err error) string {
	switch {
	case errors.Is(err, runs.ErrShutdown):
		return "SHUTDOWN"
	case cancelled(err):
		return "CANCELLED"
	}
	return strings.ToUpper(classify(err).code)
}

// cancelled reports whether a run ended because it was cancelled: by id
// (here or on another replica), or by its client going away.
func cancelled(err error) bool {
	return errors.Is(err, errRunCancelled) || errors.Is(err, context.Canceled)
}

// keepalive and stop make the turn what pump drives.
func (t *turn) keepalive() error { return t.sink.(streamSink).keepalive() }
func (t *turn) stop()            { t.rec.Stop() }

// drain hands every event of a run to t on the caller's goroutine and
// returns the first error, the run's or the sink's (which stops the run); a run that failed because ctx ended fails with ctx's cause, as in
// pump (the server shutting down, a task cancelled).
//
// The loop's body is a function literal rather than the body of a range
// over events, which would allocate the loop's state and result besides
// the function: the result is the turn's (t.drained).
func drain(ctx context.Context, events iter.Seq2[*sessions.Event, error], t *turn) error {
	t.drained = nil
	events(func(ev *sessions.Event, err error) bool {
		if err == nil {
			err = t.event(ev)
		}
		if err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			t.drained = err
			return false
		}
		return true
	})
	return t.drained
}
