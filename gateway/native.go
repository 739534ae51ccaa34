package gateway

// The native surface: ADK's API server routes (Python flavour) over the
// same runtime the OpenAI surface uses. Event and session JSON come from
// the sessions package, which already speaks ADK's wire format; this file
// adds the run routes and the small informational ones. Sessions over REST
// are in native_sessions.go, request decoding in native_wire.go.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// nativeRoutes registers the ADK-compatible routes.
func (s *Server) nativeRoutes(e *gin.Engine) {
	e.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/version", s.nativeVersion)
	e.GET("/list-apps", s.listApps)
	e.POST("/run", s.nativeRun)
	e.POST("/run_sse", s.nativeRunSSE)
	// Sessions, their sub-conversations and artifacts. Session ids may hold
	// an encoded '/', so the path is split by hand from its escaped form.
	e.Any("/apps/*rest", s.nativeApps)
	// adk-web's development routes we do not serve: lists answer [],
	// anything else 404, never 500.
	e.GET("/dev/*rest", s.devRoute)
	e.GET("/debug/trace/*rest", s.debugTrace)
}

func (s *Server) nativeVersion(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"version": s.cfg.Version, "language": "go",
		"language_version": strings.TrimPrefix(runtime.Version(), "go")})
}

// appInfo is one entry of /list-apps?detailed=true.
type appInfo struct {
	Name          string `json:"name"`
	RootAgentName string `json:"rootAgentName"`
	Description   string `json:"description"`
	// Language is "yaml": the trees are declared in the config file.
	Language      string `json:"language"`
	IsComputerUse bool   `json:"isComputerUse"`
}

func (s *Server) listApps(c *gin.Context) {
	if c.Query("detailed") == "true" {
		apps := make([]appInfo, 0, len(s.catalog().Apps))
		for _, a := range s.catalog().Apps {
			if !canUse(c.Request.Context(), a.ID) {
				continue
			}
			apps = append(apps, appInfo{Name: a.ID, RootAgentName: a.Root.Name(), Description: a.Description, Language: "yaml"})
		}
		c.JSON(http.StatusOK, gin.H{"apps": apps})
		return
	}
	names := make([]string, 0, len(s.catalog().Apps))
	for _, a := range s.catalog().Apps {
		if !canUse(c.Request.Context(), a.ID) {
			continue
		}
		names = append(names, a.ID)
	}
	c.JSON(http.StatusOK, names)
}

// devListNames are the last path segments of adk-web's development routes
// that list things (eval sets, results, tests, traces).
var devListNames = map[string]bool{"eval-sets": true, "eval_sets": true, "eval-results": true, "eval_results": true,
	"evals": true, "tests": true, "metrics-info": true, "session": true}

func devStub(c *gin.Context) {
	segs := strings.Split(strings.Trim(c.Param("rest"), "/"), "/")
	if devListNames[segs[len(segs)-1]] || (len(segs) >= 2 && segs[len(segs)-2] == "session") {
		c.JSON(http.StatusOK, []any{})
		return
	}
	writeNativeError(c, notFound("Not Found"))
}

// nativeTurn is a run request of the native routes, its turn begun.
type nativeTurn struct {
	turn
	// invocationID is the paused invocation the request says it resumes.
	invocationID string
	// splitArtifacts sends events that carry content and an artifactDelta
	// as two frames (ADK does so unless functionCallEventId is set).
	splitArtifacts bool
	// keepOnDisconnect keeps a /run_sse run going when its client goes
	// away (onDisconnect: continue).
	keepOnDisconnect bool
}

// findSession is never asked: a native run always names its session.
func (nt *nativeTurn) findSession(context.Context, *Server) (bool, error) {
	return false, badRequest("sessionId", "sessionId is required.")
}

// prepare maps nothing: a native run sets no per-turn overrides.
func (nt *nativeTurn) prepare(context.Context, *app) (*agentcore.Overrides, error) { return nil, nil }

// loaded checks invocationId against the session.
func (nt *nativeTurn) loaded(ctx context.Context, s *Server) error {
	if nt.invocationID == "" {
		return nil
	}
	return s.checkInvocation(ctx, nt.req.Session, nt.invocationID, nt.req.NewMessage)
}

// beginNativeRun decodes a run request and begins its turn. Every failure
// here is answered with a status before any event is sent, but for a
// stream's (ns not nil) that waited in its session's line long enough to
// get keepalives: ns is then set up for the turn, and its writer may have
// started.
func (s *Server) beginNativeRun(c *gin.Context, ns *nativeStream) (*nativeTurn, error) {
	body, err := s.readBody(c)
	if err != nil {
		return nil, err
	}
	var req runAgentRequest
	if err := decodeCamel(body, &req); err != nil {
		return nil, err
	}
	switch {
	case req.AppName == "":
		return nil, badRequest("appName", "appName is required.")
	case req.UserID == "":
		return nil, badRequest("userId", "userId is required.")
	case req.SessionID == "":
		return nil, badRequest("sessionId", "sessionId is required.")
	}
	a, ok := s.appByID(req.AppName)
	if !ok {
		return nil, appNotFound(req.AppName)
	}
	noteModel(c, a.ID)
	msg, err := decodeContent(req.NewMessage)
	if err != nil {
		return nil, err
	}
	if msg == nil || len(msg.Parts) == 0 {
		return nil, badRequest("newMessage", "newMessage with at least one part is required.")
	}
	if msg.Role == "" {
		msg.Role = genai.RoleUser
	}
	if err := checkReservedKeys("stateDelta", req.StateDelta); err != nil {
		return nil, err
	}
	switch req.OnDisconnect {
	case "", "cancel", "continue":
	default:
		return nil, badRequest("onDisconnect", "onDisconnect must be cancel or continue.")
	}
	mt, err := multitaskOf(req.MultitaskStrategy, "multitaskStrategy")
	if err != nil {
		return nil, err
	}
	annotate(c, slog.String("session_id", req.SessionID))
	nt := &nativeTurn{invocationID: req.InvocationID, splitArtifacts: req.FunctionCallEventID == "",
		keepOnDisconnect: req.OnDisconnect == "continue" || req.OnDisconnect == "" && a.ContinueOnDisconnect}
	d := turnRequest{app: a, user: req.UserID, named: true, sessionID: req.SessionID, sessionField: "sessionId",
		message: msg, stateDelta: req.StateDelta, multitask: mt,
		config: agentcore.RunConfig{Streaming: req.Streaming, StreamSubAgents: req.StreamSubAgents || a.StreamSubAgents}}
	if ns != nil {
		*ns = nativeStream{nativeSink: nativeSink{s: s, c: c, t: &nt.turn, split: nt.splitArtifacts}, keep: nt.keepOnDisconnect}
		d.idle = ns
	}
	if err := s.beginTurn(c.Request.Context(), &d, &nt.turn, nt); err != nil {
		return nil, err
	}
	return nt, nil
}

// checkInvocation honours invocationId: it names the paused invocation the
// function responses of msg resume, and each must answer a call that
// invocation waits for. Calls made inside agents called as tools belong to
// "<invocation>.sub.<agent>", which resumes <invocation>.
func (s *Server) checkInvocation(ctx context.Context, sess *sessions.Session, invID string, msg *genai.Content) error {
	var responses []*genai.FunctionResponse
	for _, p := range msg.Parts {
		if p != nil && p.FunctionResponse != nil {
			responses = append(responses, p.FunctionResponse)
		}
	}
	if len(responses) == 0 {
		return badRequest("invocationId", "invocationId resumes a paused invocation: newMessage must carry the functionResponse parts it waits for.")
	}
	base, _, ok := agentcore.ParseInvocationID(invID)
	if !ok {
		return badRequest("invocationId", "Invocation "+invID+" is not an invocation id.")
	}
	open, err := agentcore.OpenCalls(ctx, s.cfg.Sessions, sess, base)
	if errors.Is(err, agentcore.ErrUnknownInvocation) {
		return badRequest("invocationId", "Invocation "+invID+" is not part of session "+sess.ID+".")
	}
	if err != nil {
		return err
	}
	for _, r := range responses {
		if !slices.ContainsFunc(open, func(c agentcore.OpenCall) bool { return c.Call.ID == r.ID }) {
			return badRequest("invocationId", "Invocation "+invID+" is not waiting for function call "+r.ID+".")
		}
	}
	return nil
}

// nativeRun answers POST /run with the JSON array of the run's events.
func (s *Server) nativeRun(c *gin.Context) {
	nt, err := s.beginNativeRun(c, nil)
	if err != nil {
		writeNativeError(c, classify(err))
		return
	}
	nt.req.Config.Streaming = false // ADK's /run never streams partials
	s.runTurn(c.Request.Context(), &nt.turn, &nativeAnswer{nativeSink: nativeSink{s: s, c: c, t: &nt.turn}, out: []*sessions.Event{}})
}

// nativeRunSSE answers POST /run_sse with one "data:" frame per event. The
// status is decided before the first frame, or the first keepalive of a
// turn waiting in its session's line: failures until then are plain error
// responses, later ones a data: {"error": ...} frame.
func (s *Server) nativeRunSSE(c *gin.Context) {
	ns := new(nativeStream)
	nt, err := s.beginNativeRun(c, ns)
	if err != nil {
		if ns.w == nil {
			writeNativeError(c, classify(err))
			return
		}
		// It left the line without running: the error frame is numbered
		// as the error event its run logged.
		s.failNative(c, ns.w, ns.t.frameID(ns.t.errSeq), err)
		return
	}
	ctx := c.Request.Context()
	if nt.keepOnDisconnect {
		ctx = context.WithoutCancel(ctx) // cancelled by id or shutdown only
	}
	s.runTurn(ctx, &nt.turn, ns)
}

// nativeSink is what the native run routes' sinks share: the view of the
// run's events.
type nativeSink struct {
	s     *Server
	c     *gin.Context
	t     *turn
	split bool
	view  *eventView // made at the first event
}

func (ns *nativeSink) frames(ev *sessions.Event) []*sessions.Event {
	if ns.view == nil {
		ns.view = newEventView(ns.t.app, ns.t.run, ns.split)
	}
	return ns.view.frames(ev)
}

// logsFrames: the run's log holds the frames native clients see, so that
// a re-attach gets the same frames (and numbers) as /run_sse.
func (ns *nativeSink) logsFrames() {}

// nativeAnswer collects a run's events for /run's JSON array.
type nativeAnswer struct {
	nativeSink
	out []*sessions.Event
}

func (*nativeAnswer) answersWhole() {}

func (na *nativeAnswer) event(ev *sessions.Event) error {
	for _, f := range na.frames(ev) {
		na.t.logFrame(f)
		na.out = append(na.out, f)
	}
	return nil
}

var nativeAnswerTraits = traitsOf[*nativeAnswer]()

func (*nativeAnswer) traits() sinkTraits { return nativeAnswerTraits }

func (na *nativeAnswer) end(_ context.Context, err error) {
	annotateRun(na.c, na.t.run)
	if err != nil {
		na.s.failNative(na.c, nil, "", err)
		return
	}
	na.c.JSON(http.StatusOK, na.out)
}

// nativeStream writes a run's events as /run_sse's frames, each after an
// id block naming it "<invocationId>:<n>", n its number in the run's log.
type nativeStream struct {
	nativeSink
	w *sseWriter // nil until the first frame
	// keep goes on without the client once a write failed (onDisconnect:
	// continue); gone is set then.
	keep, gone bool
}

// start sends the headers with the first frame.
func (ns *nativeStream) start() {
	if ns.w == nil {
		ns.w = newSSE(ns.c.Writer, &ns.t.pace) // flushed with the first frame
	}
}

func (ns *nativeStream) event(ev *sessions.Event) error {
	for _, f := range ns.frames(ev) {
		// The log keeps the JSON the client is sent.
		b, err := json.Marshal(f)
		if err != nil {
			return err
		}
		seq := ns.t.logData(runs.Frame{Data: b})
		if ns.gone {
			continue
		}
		ns.start()
		if err := ns.w.idData(ns.t.frameID(seq), b); err != nil {
			if err = ns.lost(err); err != nil {
				return err
			}
		}
	}
	return nil
}

// lost handles a failed write: the run stops with err, unless it goes on
// without its client.
func (ns *nativeStream) lost(err error) error {
	if !ns.keep {
		return err
	}
	ns.gone = true
	return nil
}

func (ns *nativeStream) keepalive() error {
	if ns.gone {
		return nil
	}
	ns.start()
	if err := ns.w.comment("keepalive"); err != nil {
		return ns.lost(err)
	}
	return nil
}

var nativeStreamTraits = traitsOf[*nativeStream]()

func (*nativeStream) traits() sinkTraits { return nativeStreamTraits }

func (ns *nativeStream) end(_ context.Context, err error) {
	annotateRun(ns.c, ns.t.run)
	if err == nil {
		ns.start() // a run with no visible event still answers 200
		return
	}
	if ns.gone {
		return
	}
	// The error frame is numbered as the error event logged for it.
	ns.s.failNative(ns.c, ns.w, ns.t.frameID(ns.t.errSeq), err)
}

// frameID is the SSE id of the run's frame seq (empty when it has none).
func (t *turn) frameID(seq int64) string {
	if t.rec == nil {
		return "" // the run never started
	}
	return frameID(t.rec.ID(), seq)
}

// frameID is the SSE id of a run's frame: "<invocationId>:<n>" (empty
// when the frame has no number).
func frameID(run string, seq int64) string {
	if seq < 0 || run == "" {
		return ""
	}
	return run + ":" + strconv.FormatInt(seq, 10)
}

// failNative reports a failed run: as an error response before the stream
// started, as a data: {"error": ...} frame (with id, when not empty) after.
// A client that went away gets nothing.
func (s *Server) failNative(c *gin.Context, w *sseWriter, id string, err error) {
	ae := classify(err)
	if ae.status == 499 {
		return
	}
	s.log.WarnContext(c.Request.Context(), "native run failed", "err", err)
	if w == nil {
		writeNativeError(c, ae)
		return
	}
	b, _ := json.Marshal(gin.H{"error": ae.message})
	_ = w.idData(id, b)
}

// eventView turns the runtime's events into what native clients see.
// Events of agents called as tools (forwarded with streamSubAgents, or
// because they pause) get branch "<caller>.<agent>", nested with further
// dots, so clients can tell them apart; the stored events keep theirs.
type eventView struct {
	app *app
	// invocationID is the run's invocation id, known once it started.
	invocationID   func() string
	splitArtifacts bool
	// callers maps a called function's name to the branch path of the
	// agent that called it, as seen in this run.
	callers map[string]string
}

func newEventView(a *app, run *agentcore.Run, splitArtifacts bool) *eventView {
	return &eventView{app: a, invocationID: run.InvocationID, splitArtifacts: splitArtifacts, callers: map[string]string{}}
}

// frames returns the events to send for ev: usually ev itself.
func (v *eventView) frames(ev *sessions.Event) []*sessions.Event {
	if inv := v.invocationID(); inv != "" && ev.InvocationID != inv {
		if root, chain, ok := agentcore.ParseInvocationID(ev.InvocationID); ok && root == inv && len(chain) > 0 {
			ev = ev.Clone()
			ev.Branch = v.childBranch(chain, ev.Branch)
		}
	}
	path := ev.Branch
	if path == "" {
		path = ev.Author
	}
	for _, fc := range ev.FunctionCalls() {
		v.callers[fc.Name] = path
	}
	if !v.splitArtifacts || len(ev.Actions.ArtifactDelta) == 0 || ev.Content == nil || len(ev.Content.Parts) == 0 {
		return []*sessions.Event{ev}
	}
	content := ev.Clone()
	content.Actions.ArtifactDelta = nil
	actions := ev.Clone()
	actions.Content = nil
	return []*sessions.Event{content, actions}
}

// childBranch is the branch of an event of the agent tools chain (outermost
// first), below inner (the event's own branch inside that chain).
func (v *eventView) childBranch(chain []string, inner string) string {
	caller, ok := v.callers[chain[0]]
	if !ok {
		// The call was made by an earlier request (a resumed pause):
		// the agent that holds the agent tool calls it.
		caller = v.toolOwner(chain[0])
	}
	b := caller + "." + strings.Join(chain, ".")
	if inner != "" {
		b += "." + inner
	}
	return b
}

// toolOwner finds the agent of the app's tree that calls name as a tool.
func (v *eventView) toolOwner(name string) string {
	owner := ""
	agentcore.Walk(v.app.Root, func(n agentcore.TreeNode) bool {
		if owner != "" || n.Edge == agentcore.EdgeAgentTool {
			return false
		}
		if la, ok := n.Agent.(*agentcore.LlmAgent); ok && slices.ContainsFunc(la.Config().Tools, func(t agentcore.Tool) bool {
			at, ok := t.(*agentcore.AgentTool)
			return ok && at.Name() == name
		}) {
			owner = n.Agent.Name()
		}
		return owner == ""
	})
	if owner != "" {
		return owner
	}
	return v.app.Root.Name()
}

// rootSessionID is the top-level session a (sub-)conversation belongs to.
func rootSessionID(id string) string {
	root, _, _ := strings.Cut(id, "/")
	return root
}

func appNotFound(name string) *apiError {
	return notFound("App not found: " + name)
}

// getVisibleSession reads a session clients may see: the gateway's own
// ("~") sessions are reported missing.
func (s *Server) getVisibleSession(ctx context.Context, app, user, id string) (*sessions.Session, error) {
	if ownSession(id) {
		return nil, sessionNotFound(id)
	}
	sess, err := s.cfg.Sessions.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: id})
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, sessionNotFound(id)
	}
	return sess, err
}

func sessionNotFound(id string) *apiError {
	e := notFound("Session not found: " + id)
	e.code = "session_not_found"
	return e
}
