package gateway

// Double texting: a turn sent while its session has a run going. What it
// does is the request's multitask strategy (the native body field
// multitaskStrategy, the /v1 header X-Agentgate-Multitask), else its
// model's (models[].multitask):
//
//   - reject (the default) waits up to sessions.busy_wait for the session,
//     then is refused (409 session_busy);
//   - enqueue waits in the session's line (sessions.Queue) for the runs
//     ahead of it, as a run of status queued, then runs: in the order the
//     turns joined the line, across replicas when the line is Redis's;
//   - interrupt cancels the runs ahead of it (running or queued, on any
//     replica: runs.Registry.CancelSession), then waits in the line the
//     same way, which then only holds the cancelled runs' ends.
//
// A turn that finds its session free runs at once whatever its strategy,
// as a reject turn does: the line costs nothing until it is needed. A
// queued turn waits under its request (a client that leaves takes it out
// of the line, and the run ends cancelled), for at most sessions.queue_wait
// (then 409 session_busy, the run failed); a cancel of the queued run by
// id, or an interrupt after it, ends it cancelled (409 run_cancelled). It
// streams its run only once it runs; a stream that waited
// server.keepalive_interval starts before (its headers and keepalives;
// turnRequest.idle; A2A's starts as it joins the line, lineSink), and its
// failures are then the stream's. A background response's turn, and an A2A
// task's answered at once, is answered queued before it waits
// (turnRequest.detached): it waits without its request (runQueued), until
// it runs or a cancel, an interrupt, queue_wait or a shutdown ends it.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/sessions"
)

// Defaults of the session's line (Config.MaxQueued, Config.QueueWait).
const (
	DefaultMaxQueued = 10
	DefaultQueueWait = 5 * time.Minute
)

// multitaskHeader carries a /v1 request's multitask strategy.
const multitaskHeader = "X-Agentgate-Multitask"

// interruptNudge is how often an interrupting turn cancels again the runs
// ahead of it while it waits: one that took the session just as the first
// cancel went out, or a cancel lost while a replica was reconnecting to
// Redis, is cancelled within it.
const interruptNudge = time.Second

// errQueueWait ends a turn's wait in its session's line after
// sessions.queue_wait.
var errQueueWait = errors.New("gateway: the turn waited sessions.queue_wait in the session's line")

// multitaskOf reads a request's multitask strategy from field (empty: the
// model's); anything but reject, enqueue or interrupt is a 400 naming it.
func multitaskOf(value, field string) (spec.Multitask, error) {
	if value == "" {
		return "", nil
	}
	if m, ok := spec.ParseMultitask(value); ok {
		return m, nil
	}
	return "", badRequest(field, field+" must be reject, enqueue or interrupt, not "+fmt.Sprintf("%q", value)+".")
}

// openAIMultitask reads the multitask strategy of a /v1 request from its
// header.
func openAIMultitask(h http.Header) (spec.Multitask, error) {
	return multitaskOf(h.Get(multitaskHeader), multitaskHeader)
}

// lockTurn takes the run lock of the session req names and reads it (as
// lockAndGet does), as the turn's multitask strategy says when the
// session is busy. lease is not nil once the lock is held. A detached turn
// (turnRequest.detached) that must wait for its session neither waits nor
// reads: it returns with its place in the line (t.line), no lease and no
// error, and awaitSession waits for it.
func (s *Server) lockTurn(ctx context.Context, d *turnRequest, t *turn, req sessions.GetRequest, create *sessions.CreateRequest) (*sessions.Session, sessions.Lease, error) {
	mt := d.multitask
	if mt == "" {
		mt = d.app.Multitask
	}
	if mt == spec.MultitaskReject || s.queue == nil {
		return s.lockAndGet(ctx, req, create, s.cfg.BusyWait)
	}
	sess, lease, err := s.lockAndGet(ctx, req, create, 0)
	if lease != nil || !errors.Is(err, sessions.ErrConflict) {
		return sess, lease, err
	}
	w, err := s.joinLine(ctx, t, mt == spec.MultitaskInterrupt, d.detached)
	if err != nil {
		return nil, nil, err
	}
	w.idle = d.idle
	if q, ok := d.idle.(lineSink); ok {
		_ = q.queued() // a client gone shows at the next write, ending the wait
	}
	if d.detached {
		t.line = w
		return nil, nil, nil
	}
	if lease, err = s.waitInLine(t, w); err != nil {
		return nil, nil, err
	}
	sess, err = s.readLocked(ctx, req, create)
	return sess, lease, err
}

// lineSink is a turn's keepalive stream (turnRequest.idle) that is told
// once the turn joined its session's line, before it waits: a stream that
// starts with what it runs (A2A's, with its task submitted) starts then.
type lineSink interface{ queued() error }

// lineWait is a turn's place in its session's line, from joinLine to the
// end of waitInLine.
type lineWait struct {
	ticket sessions.Ticket
	// ctx is the queued run's (runs.Start's), which the wait is under.
	ctx       context.Context
	interrupt bool
	// idle is the turn's keepalive while it waits (turnRequest.idle).
	idle streamSink
	// then completes the begin of a detached turn once it holds its
	// session (see beginTurn).
	then func(ctx context.Context, lease sessions.Lease) error
}

// joinLine puts t in its session's line, as a queued run (t.rec, which
// startRun begins; on error beginTurn ends it), unless Config.MaxQueued
// turns wait there already; with interrupt it joins whatever the line
// holds and drops the turns waiting ahead of it from the line. The run
// waits under ctx, or with detached under nothing but a cancel, the
// registry's close and sessions.queue_wait (its request is answered before
// it runs).
//
// The run is named before it runs, so that it is listed while it waits:
// by t.runID when the surface has one, else by the id of the new
// invocation it will run (set as the runtime's). A turn that resumes a
// paused invocation runs under that invocation's id, known only once it
// reads the session: it waits unnamed, unlisted (an interrupt still
// cancels it), and is named when it runs.
func (s *Server) joinLine(ctx context.Context, t *turn, interrupt, detached bool) (w *lineWait, err error) {
	// An interrupting turn is never refused for a full line: it empties
	// the line ahead of it.
	bound := s.cfg.MaxQueued
	if interrupt {
		bound = 0
	}
	ticket, err := s.queue.Join(ctx, t.app.ID, t.req.UserID, t.sessionID, bound)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ticket.Leave()
		}
	}()
	id := t.runID
	if id == "" && !resumes(t.req.NewMessage) {
		if t.req.InvocationID == "" {
			t.req.InvocationID = agentcore.NewInvocationID(s.newEventID())
		}
		id = t.req.InvocationID
	}
	rs := t.spec(id)
	rs.Queued, rs.Ticket = true, ticket.Seq()
	runCtx := ctx
	if detached {
		runCtx = context.WithoutCancel(ctx)
	}
	rec, waitCtx, err := s.runs.Start(runCtx, rs)
	if err != nil {
		return nil, err
	}
	t.rec, t.named, t.errSeq = rec, id != "", -1
	// The turns waiting ahead are dropped from the line before the run
	// going is cancelled (by waitInLine): none of them takes the session
	// as it lets go.
	if interrupt {
		if err := ticket.DropAhead(ctx); err != nil {
			return nil, err
		}
	}
	return &lineWait{ticket: ticket, ctx: waitCtx, interrupt: interrupt}, nil
}

// waitInLine waits in the line of t's session for its lease, and leaves
// the line. An interrupting turn cancels the runs ahead of it (running, or
// waiting: dropped) on any replica, and again every interruptNudge while
// it waits. A turn with a keepalive (w.idle) sends one every
// Config.KeepaliveInterval it waits, the first once it waited that long:
// a turn let in sooner answers as one that never waited.
func (s *Server) waitInLine(t *turn, w *lineWait) (sessions.Lease, error) {
	defer w.ticket.Leave()
	app, user, sid := t.app.ID, t.req.UserID, t.sessionID
	waitCtx, stop := context.WithTimeoutCause(w.ctx, s.cfg.QueueWait, errQueueWait)
	defer stop()
	var tick time.Duration // how long one Acquire waits; 0: until waitCtx ends
	if w.interrupt {
		tick = interruptNudge
	}
	var idleAt time.Time // when the next keepalive is due
	if w.idle != nil {
		if tick == 0 || tick > s.cfg.KeepaliveInterval {
			tick = s.cfg.KeepaliveInterval
		}
		idleAt = time.Now().Add(s.cfg.KeepaliveInterval)
	}
	for {
		if w.interrupt {
			// Best effort: a cancel that could not be sent is sent again.
			_ = s.runs.CancelSession(waitCtx, app, user, sid, w.ticket.Seq())
		}
		if w.idle != nil && !time.Now().Before(idleAt) {
			_ = w.idle.keepalive()
			idleAt = time.Now().Add(s.cfg.KeepaliveInterval)
		}
		try, stopTry := waitCtx, context.CancelFunc(func() {})
		if tick > 0 {
			try, stopTry = context.WithTimeout(waitCtx, tick)
		}
		lease, err := w.ticket.Acquire(try)
		stopTry()
		switch {
		case err == nil:
			return lease, nil
		case errors.Is(err, sessions.ErrDropped):
			// A later turn interrupts this one; its cancel may come after.
			t.rec.Cancel(errRunCancelled)
			return nil, errRunCancelled
		case waitCtx.Err() != nil:
			cause := context.Cause(waitCtx)
			if errors.Is(cause, errQueueWait) {
				return nil, fmt.Errorf("%w: session %s stayed busy for sessions.queue_wait (%s)", sessions.ErrConflict, sid, s.cfg.QueueWait)
			}
			return nil, cause
		case try.Err() == nil:
			return nil, err // the line failed, not the wait
		}
	}
}

// awaitSession waits, for a detached turn that began in its session's
// line (t.line), for its session, and completes its begin as beginTurn
// does for the others, under ctx (the turn's, detached from its request).
// On error the turn holds no lock, but still its limits slot and its run,
// which the caller ends with the error (abandon) once it recorded it.
func (s *Server) awaitSession(ctx context.Context, t *turn) error {
	w := t.line
	lease, err := s.waitInLine(t, w)
	if err != nil {
		return err
	}
	return w.then(ctx, lease)
}

// runQueued waits in its session's line for a detached turn that began
// there (t.line, see turnRequest.detached), then runs it into sink, under
// ctx (the turn's, detached from its request): the one path of every
// surface's turn answered before it runs. running is called once the turn
// holds its session, before its run begins (the surface's record says it
// runs). One that never runs (cancelled, interrupted, out of
// sessions.queue_wait, ended by a shutdown, or its session no longer what
// the request needs) is abandoned: the surface records its end (t.unrun)
// before its run ends, as one that ran does.
func (s *Server) runQueued(ctx context.Context, t *turn, sink turnSink, running func()) {
	err := s.awaitSession(ctx, t)
	t.line = nil
	var runCtx context.Context
	if err == nil {
		running()
		runCtx = t.rec.Begin(ctx)
		err = context.Cause(runCtx)
	}
	if err != nil {
		t.abandon(ctx, err)
		return
	}
	s.driveRun(runCtx, t, sink)
}

// resumes reports whether a turn's message answers calls of a paused
// invocation (function responses), which the turn then resumes.
func resumes(msg *genai.Content) bool {
	return msg != nil && slices.ContainsFunc(msg.Parts, func(p *genai.Part) bool { return p != nil && p.FunctionResponse != nil })
}
