package gateway

// The runs of a session on the native surface: list them, re-attach to
// one's frames after a cursor, cancel one. A run is a turn named by its
// invocation id (see turn.go); its frames are those of /run_sse, kept in
// the server's run log (runs.EventLog) for runs.retention after it ended.
//
//	GET  /apps/{app}/users/{user}/sessions/{id}/runs
//	GET  /apps/{app}/users/{user}/sessions/{id}/runs/{invocationId}/events
//	POST /apps/{app}/users/{user}/sessions/{id}/runs/{invocationId}/cancel

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// DefaultRunRetention is how long a run's frames are kept after it ended
// when runs.retention is not set.
const DefaultRunRetention = time.Hour

// runIndexRetention is how long this process remembers a run after it
// ended (its status, for the runs list, and that its frames expired: 410
// rather than 404), beyond its frames' retention.
const runIndexRetention = 24 * time.Hour

// errRunCancelled is the cause of a run cancelled by id.
var errRunCancelled = runs.ErrCancelled

// runInfo is a run as the runs routes list it.
type runInfo struct {
	InvocationID   string   `json:"invocationId"`
	Status         string   `json:"status"`
	StartTime      float64  `json:"startTime"`
	LastUpdateTime float64  `json:"lastUpdateTime"`
	EndTime        *float64 `json:"endTime,omitempty"`
}

func newRunInfo(in runs.Info) runInfo {
	out := runInfo{InvocationID: in.ID, Status: string(in.Status), StartTime: sessions.EpochSeconds(in.Started),
		LastUpdateTime: sessions.EpochSeconds(in.Updated)}
	if !in.Ended.IsZero() {
		end := sessions.EpochSeconds(in.Ended)
		out.EndTime = &end
	}
	return out
}

// nativeRuns serves the runs routes of session id; tail starts with "runs".
func (s *Server) nativeRuns(c *gin.Context, a *app, user, id string, tail []string) error {
	switch {
	case len(tail) == 1 && c.Request.Method == http.MethodGet:
		return s.listRuns(c, a, user, id)
	case len(tail) == 1:
		return methodNotAllowed(c)
	case len(tail) != 3 || (tail[2] != "events" && tail[2] != "cancel"):
		return notFound("Not Found")
	case tail[2] == "events" && c.Request.Method != http.MethodGet,
		tail[2] == "cancel" && c.Request.Method != http.MethodPost:
		return methodNotAllowed(c)
	}
	if _, err := s.getVisibleSession(c.Request.Context(), a.ID, user, id); err != nil {
		return err
	}
	in, run, err := s.sessionRun(c.Request.Context(), a, user, id, tail[1])
	if err != nil {
		return err
	}
	if tail[2] == "cancel" {
		return s.cancelRun(c, in, run)
	}
	return s.attachRun(c, in)
}

func (s *Server) listRuns(c *gin.Context, a *app, user, id string) error {
	if _, err := s.getVisibleSession(c.Request.Context(), a.ID, user, id); err != nil {
		return err
	}
	list, err := s.runs.List(c.Request.Context(), a.ID, user, id)
	if err != nil {
		return err
	}
	out := make([]runInfo, 0, len(list))
	for _, in := range list {
		out = append(out, newRunInfo(in))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// sessionRun finds run inv of the session, run here (run set) or on
// another replica (known from the shared run index): another session's
// run, or another user's, is as unknown as one that never was.
func (s *Server) sessionRun(ctx context.Context, a *app, user, id, inv string) (runs.Info, *runs.Run, error) {
	in, run, err := s.runs.Lookup(ctx, a.ID, user, id, inv)
	if errors.Is(err, runs.ErrNotFound) {
		return runs.Info{}, nil, runNotFound(inv)
	}
	return in, run, err
}

func runNotFound(inv string) *apiError {
	e := notFound("Run not found: " + inv)
	e.code = "run_not_found"
	return e
}

// cancelRun cancels a run and answers it as listed once it stopped (a
// run that ended is answered as it is). A run of another replica is
// cancelled through the run index; it stopped when its log ended.
func (s *Server) cancelRun(c *gin.Context, in runs.Info, run *runs.Run) error {
	ctx := c.Request.Context()
	if run != nil {
		run.Cancel(errRunCancelled)
		select {
		case <-run.Done():
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		c.JSON(http.StatusOK, newRunInfo(run.Info()))
		return nil
	}
	if !in.Status.Final() {
		if err := s.cancelElsewhere(ctx, in.ID); err != nil {
			return err
		}
		var err error
		if in, _, err = s.runs.Lookup(ctx, in.App, in.User, in.Session, in.ID); err != nil {
			return err
		}
	}
	c.JSON(http.StatusOK, newRunInfo(in))
	return nil
}

// cancelElsewhere asks the replica running run id to cancel it (through
// the run index) and waits until it stopped: until its log, which every
// replica shares then, ended.
func (s *Server) cancelElsewhere(ctx context.Context, id string) error {
	if err := s.runs.CancelElsewhere(ctx, id); err != nil {
		return err
	}
	for _, err := range s.cfg.RunLog.Follow(ctx, id, -1) {
		if err != nil && !errors.Is(err, runs.ErrTrimmed) && !errors.Is(err, runs.ErrNotFound) {
			return err
		}
	}
	return nil
}

// runCursor reads the cursor of a re-attach, "<invocationId>:<n>", from
// Last-Event-ID or ?after=: the number of the last frame the client has,
// -1 without a cursor.
func runCursor(c *gin.Context, inv string) (int64, error) {
	cur, field := c.GetHeader("Last-Event-ID"), "Last-Event-ID"
	if cur == "" {
		cur, field = c.Query("after"), "after"
	}
	if cur == "" {
		return -1, nil
	}
	run, n, ok := strings.Cut(cur, ":")
	seq, err := strconv.ParseInt(n, 10, 64)
	if !ok || run != inv || err != nil || seq < 0 || n != strconv.FormatInt(seq, 10) {
		return 0, badRequest(field, "The cursor must be \""+inv+":<n>\", the id of a frame of this run.")
	}
	return seq, nil
}

// attachRun streams run in's frames after the cursor, then the rest live
// until the run ends: the frames and ids of /run_sse.
func (s *Server) attachRun(c *gin.Context, in runs.Info) error {
	inv := in.ID
	after, err := runCursor(c, inv)
	if err != nil {
		return err
	}
	ctx, cancel := s.followUntilStop(c.Request.Context(), inv)
	defer cancel()
	// The first read decides the status: a cursor past the log, or frames
	// that expired, are answered before the stream starts.
	first, ended, err := s.cfg.RunLog.Read(ctx, inv, after, 0)
	if errors.Is(err, runs.ErrNotFound) && !in.Status.Final() {
		// A live run whose log its first write has yet to create (see
		// runs.FreshOpener): Follow waits for it.
		err = nil
	}
	switch {
	case errors.Is(err, runs.ErrNotFound), errors.Is(err, runs.ErrTrimmed):
		return &apiError{status: http.StatusGone, kind: "invalid_request_error", code: "run_expired",
			message: "The frames of run " + inv + " are no longer kept (runs.retention)."}
	case errors.Is(err, runs.ErrCursor):
		return badRequest("Last-Event-ID", "The cursor is past the last frame of run "+inv+".")
	case err != nil:
		return err
	}
	a := &attached{w: startSSE(c.Writer, nil), inv: inv, next: after + 1, cancel: cancel}
	frames := func(yield func(runs.Frame, error) bool) {
		for _, f := range first {
			if !yield(f, nil) {
				return
			}
		}
		if ended {
			return
		}
		for f, err := range s.cfg.RunLog.Follow(ctx, inv, after+int64(len(first))) {
			if !yield(f, err) {
				return
			}
		}
	}
	_ = pump(ctx, new(keepalive[runs.Frame]), a, iter.Seq2[runs.Frame, error](frames), s.cfg.KeepaliveInterval)
	return nil
}

// attached writes the frames of a re-attach, "id:" and "data:" in one
// block, numbered on from next (a log hands them over in order, without
// gaps).
type attached struct {
	w      *sseWriter
	inv    string
	next   int64
	cancel context.CancelFunc
	buf    []byte
}

func (a *attached) event(f runs.Frame) error {
	b, err := f.JSON()
	if err != nil {
		return err
	}
	a.buf = append(a.buf[:0], "id: "...)
	a.buf = append(a.buf, frameID(a.inv, a.next)...)
	a.buf = append(a.buf, "\ndata: "...)
	a.buf = append(a.buf, b...)
	a.buf = append(a.buf, '\n', '\n')
	a.next++
	return a.w.frame(a.buf)
}

func (a *attached) keepalive() error { return a.w.comment("keepalive") }
func (a *attached) stop()            { a.cancel() }
