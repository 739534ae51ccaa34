package gateway

// The A2A surface: every virtual model is an A2A agent. Its card is at
// GET /a2a/{model}/.well-known/agent-card.json (agent.json too), its
// JSON-RPC interface at POST /a2a/{model}, where both the v0.3 method names
// (message/send, message/stream, tasks/get, tasks/cancel) and the v1 ones
// (SendMessage, SendStreamingMessage, GetTask, CancelTask) are served, each
// answered in its version's JSON. A task is one invocation (task id =
// invocation id) in one session (context id = session id); a run that
// pauses on long-running calls is an input-required task, and a message
// carrying its taskId answers the calls and resumes it. The task registry
// and the conversions are in a2a_tasks.go.

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

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
	var walk func(ag agentcore.Agent, tag string)
	walk = func(ag agentcore.Agent, tag string) {
		if seen[ag.Name()] {
			return
		}
		seen[ag.Name()] = true
		desc := ag.Description()
		if desc == "" {
			desc = "Agent " + ag.Name() + "."
		}
		out = append(out, a2a.AgentSkill{ID: ag.Name(), Name: ag.Name(), Description: desc, Tags: []string{"agentgate", tag}})
		for _, sub := range ag.SubAgents() {
			walk(sub, "sub-agent")
		}
		if la, ok := ag.(*agentcore.LlmAgent); ok {
			for _, t := range la.Config().Tools {
				if at, ok := t.(*agentcore.AgentTool); ok {
					walk(at.Agent(), "agent-tool")
				}
			}
		}
	}
	walk(root, "root")
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

// a2aTurn is a prepared run of a task, its session locked.
type a2aTurn struct {
	task    *a2aTask
	req     agentcore.RunRequest
	release func()
}

// a2aPrepare checks a message, locks its session and makes the task: a new
// one, or the paused one its taskId names (the message then answers the
// calls the task waits for).
func (s *Server) a2aPrepare(ctx context.Context, a *app, p *a2a.SendParams, stream bool) (*a2aTurn, error) {
	if err := allowModel(ctx, a.ID); err != nil {
		return nil, err
	}
	user := a2aUser(ctx, p.Message.Metadata, p.Metadata)
	msg := &p.Message
	if len(msg.Parts) == 0 {
		return nil, invalidParams("message.parts must not be empty.")
	}
	contextID := msg.ContextID
	var prev *a2aTask
	if msg.TaskID != "" {
		if prev = s.tasks.get(msg.TaskID); prev != nil && (prev.app != a.ID || prev.user != user) {
			prev = nil
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
	params, err := s.chatParams(ctx, a, md)
	if err != nil {
		return nil, err
	}
	if !validSessionID(contextID) || strings.Contains(contextID, "/") {
		return nil, invalidParams("contextId must be at most 256 characters, without '/' or control characters, and may not start with '~'.")
	}
	// A new context is created with the lock and the read; a task's
	// follow-up cannot start one.
	var create *sessions.CreateRequest
	if msg.TaskID == "" {
		create = &sessions.CreateRequest{AppName: a.ID, UserID: user, SessionID: contextID, State: paramsState(params)}
	}
	sess, lease, err := s.lockAndGet(ctx, sessions.GetRequest{AppName: a.ID, UserID: user, SessionID: contextID}, create)
	if lease == nil {
		return nil, err // not locked
	}
	ok := false
	defer func() {
		if !ok {
			lease.Release()
		}
	}()
	if errors.Is(err, sessions.ErrNotFound) && msg.TaskID != "" {
		return nil, taskNotFound(msg.TaskID)
	}
	if err != nil {
		return nil, err
	}
	// The session read under the lock: the runner need not read it again.
	req := agentcore.RunRequest{UserID: user, SessionID: contextID, Config: agentcore.RunConfig{Streaming: stream}, Params: params,
		Session: sess, Lease: lease}
	taskID := msg.TaskID
	if taskID != "" {
		if prev != nil {
			prev.mu.Lock()
			st := prev.state
			prev.mu.Unlock()
			if st.Terminal() {
				return nil, invalidParams("task " + taskID + " is " + string(st) + "; send a message without taskId to start a new task.")
			}
		}
		calls, found, err := pendingCalls(ctx, s.cfg.Sessions, sess, taskID)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, taskNotFound(taskID)
		}
		if len(calls) == 0 {
			return nil, invalidParams("task " + taskID + " is not waiting for input; send a message without taskId to start a new task.")
		}
		req.NewMessage = answerCalls(msg, calls)
	} else {
		content, err := messageContent(msg)
		if err != nil {
			return nil, invalidParams(err.Error())
		}
		req.NewMessage = content
		taskID = "e-" + uuid.NewString()
		req.InvocationID = taskID
	}
	t := &a2aTask{id: taskID, contextID: contextID, app: a.ID, user: user, state: a2a.StateSubmitted, updated: s.cfg.Now()}
	if prev != nil {
		prev.mu.Lock()
		t.artifacts, t.history = append(t.artifacts, prev.artifacts...), append(t.history, prev.history...)
		prev.mu.Unlock()
	}
	um := *msg
	um.TaskID, um.ContextID, um.Role = taskID, contextID, a2a.RoleUser
	t.history = append(t.history, um)
	s.tasks.put(t, s.cfg.Now())
	ok = true
	// The lock is let go once the run is over, before the outcome is
	// published: a client that answers a paused task at once finds the
	// session free.
	return &a2aTurn{task: t, req: req, release: lease.Release}, nil
}

// taskRun is one run of a task, recording what happens in the task.
type taskRun struct {
	s          *Server
	t          *a2aTask
	rec        taskRecorder
	artifactID string
	chunks     int
}

func (s *Server) newTaskRun(t *a2aTask, cancel context.CancelCauseFunc) *taskRun {
	t.mu.Lock()
	t.state, t.status, t.updated = a2a.StateWorking, nil, s.cfg.Now()
	t.cancel, t.done = cancel, make(chan struct{})
	t.mu.Unlock()
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

// drain records every event of a run that nobody streams and returns the
// run's error.
func (r *taskRun) drain(events iter.Seq2[*sessions.Event, error]) error {
	for ev, err := range events {
		if err != nil {
			return err
		}
		r.event(ev)
	}
	return nil
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
	case err != nil && errors.Is(context.Cause(ctx), errTaskCanceled):
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
	t.state, t.status, t.updated = st, msg, r.s.cfg.Now()
	if t.done != nil {
		close(t.done)
	}
	t.cancel, t.done = nil, nil
	t.mu.Unlock()
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
	turn, err := s.a2aPrepare(c.Request.Context(), a, &p, stream)
	if err != nil {
		rpcFail(c, req.ID, rpcErrorOf(err))
		return
	}
	if !stream && p.ReturnImmediately {
		s.a2aBackground(c, a, v, req.ID, turn)
		return
	}
	defer turn.release()
	ctx, closeStream, err := s.openStream(c.Request.Context())
	if err != nil {
		turn.task.setState(a2a.StateFailed, nil, s.cfg.Now())
		rpcFail(c, req.ID, rpcErrorOf(err))
		return
	}
	defer closeStream()
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := s.newTaskRun(turn.task, cancel)
	run := a.runner.Run(runCtx, turn.req)
	if !stream {
		runErr := r.drain(run.Events())
		turn.release()
		r.finish(runCtx, runErr)
		annotateRun(c, run)
		rpcResult(c, req.ID, a2a.EncodeEvent(a2a.Event{Task: turn.task.snapshot(p.HistoryLength)}, v))
		return
	}
	w := startSSE(c.Writer, nil)
	send := func(e a2a.Event) error {
		b, err := json.Marshal(a2a.Response{JSONRPC: "2.0", ID: req.ID, Result: a2a.EncodeEvent(e, v)})
		if err != nil {
			return err
		}
		return w.data(b)
	}
	err = send(a2a.Event{Task: turn.task.snapshot(p.HistoryLength)})
	if err == nil {
		err = pump(runCtx, func() { cancel(nil) }, run.Events(), s.cfg.KeepaliveInterval, func(ev *sessions.Event) error {
			if u := r.event(ev); u != nil {
				return send(*u)
			}
			return nil
		}, func() error { return w.comment("keepalive") })
	}
	turn.release()
	final := r.finish(runCtx, err)
	annotateRun(c, run)
	_ = send(*final)
}

// a2aBackground starts the task's run detached from the request (it ends
// with the server or tasks/cancel) and answers with the task at once.
func (s *Server) a2aBackground(c *gin.Context, a *app, v a2a.Version, id json.RawMessage, turn *a2aTurn) {
	ctx, closeStream, err := s.openStream(context.WithoutCancel(c.Request.Context()))
	if err != nil {
		turn.release()
		turn.task.setState(a2a.StateFailed, nil, s.cfg.Now())
		rpcFail(c, id, rpcErrorOf(err))
		return
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	r := s.newTaskRun(turn.task, cancel)
	go func() {
		defer closeStream()
		defer turn.release()
		defer cancel(nil)
		runErr := r.drain(a.runner.Run(runCtx, turn.req).Events())
		turn.release()
		r.finish(runCtx, runErr)
	}()
	rpcResult(c, id, a2a.EncodeEvent(a2a.Event{Task: turn.task.snapshot(nil)}, v))
}

// a2aTaskOf finds the task a query names, of this model and caller; when
// there is none it answers the request and returns nil.
func (s *Server) a2aTaskOf(c *gin.Context, a *app, req a2a.Request) (*a2aTask, a2a.TaskQuery) {
	q, err := a2a.DecodeTaskQuery(req.Params)
	if err != nil {
		rpcFail(c, req.ID, invalidParams("want {id, historyLength?}."))
		return nil, q
	}
	t := s.tasks.get(q.ID)
	if t == nil || t.app != a.ID || t.user != a2aUser(c.Request.Context(), q.Metadata) {
		rpcFail(c, req.ID, taskNotFound(q.ID))
		return nil, q
	}
	return t, q
}

func (s *Server) a2aGetTask(c *gin.Context, a *app, v a2a.Version, req a2a.Request) {
	if t, q := s.a2aTaskOf(c, a, req); t != nil {
		rpcResult(c, req.ID, a2a.EncodeTask(t.snapshot(q.HistoryLength), v))
	}
}

// a2aCancelTask cancels a running task (and waits for its run to stop) or
// a paused one; a task that already ended cannot be canceled.
func (s *Server) a2aCancelTask(c *gin.Context, a *app, v a2a.Version, req a2a.Request) {
	t, _ := s.a2aTaskOf(c, a, req)
	if t == nil {
		return
	}
	t.mu.Lock()
	cancel, done, st := t.cancel, t.done, t.state
	switch {
	case cancel != nil:
	case st.Terminal():
		t.mu.Unlock()
		rpcFail(c, req.ID, &a2a.RPCError{Code: a2a.CodeTaskNotCancelable, Message: "Task " + t.id + " cannot be canceled: it is " + string(st) + "."})
		return
	default:
		msg := &a2a.Message{MessageID: uuid.NewString(), Role: a2a.RoleAgent, TaskID: t.id, ContextID: t.contextID,
			Parts: []a2a.Part{a2a.TextPart("The task was canceled.")}}
		t.state, t.status, t.updated = a2a.StateCanceled, msg, s.cfg.Now()
		t.history = append(t.history, *msg)
	}
	t.mu.Unlock()
	if cancel != nil {
		cancel(errTaskCanceled)
		timer := time.NewTimer(a2aCancelWait)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
		case <-c.Request.Context().Done():
			return
		}
	}
	rpcResult(c, req.ID, a2a.EncodeTask(t.snapshot(nil), v))
}
