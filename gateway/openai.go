package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"unicode"

	"github.com/gin-gonic/gin"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/gateway/openaiwire"
	"github.com/agentgate/agentgate/sessions"
)

func (s *Server) listModels(c *gin.Context) {
	list := openaiwire.ModelList{Data: []openaiwire.Model{}}
	for _, a := range s.catalog().Apps {
		if !canUse(c.Request.Context(), a.ID) {
			continue
		}
		list.Data = append(list.Data, s.modelObject(a.ID))
	}
	c.JSON(http.StatusOK, list)
}

func (s *Server) getModel(c *gin.Context) {
	id := strings.TrimPrefix(c.Param("id"), "/")
	if _, ok := s.appByID(id); !ok || !canUse(c.Request.Context(), id) {
		writeOpenAIError(c, classify(openaiwire.ModelNotFound(id)))
		return
	}
	c.JSON(http.StatusOK, s.modelObject(id))
}

func (s *Server) modelObject(id string) openaiwire.Model {
	return openaiwire.Model{ID: id, Created: 0, OwnedBy: "agentgate"}
}

// chatTurn is a prepared /v1/chat/completions turn.
type chatTurn struct {
	app       *app
	runner    *agentcore.Runner
	req       agentcore.RunRequest
	sessionID string
	// stored reports whether the session lives in the gateway's store;
	// false for a stateless turn until it pauses.
	stored bool
	// echoSession reports whether X-Session-Id is sent back: only for a
	// session the client named (a stateless turn's bookkeeping session is
	// internal, found again by tool_call_id).
	echoSession bool
	// ephemeral holds a stateless turn's session.
	ephemeral *sessions.MemoryService
	// resumedVia lists the call entries to drop once the resumed turn is
	// done (see callEntry.key).
	resumedVia []string
	// tmp reports a "~tmp-" session to delete once no call is pending.
	tmp bool
	// toolMessages locates the request's tool results, for errors.
	toolMessages []toolMessage
	release      func()
}

// toolMessage is where one of a request's tool results stands in its
// messages.
type toolMessage struct {
	index  int
	callID string
}

// toolMessagesOf lists the tool results among msgs.
func toolMessagesOf(msgs []openaiwire.ChatMessage) []toolMessage {
	var out []toolMessage
	for i, m := range msgs {
		if m.Role == openaiwire.RoleTool {
			out = append(out, toolMessage{index: i, callID: m.ToolCallID})
		}
	}
	return out
}

func (s *Server) chatCompletions(c *gin.Context) {
	body, err := s.readBody(c)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	req, err := openaiwire.DecodeRequest(body)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	conv, err := req.Validate()
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	a, ok := s.appByID(req.Model)
	if !ok {
		writeOpenAIError(c, classify(openaiwire.ModelNotFound(req.Model)))
		return
	}
	noteModel(c, a.ID)
	tools := toolMessagesOf(req.Messages)
	turn, err := s.prepareChat(c.Request.Context(), c.Request.Header, a, req, conv)
	if err != nil {
		writeOpenAIError(c, chatError(tools, err))
		return
	}
	defer turn.release()
	turn.toolMessages = tools
	if turn.stored {
		annotate(c, slog.String("session_id", turn.sessionID))
	}
	// From here on the turn has what it needs of the request, which is
	// not kept while the turn runs: its messages may be a long history.
	if enc := s.encoderFor(turn, req); req.Stream {
		s.streamChat(c, turn, enc)
	} else {
		s.completeChat(c, turn, enc)
	}
}

// sessionHeader reads the session id a client sent, from the headers
// OpenAI-compatible clients use, or metadata.session_id.
func sessionHeader(h http.Header, md map[string]string) string {
	for _, k := range []string{"X-Session-Id", "X-Litellm-Session-Id", "X-OpenWebUI-Chat-Id"} {
		if v := strings.TrimSpace(h.Get(k)); v != "" {
			return v
		}
	}
	return strings.TrimSpace(md["session_id"])
}

func validSessionID(id string) bool {
	if len(id) > 256 || ownSession(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// prepareChat turns a validated request and its conversation into a
// runtime turn: whose session, what is new input, which client tools and
// per-turn settings.
func (s *Server) prepareChat(ctx context.Context, h http.Header, a *app, req *openaiwire.ChatCompletionRequest, conv openaiwire.Conversation) (*chatTurn, error) {
	if err := allowModel(ctx, a.ID); err != nil {
		return nil, err
	}
	user := chatUser(ctx, req)
	sid := sessionHeader(h, req.Metadata)
	if sid != "" && !validSessionID(sid) {
		return nil, badRequest("X-Session-Id", "Session ids are at most 256 characters, without control characters, and may not start with '~'.")
	}

	msg := &genai.Content{Role: genai.RoleUser}
	for _, c := range conv.New {
		msg.Parts = append(msg.Parts, c.Parts...)
	}
	if len(msg.Parts) == 0 {
		return nil, badRequest("messages", "The request has no new input: the messages after the last assistant message must include a user or tool message.")
	}
	var responses []*genai.FunctionResponse
	for _, p := range msg.Parts {
		if p.FunctionResponse != nil {
			responses = append(responses, p.FunctionResponse)
		}
	}

	rr := agentcore.RunRequest{UserID: user, NewMessage: msg, Config: agentcore.RunConfig{Streaming: req.Stream},
		ClientTools: openaiwire.ToFunctionDeclarations(req.Tools)}
	var err error
	if rr.Overrides, err = overridesFrom(a, req, conv.System); err != nil {
		return nil, err
	}
	if rr.Params, err = s.chatParams(ctx, a, req.Metadata); err != nil {
		return nil, err
	}
	turn := &chatTurn{app: a, runner: a.runner, release: func() {}}

	switch {
	case sid != "":
		turn.sessionID, turn.stored, turn.echoSession = sid, true, true
		// A new session is created with the lock and the read; tool
		// results cannot start one (they answer a call of a paused turn).
		var create *sessions.CreateRequest
		if len(responses) == 0 {
			create = &sessions.CreateRequest{AppName: a.ID, UserID: user, SessionID: sid, State: paramsState(rr.Params)}
		}
		sess, lease, err := s.lockAndGet(ctx, sessions.GetRequest{AppName: a.ID, UserID: user, SessionID: sid}, create)
		if lease == nil {
			return nil, err // not locked
		}
		turn.release = lease.Release
		if errors.Is(err, sessions.ErrNotFound) && len(responses) > 0 {
			err = &agentcore.UnknownCallError{ID: responses[0].ID}
		}
		if err != nil {
			turn.release()
			return nil, err
		}
		rr.Session = sess // read under the lock: the runner need not read it again
		rr.Lease = lease  // released with the turn's write
		if err := s.mapCallIDs(ctx, a.ID, user, responses, sid, turn, nil); err != nil {
			turn.release()
			return nil, err
		}
	case len(responses) > 0:
		// A stateless client sends tool results back: the paused turn is
		// found by tool_call_id alone.
		entry, err := s.resolveCall(ctx, a.ID, user, responses[0].ID)
		if err != nil {
			return nil, err
		}
		found := entry.ref.SessionID
		turn.sessionID, turn.stored, turn.tmp = found, true, strings.HasPrefix(found, tmpSessionPrefix)
		lease, err := s.cfg.Locker.Acquire(ctx, a.ID, user, found, s.cfg.BusyWait)
		if err != nil {
			return nil, err
		}
		turn.release, rr.Lease = lease.Release, lease
		if err := s.mapCallIDs(ctx, a.ID, user, responses, found, turn, entry); err != nil {
			turn.release()
			return nil, err
		}
	default:
		if err := s.statelessTurn(ctx, turn, conv.History, user); err != nil {
			return nil, err
		}
	}
	rr.SessionID = turn.sessionID
	turn.req = rr
	return turn, nil
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// lockAndGet takes the session's run lock and reads it, creating it as
// create asks when it does not exist and create is not nil: in one round
// trip when the store can. lease is not nil once the lock is held (also
// when the session does not exist: the error then wraps ErrNotFound).
//
// A turn reads its session from the latest compaction on (the model
// requests show that compaction's summary in place of the events before
// it): req's and create's windows are set so.
func (s *Server) lockAndGet(ctx context.Context, req sessions.GetRequest, create *sessions.CreateRequest) (sess *sessions.Session, lease sessions.Lease, err error) {
	req.Window = sessions.Window{SinceCompaction: true}
	if create != nil {
		c := *create
		c.Window = req.Window
		create = &c
	}
	switch {
	case s.lockGet != nil && create != nil:
		return s.lockGet.AcquireGetOrCreate(ctx, *create, s.cfg.BusyWait)
	case s.lockGet != nil:
		return s.lockGet.AcquireGet(ctx, req, s.cfg.BusyWait)
	}
	lease, err = s.cfg.Locker.Acquire(ctx, req.AppName, req.UserID, req.SessionID, s.cfg.BusyWait)
	if err != nil {
		return nil, nil, err
	}
	if create != nil {
		sess, err = sessions.GetOrCreate(ctx, s.cfg.Sessions, *create)
	} else {
		sess, err = s.cfg.Sessions.Get(ctx, req)
	}
	return sess, lease, err
}

// overridesFrom maps response_format, sampling settings, tool_choice, the
// model options and, when the model lets them in, the client's system
// messages (system);
// nil when the request has none of them.
func overridesFrom(a *app, req *openaiwire.ChatCompletionRequest, system string) (*agentcore.Overrides, error) {
	schema, jsonMode, err := openaiwire.OutputSchema(req.ResponseFormat)
	if err != nil {
		return nil, err
	}
	if schema != nil || jsonMode {
		if _, ok := a.Root.(*agentcore.LlmAgent); !ok {
			return nil, badRequest("response_format", fmt.Sprintf("Model %s is served by a %T workflow; response_format needs an LLM agent at the root.", a.ID, a.Root))
		}
	}
	gen, tools, opts := openaiwire.GenerationSettings(req, nil), openaiwire.ToToolConfig(req.ToolChoice), req.ModelOptions()
	if !a.AppendClientInstructions {
		system = ""
	}
	if schema == nil && !jsonMode && gen == nil && tools == nil && opts == (model.Options{}) && system == "" {
		return nil, nil // the agents' own settings apply
	}
	return &agentcore.Overrides{OutputSchema: schema, JSONMode: jsonMode, Generate: gen, ToolConfig: tools,
		Options: opts, Instruction: system}, nil
}

// encoderTools maps the client actions every turn of an app may show
// (the runtime's own and the app's, by their runtime names) to the names
// clients see; built once per app.
func encoderTools(clientNames map[string]string) map[string]string {
	names := map[string]string{agentcore.GetUserChoiceToolName: agentcore.GetUserChoiceToolName,
		agentcore.RequestConfirmationToolName: agentcore.RequestConfirmationToolName, a2a.InputRequiredToolName: a2a.InputRequiredToolName}
	maps.Copy(names, clientNames)
	return names
}

// encoderFor configures the chunk encoder of a turn.
func (s *Server) encoderFor(turn *chatTurn, req *openaiwire.ChatCompletionRequest) *openaiwire.Encoder {
	names := turn.app.encoderTools // read only
	if len(turn.req.ClientTools) > 0 {
		names = maps.Clone(names)
		for _, d := range turn.req.ClientTools {
			if _, action := turn.app.clientNames[d.Name]; !action {
				names[d.Name] = d.Name
			}
		}
	}
	return openaiwire.NewEncoder(openaiwire.EncoderConfig{Model: req.Model, Created: s.cfg.Now().Unix(),
		IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, ClientTools: names, Streamed: req.Stream})
}

// visibleEvent decides what of an event an OpenAI client sees: the turn's
// own events whole; of agents called as tools only their calls (the
// client actions they pause on), never their text. Error events of the turn
// end it with an error.
func visibleEvent(ev *sessions.Event, invID string) (*sessions.Event, error) {
	if ev.InvocationID == invID || invID == "" {
		// A tool-response event may carry a coded tool failure (the model
		// sees it and goes on); only the turn's own error events end it.
		if ev.ErrorCode != "" && !ev.Partial && len(ev.FunctionResponses()) == 0 {
			return nil, &apiError{status: http.StatusInternalServerError, kind: "server_error", code: strings.ToLower(ev.ErrorCode),
				message: fmt.Sprintf("Agent %s stopped: %s", ev.Author, ev.ErrorMessage)}
		}
		return ev, nil
	}
	if ev.Partial || len(ev.LongRunningToolIDs) == 0 {
		return nil, nil
	}
	c := ev.Clone()
	c.Content = &genai.Content{Role: genai.RoleModel}
	for _, fc := range ev.FunctionCalls() {
		c.Content.Parts = append(c.Content.Parts, &genai.Part{FunctionCall: fc})
	}
	return c, nil
}

func (s *Server) streamChat(c *gin.Context, turn *chatTurn, enc *openaiwire.Encoder) {
	ctx, stop, err := s.openStream(c.Request.Context())
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	defer stop()
	cs := &chatStream{c: c, turn: turn, run: turn.runner.Run(ctx, turn.req), enc: enc}
	err = pump(ctx, stop, cs.run.Events(), s.cfg.KeepaliveInterval, cs.event, cs.keepalive)
	s.endStream(ctx, cs, err)
}

// chatStream is what a streamed chat completion writes with. Its methods
// run on top of the whole turn (a push iterator runs its consumer on the
// producer's stack), so the state lives here rather than in closures in
// streamChat's frame, which the request's goroutine keeps on its stack for
// as long as the stream is open (see docs/benchmarks-memory.md).
type chatStream struct {
	c    *gin.Context
	turn *chatTurn
	run  *agentcore.Run
	enc  *openaiwire.Encoder
	w    *sseWriter // nil until the first frame
}

// start sends the headers with the first frame, in one flush.
func (cs *chatStream) start() {
	if cs.w == nil {
		var hdr map[string]string
		if cs.turn.echoSession {
			hdr = map[string]string{"X-Session-Id": cs.turn.sessionID}
		}
		cs.w = newSSE(cs.c.Writer, hdr)
	}
}

// frameBufs holds the buffers streams make their frames in: a stream
// borrows one per write, so an open stream holds none while it waits.
var frameBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledFrameBuf bounds the buffers frameBufs keeps: the rare large
// frame's buffer is left to the garbage collector.
const maxPooledFrameBuf = 64 << 10

// write sends an event's chunks, and then tail, in one write and one
// flush: a delta goes out as soon as it exists.
func (cs *chatStream) write(chunks []openaiwire.ChatCompletionChunk, tail string) error {
	bp := frameBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledFrameBuf {
			frameBufs.Put(bp)
		}
	}()
	buf := (*bp)[:0]
	for i := range chunks {
		var err error
		if buf, err = openaiwire.AppendChunkFrame(buf, &chunks[i]); err != nil {
			return err
		}
	}
	buf = append(buf, tail...)
	*bp = buf
	if len(buf) == 0 {
		return nil
	}
	cs.start()
	return cs.w.frame(buf)
}

// event writes what a client sees of one event of the run.
func (cs *chatStream) event(ev *sessions.Event) error {
	vis, err := visibleEvent(ev, cs.run.InvocationID())
	if err != nil || vis == nil {
		return err
	}
	return cs.write(cs.enc.Event(vis), "")
}

func (cs *chatStream) keepalive() error {
	cs.start()
	return cs.w.comment("keepalive")
}

// endStream finishes a stream whose run ended with err: the finish chunks
// and [DONE], or an error (a frame once the stream has started).
func (s *Server) endStream(ctx context.Context, cs *chatStream, err error) {
	c, run := cs.c, cs.run
	if err == nil {
		if err = s.afterRun(ctx, cs.turn, cs.enc.ToolCalls()); err == nil {
			var chunks []openaiwire.ChatCompletionChunk
			if cs.w == nil {
				// Nothing was shown yet (a silent turn): still open with
				// the role chunk so clients see a well-formed response.
				chunks = cs.enc.Start(run.StartAgent(), run.InvocationID())
			}
			if err = cs.write(append(chunks, cs.enc.Finish(run.Usage())...), openaiwire.DoneFrame); err == nil {
				annotateRun(c, run)
				return
			}
		}
	}
	annotateRun(c, run)
	ae := chatError(cs.turn.toolMessages, err)
	if ae.status == 499 {
		return // the client is gone
	}
	s.log.WarnContext(c.Request.Context(), "chat completion failed", "err", err)
	if cs.w == nil {
		writeOpenAIError(c, ae)
		return
	}
	_ = cs.w.frame(append(openaiwire.ErrorFrame(toWire(ae)), openaiwire.DoneFrame...))
}

func (s *Server) completeChat(c *gin.Context, turn *chatTurn, enc *openaiwire.Encoder) {
	ctx := c.Request.Context()
	run := turn.runner.Run(ctx, turn.req)
	var runErr error
	for ev, err := range run.Events() {
		if err != nil {
			runErr = err
			break
		}
		vis, err := visibleEvent(ev, run.InvocationID())
		if err != nil {
			runErr = err
			break
		}
		if vis != nil {
			enc.Event(vis)
		}
	}
	if runErr == nil {
		runErr = s.afterRun(ctx, turn, enc.ToolCalls())
	}
	annotateRun(c, run)
	if runErr != nil {
		ae := chatError(turn.toolMessages, runErr)
		if ae.status != 499 {
			s.log.WarnContext(c.Request.Context(), "chat completion failed", "err", runErr)
			writeOpenAIError(c, ae)
		}
		return
	}
	if turn.echoSession {
		c.Header("X-Session-Id", turn.sessionID)
	}
	comp := enc.Completion(run.Usage())
	if comp.Agentgate.Author == "" {
		comp.Agentgate.Author, comp.Agentgate.InvocationID = run.StartAgent(), run.InvocationID()
	}
	buf := completionBufs.Get().(*[]byte)
	defer completionBufs.Put(buf)
	body, err := openaiwire.AppendCompletion((*buf)[:0], comp)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	if cap(body) <= maxPooledCompletion {
		*buf = body // keep what it grew to
	}
}

// completionBufs holds the buffers non-streamed answers are encoded into,
// a *[]byte each. completeChat takes one for its response and puts it back
// when c.Data has returned: a response writer copies what it is given and
// keeps none of it (io.Writer's contract).
var completionBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledCompletion is the largest buffer completionBufs keeps: a rare
// long answer is not held on to for the short ones.
const maxPooledCompletion = 64 << 10

// chatError maps an error of a chat turn; a response for an unknown tool
// call names the message that carried it (one of tools).
func chatError(tools []toolMessage, err error) *apiError {
	ae := classify(err)
	var uc *agentcore.UnknownCallError
	if errors.As(err, &uc) {
		for _, m := range tools {
			if m.callID == uc.ID {
				c := *ae
				c.param = fmt.Sprintf("messages[%d].tool_call_id", m.index)
				return &c
			}
		}
	}
	return ae
}
