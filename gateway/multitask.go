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
// starts streaming only once it runs.

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
// session is busy. lease is not nil once the lock is held.
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
	if lease, err = s.waitInLine(ctx, t, mt == spec.MultitaskInterrupt); err != nil {
		return nil, nil, err
	}
	sess, err = s.readLocked(ctx, req, create)
	return sess, lease, err
}

// waitInLine waits in the line of t's session for its lease, as a queued
// run (t.rec, which startRun begins; on error beginTurn ends it), joining
// it unless Config.MaxQueued turns wait there already; with interrupt it
// joins whatever the line holds, drops the turns waiting ahead of it from
// the line, cancels the runs ahead of it (running, or waiting: dropped),
// and cancels them again every interruptNudge while it waits.
//
// The run is named before it runs, so that it is listed while it waits:
// by t.runID when the surface has one, else by the id of the new
// invocation it will run (set as the runtime's). A turn that resumes a
// paused invocation runs under that invocation's id, known only once it
// reads the session: it waits unnamed, unlisted (an interrupt still
// cancels it), and is named when it runs.
func (s *Server) waitInLine(ctx context.Context, t *turn, interrupt bool) (sessions.Lease, error) {
	app, user, sid := t.app.ID, t.req.UserID, t.sessionID
	// An interrupting turn is never refused for a full line: it empties
	// the line ahead of it.
	bound := s.cfg.MaxQueued
	if interrupt {
		bound = 0
	}
	ticket, err := s.queue.Join(ctx, app, user, sid, bound)
	if err != nil {
		return nil, err
	}
	defer ticket.Leave()
	id := t.runID
	if id == "" && !resumes(t.req.NewMessage) {
		if t.req.InvocationID == "" {
			t.req.InvocationID = agentcore.NewInvocationID(s.newEventID())
		}
		id = t.req.InvocationID
	}
	rs := t.spec(id)
	rs.Queued, rs.Ticket = true, ticket.Seq()
	rec, waitCtx, err := s.runs.Start(ctx, rs)
	if err != nil {
		return nil, err
	}
	t.rec, t.named, t.errSeq = rec, id != "", -1
	// The turns waiting ahead are dropped from the line before the run
	// going is cancelled: none of them takes the session as it lets go.
	if interrupt {
		if err := ticket.DropAhead(ctx); err != nil {
			return nil, err
		}
	}
	waitCtx, stop := context.WithTimeoutCause(waitCtx, s.cfg.QueueWait, errQueueWait)
	defer stop()
	for {
		try, stopTry := waitCtx, context.CancelFunc(func() {})
		if interrupt {
			// Best effort: a cancel that could not be sent is sent again.
			_ = s.runs.CancelSession(waitCtx, app, user, sid, ticket.Seq())
			try, stopTry = context.WithTimeout(waitCtx, interruptNudge)
		}
		lease, err := ticket.Acquire(try)
		stopTry()
		switch {
		case err == nil:
			return lease, nil
		case errors.Is(err, sessions.ErrDropped):
			// A later turn interrupts this one; its cancel may come after.
			rec.Cancel(errRunCancelled)
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

// resumes reports whether a turn's message answers calls of a paused
// invocation (function responses), which the turn then resumes.
func resumes(msg *genai.Content) bool {
	return msg != nil && slices.ContainsFunc(msg.Parts, func(p *genai.Part) bool { return p != nil && p.FunctionResponse != nil })
}
