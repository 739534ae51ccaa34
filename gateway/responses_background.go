package gateway

// Background responses: the turn runs as a run of the registry named by
// the response id, without a client. Its visible events go to the run's
// event log; a stream, at create or on GET ?stream=true, encodes them
// again. The encoder is deterministic (item and call ids counted from the
// response id; completed_at and usage taken from the stored response), so
// a replay gives every event the sequence number it had: the log keeps
// the run's events once for every surface, not a second, encoded copy.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/gateway/openaiwire"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// responseIDs counts the ids of a response's items and client calls from
// its id, so that the same events always get the same ids.
type responseIDs struct {
	base         string
	items, calls int
}

func (g *responseIDs) item(prefix string) string {
	g.items++
	return prefix + "_" + g.base + strconv.Itoa(g.items)
}

func (g *responseIDs) call() string {
	g.calls++
	return "call_" + g.base[:min(len(g.base), 24)] + "c" + strconv.Itoa(g.calls)
}

// responsesEncoder is the encoder of resp with the client tool names
// names: deterministic but for now.
func (s *Server) responsesEncoder(resp *openaiwire.Response, names map[string]string, now func() time.Time) *openaiwire.ResponsesEncoder {
	ids := &responseIDs{base: resp.ID[len("resp_"):]}
	return openaiwire.NewResponsesEncoder(resp, openaiwire.ResponsesEncoderConfig{ClientTools: names,
		NewItemID: ids.item, NewToolCallID: ids.call, Now: now})
}

// responsesBackground is the sink of a background turn: it encodes the
// response for the record, and logs what a stream shows.
type responsesBackground struct{ responsesSink }

// logsFrames: the run's log holds what the response shows (the events a
// replay encodes), not every event of the run.
func (b *responsesBackground) logsFrames() {}

func (b *responsesBackground) event(ev *sessions.Event) error {
	vis, err := b.visible(ev)
	if err != nil || vis == nil {
		return err
	}
	b.enc.Event(vis)
	b.turn.logFrame(vis)
	return nil
}

var responsesBackgroundTraits = traitsOf[*responsesBackground]()

func (*responsesBackground) traits() sinkTraits { return responsesBackgroundTraits }

// end stores the final response (before the run's log ends: a replay
// that saw the end reads it).
func (b *responsesBackground) end(_ context.Context, err error) {
	if _, ae := b.finish(err); ae != nil && err != nil && !cancelled(err) {
		b.s.log.WarnContext(b.ctx, "background response failed", "err", err)
	}
}

// startBackground starts a background turn that began: the record is
// stored in_progress, the run goes on without the request, and the client
// gets the response object, or with stream the run's events as they come
// (leaving does not stop the run). A turn that began in its session's line
// (multitask enqueue or interrupt on a busy session) is stored queued and
// answered so at once; it waits in the line without the request (see
// runQueued). A record that cannot be stored fails the request before
// anything runs: nobody could poll, replay or cancel the response.
func (s *Server) startBackground(c *gin.Context, b *responsesBackground, stream bool) {
	ctx := context.WithoutCancel(c.Request.Context())
	b.ctx = ctx
	t := &b.turn.turn
	if b.turn.stored {
		b.enc.SetSession(b.turn.sessionID)
	}
	if t.line != nil {
		b.enc.Response().Status = openaiwire.StatusQueued
	}
	if err := b.save(); err != nil {
		t.abandon(ctx, err)
		writeOpenAIError(c, notStored(err))
		return
	}
	t.unrun = func(_ context.Context, err error) { b.unrun(err) }
	snapshot := *b.enc.Response()
	if t.line != nil {
		go s.queuedResponse(ctx, b)
	} else {
		runCtx, err := s.startRun(ctx, t)
		if err != nil {
			writeOpenAIError(c, b.unrun(err))
			return
		}
		go s.driveRun(runCtx, t, b)
	}
	if stream {
		s.streamBackground(c, snapshot.ID, -1)
		return
	}
	c.JSON(http.StatusOK, &snapshot)
}

// queuedResponse is the surface of a background response stored queued
// (see runQueued): its record says in_progress from when it holds the
// session; one that never runs has its record ended (unrun) before its run.
func (s *Server) queuedResponse(ctx context.Context, b *responsesBackground) {
	s.runQueued(ctx, &b.turn.turn, b, func() {
		b.enc.Response().Status = openaiwire.StatusInProgress
		_ = b.save() // a record left queued ends all the same: its run's end replaces it
	})
}

// unrun records the end of a background response whose turn did not run
// (its turn's unrun once the record is stored): cancelled, or failed with
// err. It returns the error as the client sees it.
func (b *responsesBackground) unrun(err error) *apiError {
	ae := classify(err)
	if cancelled(err) {
		b.enc.Cancel(nil)
	} else {
		b.enc.Fail(toWire(ae), nil)
	}
	_ = b.save()
	return ae
}

// streamBackground streams background response id's events after
// sequence number after, encoded again from its run's log, and follows
// the run to its end.
func (s *Server) streamBackground(c *gin.Context, id string, after int64) {
	ctx := c.Request.Context()
	rec, err := s.currentResponse(ctx, id)
	if err == nil && !rec.Background {
		err = badRequest("stream", "Only background responses can be streamed again.")
	}
	// The run's log, not the registry: a log shared by the replicas
	// (Config.RunLog) replays a run that another one runs.
	if err == nil {
		_, _, err = s.cfg.RunLog.Read(ctx, id, -1, 1)
		if errors.Is(err, runs.ErrNotFound) {
			err = notFound("The events of response " + id + " are no longer kept (runs.retention), or are kept by another replica.")
		}
	}
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	var resp openaiwire.Response
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	start := resp
	resetResponse(&start)
	st := &responsesStream{responsesSink: responsesSink{s: s, ctx: ctx, c: c}, w: newSSE(c.Writer, nil)}
	enc := s.responsesEncoder(&start, rec.Names, s.cfg.Now)
	send := func(events []openaiwire.ResponseEvent) error {
		n := 0
		for _, ev := range events {
			if ev.SequenceNumber > after {
				events[n] = ev
				n++
			}
		}
		return sendFrames(st, events[:n], openaiwire.AppendResponseEventFrame, "")
	}
	if send(enc.Start()) != nil {
		return
	}
	follow, stop := s.followUntilStop(ctx, id)
	defer stop()
	for f, err := range s.cfg.RunLog.Follow(follow, id, -1) {
		var ev *sessions.Event
		if err == nil {
			ev, err = f.Decode()
		}
		if err != nil {
			return // the client left, or the log failed: the stream ends
		}
		if ev.ErrorCode != "" {
			continue // how the run ended: the stored response says it
		}
		if send(enc.Event(ev)) != nil {
			return
		}
	}
	if rec, err = s.currentResponse(context.WithoutCancel(ctx), id); err == nil {
		err = json.Unmarshal(rec.Response, &resp)
	}
	if err != nil {
		return
	}
	var end []openaiwire.ResponseEvent
	switch resp.Status {
	case openaiwire.StatusFailed:
		e := &openaiwire.Error{Message: "The response failed."}
		if resp.Error != nil {
			e.Code, e.Message = resp.Error.Code, resp.Error.Message
		}
		end = enc.Fail(e, nil)
	case openaiwire.StatusCancelled:
		end = enc.Cancel(nil)
	default:
		end = enc.Finish(nil)
	}
	final := enc.Response()
	final.Usage, final.CompletedAt = resp.Usage, resp.CompletedAt
	_ = send(end)
}

// resetResponse turns a stored response back into what it was when its
// turn started.
func resetResponse(r *openaiwire.Response) {
	r.Status, r.Output, r.Usage, r.Error = openaiwire.StatusInProgress, []openaiwire.OutputItem{}, nil, nil
	r.CompletedAt, r.IncompleteDetails = nil, nil
	r.Agentgate.Transfers = []openaiwire.Transfer{}
}

// cancelResponse answers POST /v1/responses/{id}/cancel: a background
// response's run is cancelled, and the response as it then stands
// returned.
func (s *Server) cancelResponse(c *gin.Context) {
	ctx, id := c.Request.Context(), c.Param("id")
	rec, err := s.currentResponse(ctx, id)
	if err == nil && !rec.Background {
		err = badRequest("", "Only background responses can be cancelled.")
	}
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	if err := s.stopResponse(ctx, id, rec); err != nil {
		if ctx.Err() == nil {
			writeOpenAIError(c, classify(err))
		}
		return
	}
	if rec, err = s.currentResponse(ctx, id); err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	writeJSON(c, rec.Response)
}

// currentResponse reads the record of response id, as loadResponse does.
// A background response whose record still says that it runs while its
// run has ended (its end is stored before that) is one whose end could
// not be stored: it is answered failed, so that polls and replays of it
// end (the record is left as it is).
func (s *Server) currentResponse(ctx context.Context, id string) (*responseRecord, error) {
	rec, err := s.loadResponse(ctx, id)
	if err != nil || !rec.Background || !rec.running() {
		return rec, err
	}
	in, _, err := s.runs.Lookup(ctx, rec.App, rec.User, rec.Session, id)
	switch {
	case err == nil && !in.Status.Final():
		return rec, nil
	case err != nil && !errors.Is(err, runs.ErrNotFound):
		return nil, err
	}
	// The run ended (or is long forgotten): read the record again, which
	// its end may have replaced since the first read.
	if rec, err = s.loadResponse(ctx, id); err != nil || !rec.running() {
		return rec, err
	}
	var resp openaiwire.Response
	if err := json.Unmarshal(rec.Response, &resp); err != nil {
		return nil, err
	}
	resp.Status = openaiwire.StatusFailed
	resp.Error = &openaiwire.ResponseError{Code: "server_error", Message: "The response ended, but its end could not be stored."}
	if rec.Response, err = json.Marshal(&resp); err != nil {
		return nil, err
	}
	return rec, nil
}

// running reports whether the record says its response is queued or in
// progress.
func (rec *responseRecord) running() bool {
	var resp struct{ Status string }
	_ = json.Unmarshal(rec.Response, &resp)
	return resp.Status == openaiwire.StatusQueued || resp.Status == openaiwire.StatusInProgress
}

// stopResponse cancels the run of a background response, here or on the
// replica that runs it, and returns once it stopped (its final record is
// stored before that). A response that ended is left as it is.
func (s *Server) stopResponse(ctx context.Context, id string, rec *responseRecord) error {
	run, err := s.runs.Get(ctx, id)
	switch {
	case err == nil:
		run.Cancel(errRunCancelled)
		select {
		case <-run.Done():
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	case !errors.Is(err, runs.ErrNotFound):
		return err
	}
	if !rec.running() {
		return nil
	}
	return s.cancelElsewhere(ctx, id)
}
