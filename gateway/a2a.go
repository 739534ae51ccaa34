package gateway

// The A2A surface: every virtual model is an A2A agent. Its card is at
// GET /a2a/{model}/.well-known/agent-card.json (agent.json too), its
// JSON-RPC interface at POST /a2a/{model}, where both the v0.3 method names
// (message/send, message/stream, tasks/get, tasks/cancel) and the v1 ones
// (SendMessage, SendStreamingMessage, GetTask, CancelTask) are served, each
// answered in its version's JSON. A task is one invocation (task id =
// invocation id) in one session (context id = session id); a run that
// pauses on long-running calls is an input-required task, and a message
// carrying its taskId answers the calls and resumes it. A task's turn goes
// through the one lifecycle (turn.go); its record rides on its run in the
// run registry, and with Redis sessions is written there for every replica
// (a2a_taskstore.go); the record and the conversions are in a2a_tasks.go.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/sessions"
)

// a2aCancelWait bounds how long tasks/cancel waits for the run to stop.
const a2aCancelWait = 10 * time.Second

// a2aRoutes registers the A2A routes. Model ids may hold '/', escaped
// ("team%2Fflow") or not.
func (s *Server) a2aRoutes(e *gin.Engine) {
	e.Any("/a2a/*rest", s.a2aRoute)
}

func (s *Server) a2aRoute(c *gin.Context) {
	segs, ok := escapedSegments(c.Request.URL.EscapedPath(), "/a2a/")
	if !ok || len(segs) == 0 || segs[0] == "" {
		writeNativeError(c, notFound("Not Found"))
		return
	}
	n := len(segs)
	isCard := n >= 3 && segs[n-2] == ".well-known" && (segs[n-1] == "agent-card.json" || segs[n-1] == "agent.json")
	model := strings.Join(segs, "/")
	if isCard {
		model = strings.Join(segs[:n-2], "/")
	}
	a, ok := s.appByID(model)
	if !ok || !canUse(c.Request.Context(), model) {
		writeNativeError(c, appNotFound(model))
		return
	}
	noteModel(c, a.ID)
	switch {
	case isCard && c.Request.Method == http.MethodGet:
		c.JSON(http.StatusOK, s.agentCard(c.Request, a))
	case !isCard && c.Request.Method == http.MethodPost:
		s.a2aRPC(c, a)
	default:
		writeNativeError(c, &apiError{status: http.StatusMethodNotAllowed, kind: "invalid_request_error", code: "method_not_allowed",
			message: "Method " + c.Request.Method + " is not allowed on " + c.Request.URL.Path + "."})
	}
}

// agentCard describes a virtual model as an A2A agent: one card that v0.3
// clients (url) and v1 clients (supportedInterfaces) both read, with a
// skill per agent of the tree.
func (s *Server) agentCard(r *http.Request, a *app) *a2a.AgentCard {
	base := strings.TrimRight(s.cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	u := base + "/a2a/" + url.PathEscape(a.ID)
	yes, no := true, false
	desc := a.Description
	if desc == "" {
		desc = "agentgate virtual model " + a.ID
	}
	return &a2a.AgentCard{
		ProtocolVersion: "0.3.0", Name: a.ID, Description: desc, URL: u, PreferredTransport: "JSONRPC",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: u, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: u, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		},
		Provider:          &a2a.AgentProvider{Organization: "agentgate", URL: base},
		Version:           s.cfg.Version,
		Capabilities:      a2a.AgentCapabilities{Streaming: &yes, PushNotifications: &no, StateTransitionHistory: &no},
		DefaultInputModes: []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"text/plain"},
		Skills:          treeSkills(a.Root),
		SecuritySchemes: s.cardSecurity(), Security: s.cardRequirement(), SecurityRequirements: s.cardRequirementV1(),
	}
}

// cardSecurity declares the bearer token every route needs with
// authentication on: one scheme object that 0.3 readers ("type") and 1.0
// readers (the httpAuthSecurityScheme one-of) both understand.
func (s *Server) cardSecurity() map[string]any {
	if s.cfg.Auth == nil {
		return nil
	}
	return map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
		"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "bearerFormat": "JWT"}}}
}

func (s *Server) cardRequirement() []map[string]any {
	if s.cfg.Auth == nil {
		return nil
	}
	return []map[string]any{{"bearer": []string{}}}
}

func (s *Server) cardRequirementV1() []map[string]any {
	if s.cfg.Auth == nil {
		return nil
	}
	return []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
}

// treeSkills lists a skill per agent of the tree (transfer targets and
// agents called as tools), from the agents' descriptions.
func treeSkills(root agentcore.Agent) []a2a.AgentSkill {
	out := []a2a.AgentSkill{}
	seen := map[string]bool{}
	agentcore.Walk(root, func(n agentcore.TreeNode) bool {
		ag := n.Agent
		if seen[ag.Name()] {
			return false
		}
		seen[ag.Name()] = true
		desc := ag.Description()
		if desc == "" {
			desc = "Agent " + ag.Name() + "."
		}
		out = append(out, a2a.AgentSkill{ID: ag.Name(), Name: ag.Name(), Description: desc, Tags: []string{"agentgate", n.Edge.String()}})
		return true
	})
	return out
}

// a2aRPC answers one JSON-RPC request.
func (s *Server) a2aRPC(c *gin.Context, a *app) {
	body, err := s.readBody(c)
	if err != nil {
		writeNativeError(c, classify(err))
		return
	}
	var req a2a.Request
	if err := json.Unmarshal(body, &req); err != nil {
		rpcFail(c, nil, &a2a.RPCError{Code: a2a.CodeParseError, Message: "Parse error: the body is not JSON."})
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		rpcFail(c, req.ID, &a2a.RPCError{Code: a2a.CodeInvalidRequest, Message: "Invalid Request: a JSON-RPC 2.0 request with a method is expected."})
		return
	}
	m, v, ok := a2a.ParseMethod(req.Method)
	if !ok {
		rpcFail(c, req.ID, &a2a.RPCError{Code: a2a.CodeMethodNotFound, Message: "Method not found: " + req.Method})
		return
	}
	switch m {
	case a2a.MethodSend, a2a.MethodStream:
		s.a2aSend(c, a, v, req, m == a2a.MethodStream)
	case a2a.MethodGetTask:
		s.a2aGetTask(c, a, v, req)
	case a2a.MethodCancelTask:
		s.a2aCancelTask(c, a, v, req)
	case a2a.MethodPushConfig:
		rpcFail(c, req.ID, &a2a.RPCError{Code: a2a.CodePushNotSupported, Message: "Push notifications are not supported."})
	case a2a.MethodExtendedCard:
		rpcFail(c, req.ID, &a2a.RPCError{Code: a2a.CodeExtendedCardNotConfig, Message: "There is no extended agent card."})
	default:
		rpcFail(c, req.ID, &a2a.RPCError{Code: a2a.CodeUnsupportedOperation, Message: req.Method + " is not supported."})
	}
}

func rpcResult(c *gin.Context, id json.RawMessage, result any) {
	c.JSON(http.StatusOK, a2a.Response{JSONRPC: "2.0", ID: id, Result: result})
}

func rpcFail(c *gin.Context, id json.RawMessage, e *a2a.RPCError) {
	c.JSON(http.StatusOK, a2a.Response{JSONRPC: "2.0", ID: id, Error: e})
}

// rpcErrorOf maps an error to the JSON-RPC error a client sees; the words
// are classify's (never raw internal text).
func rpcErrorOf(err error) *a2a.RPCError {
	var re *a2a.RPCError
	if errors.As(err, &re) {
		return re
	}
	ae := classify(err)
	code := a2a.CodeInternalError
	switch ae.status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		code = a2a.CodeInvalidParams
	case http.StatusForbidden:
		code = a2a.CodeInvalidRequest
	}
	return &a2a.RPCError{Code: code, Message: ae.message, Data: map[string]any{"status": ae.status, "code": ae.code}}
}

func invalidParams(msg string) *a2a.RPCError {
	return &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: "Invalid params: " + msg}
}

func taskNotFound(id string) *a2a.RPCError {
	return &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: "Task not found: " + id}
}

// a2aUser is whose sessions an A2A request reaches: the token's user, or
// without authentication the "user" of the metadata, else anonymous.
func a2aUser(ctx context.Context, mds ...map[string]any) string {
	if p := principalOf(ctx); p != nil {
		return p.User
	}
	for _, md := range mds {
		if u, _ := md["user"].(string); u != "" && len(u) <= 256 {
			return u
		}
	}
	return "anonymous"
}

// a2aTurn is the turn of a task: a new one, or the paused one a message's
// taskId names (the message then answers the calls the task waits for).
type a2aTurn struct {
	turn
	task *a2aTask
	// While the turn begins: the message, and the task it follows up.
	msg  *a2a.Message
	prev *a2aTask
	// final is the last status of a task whose turn was registered as a
	// run and ended without running (the turn's unrun).
	final *a2a.Event
}

// findSession is never asked: an A2A turn always has its context.
func (at *a2aTurn) findSession(context.Context, *Server) (bool, error) {
	return false, invalidParams("contextId is required.")
}

// prepare maps nothing: an A2A message sets no per-turn overrides.
func (at *a2aTurn) prepare(context.Context, *app) (*agentcore.Overrides, error) { return nil, nil }

// loaded checks a follow-up against its session: the message becomes the
// answers to the calls the task waits for.
func (at *a2aTurn) loaded(ctx context.Context, s *Server) error {
	msg, prev, taskID := at.msg, at.prev, at.runID
	if msg.TaskID != "" {
		if prev != nil {
			prev.mu.Lock()
			st := prev.state
			prev.mu.Unlock()
			if st.Terminal() {
				return invalidParams("task " + taskID + " is " + string(st) + "; send a message without taskId to start a new task.")
			}
		}
		open, err := agentcore.OpenCalls(ctx, s.cfg.Sessions, at.req.Session, taskID)
		if errors.Is(err, agentcore.ErrUnknownInvocation) {
			return taskNotFound(taskID)
		}
		if err != nil {
			return err
		}
		var calls []*genai.FunctionCall // what the client is asked for
		for _, c := range open {
			if c.LongRunning {
				calls = append(calls, c.Call)
			}
		}
		if len(calls) == 0 {
			return invalidParams("task " + taskID + " is not waiting for input; send a message without taskId to start a new task.")
		}
		at.req.NewMessage = answerCalls(msg, calls)
	}
	return nil
}

// a2aBegin checks a message and begins the turn of its task; st is the
// stream of message/stream (nil otherwise), which starts with the task
// submitted if the turn waits in its session's line. A message/send that
// returns immediately begins detached: when its session is busy it is in
// the line (at.line) without its session. The task is recorded before
// the turn begins, so that tasks/get and tasks/cancel find it queued; once
// at is returned, with an error too, it is the turn's.
func (s *Server) a2aBegin(ctx context.Context, a *app, p *a2a.SendParams, st *a2aStream) (*a2aTurn, error) {
	stream := st != nil
	user := a2aUser(ctx, p.Message.Metadata, p.Metadata)
	msg := &p.Message
	if len(msg.Parts) == 0 {
		return nil, invalidParams("message.parts must not be empty.")
	}
	contextID := msg.ContextID
	var prev *a2aTask
	if msg.TaskID != "" {
		var err error
		if prev, err = s.a2aFindTask(ctx, a.ID, user, msg.TaskID); err != nil {
			return nil, err
		}
		if contextID == "" {
			if prev == nil {
				return nil, taskNotFound(msg.TaskID)
			}
			contextID = prev.contextID
		}
		if prev != nil && prev.contextID != contextID {
			return nil, invalidParams("contextId " + contextID + " is not the context of task " + msg.TaskID + ".")
		}
	}
	if contextID == "" {
		contextID = uuid.NewString()
	}
	// Parameters: "param.<name>" entries of the request's metadata (as on
	// /v1) and the token's.
	md := map[string]string{}
	for k, v := range p.Metadata {
		if s, ok := v.(string); ok {
			md[k] = s
		}
	}
	at := &a2aTurn{msg: msg, prev: prev}
	d := turnRequest{app: a, user: user, sessionID: contextID, sessionField: "contextId", metadata: md,
		config: agentcore.RunConfig{Streaming: stream}, runID: msg.TaskID, retention: taskRetention,
		// A new context is created with the lock and the read; a task's
		// follow-up cannot start one.
		create: msg.TaskID == ""}
	if d.create {
		content, err := messageContent(msg)
		if err != nil {
			return nil, invalidParams(err.Error())
		}
		d.message, d.runID = content, agentcore.NewInvocationID(uuid.NewString())
		d.invocationID = d.runID
	} else {
		d.missing = taskNotFound(msg.TaskID)
	}
	d.detached = !stream && p.ReturnImmediately
	// running: a run of the task goes on or waits in the session's line
	// (tasks/cancel cancels it).
	task := &a2aTask{id: d.runID, contextID: contextID, app: a.ID, user: user, state: a2a.StateSubmitted, updated: s.cfg.Now(), running: true,
		shown: stream || p.ReturnImmediately || prev != nil}
	if prev != nil {
		prev.mu.Lock()
		task.artifacts, task.history = append(task.artifacts, prev.artifacts...), append(task.history, prev.history...)
		prev.mu.Unlock()
	}
	um := *msg
	um.TaskID, um.ContextID, um.Role = d.runID, contextID, a2a.RoleUser
	task.history = append(task.history, um)
	at.task, d.value = task, task
	// A task whose turn ends without running (canceled, or failed with
	// err) is recorded so; a stream that showed it submitted ends with
	// final.
	at.unrun = func(ctx context.Context, err error) { at.final = (&taskRun{s: s, t: task}).finish(ctx, err) }
	if st != nil {
		st.t, d.idle = at, st
	}
	err := s.beginTurn(ctx, &d, &at.turn, at)
	if at.line == nil { // a detached turn in its session's line loads it later
		at.msg, at.prev = nil, nil
	}
	return at, err
}

// taskRun is one run of a task, recording what happens in the task.
type taskRun struct {
	s          *Server
	t          *a2aTask
	rec        taskRecorder
	artifactID string
	chunks     int
}

func (s *Server) newTaskRun(t *a2aTask) *taskRun {
	t.mu.Lock()
	t.state, t.status, t.updated, t.running = a2a.StateWorking, nil, s.cfg.Now(), true
	t.mu.Unlock()
	if t.shown {
		s.saveTask(context.Background(), t)
	}
	return &taskRun{s: s, t: t, rec: taskRecorder{invID: t.id}, artifactID: "a-" + uuid.NewString()}
}

// event records a runtime event; it returns the artifact update to stream,
// if the event added text.
func (r *taskRun) event(ev *sessions.Event) *a2a.Event {
	delta := r.rec.event(ev)
	if delta == "" {
		return nil
	}
	u := &a2a.ArtifactUpdate{TaskID: r.t.id, ContextID: r.t.contextID, Append: r.chunks > 0,
		Artifact: a2a.Artifact{ArtifactID: r.artifactID, Name: "response", Parts: []a2a.Part{a2a.TextPart(delta)}}}
	r.chunks++
	return &a2a.Event{Artifact: u}
}

// finish records how the run ended (err is the run's error, ctx its
// context) and returns the final status update.
func (r *taskRun) finish(ctx context.Context, err error) *a2a.Event {
	t, rec := r.t, &r.rec
	var st a2a.TaskState
	var msg *a2a.Message
	agentMsg := func(parts ...a2a.Part) *a2a.Message {
		return &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleAgent, TaskID: t.id, ContextID: t.contextID, Parts: parts}
	}
	switch {
	case err != nil && (errors.Is(err, errTaskCanceled) || errors.Is(context.Cause(ctx), errTaskCanceled) || errors.Is(err, errRunCancelled)):
		st, msg = a2a.StateCanceled, agentMsg(a2a.TextPart("The task was canceled."))
	case err != nil && classify(err).status == 499:
		st, msg = a2a.StateCanceled, agentMsg(a2a.TextPart("The client went away; the task was canceled."))
	case err != nil:
		ae := classify(err)
		if ae.status >= 500 {
			r.s.log.WarnContext(ctx, "a2a task failed", "task_id", t.id, "err", err)
		}
		st, msg = a2a.StateFailed, agentMsg(a2a.TextPart(ae.message))
	case rec.errMsg != "":
		st, msg = a2a.StateFailed, agentMsg(a2a.TextPart(rec.errMsg))
	case len(rec.paused) > 0:
		var lines []string
		var pending []any
		for _, fc := range rec.paused {
			lines = append(lines, describeCall(fc))
			pending = append(pending, map[string]any{"id": fc.ID, "name": fc.Name, "args": fc.Args})
		}
		st = a2a.StateInputRequired
		msg = agentMsg(a2a.TextPart(strings.Join(lines, "\n")), a2a.DataPart(map[string]any{"pendingCalls": pending}))
	default:
		st = a2a.StateCompleted
	}
	text := rec.text.String()
	t.mu.Lock()
	if text != "" {
		t.artifacts = append(t.artifacts, a2a.Artifact{ArtifactID: r.artifactID, Name: "response", Parts: []a2a.Part{a2a.TextPart(text)}})
		if st == a2a.StateCompleted {
			t.history = append(t.history, *agentMsg(a2a.TextPart(text)))
		}
	}
	if msg != nil {
		t.history = append(t.history, *msg)
	}
	t.state, t.status, t.updated, t.running = st, msg, r.s.cfg.Now(), false
	t.mu.Unlock()
	r.s.saveTask(ctx, t)
	return &a2a.Event{Status: &a2a.StatusUpdate{TaskID: t.id, ContextID: t.contextID, Final: true,
		Status: a2a.TaskStatus{State: st, Message: msg, Timestamp: r.s.cfg.Now().UTC().Format(time.RFC3339Nano)}}}
}

// a2aSend answers message/send (blocking, or returning at once and
// running in the background) and message/stream.
func (s *Server) a2aSend(c *gin.Context, a *app, v a2a.Version, req a2a.Request, stream bool) {
	p, err := a2a.DecodeSendParams(req.Params)
	if err != nil {
		rpcFail(c, req.ID, invalidParams("want {message: {messageId, role, parts}, configuration?, metadata?}."))
		return
	}
	var st *a2aStream
	if stream {
		st = &a2aStream{s: s, c: c, v: v, id: req.ID, historyLength: p.HistoryLength}
	}
	turn, err := s.a2aBegin(c.Request.Context(), a, &p, st)
	if err != nil {
		switch {
		case turn != nil && turn.final != nil && st != nil && st.w != nil:
			_ = st.send(*turn.final) // it streamed its task while it waited
		case turn != nil && turn.final != nil:
			rpcResult(c, req.ID, a2a.EncodeEvent(a2a.Event{Task: turn.task.snapshot(p.HistoryLength)}, v))
		case rpcFailLimited(c, req.ID, err):
		default:
			rpcFail(c, req.ID, rpcErrorOf(err))
		}
		return
	}
	ctx := c.Request.Context()
	background := !stream && p.ReturnImmediately
	if background {
		// Detached from the request: it ends with the server or
		// tasks/cancel.
		ctx = context.WithoutCancel(ctx)
	}
	if turn.line != nil {
		// Its session is busy: answered submitted at once, it waits in
		// the line without the request, then runs as any other.
		submitted := turn.task.snapshot(nil)
		s.saveTask(ctx, turn.task)
		sink := &a2aSink{}
		go s.runQueued(ctx, &turn.turn, sink, func() { sink.r = s.newTaskRun(turn.task) })
		rpcResult(c, req.ID, a2a.EncodeEvent(a2a.Event{Task: submitted}, v))
		return
	}
	runCtx, err := s.startRun(ctx, &turn.turn)
	if err != nil {
		if turn.final != nil && st != nil && st.w != nil {
			_ = st.send(*turn.final) // it streamed its task while it waited
			return
		}
		rpcFail(c, req.ID, rpcErrorOf(err))
		return
	}
	sink := &a2aSink{r: s.newTaskRun(turn.task)}
	switch {
	case background:
		go s.driveRun(runCtx, &turn.turn, sink)
		rpcResult(c, req.ID, a2a.EncodeEvent(a2a.Event{Task: turn.task.snapshot(nil)}, v))
	case stream:
		st.a2aSink = *sink
		if st.w == nil {
			st.w = startSSE(c.Writer, &turn.pace)
			_ = st.send(a2a.Event{Task: turn.task.snapshot(p.HistoryLength)}) // a client gone shows at the next write
		} else {
			// It showed the task submitted while it waited; it runs now.
			_ = st.send(a2a.Event{Status: &a2a.StatusUpdate{TaskID: turn.task.id, ContextID: turn.task.contextID,
				Status: a2a.TaskStatus{State: a2a.StateWorking, Timestamp: s.cfg.Now().UTC().Format(time.RFC3339Nano)}}})
		}
		s.driveRun(runCtx, &turn.turn, st)
	default:
		s.driveRun(runCtx, &turn.turn, &a2aAnswer{a2aSink: *sink, c: c, t: turn, v: v, id: req.ID, historyLength: p.HistoryLength})
	}
}

// a2aSink records a task's run in the task; nobody sees it but tasks/get
// (a task run in the background).
type a2aSink struct {
	r *taskRun
}

func (as *a2aSink) event(ev *sessions.Event) error {
	as.r.event(ev)
	return nil
}

var a2aSinkTraits = traitsOf[*a2aSink]()

func (*a2aSink) traits() sinkTraits { return a2aSinkTraits }

func (as *a2aSink) end(ctx context.Context, err error) { as.r.finish(ctx, err) }

// a2aAnswer answers message/send with the task once its run is over.
type a2aAnswer struct {
	a2aSink
	c             *gin.Context
	t             *a2aTurn
	v             a2a.Version
	id            json.RawMessage
	historyLength *int
}

var a2aAnswerTraits = traitsOf[*a2aAnswer]()

func (*a2aAnswer) traits() sinkTraits { return a2aAnswerTraits }

func (aa *a2aAnswer) end(ctx context.Context, err error) {
	aa.r.finish(ctx, err)
	annotateRun(aa.c, aa.t.run)
	rpcResult(aa.c, aa.id, a2a.EncodeEvent(a2a.Event{Task: aa.t.task.snapshot(aa.historyLength)}, aa.v))
}

// a2aStream answers message/stream: the task, an artifact update per text
// delta, then the final status. A turn that waits in its session's line
// sends the task submitted as it joins it (queued), then keepalives, and
// a working status once it runs.
type a2aStream struct {
	a2aSink
	s             *Server
	c             *gin.Context
	t             *a2aTurn
	v             a2a.Version
	id            json.RawMessage
	historyLength *int
	w             *sseWriter // nil until the stream starts
}

// queued starts the stream with the task, submitted, as its turn joins its
// session's line.
func (st *a2aStream) queued() error {
	st.s.saveTask(st.c.Request.Context(), st.t.task)
	st.w = startSSE(st.c.Writer, &st.t.pace)
	return st.send(a2a.Event{Task: st.t.task.snapshot(st.historyLength)})
}

func (st *a2aStream) send(e a2a.Event) error {
	b, err := json.Marshal(a2a.Response{JSONRPC: "2.0", ID: st.id, Result: a2a.EncodeEvent(e, st.v)})
	if err != nil {
		return err
	}
	return st.w.data(b)
}

func (st *a2aStream) event(ev *sessions.Event) error {
	if u := st.r.event(ev); u != nil {
		return st.send(*u)
	}
	return nil
}

func (st *a2aStream) keepalive() error { return st.w.comment("keepalive") }

var a2aStreamTraits = traitsOf[*a2aStream]()

func (*a2aStream) traits() sinkTraits { return a2aStreamTraits }

func (st *a2aStream) end(ctx context.Context, err error) {
	final := st.r.finish(ctx, err)
	annotateRun(st.c, st.t.run)
	_ = st.send(*final)
}

// a2aTaskByID returns the task with that id this process knows (running,
// or kept after its run), or nil.
func (s *Server) a2aTaskByID(ctx context.Context, id string) *a2aTask {
	rec, err := s.runs.Get(ctx, id)
	if err != nil {
		return nil
	}
	t, _ := rec.Value().(*a2aTask)
	return t
}

// a2aTaskOf finds the task a query names, of this model and caller; when
// there is none it answers the request and returns nil.
func (s *Server) a2aTaskOf(c *gin.Context, a *app, req a2a.Request) (*a2aTask, a2a.TaskQuery) {
	q, err := a2a.DecodeTaskQuery(req.Params)
	if err != nil {
		rpcFail(c, req.ID, invalidParams("want {id, historyLength?}."))
		return nil, q
	}
	t, err := s.a2aFindTask(c.Request.Context(), a.ID, a2aUser(c.Request.Context(), q.Metadata), q.ID)
	switch {
	case err != nil:
		rpcFail(c, req.ID, rpcErrorOf(err))
	case t == nil:
		rpcFail(c, req.ID, taskNotFound(q.ID))
	}
	return t, q
}

func (s *Server) a2aGetTask(c *gin.Context, a *app, v a2a.Version, req a2a.Request) {
	if t, q := s.a2aTaskOf(c, a, req); t != nil {
		rpcResult(c, req.ID, a2a.EncodeTask(t.snapshot(q.HistoryLength), v))
	}
}

// a2aCancelTask cancels a running task (and waits for its run to stop) or
// a paused one; a task that already ended cannot be canceled. A task
// another replica runs is canceled through the run index (see
// a2aCancelStored).
func (s *Server) a2aCancelTask(c *gin.Context, a *app, v a2a.Version, req a2a.Request) {
	t, _ := s.a2aTaskOf(c, a, req)
	if t == nil {
		return
	}
	if !t.cancelPaused(s.cfg.Now()) {
		rpcFail(c, req.ID, notCancelable(t))
		return
	}
	switch {
	case !t.isRunning():
		s.saveTask(c.Request.Context(), t)
	case t.stored:
		var err error
		if t, err = s.a2aCancelStored(c.Request.Context(), t); err != nil {
			if c.Request.Context().Err() == nil {
				rpcFail(c, req.ID, rpcErrorOf(err))
			}
			return
		}
	default:
		if rec, err := s.runs.Get(c.Request.Context(), t.id); err == nil {
			rec.Cancel(errTaskCanceled)
			timer := time.NewTimer(a2aCancelWait)
			defer timer.Stop()
			select {
			case <-rec.Done():
			case <-timer.C:
			case <-c.Request.Context().Done():
				return
			}
		}
	}
	rpcResult(c, req.ID, a2a.EncodeTask(t.snapshot(nil), v))
}

// cancelPaused ends the task canceled when it is paused (neither running
// nor over); it reports false when the task is over, which cannot be
// canceled.
func (t *a2aTask) cancelPaused(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.running:
	case t.state.Terminal():
		return false
	default:
		msg := &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleAgent, TaskID: t.id, ContextID: t.contextID,
			Parts: []a2a.Part{a2a.TextPart("The task was canceled.")}}
		t.state, t.status, t.updated = a2a.StateCanceled, msg, now
		t.history = append(t.history, *msg)
	}
	return true
}

func notCancelable(t *a2aTask) *a2a.RPCError {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &a2a.RPCError{Code: a2a.CodeTaskNotCancelable, Message: "Task " + t.id + " cannot be canceled: it is " + string(t.state) + "."}
}

// a2aCancelStored cancels task t that another replica runs (or queues):
// the run index tells that replica, which ends the run canceled and
// records the task's end; the task is returned as its record is once it
// ended, or after storedTaskWait as last read (still running).
func (s *Server) a2aCancelStored(ctx context.Context, t *a2aTask) (*a2aTask, error) {
	if err := s.runs.CancelElsewhere(ctx, t.id); err != nil {
		return nil, err
	}
	return s.awaitStoredEnd(ctx, t)
}
