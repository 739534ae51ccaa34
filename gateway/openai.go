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
	"time"
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

// openAIApp finds the virtual model a /v1 turn names and notes it for the
// metrics; an unknown model is answered with OpenAI's 404.
func (s *Server) openAIApp(c *gin.Context, id string) (*app, bool) {
	a, ok := s.appByID(id)
	if !ok {
		writeOpenAIError(c, classify(openaiwire.ModelNotFound(id)))
		return nil, false
	}
	noteModel(c, a.ID)
	return a, true
}

func (s *Server) modelObject(id string) openaiwire.Model {
	return openaiwire.Model{ID: id, Created: 0, OwnedBy: "agentgate"}
}

// chatTurn is a /v1/chat/completions turn.
type chatTurn struct {
	turn
	// stored reports whether the session lives in the gateway's store;
	// false for a stateless turn until it pauses.
	stored bool
	// echoSession reports whether X-Session-Id is sent back: only for a
	// session the client named (a stateless turn's bookkeeping session is
	// internal, found again by tool_call_id).
	echoSession bool
	// tmp reports a "~tmp-" session to delete once no call is pending.
	tmp bool
	// ephemeral holds a stateless turn's session.
	ephemeral *sessions.MemoryService
	// resumedVia lists the call entries to drop once the resumed turn is
	// done (see callEntry.key).
	resumedVia []string
	// toolMessages locates the request's tool results, for errors.
	toolMessages []toolMessage

	// While the turn begins: the request, its tool results, and the call
	// index entry they were found by. Dropped once it began (a stateless
	// request's messages may be a long history).
	wire      *openaiwire.ChatCompletionRequest
	system    string
	history   []*genai.Content
	responses []*genai.FunctionResponse
	entry     *callEntry
}

// prepare maps the request's per-turn settings, once the model is allowed.
func (ct *chatTurn) prepare(_ context.Context, a *app) (*agentcore.Overrides, error) {
	return overridesFrom(a, ct.wire, ct.system)
}

// findSession finds the session of a request that names none: the one
// paused on its tool results (found by tool_call_id alone), else a
// throwaway one seeded with its history.
func (ct *chatTurn) findSession(ctx context.Context, s *Server) (bool, error) {
	if len(ct.responses) == 0 {
		return false, s.statelessTurn(ctx, ct, ct.history, ct.req.UserID)
	}
	entry, err := s.resolveCall(ctx, ct.app.ID, ct.req.UserID, ct.responses[0].ID)
	if err != nil {
		return false, err
	}
	found := entry.ref.SessionID
	ct.entry, ct.sessionID, ct.stored, ct.tmp = entry, found, true, strings.HasPrefix(found, tmpSessionPrefix)
	return true, nil
}

// loaded maps the tool_call_ids the client was shown to the runtime's
// (a turn that answers no call, as most do, has none).
func (ct *chatTurn) loaded(ctx context.Context, s *Server) error {
	if len(ct.responses) == 0 {
		return nil
	}
	return s.mapCallIDs(ctx, ct.app.ID, ct.req.UserID, ct.responses, ct.sessionID, ct, ct.entry)
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
	req, err := s.decodeChat(c)
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	conv, err := req.Validate()
	if err != nil {
		writeOpenAIError(c, classify(err))
		return
	}
	a, ok := s.openAIApp(c, req.Model)
	if !ok {
		return
	}
	var call *chatCall
	if req.Stream { // a stream may start while the turn waits in its session's line
		sc := new(streamCall)
		call = &sc.chatCall
		call.stream = &sc.stream
		call.stream.chatSink = chatSink{s: s, c: c}
	} else {
		call = new(chatCall)
	}
	turn, err := s.beginChat(c.Request.Context(), c.Request.Header, a, req, conv, call)
	if err != nil {
		if cs := call.stream; cs != nil && cs.w != nil {
			cs.fail(cs.w, err)
			return
		}
		writeOpenAIError(c, chatError(toolMessagesOf(req.Messages), err))
		return
	}
	if turn.stored {
		annotate(c, slog.String("session_id", turn.sessionID))
	}
	// From here on the turn has what it needs of the request, which is
	// not kept while the turn runs: its messages may be a long history.
	s.initEncoder(&call.enc, turn, req)
	cs := chatSink{s: s, c: c, turn: turn, enc: &call.enc}
	if req.Stream {
		call.stream.chatSink = cs
		s.runTurn(c.Request.Context(), &turn.turn, call.stream)
	} else {
		call.answer.chatSink = cs
		s.runTurn(c.Request.Context(), &turn.turn, &call.answer)
	}
}

// chatCall is what a chat completion's turn is made of, in one
// allocation: the turn, its encoder, and its sink (answer, or stream for
// a streamed request, in the streamCall the chatCall is part of: a
// non-streamed turn does not carry a stream's state).
type chatCall struct {
	chatTurn
	enc    openaiwire.Encoder
	answer chatAnswer
	stream *chatStream // nil unless streamed
}

// streamCall is a streamed chat completion's chatCall, with its stream.
type streamCall struct {
	chatCall
	stream chatStream
}

// decodeChat reads and decodes a chat completion request. The body is read
// into a buffer of bodyBufs, put back once decoded: the decoder copies
// what the request keeps of it.
func (s *Server) decodeChat(c *gin.Context) (*openaiwire.ChatCompletionRequest, error) {
	bp := bodyBufs.Get().(*[]byte)
	body, err := s.appendBody(*bp, c)
	var req *openaiwire.ChatCompletionRequest
	if err == nil {
		if cap(body) <= maxPooledBody {
			*bp = body // keep what it grew to
		}
		req, err = openaiwire.DecodeRequest(body)
	}
	bodyBufs.Put(bp)
	return req, err
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

// beginChat begins the turn of a validated request and its conversation:
// whose session, what is new input, which client tools and per-turn
// settings, into call's turn. A streamed request's stream (call.stream)
// gets the turn, and keepalives while it waits in its session's line: it
// may have started when beginChat fails.
func (s *Server) beginChat(ctx context.Context, h http.Header, a *app, req *openaiwire.ChatCompletionRequest, conv openaiwire.Conversation, call *chatCall) (*chatTurn, error) {
	msg, responses, err := newInput(conv, "messages", "The request has no new input: the messages after the last assistant message must include a user or tool message.")
	if err != nil {
		return nil, err
	}
	mt, err := openAIMultitask(h)
	if err != nil {
		return nil, err
	}
	sid := sessionHeader(h, req.Metadata)
	// call is new: its fields are set one by one, in place (a composite
	// literal would be built aside and copied in). d stays on the stack
	// (beginTurn lets none of it escape but what the turn keeps), and so
	// does what the run does not need of it (the request's metadata, say).
	ct, d := &call.chatTurn, new(turnRequest)
	ct.stored, ct.echoSession, ct.toolMessages = sid != "", sid != "", toolMessagesOf(req.Messages)
	ct.wire, ct.system, ct.history, ct.responses = req, conv.System, conv.History, responses
	d.app, d.user, d.sessionID, d.sessionField = a, cmpOr(req.User, req.SafetyIdentifier), sid, "X-Session-Id"
	d.message, d.metadata, d.clientTools, d.multitask = msg, req.Metadata, openaiwire.ToFunctionDeclarations(req.Tools), mt
	d.config.Streaming = req.Stream
	// A new session is created with the lock and the read; tool results
	// cannot start one (they answer a call of a paused turn).
	d.create = len(responses) == 0
	if !d.create {
		d.missing = &agentcore.UnknownCallError{ID: responses[0].ID}
	}
	if req.Stream {
		call.stream.turn, d.idle = ct, call.stream
	}
	err = s.beginTurn(ctx, d, &ct.turn, ct)
	ct.wire, ct.system, ct.history, ct.entry = nil, "", nil, nil
	if err != nil {
		return nil, err
	}
	return ct, nil
}

// newInput is a request's new input as one user message, and the tool
// results among it; a 400 naming param, saying empty, when there is none.
func newInput(conv openaiwire.Conversation, param, empty string) (*genai.Content, []*genai.FunctionResponse, error) {
	var msg *genai.Content
	if len(conv.New) == 1 && conv.New[0].Role == genai.RoleUser {
		msg = conv.New[0] // the request's own, decoded for this turn
	} else {
		msg = &genai.Content{Role: genai.RoleUser}
		for _, c := range conv.New {
			msg.Parts = append(msg.Parts, c.Parts...)
		}
	}
	if len(msg.Parts) == 0 {
		return nil, nil, badRequest(param, empty)
	}
	var responses []*genai.FunctionResponse
	for _, p := range msg.Parts {
		if p.FunctionResponse != nil {
			responses = append(responses, p.FunctionResponse)
		}
	}
	return msg, responses, nil
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// lockAndGet takes the session's run lock, waiting up to wait for it, and
// reads it, creating it as create asks when it does not exist and create
// is not nil: in one round trip when the store can. lease is not nil once
// the lock is held (also when the session does not exist: the error then
// wraps ErrNotFound).
func (s *Server) lockAndGet(ctx context.Context, req sessions.GetRequest, create *sessions.CreateRequest, wait time.Duration) (sess *sessions.Session, lease sessions.Lease, err error) {
	switch {
	case s.lockGet != nil && create != nil:
		return s.lockGet.AcquireGetOrCreate(ctx, *create, wait)
	case s.lockGet != nil:
		return s.lockGet.AcquireGet(ctx, req, wait)
	}
	lease, err = s.cfg.Locker.Acquire(ctx, req.AppName, req.UserID, req.SessionID, wait)
	if err != nil {
		return nil, nil, err
	}
	sess, err = s.readLocked(ctx, req, create)
	return sess, lease, err
}

// readLocked reads the session req names for a turn that holds its run
// lock, creating it as create asks when it does not exist and create is
// not nil.
func (s *Server) readLocked(ctx context.Context, req sessions.GetRequest, create *sessions.CreateRequest) (*sessions.Session, error) {
	if create != nil {
		return sessions.GetOrCreate(ctx, s.cfg.Sessions, *create)
	}
	return s.cfg.Sessions.Get(ctx, req)
}

// overridesFrom maps response_format, sampling settings, tool_choice, the
// model options and, when the model lets them in, the client's system
// messages (system);
// nil when the request has none of them.
func overridesFrom(a *app, req *openaiwire.ChatCompletionRequest, system string) (*agentcore.Overrides, error) {
	if !req.SetsTurn() && (system == "" || !a.AppendClientInstructions) {
		return nil, nil // most turns: nothing to map
	}
	schema, jsonMode, err := openaiwire.OutputSchema(req.ResponseFormat)
	if err != nil {
		return nil, err
	}
	return turnOverrides(a, "response_format", agentcore.Overrides{OutputSchema: schema, JSONMode: jsonMode,
		Generate: openaiwire.GenerationSettings(req, nil), ToolConfig: openaiwire.ToToolConfig(req.ToolChoice),
		Options: req.ModelOptions(), Instruction: system})
}

// turnOverrides checks what an OpenAI surface asks of a turn (o; format
// names the request's output format field) against the app: a structured
// output needs an LLM agent at the root, and the client's system text is
// kept only when the model appends client instructions. It returns nil
// when nothing is left to override (the agents' own settings apply): most
// turns, which then allocate nothing for it.
func turnOverrides(a *app, format string, o agentcore.Overrides) (*agentcore.Overrides, error) {
	if o.OutputSchema != nil || o.JSONMode {
		if _, ok := a.Root.(*agentcore.LlmAgent); !ok {
			return nil, badRequest(format, fmt.Sprintf("Model %s is served by a %T workflow; %s needs an LLM agent at the root.", a.ID, a.Root, format))
		}
	}
	if !a.AppendClientInstructions {
		o.Instruction = ""
	}
	if o.OutputSchema == nil && !o.JSONMode && o.Generate == nil && o.ToolConfig == nil && o.Options == (model.Options{}) && o.Instruction == "" {
		return nil, nil
	}
	out := new(agentcore.Overrides)
	*out = o
	return out, nil
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

// initEncoder configures enc, zero, as the chunk encoder of a turn.
func (s *Server) initEncoder(enc *openaiwire.Encoder, turn *chatTurn, req *openaiwire.ChatCompletionRequest) {
	enc.Init(openaiwire.EncoderConfig{Model: req.Model, Created: s.cfg.Now().Unix(),
		IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, ClientTools: turn.clientToolNames(), Streamed: req.Stream})
}

// clientToolNames maps the client calls a turn may show (the app's client
// actions and the request's own tools) to the names the client knows.
func (ct *chatTurn) clientToolNames() map[string]string {
	names := ct.app.encoderTools // read only
	if len(ct.req.ClientTools) > 0 {
		names = maps.Clone(names)
		for _, d := range ct.req.ClientTools {
			if _, action := ct.app.clientNames[d.Name]; !action {
				names[d.Name] = d.Name
			}
		}
	}
	return names
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

// chatSink is what a chat turn's sinks share: the turn, its encoder, and
// what outlives the turn.
type chatSink struct {
	s    *Server
	c    *gin.Context
	turn *chatTurn
	enc  *openaiwire.Encoder
}

// persist stores the index of the client tool calls the client now holds.
func (cs *chatSink) persist(ctx context.Context) error {
	return cs.s.afterRun(ctx, cs.turn, cs.enc.ToolCalls())
}

// fail reports a failed turn: as an error response, or as an error frame
// on a stream that started (w not nil). A client that went away gets
// nothing.
func (cs *chatSink) fail(w *sseWriter, err error) {
	ae := chatError(cs.turn.toolMessages, err)
	if ae.status == 499 {
		return // the client is gone
	}
	cs.s.log.WarnContext(cs.c.Request.Context(), "chat completion failed", "err", err)
	if w == nil {
		writeOpenAIError(cs.c, ae)
		return
	}
	_ = w.frame(append(openaiwire.ErrorFrame(toWire(ae)), openaiwire.DoneFrame...))
}

// chatStream is what a streamed chat completion writes with. Its methods
// run on top of the whole turn (a push iterator runs its consumer on the
// producer's stack), so the state lives here rather than in closures in
// a handler's frame, which the request's goroutine keeps on its stack for
// as long as the stream is open (see docs/benchmarks-memory.md).
type chatStream struct {
	chatSink
	w *sseWriter // nil until the first frame or keepalive; then &sse
	// sse is the stream's writer, in the stream's allocation.
	sse sseWriter
	// framer writes the chunks, keeping what each repeats of the one
	// before.
	framer openaiwire.ChunkFramer
	// pumping is the stream's pump state (pumpStater).
	pumping keepalive[*sessions.Event]
}

func (cs *chatStream) pumpState() *keepalive[*sessions.Event] { return &cs.pumping }

// start sends the headers with the first frame, in one flush.
func (cs *chatStream) start() *sseWriter {
	if cs.w == nil {
		cs.w = openStream(cs.c, cs.turn, &cs.sse)
	}
	return cs.w
}

// openStream starts the SSE response of a turn into s, a zero sseWriter,
// echoing the session the client named; the turn paces its flushes.
func openStream(c *gin.Context, ct *chatTurn, s *sseWriter) *sseWriter {
	if ct.echoSession {
		c.Writer.Header().Set("X-Session-Id", ct.sessionID)
	}
	s.open(c.Writer, &ct.pace)
	return s
}

// frameBufs holds the buffers streams make their frames in: a stream
// borrows one per write, so an open stream holds none while it waits.
var frameBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledFrameBuf bounds the buffers frameBufs keeps: the rare large
// frame's buffer is left to the garbage collector.
const maxPooledFrameBuf = 64 << 10

// frameStream is a stream that opens its SSE response at its first
// frame.
type frameStream interface{ start() *sseWriter }

// sendFrames sends items as SSE frames (appendFrame encodes one), and then
// tail, in one write and one flush on st: a delta goes out as soon as it
// exists.
func sendFrames[T any](st frameStream, items []T, appendFrame func([]byte, *T) ([]byte, error), tail string) error {
	bp := frameBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledFrameBuf {
			frameBufs.Put(bp)
		}
	}()
	buf := (*bp)[:0]
	for i := range items {
		var err error
		if buf, err = appendFrame(buf, &items[i]); err != nil {
			return err
		}
	}
	buf = append(buf, tail...)
	*bp = buf
	if len(buf) == 0 {
		return nil
	}
	return st.start().frame(buf)
}

// write sends an event's chunks, and then tail.
func (cs *chatStream) write(chunks []openaiwire.ChatCompletionChunk, tail string) error {
	return sendFrames(cs, chunks, cs.framer.Append, tail)
}

// event writes what a client sees of one event of the run.
func (cs *chatStream) event(ev *sessions.Event) error {
	vis, err := visibleEvent(ev, cs.turn.invocationID())
	if err != nil || vis == nil {
		return err
	}
	return cs.write(cs.enc.Event(vis), "")
}

func (cs *chatStream) keepalive() error {
	return cs.start().comment("keepalive")
}

var chatStreamTraits = traitsOf[*chatStream]()

func (*chatStream) traits() sinkTraits { return chatStreamTraits }

// end finishes a stream whose run ended with err: the finish chunks and
// [DONE], or an error (a frame once the stream has started).
func (cs *chatStream) end(_ context.Context, err error) {
	run := cs.turn.run
	if err == nil {
		// Nothing shown yet (a silent turn): still the role chunk first, so
		// clients see a well-formed response.
		chunks := cs.enc.Start(run.StartAgent(), cs.turn.invocationID())
		if chunks == nil {
			chunks = cs.enc.Finish(run.Usage()) // the role went with the first delta
		} else {
			chunks = append(chunks, cs.enc.Finish(run.Usage())...)
		}
		err = cs.write(chunks, openaiwire.DoneFrame)
	}
	annotateRun(cs.c, run)
	if err != nil {
		cs.fail(cs.w, err)
	}
}

// chatAnswer collects a non-streamed chat completion.
type chatAnswer struct {
	chatSink
	// sessionHeader is the X-Session-Id header's value, in the answer's
	// allocation.
	sessionHeader [1]string
}

func (*chatAnswer) answersWhole() {}

// endsWithWrite implements endingSink: persist fails only when it stores
// the tool calls the client now holds. (A stream is no endingSink: its
// pump fails a run whose context ended after its last event, which a
// cancel arriving during the write would do.)
func (ca *chatAnswer) endsWithWrite() bool { return len(ca.enc.ToolCalls()) == 0 }

func (ca *chatAnswer) event(ev *sessions.Event) error {
	vis, err := visibleEvent(ev, ca.turn.invocationID())
	if err == nil && vis != nil {
		ca.enc.Fold(vis)
	}
	return err
}

var chatAnswerTraits = traitsOf[*chatAnswer]()

func (*chatAnswer) traits() sinkTraits { return chatAnswerTraits }

// end answers with the completion, or the error the run ended with.
func (ca *chatAnswer) end(_ context.Context, err error) {
	c, run := ca.c, ca.turn.run
	annotateRun(c, run)
	if err != nil {
		ca.fail(nil, err)
		return
	}
	if ca.turn.echoSession { // never empty; the key canonical already (see begin)
		ca.sessionHeader[0] = ca.turn.sessionID
		c.Writer.Header()["X-Session-Id"] = ca.sessionHeader[:]
	}
	buf := completionBufs.Get().(*[]byte)
	defer completionBufs.Put(buf)
	// A silent turn's completion is the first agent's.
	body := ca.enc.AppendCompletion((*buf)[:0], run.Usage(), run.StartAgent(), ca.turn.invocationID())
	writeJSON(c, body)
	if cap(body) <= maxPooledCompletion {
		*buf = body // keep what it grew to
	}
}

// completionBufs holds the buffers non-streamed answers are encoded into,
// a *[]byte each. chatAnswer.end takes one for its response and puts it back
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
