package gateway

// The Responses API (POST /v1/responses and the stored responses' routes):
// one more decoding and encoding around the one turn lifecycle (turn.go).
// A responses turn is a chat turn (the same session finding, stateless
// turns, client tool call refs) whose request is a ResponsesRequest and
// whose encoder is the ResponsesEncoder.
//
// A stored response is a record, an unlisted session "~resp-<id>" of the
// reserved app responsesApp under its owner (the token's user; every
// caller is one owner without authentication): GET /v1/responses/{id}
// names no model, so the record cannot live under the app. It holds the
// response object, its input items and where it stands in its session.
// Refs "item:<id>" from the ids of its input and output items to the
// record resolve item_reference.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway/openaiwire"
	"github.com/agentgate/agentgate/sessions"
)

const (
	// responsesApp is the app the records of stored responses live under.
	responsesApp = sessions.UnlistedPrefix + "responses"
	// responsePrefix starts a record's session id.
	responsePrefix = sessions.UnlistedPrefix + "resp-"
	// itemRefPrefix starts the ref key of a stored response's item.
	itemRefPrefix = "item:"
	// openOwner owns every response when requests carry no token.
	openOwner = sessions.UnlistedPrefix + "open"
	// recordKey is the state key holding a record (JSON).
	recordKey = "record"
)

// responseRecord is what is kept of a stored response.
type responseRecord struct {
	// App and User are the model and the user whose session the turn ran
	// on; Session is that session, LastEvent the id of its last event once
	// the turn was over (empty when it stored nothing).
	App       string `json:"app"`
	User      string `json:"user"`
	Session   string `json:"session,omitempty"`
	LastEvent string `json:"last_event,omitempty"`
	// Response is the response object; Input the request's input items,
	// each with an id.
	Response json.RawMessage        `json:"response"`
	Input    []openaiwire.InputItem `json:"input"`
	// Background responses also keep the client tool names their events
	// were encoded with, to encode them again on a replay.
	Background bool              `json:"background,omitempty"`
	Names      map[string]string `json:"names,omitempty"`
}

// responseOwner is whose responses a request reaches.
func responseOwner(ctx context.Context) string {
	if p := principalOf(ctx); p != nil {
		return p.User
	}
	return openOwner
}

// loadResponse reads the record of response id of the caller; a 404 when
// there is none.
func (s *Server) loadResponse(ctx context.Context, id string) (*responseRecord, error) {
	if !strings.HasPrefix(id, "resp_") || !validSessionID(id) {
		return nil, responseNotFound(id)
	}
	return s.loadRecord(ctx, responsePrefix+id, id)
}

func (s *Server) loadRecord(ctx context.Context, sid, id string) (*responseRecord, error) {
	sess, err := s.cfg.Sessions.Get(ctx, sessions.GetRequest{AppName: responsesApp, UserID: responseOwner(ctx), SessionID: sid})
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, responseNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	raw, _ := sess.State[recordKey].(string)
	var rec responseRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return nil, fmt.Errorf("response %s: bad record: %w", id, err)
	}
	return &rec, nil
}

func responseNotFound(id string) *apiError {
	return notFound(fmt.Sprintf("Response with id '%s' not found.", id))
}

// saveResponse stores the record of a response and the refs of its items.
func (s *Server) saveResponse(ctx context.Context, rec *responseRecord, resp *openaiwire.Response) error {
	raw, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	rec.Response = raw
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	owner, sid := responseOwner(ctx), responsePrefix+resp.ID
	state := map[string]any{recordKey: string(body)}
	_, err = s.cfg.Sessions.Create(ctx, sessions.CreateRequest{AppName: responsesApp, UserID: owner, SessionID: sid, State: state})
	if errors.Is(err, sessions.ErrExists) {
		// A background response's end: replaced in place, so that a poll
		// never finds it missing.
		_, err = sessions.PatchState(ctx, s.cfg.Sessions, sessions.GetRequest{AppName: responsesApp, UserID: owner, SessionID: sid},
			&sessions.Event{ID: uuid.NewString(), InvocationID: resp.ID, Author: "user", Timestamp: s.cfg.Now(),
				Actions: sessions.EventActions{StateDelta: state}})
	}
	if err != nil {
		return err
	}
	refs := map[string]sessions.Ref{}
	for _, it := range rec.Input {
		refs[itemRefPrefix+it.ID] = sessions.Ref{SessionID: sid}
	}
	for _, it := range resp.Output {
		refs[itemRefPrefix+it.ID] = sessions.Ref{SessionID: sid}
	}
	return s.refs.PutRefs(ctx, responsesApp, owner, refs, 0)
}

// resolveItem finds an item of one of the caller's stored responses, for
// item_reference.
func (s *Server) resolveItem(ctx context.Context, id string) (openaiwire.InputItem, bool) {
	ref, err := s.refs.GetRef(ctx, responsesApp, responseOwner(ctx), itemRefPrefix+id)
	if err != nil {
		return openaiwire.InputItem{}, false
	}
	rec, err := s.loadRecord(ctx, ref.SessionID, id)
	if err != nil {
		return openaiwire.InputItem{}, false
	}
	var resp struct {
		Output []openaiwire.InputItem `json:"output"`
	}
	if json.Unmarshal(rec.Response, &resp) != nil {
		return openaiwire.InputItem{}, false
	}
	for _, it := range slices.Concat(rec.Input, resp.Output) {
		if it.ID == id {
			return it, true
		}
	}
	return openaiwire.InputItem{}, false
}

// inputItems lists a request's input as items with ids (a string input
// is one user message).
func inputItems(in openaiwire.ResponseInput) []openaiwire.InputItem {
	if in.Items == nil {
		return []openaiwire.InputItem{{Type: openaiwire.ItemMessage, ID: openaiwire.NewItemID("msg"), Role: openaiwire.RoleUser,
			Content: &openaiwire.InputContent{Parts: []openaiwire.InputPart{{Type: openaiwire.PartInputText, Text: in.Text}}}}}
	}
	items := slices.Clone(in.Items)
	for i := range items {
		it := &items[i]
		if it.Type == "" {
			it.Type = openaiwire.ItemMessage
		}
		if it.ID == "" || it.Type == openaiwire.ItemReference {
			prefix := "msg"
			switch it.Type {
			case openaiwire.ItemFunctionCall:
				prefix = "fc"
			case openaiwire.ItemFunctionCallOutput:
				prefix = "fco"
			}
			it.ID = openaiwire.NewItemID(prefix)
		}
	}
	return items
}

// responsesTurn is a /v1/responses turn.
type responsesTurn struct {
	chatTurn
	wireReq *openaiwire.ResponsesRequest
	// record is the stored response previous_response_id names, nil
	// without one.
	previous *responseRecord
	// seed is the history a new stored session starts with.
	seed []*genai.Content
	// lastEvent is the id of the latest event the turn stored.
	lastEvent string
}

// prepare maps the request's per-turn settings, once the model is allowed.
func (rt *responsesTurn) prepare(_ context.Context, a *app) (*agentcore.Overrides, error) {
	r := rt.wireReq
	f, err := r.OutputFormat()
	if err != nil {
		return nil, err
	}
	return turnOverrides(a, "text.format", agentcore.Overrides{OutputSchema: f.Schema, JSONMode: f.JSON && f.Schema == nil,
		Generate: r.GenerationSettings(nil), ToolConfig: r.ToolConfig(), Options: r.ModelOptions(), Instruction: rt.system})
}

// loaded seeds a new session with the client's history, checks that a
// continued response is still the latest of its session, and maps the
// call ids of tool results.
func (rt *responsesTurn) loaded(ctx context.Context, s *Server) error {
	sess := rt.req.Session
	if len(rt.seed) > 0 && len(sess.Events) == 0 {
		seed := s.seedEvents(rt.app, rt.seed)
		if err := appendEvents(ctx, s.cfg.Sessions, sess, seed); err != nil {
			return err
		}
	}
	if p := rt.previous; p != nil && p.Session == rt.sessionID && !slices.Contains([]string{"", p.LastEvent}, lastEventID(sess)) {
		return &apiError{status: http.StatusConflict, kind: "invalid_request_error", code: "conflict", param: "previous_response_id",
			message: "The conversation moved on while this request was prepared; send it again to branch from the response."}
	}
	return rt.chatTurn.loaded(ctx, s)
}

// lastEventID is the id of the session's latest event that is not a
// compaction (which the runtime may store after a turn, in the
// background): the event a response that is the session's latest ended
// on; empty when there is none.
func lastEventID(sess *sessions.Session) string {
	for i := len(sess.Events) - 1; i >= 0; i-- {
		if ev := sess.Events[i]; ev.Actions.Compaction == nil {
			return ev.ID
		}
	}
	return ""
}

func (s *Server) createResponse(c *gin.Context) {
	ctx := c.Request.Context()
	body, err := s.readBody(c)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	req, err := openaiwire.DecodeResponsesRequest(body)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	conv, err := req.Validate(func(id string) (openaiwire.InputItem, bool) { return s.resolveItem(ctx, id) })
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	a, ok := s.openAIApp(c, req.Model)
	if !ok {
		return
	}
	mt, err := openAIMultitask(c.Request.Header)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	resp := req.NewResponse(openaiwire.NewResponseID(), s.cfg.Now().Unix())
	var waited *responsesStream // a stream's, which may start while the turn waits in its session's line
	if req.Stream && !req.Background {
		waited = &responsesStream{responsesSink: responsesSink{s: s, ctx: ctx, c: c}}
	}
	rt, err := s.beginResponse(ctx, a, req, conv, resp.ID, mt, waited)
	if err != nil {
		if waited != nil && waited.w != nil {
			// It left the line without running: the response fails.
			waited.enc = s.responsesEncoder(resp, waited.turn.clientToolNames(), s.cfg.Now)
			waited.end(ctx, err)
			return
		}
		writeOpenAIError(c, chatError(nil, err))
		return
	}
	if rt.stored {
		annotate(c, slog.String("session_id", rt.sessionID))
	}
	names := rt.clientToolNames()
	rs := responsesSink{s: s, ctx: ctx, turn: rt, enc: s.responsesEncoder(resp, names, s.cfg.Now), store: req.Stored(), input: inputItems(req.Input)}
	rt.wireReq = nil
	switch {
	case req.Background:
		rs.names = names
		s.startBackground(c, &responsesBackground{responsesSink: rs}, req.Stream)
	case req.Stream:
		rs.c = c
		waited.responsesSink = rs
		s.runTurn(ctx, &rt.turn, waited)
	default:
		rs.c = c
		s.runTurn(ctx, &rt.turn, &responsesAnswer{responsesSink: rs})
	}
}

// beginResponse begins the turn of a validated request: which session
// (previous_response_id's, conversation's, the one paused on its tool
// results, a new one, or none with store false), what is new input, which
// client tools and per-turn settings.
//
// A background turn's run is named by the response id (id), and kept for
// replays once it ended; on a busy session (enqueue, interrupt) it begins
// in the session's line, answered queued before it waits there (see
// startBackground). mt is the request's multitask strategy. A streamed
// request's stream (st, nil otherwise) gets the turn, and keepalives while
// it waits in its session's line: it may have started when beginResponse
// fails.
func (s *Server) beginResponse(ctx context.Context, a *app, req *openaiwire.ResponsesRequest, conv openaiwire.Conversation, id string, mt spec.Multitask, st *responsesStream) (*responsesTurn, error) {
	msg, responses, err := newInput(conv, "input", "The request has no new input: the items after the last assistant message or function_call must include a user message or a function_call_output.")
	if err != nil {
		return nil, err
	}
	rt := &responsesTurn{chatTurn: chatTurn{system: conv.System, history: conv.History, responses: responses}, wireReq: req}
	d := turnRequest{app: a, user: cmpOr(req.User, req.SafetyIdentifier), message: msg, metadata: req.Metadata,
		clientTools: req.FunctionDeclarations(), multitask: mt, config: agentcore.RunConfig{Streaming: req.Stream || req.Background}}
	if req.Background {
		d.runID, d.retention, d.detached = id, s.cfg.RunRetention, true
	}
	switch {
	case req.PreviousResponseID != "" || req.Conversation != nil:
		if !req.Stored() {
			field := cmpOr(map[bool]string{true: "previous_response_id"}[req.PreviousResponseID != ""], "conversation")
			return nil, badRequest("store", "'store' false keeps nothing: it cannot be used with '"+field+"', which continues a stored conversation.")
		}
		if req.PreviousResponseID != "" {
			if err := s.continueFrom(ctx, a, req.PreviousResponseID, rt, &d); err != nil {
				return nil, err
			}
		} else {
			d.sessionID, d.sessionField, d.create = req.Conversation.ID, "conversation", len(responses) == 0
		}
		rt.stored, rt.echoSession = true, true
	case len(responses) > 0:
		// findSession resolves the paused call by its id.
		d.missing = &agentcore.UnknownCallError{ID: responses[0].ID}
	case req.Stored():
		d.sessionID, d.sessionField, d.create = uuid.NewString(), "conversation", true
		rt.seed, rt.stored, rt.echoSession = conv.History, true, true
	}
	if d.sessionID != "" && !d.create && d.missing == nil && len(responses) > 0 {
		d.missing = &agentcore.UnknownCallError{ID: responses[0].ID}
	}
	if st != nil {
		st.turn, d.idle = rt, st
	}
	err = s.beginTurn(ctx, &d, &rt.turn, rt)
	if err != nil {
		return nil, err
	}
	if rt.line == nil { // else its loaded is still to come (awaitSession)
		rt.system, rt.history, rt.entry, rt.seed = "", nil, nil, nil
	}
	return rt, nil
}

// continueFrom sets the turn to continue the stored response id: on its
// session when it is that session's latest, else on a new session holding
// the history up to it (a branch; the original is not changed).
func (s *Server) continueFrom(ctx context.Context, a *app, id string, rt *responsesTurn, d *turnRequest) error {
	rec, err := s.loadResponse(ctx, id)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound {
		return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", code: "previous_response_not_found",
			param: "previous_response_id", message: fmt.Sprintf("Previous response with id '%s' not found.", id)}
	}
	if err != nil {
		return err
	}
	if rec.App != a.ID {
		return badRequest("previous_response_id", fmt.Sprintf("Response %s was made by model %s, not %s.", id, rec.App, a.ID))
	}
	if rec.Session == "" || rec.LastEvent == "" {
		return badRequest("previous_response_id", fmt.Sprintf("Response %s stored no conversation to continue.", id))
	}
	rt.previous, d.user, d.named = rec, rec.User, principalOf(ctx) != nil
	d.sessionID, d.sessionField = rec.Session, "previous_response_id"
	sess, err := s.cfg.Sessions.Get(ctx, sessions.GetRequest{AppName: rec.App, UserID: rec.User, SessionID: rec.Session})
	if errors.Is(err, sessions.ErrNotFound) {
		return badRequest("previous_response_id", fmt.Sprintf("The conversation of response %s no longer exists.", id))
	}
	if err != nil {
		return err
	}
	if lastEventID(sess) == rec.LastEvent {
		return nil
	}
	end := slices.IndexFunc(sess.Events, func(ev *sessions.Event) bool { return ev.ID == rec.LastEvent })
	if end < 0 {
		return badRequest("previous_response_id", fmt.Sprintf("The history of response %s is no longer stored.", id))
	}
	branch := uuid.NewString()
	dst, err := s.cfg.Sessions.Create(ctx, sessions.CreateRequest{AppName: rec.App, UserID: rec.User, SessionID: branch, State: sess.State})
	if err != nil {
		return err
	}
	evs := make([]*sessions.Event, end+1)
	for i, ev := range sess.Events[:end+1] {
		evs[i] = ev.Clone()
	}
	if err := appendEvents(ctx, s.cfg.Sessions, dst, evs); err != nil {
		return err
	}
	d.sessionID, rt.previous = branch, nil
	return nil
}

// responsesSink is what a responses turn's sinks share. ctx is the
// request's (a background turn outlives it: its values only); c is the
// request's gin context, nil for a background turn.
type responsesSink struct {
	s     *Server
	ctx   context.Context
	c     *gin.Context
	turn  *responsesTurn
	enc   *openaiwire.ResponsesEncoder
	store bool
	input []openaiwire.InputItem
	// names are a background turn's client tool names (see
	// responseRecord.Names); nil otherwise.
	names map[string]string
}

// visible notes the turn's stored events and returns what the client sees
// of ev.
func (rs *responsesSink) visible(ev *sessions.Event) (*sessions.Event, error) {
	inv := rs.turn.invocationID()
	if !ev.Partial && ev.InvocationID == inv {
		rs.turn.lastEvent = ev.ID
	}
	return visibleEvent(ev, inv)
}

// persist stores the refs of the client tool calls the client now holds.
func (rs *responsesSink) persist(ctx context.Context) error {
	return rs.s.afterRun(ctx, &rs.turn.chatTurn, rs.enc.ToolCalls())
}

// finish ends the encoder as the run ended, stores the response when it
// is to be, and returns the ending's events and the error to report. A
// response whose turn ran to its end but that could not be stored, as
// store true promised (it could be neither retrieved nor continued),
// fails: the turn's events stay in its conversation, and the client, told
// that it failed, may send the request again.
func (rs *responsesSink) finish(err error) ([]openaiwire.ResponseEvent, *apiError) {
	var usage *genai.GenerateContentResponseUsageMetadata
	if run := rs.turn.run; run != nil {
		usage = run.Usage()
		rs.enc.SetInvocation(run.InvocationID())
	}
	if rs.turn.stored {
		rs.enc.SetSession(rs.turn.sessionID)
	}
	var events []openaiwire.ResponseEvent
	var ae *apiError
	switch {
	case err == nil:
		events = rs.enc.Finish(usage)
	case cancelled(err):
		ae, events = classify(err), rs.enc.Cancel(usage)
	default:
		ae = classify(err)
		events = rs.enc.Fail(toWire(ae), usage)
	}
	if rs.store && rs.turn.run != nil {
		if serr := rs.save(); serr != nil && err == nil {
			ae = notStored(serr)
			events = rs.enc.Revoke(toWire(ae))
		}
	}
	return events, ae
}

// notStored is what a client is told of a response that ran but could not
// be stored: the store's failure (a server error), in words that say so.
func notStored(err error) *apiError {
	const msg = "The response could not be stored, so it could be neither retrieved nor continued; send the request again."
	ae := *classify(err)
	if ae.status < http.StatusInternalServerError {
		return &apiError{status: http.StatusInternalServerError, kind: "server_error", code: "internal_error", message: msg}
	}
	ae.message = msg + " " + ae.message
	return &ae
}

// save stores the response as it stands.
func (rs *responsesSink) save() error {
	rec := &responseRecord{App: rs.turn.app.ID, User: rs.turn.req.UserID, Input: rs.input, Background: rs.names != nil, Names: rs.names}
	if rs.turn.stored {
		rec.Session, rec.LastEvent = rs.turn.sessionID, rs.turn.lastEvent
	}
	err := rs.s.saveResponse(context.WithoutCancel(rs.ctx), rec, rs.enc.Response())
	if err != nil {
		rs.s.log.ErrorContext(rs.ctx, "storing a response failed", "response_id", rs.enc.Response().ID, "err", err)
	}
	return err
}

// responsesStream writes a streamed response.
type responsesStream struct {
	responsesSink
	w *sseWriter // nil until the first frame or keepalive
}

func (st *responsesStream) write(events []openaiwire.ResponseEvent) error {
	return sendFrames(st, events, openaiwire.AppendResponseEventFrame, "")
}

func (st *responsesStream) start() *sseWriter {
	if st.w == nil {
		st.w = openStream(st.c, &st.turn.chatTurn, new(sseWriter))
	}
	return st.w
}

func (st *responsesStream) event(ev *sessions.Event) error {
	if !st.enc.Started() {
		if err := st.write(st.enc.Start()); err != nil {
			return err
		}
	}
	vis, err := st.visible(ev)
	if err != nil || vis == nil {
		return err
	}
	return st.write(st.enc.Event(vis))
}

func (st *responsesStream) keepalive() error {
	return st.start().comment("keepalive")
}

var responsesStreamTraits = traitsOf[*responsesStream]()

func (*responsesStream) traits() sinkTraits { return responsesStreamTraits }

// end finishes the stream: response.completed (or incomplete), or before
// anything was sent an error in OpenAI's envelope, and after that
// response.failed.
func (st *responsesStream) end(_ context.Context, err error) {
	if run := st.turn.run; run != nil {
		annotateRun(st.c, run)
	}
	events, ae := st.finish(err)
	if ae != nil {
		if ae.status == 499 {
			return // the client is gone
		}
		if err != nil { // else it was not stored, which save logged
			st.s.log.WarnContext(st.ctx, "response failed", "err", err)
		}
		if st.w == nil {
			writeOpenAIError(st.c, ae)
			return
		}
	}
	_ = st.write(events)
}

// responsesAnswer collects a response that is not streamed.
type responsesAnswer struct{ responsesSink }

func (*responsesAnswer) answersWhole() {}

func (ra *responsesAnswer) event(ev *sessions.Event) error {
	vis, err := ra.visible(ev)
	if err == nil && vis != nil {
		ra.enc.Event(vis)
	}
	return err
}

var responsesAnswerTraits = traitsOf[*responsesAnswer]()

func (*responsesAnswer) traits() sinkTraits { return responsesAnswerTraits }

// end answers with the response object, or the error the run ended with.
func (ra *responsesAnswer) end(_ context.Context, err error) {
	c := ra.c
	if run := ra.turn.run; run != nil {
		annotateRun(c, run)
	}
	_, ae := ra.finish(err)
	if ae != nil {
		if ae.status != 499 {
			if err != nil { // else it was not stored, which save logged
				ra.s.log.WarnContext(ra.ctx, "response failed", "err", err)
			}
			writeOpenAIError(c, ae)
		}
		return
	}
	if ra.turn.echoSession {
		c.Header("X-Session-Id", ra.turn.sessionID)
	}
	c.JSON(http.StatusOK, ra.enc.Response())
}

// getResponse answers GET /v1/responses/{id}: the response as it stands,
// or with stream=true a background response's events after
// starting_after.
func (s *Server) getResponse(c *gin.Context) {
	if stream, _ := strconv.ParseBool(c.Query("stream")); stream {
		after := int64(-1)
		if v := c.Query("starting_after"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				writeOpenAIError(c, badRequest("starting_after", "Invalid 'starting_after': expected a sequence number (an integer from 0)."))
				return
			}
			after = n
		}
		s.streamBackground(c, c.Param("id"), after)
		return
	}
	rec, err := s.currentResponse(c.Request.Context(), c.Param("id"))
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	writeJSON(c, rec.Response)
}

// deleteResponse answers DELETE /v1/responses/{id}: the record goes; the
// conversation it belongs to stays.
func (s *Server) deleteResponse(c *gin.Context) {
	ctx, id := c.Request.Context(), c.Param("id")
	if _, err := s.loadResponse(ctx, id); err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	err := s.cfg.Sessions.Delete(ctx, sessions.DeleteRequest{AppName: responsesApp, UserID: responseOwner(ctx), SessionID: responsePrefix + id})
	if err != nil && !errors.Is(err, sessions.ErrNotFound) {
		writeOpenAIError(c, classify(err))
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "response.deleted", "deleted": true})
}

// listInputItems answers GET /v1/responses/{id}/input_items: a list
// object, newest first unless order=asc, at most limit (1 to 100, default
// 20) items, after the item id given as after.
func (s *Server) listInputItems(c *gin.Context) {
	rec, err := s.loadResponse(c.Request.Context(), c.Param("id"))
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	items := slices.Clone(rec.Input)
	switch order := c.DefaultQuery("order", "desc"); order {
	case "desc":
		slices.Reverse(items)
	case "asc":
	default:
		writeOpenAIError(c, badRequest("order", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'asc' and 'desc'.", order)))
		return
	}
	limit, err := strconv.Atoi(c.DefaultQuery("limit", "20"))
	if err != nil || limit < 1 || limit > 100 {
		writeOpenAIError(c, badRequest("limit", "Invalid 'limit': expected an integer from 1 to 100."))
		return
	}
	if after := c.Query("after"); after != "" {
		i := slices.IndexFunc(items, func(it openaiwire.InputItem) bool { return it.ID == after })
		if i < 0 {
			writeOpenAIError(c, badRequest("after", fmt.Sprintf("Item with id '%s' not found.", after)))
			return
		}
		items = items[i+1:]
	}
	more := len(items) > limit
	items = items[:min(limit, len(items))]
	list := gin.H{"object": "list", "data": items, "has_more": more, "first_id": nil, "last_id": nil}
	if len(items) > 0 {
		list["first_id"], list["last_id"] = items[0].ID, items[len(items)-1].ID
	}
	c.JSON(http.StatusOK, list)
}

// appendEvents stores evs in sess, in one batch when the store can.
func appendEvents(ctx context.Context, svc sessions.Service, sess *sessions.Session, evs []*sessions.Event) error {
	if b, ok := svc.(sessions.BatchAppender); ok {
		return b.AppendEvents(ctx, sess, evs)
	}
	for _, ev := range evs {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			return err
		}
	}
	return nil
}
