package agentcore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/agentcore/memory"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// RunnerConfig configures a Runner. Zero fields mean the defaults.
type RunnerConfig struct {
	// AppName is the app (virtual model) whose sessions the runner serves.
	AppName string
	// Agent is the root of the tree; it is validated by NewRunner.
	Agent     Agent
	Sessions  sessions.Service
	Artifacts artifact.Service
	Memory    memory.Service
	// RouteToRoot starts every user turn at the root agent instead of the
	// agent that spoke last.
	RouteToRoot bool
	// AutoCreateSession creates a missing session instead of failing with
	// sessions.ErrNotFound.
	AutoCreateSession bool
	// Now and NewID replace the clock and the id generator (for golden
	// tests); defaults are time.Now and random UUIDs.
	Now      func() time.Time
	NewID    func() string
	Observer Observer
	// Tracer, when set, hears every agent run, model call and tool call
	// begin and end (see Tracer); nil traces nothing at no cost.
	Tracer Tracer
	// Logger receives what the runtime cannot report through the event
	// stream: events that could not be stored after the consumer stopped
	// or the turn failed (default slog.Default()).
	Logger *slog.Logger
	// Compaction, when set, compacts the sessions in the background after
	// turns (see Compaction); nil: never.
	Compaction *Compaction
	// Background runs the compactions, so that they can be waited for and
	// stopped; several runners may share one (nil: the runner's own).
	Background *Background
}

// Runner runs user turns of one agent tree against stored sessions.
type Runner struct {
	cfg       RunnerConfig
	index     *treeIndex
	svc       *services
	compactor *compactor // nil: no compaction
	bg        *Background
}

// NewRunner validates the tree and returns a runner.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.AppName == "" {
		return nil, errors.New("runner: empty app name")
	}
	if cfg.Sessions == nil {
		return nil, errors.New("runner: no session service")
	}
	ix, err := indexTree(cfg.Agent)
	if err != nil {
		return nil, err
	}
	svc := &services{sessions: cfg.Sessions, artifacts: cfg.Artifacts, memory: cfg.Memory, now: cfg.Now, newID: cfg.NewID,
		observer: cfg.Observer, tracer: cfg.Tracer, appName: cfg.AppName, logger: cfg.Logger}
	svc.writes = writesOf(cfg.Sessions)
	if svc.now == nil {
		svc.now = time.Now
	}
	if svc.newID == nil {
		svc.newID, svc.randomIDs = newUUID, true
	}
	if svc.observer == nil {
		svc.observer = NopObserver{}
	}
	if svc.logger == nil {
		svc.logger = slog.Default()
	}
	bg := cfg.Background
	if bg == nil {
		bg = &Background{}
	}
	comp, err := newCompactor(cfg.Compaction, cfg.AppName, svc, bg)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, index: ix, svc: svc, compactor: comp, bg: bg}, nil
}

// WithSessions returns a runner of the same tree and settings whose turns
// keep their sessions in store and start at the root agent when
// routeToRoot is set (a stateless request runs on a throwaway in-memory
// store), and that never compacts them. The tree is not validated and
// indexed again: NewRunner did that once, and the index is only read.
func (r *Runner) WithSessions(store sessions.Service, routeToRoot bool) *Runner {
	cfg := r.cfg
	cfg.Sessions, cfg.RouteToRoot, cfg.Compaction = store, routeToRoot, nil
	svc := *r.svc
	svc.sessions, svc.writes = store, writesOf(store)
	return &Runner{cfg: cfg, index: r.index, svc: &svc, bg: r.bg}
}

// Root returns the tree's root agent.
func (r *Runner) Root() Agent { return r.cfg.Agent }

// FindAgent returns the agent of the tree with that name, or nil.
func (r *Runner) FindAgent(name string) Agent { return r.index.byName[name] }

// RunRequest is one user turn.
type RunRequest struct {
	UserID, SessionID string
	// NewMessage is the user's content: text, or function responses that
	// resume a paused invocation.
	NewMessage *genai.Content
	// StateDelta is applied with the user's message.
	StateDelta map[string]any
	Config     RunConfig
	// ClientTools are functions the client declared for this turn; calls
	// to them pause the invocation and reach the client.
	ClientTools []*genai.FunctionDeclaration
	// Params are the conversation parameters (trusted and caller-supplied).
	Params *Params
	// Overrides adjust the model calls of this turn's own agents (never
	// those of agents called as tools).
	Overrides *Overrides
	// InvocationID names a new turn's invocation instead of a generated id
	// (a caller that must know it before the run starts, such as an A2A
	// task). A turn that resumes a paused invocation keeps that one's id.
	InvocationID string
	// Session, when set, is the session SessionID names, just read (or
	// created) by the caller while it holds the session's run lock: the
	// runner uses it instead of reading it again, one store round trip
	// less per turn. The runner updates it in place as it stores events.
	Session *sessions.Session
	// Lease, when set, is the caller's run lease on SessionID: the turn's
	// final write releases it in the same step when the store can
	// (sessions.ReleasingAppender). The caller still releases it once the
	// run is over; that costs nothing when the write did.
	Lease sessions.Lease
	// End, when set with Lease, is the caller's run, whose end the turn's
	// final write also writes when the turn ended well (no error, its
	// consumer did not stop) and the store can (sessions.EndingAppender):
	// End is asked for it then, just before that write.
	End RunEnder
}

// A RunEnder is the run a turn belongs to, as its caller keeps it (see
// RunRequest.End).
type RunEnder interface {
	// RunEnd is the run's end to write with the turn's final write, or
	// nil to leave it to the caller: asked once the turn ended well,
	// before that write, on the goroutine that consumed the turn's
	// events.
	RunEnd() sessions.RunEnd
}

// Overrides are per-turn adjustments a client asked for.
type Overrides struct {
	// OutputSchema becomes the root agent's output schema (when it has
	// none of its own); JSONMode alone asks for JSON without a schema.
	OutputSchema map[string]any
	JSONMode     bool
	// Generate overlays generation settings (temperature, max tokens, ...)
	// on every model call; nil fields leave the agent's own.
	Generate *genai.GenerateContentConfig
	// ToolConfig constrains function calling (tool_choice), on the calls
	// that offer the client's functions (RunRequest.ClientTools) and only
	// as far as the client's functions go: NONE withdraws them and leaves
	// the agents' own functions (transfers, agents as tools) callable.
	ToolConfig *genai.ToolConfig
	// Options are laid over the model calls they apply to: the schema's
	// name and strictness with OutputSchema, ParallelToolCalls with
	// ToolConfig, the reasoning effort (also as genai's ThinkingConfig),
	// verbosity and service tier on every call.
	Options model.Options
	// Instruction is appended to the root agent's instruction, verbatim
	// (not templated): a client's system text, when the model's
	// configuration lets it in.
	Instruction string
}

// UnknownCallError reports a function response for a call that no paused
// invocation of the session is waiting for.
type UnknownCallError struct{ ID string }

func (e *UnknownCallError) Error() string {
	return fmt.Sprintf("no pending function call with id %q in this session", e.ID)
}

// Run is one running turn. Events may be ranged over once.
type Run struct {
	events iter.Seq2[*sessions.Event, error]
	usage  *usageTotal
	// invID, agent and made are written once, when Events has started,
	// and then started is set: they are read only after it is.
	started atomic.Bool
	// made: invID was made by this turn (see NewInvocation).
	made  bool
	invID string
	agent string
}

// Events streams the turn's events: partial and whole, the caller's own and
// (when asked for, or when they pause) those of agents called as tools.
// The user's message is stored but not yielded.
//
// Non-partial events of the turn are applied to the session before they
// are yielded (the turn's next steps see them). When the session store is a
// sessions.BatchAppender they are stored together, in one atomic batch,
// when the turn ends: finished, paused, failed, cancelled, or when the
// consumer stops ranging; the sequence returns only after that write, and
// a failed write is yielded as the last error (or logged when the consumer
// has stopped or the turn already failed). With any other store each event
// is stored before it is yielded. A sub-conversation (an agent called as a
// tool) is stored the same way when its own turn ends.
func (r *Run) Events() iter.Seq2[*sessions.Event, error] { return r.events }

// Usage is the token usage summed over every model call of the turn, across
// the whole tree including agents called as tools. The record is shared
// (the sum so far, never changed): read it, do not change it.
func (r *Run) Usage() *genai.GenerateContentResponseUsageMetadata { return r.usage.get() }

// InvocationID is the id of the turn's invocation, known once Events has
// started.
func (r *Run) InvocationID() string {
	if !r.started.Load() {
		return ""
	}
	return r.invID
}

// NewInvocation reports whether the turn's invocation id was made by this
// turn, known once Events has started: nothing can have been recorded
// under it before. It is false for a turn that resumes a paused
// invocation, and for one named by its caller (RunRequest.InvocationID).
func (r *Run) NewInvocation() bool {
	if !r.started.Load() {
		return false
	}
	return r.made
}

// StartAgent is the agent the turn started with, known once Events has
// started.
func (r *Run) StartAgent() string {
	if !r.started.Load() {
		return ""
	}
	return r.agent
}

// runState is what a top-level turn keeps for as long as it runs, in one
// allocation: the Run handed to the caller, the turn, what it reads of the
// request, what every invocation of the turn shares (its usage, its
// model-call count, the locks of its sub-conversations), and its
// invocation's state (which turn.begin would allocate otherwise). Its
// 1,400 bytes and the allocation's 8-byte header fill the 1,408-byte size
// class: a field more takes the next, 128 bytes larger.
type runState struct {
	run      Run
	usage    usageTotal
	t        turn
	in       runInput
	llmCalls atomic.Int64
	subLocks sync.Map
	inv      invState
}

// runInput is what a turn reads of its RunRequest besides what its turn
// holds: the session it runs on and the user's message.
type runInput struct {
	userID, sessionID string
	session           *sessions.Session
	msg               *genai.Content
	delta             map[string]any
}

// Run starts a user turn.
func (r *Runner) Run(ctx context.Context, req RunRequest) *Run {
	rs := &runState{}
	rs.run.usage = &rs.usage
	// Set one by one in the new runState, not as a literal copied over it.
	in := &rs.in
	in.userID, in.sessionID, in.session, in.msg, in.delta = req.UserID, req.SessionID, req.Session, req.NewMessage, req.StateDelta
	t := &rs.t
	t.root, t.index, t.svc, t.cfg, t.llmCalls, t.usage = r.cfg.Agent, r.index, r.svc, req.Config, &rs.llmCalls, &rs.usage
	t.params, t.routeRoot, t.clientTools, t.overrides, t.out = req.Params, r.cfg.RouteToRoot, req.ClientTools, req.Overrides, &rs.run
	t.newInvID, t.lease, t.ender, t.subLocks, t.st = req.InvocationID, req.Lease, req.End, &rs.subLocks, &rs.inv
	rs.run.events = func(yield func(*sessions.Event, error) bool) { r.events(ctx, rs, yield) }
	return &rs.run
}

// events runs the turn of rs, yielding its events.
func (r *Runner) events(ctx context.Context, rs *runState, yield func(*sessions.Event, error) bool) {
	in, t := &rs.in, &rs.t
	sess := in.session
	if sess == nil || sess.ID != in.sessionID || sess.AppName != r.cfg.AppName || sess.UserID != in.userID {
		// Not the caller's (RunRequest.Session): read or created here.
		var err error
		if sess, err = r.session(ctx, in); err != nil {
			yield(nil, err)
			return
		}
	}
	// Parameters stored with the session, under this request's (which
	// t.params holds until then).
	t.params = ParamsFromState(sess.State[ParamsStateKey]).Over(t.params)
	if t.runInto(ctx, sess, in.msg, in.delta, yield) && r.compactor != nil {
		// The turn is over and stored: compact when it is due, in the
		// background (sess holds the turn's window and events).
		r.compactor.start(ctx, sess)
	}
}

// turnWindow is what a turn reads of its session: the events from the
// latest compaction on (the model requests show the summary in place of
// the events before it).
var turnWindow = sessions.Window{SinceCompaction: true}

// session is the session a turn runs on when the request holds none of
// its own: read, or created. (Out of the frame of Run's iterator, see
// LlmAgent.callModel.)
//
//go:noinline
func (r *Runner) session(ctx context.Context, in *runInput) (*sessions.Session, error) {
	switch {
	case r.cfg.AutoCreateSession && in.sessionID == "":
		// No session named: a new one, with a generated id.
		return r.svc.sessions.Create(ctx, sessions.CreateRequest{AppName: r.cfg.AppName, UserID: in.userID})
	case r.cfg.AutoCreateSession:
		return sessions.GetOrCreate(ctx, r.svc.sessions, sessions.CreateRequest{AppName: r.cfg.AppName, UserID: in.userID, SessionID: in.sessionID,
			Window: turnWindow})
	}
	return r.svc.sessions.Get(ctx, sessions.GetRequest{AppName: r.cfg.AppName, UserID: in.userID, SessionID: in.sessionID, Window: turnWindow})
}

// turn runs one user turn of a tree over one session: the top-level turn of
// a Runner, or a call of an AgentTool in its sub-conversation.
type turn struct {
	root      Agent
	index     *treeIndex
	svc       *services
	cfg       RunConfig
	llmCalls  *atomic.Int64
	usage     *usageTotal
	params    *Params
	routeRoot bool
	// madeInvID: route made the invocation's id (a new invocation, not
	// named by newInvID).
	madeInvID   bool
	clientTools []*genai.FunctionDeclaration
	overrides   *Overrides
	// invID is fixed for sub-conversations; empty means generate or resume.
	invID string
	out   *Run
	// subLocks serialise calls into the same sub-conversation.
	subLocks *sync.Map
	// rootValues are the resolved parameters of an agent called as a
	// tool; secrets are the hidden values of the calling conversation.
	rootValues *Params
	secrets    *secretSet
	// newInvID, when set, is the id of a new (not resumed) invocation.
	newInvID string
	// lease is the caller's run lease on the session, released with the
	// turn's write (top-level turns only).
	lease sessions.Lease
	// ender is the caller's run, ended with the turn's write when it
	// ended well (RunRequest.End; top-level turns only).
	ender RunEnder
	// st, when set, is the room for the invocation's state, which begin
	// takes (once) instead of allocating it: a Runner's turn has it in
	// its runState.
	st *invState
}

func (t *turn) run(ctx context.Context, sess *sessions.Session, msg *genai.Content, delta map[string]any) iter.Seq2[*sessions.Event, error] {
	return func(yield func(*sessions.Event, error) bool) { t.runInto(ctx, sess, msg, delta, yield) }
}

// runInto runs the turn, yielding its events (run's sequence, called
// directly by a Runner's turn: no sequence made for it). It reports
// whether the turn completed: it yielded no error and yield never
// returned false.
func (t *turn) runInto(ctx context.Context, sess *sessions.Session, msg *genai.Content, delta map[string]any, yield func(*sessions.Event, error) bool) bool {
	// What comes before and after the agent's run is in functions of
	// its own: this frame stays on the stack under the whole run (see
	// LlmAgent.callModel).
	ctx, st, err := t.begin(ctx, sess, msg, delta)
	if err != nil {
		yield(nil, err)
		return false
	}
	// The loop's outcome is kept in st, which the loop's body shares
	// with this frame: no variables of their own on the heap. The body
	// is a function of its own, which runAgentWith may hand the agent
	// straight.
	inv := &st.inv
	runAgentWith(ctx, inv.agent, inv, func(ev *sessions.Event, err error) bool {
		if err != nil {
			st.runErr = err
			return false
		}
		if !ev.Partial && ev.InvocationID == inv.id {
			if st.runErr = inv.persist(ctx, ev); st.runErr != nil {
				return false
			}
		}
		if !yield(ev, nil) {
			st.stopped = true
			return false
		}
		return true
	})
	runErr := t.end(ctx, inv, st.stopped, st.runErr)
	if runErr != nil && !st.stopped {
		yield(nil, runErr)
	}
	return runErr == nil && !st.stopped
}

// begin routes the turn, makes its invocation and stores the user's
// message: the context the turn runs with, and its invocation's state
// (the invocation, whose agent runs the turn).
//
//go:noinline
func (t *turn) begin(ctx context.Context, sess *sessions.Session, msg *genai.Content, delta map[string]any) (context.Context, *invState, error) {
	target, invID, resume, userMsg, err := t.route(ctx, sess, msg)
	if err != nil {
		return ctx, nil, err
	}
	if t.invID != "" {
		invID = t.invID
	}
	// The invocation, what its agents share, its live session, its
	// parameters, its log attributes and its ids' maker live as long as
	// one another: one allocation (for a Runner's turn, the runState's
	// room for them).
	st := t.st
	if st == nil {
		st = &invState{}
	}
	t.st = nil
	st.logCtx.init(ctx, slog.String("session_id", sess.ID), slog.String("invocation_id", invID))
	ctx = &st.logCtx
	if out := t.out; out != nil && !out.started.Load() {
		out.invID, out.agent, out.made = invID, target.Name(), t.madeInvID && t.invID == ""
		out.started.Store(true)
	}
	st.live.init(sess, &t.svc.writes)
	st.live.lease = t.lease
	// st is new (zero): its fields are set one by one, not as literals
	// copied over it.
	sh, inv := &st.sh, &st.inv
	sh.root, sh.index, sh.cfg, sh.svc, sh.sess = t.root, t.index, t.cfg, t.svc, &st.live
	sh.llmCalls, sh.usage, sh.params, sh.clientTools = t.llmCalls, t.usage, t.params, t.clientTools
	sh.overrides, sh.subLocks, sh.ids = t.overrides, t.subLocks, &st.ids
	sh.noCalls.Store(t.madeInvID && t.invID == "")
	inv.id, inv.agent, inv.userContent, inv.sh, inv.resume = invID, target, msg, sh, resume
	st.ps.init(t.params, t.rootValues, t.index, t.secrets)
	sh.pstate = &st.ps
	if err := inv.checkParams(target); err != nil {
		return ctx, nil, err
	}
	if userMsg != nil || len(delta) > 0 {
		ev := &sessions.Event{ID: sh.newID(), InvocationID: invID, Author: "user", Timestamp: t.svc.now(), Content: userMsg}
		ev.Actions.StateDelta = delta
		if err := inv.persist(ctx, ev); err != nil {
			return ctx, nil, err
		}
	}
	return ctx, st, nil
}

// end stores what the turn applied to the session, in one batch, once the
// turn is over, paused, failed or no longer consumed, and returns the
// turn's error (runErr, or the store's if the run ended well).
//
//go:noinline
func (t *turn) end(ctx context.Context, inv *Invocation, stopped bool, runErr error) error {
	var ender RunEnder
	if !stopped && runErr == nil {
		ender = t.ender
	}
	flushErr := inv.sh.sess.flush(ctx, ender)
	switch {
	case flushErr != nil && (stopped || runErr != nil):
		t.svc.logger.ErrorContext(ctx, "the turn's events could not be stored", "err", flushErr)
	case flushErr != nil:
		runErr = flushErr
	}
	return runErr
}

// persist records a non-partial event of this invocation: temp: state goes
// to the invocation, the rest to the session. With a store that batches
// (sessions.BatchAppender) the event is applied to the running session at
// once and stored with the rest of the turn by flush; otherwise it is
// stored now.
func (inv *Invocation) persist(ctx context.Context, ev *sessions.Event) error {
	if len(ev.Actions.StateDelta) > 0 {
		inv.keepTemp(ev.Actions.StateDelta)
	}
	if hasFunctionCall(ev.Content) {
		inv.sh.noCalls.Store(false)
	}
	l := inv.sh.sess
	l.mu.Lock()
	if l.batch != nil {
		if sessions.ApplyEvent(l.sess, ev) {
			if l.pending == nil && !l.flushed {
				l.pending = l.firstPending[:0]
			}
			l.pending = append(l.pending, ev)
		}
		l.mu.Unlock()
		return nil
	}
	defer l.mu.Unlock() // the store's code runs under it
	if err := inv.sh.svc.sessions.AppendEvent(context.WithoutCancel(ctx), l.sess, ev); err != nil {
		return fmt.Errorf("storing event: %w", err)
	}
	return nil
}

// keepTemp keeps the temp: state of delta in the invocation.
func (inv *Invocation) keepTemp(delta map[string]any) {
	for k, v := range delta {
		if len(k) > len(sessions.PrefixTemp) && k[:len(sessions.PrefixTemp)] == sessions.PrefixTemp {
			inv.sh.tempMu.Lock()
			if inv.sh.temp == nil {
				inv.sh.temp = map[string]any{}
			}
			inv.sh.temp[k] = v
			inv.sh.tempMu.Unlock()
		}
	}
}

// flush stores the events applied to the session since the last flush, in
// one AppendEvents call (with the turn's lease to release, when there is
// one and the store can, and the end of ender's run, when it is set and
// the store can). It runs even when ctx has ended: what the caller has
// seen is stored.
func (l *liveSession) flush(ctx context.Context, ender RunEnder) error {
	l.mu.Lock()
	evs := l.pending
	l.pending = nil
	if len(evs) == 0 {
		l.mu.Unlock()
		return nil
	}
	// AppendEvents updates the session it is given; the events are applied
	// to l.sess already, so it gets a scratch copy of the identity.
	var scratch *sessions.Session
	var detached context.Context
	if !l.flushed {
		l.flushed = true
		scratch = &l.scratch
		scratch.Events = l.scratchEvents[:0]
		// context.WithoutCancel(ctx), made in l's allocation.
		l.detached.Context = ctx
		detached = &l.detached
	} else {
		scratch = &sessions.Session{}
		detached = context.WithoutCancel(ctx)
	}
	scratch.ID, scratch.AppName, scratch.UserID = l.sess.ID, l.sess.AppName, l.sess.UserID
	// The store applies the events to the scratch as sessions.ApplyEvent
	// does, which writes to its state only their state deltas: without
	// any, l.sess's own state (made by the events' ApplyEvent) serves,
	// and is left as it is.
	if slices.ContainsFunc(evs, hasStateDelta) || l.sess.State == nil {
		scratch.State = map[string]any{}
	} else {
		scratch.State = l.sess.State
	}
	l.mu.Unlock()
	var end sessions.RunEnd
	w := l.w
	if w.ending != nil && ender != nil && l.lease != nil {
		end = ender.RunEnd()
	}
	var err error
	ctx = detached
	switch {
	case end != nil:
		err = w.ending.AppendEventsReleaseEnd(ctx, scratch, evs, l.lease, end)
	case w.releasing != nil && l.lease != nil:
		err = w.releasing.AppendEventsRelease(ctx, scratch, evs, l.lease)
	default:
		err = l.batch.AppendEvents(ctx, scratch, evs)
	}
	if err != nil {
		return fmt.Errorf("storing the turn's events: %w", err)
	}
	return nil
}

// detachedCtx is what context.WithoutCancel(Context) returns, made in
// place: the context's values, never done, no deadline (context.Cause of
// it is nil, as its Err is, and a context derived from it is never
// cancelled with it, as its Done is nil).
type detachedCtx struct{ context.Context }

// Deadline implements context.Context.
func (*detachedCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context.
func (*detachedCtx) Done() <-chan struct{} { return nil }

// Err implements context.Context.
func (*detachedCtx) Err() error { return nil }

// hasStateDelta reports whether ev changes the session's state.
func hasStateDelta(ev *sessions.Event) bool { return len(ev.Actions.StateDelta) > 0 }

// route decides which agent handles the turn. Function responses resume the
// invocation that made the calls (routing responses for calls inside
// sub-conversations through the agent-tool call that leads there); other
// messages go to the agent that spoke last, or the root.
func (t *turn) route(ctx context.Context, sess *sessions.Session, msg *genai.Content) (target Agent, invID string, resume map[string]*genai.Content, userMsg *genai.Content, err error) {
	var responses []*genai.Part
	if msg != nil {
		for _, p := range msg.Parts {
			if p != nil && p.FunctionResponse != nil {
				responses = append(responses, p)
			}
		}
	}
	if len(responses) == 0 {
		if t.newInvID != "" {
			return t.nextAgent(sess), t.newInvID, nil, msg, nil
		}
		t.madeInvID = true
		return t.nextAgent(sess), t.svc.newInvocationID(), nil, msg, nil
	}
	var author string
	direct := &genai.Content{Role: genai.RoleUser}
	for _, p := range responses {
		loc, err := t.locate(ctx, sess, p.FunctionResponse.ID)
		if err != nil {
			return nil, "", nil, nil, err
		}
		if author != "" && (loc.author != author || loc.invID != invID) {
			return nil, "", nil, nil, fmt.Errorf("function responses answer calls of different invocations: %w", &UnknownCallError{ID: p.FunctionResponse.ID})
		}
		author, invID = loc.author, loc.invID
		if loc.name != "" && loc.name != p.FunctionResponse.Name {
			// Clients may answer under the name they were shown; the
			// history keeps the name the model called.
			fr := *p.FunctionResponse
			fr.Name = loc.name
			p = &genai.Part{FunctionResponse: &fr}
		}
		if loc.viaCall == "" {
			direct.Parts = append(direct.Parts, p)
			continue
		}
		if resume == nil {
			resume = map[string]*genai.Content{}
		}
		c := resume[loc.viaCall]
		if c == nil {
			c = &genai.Content{Role: genai.RoleUser}
			resume[loc.viaCall] = c
		}
		c.Parts = append(c.Parts, p)
	}
	target = t.index.byName[author]
	if target == nil {
		return nil, "", nil, nil, fmt.Errorf("agent %q that made the call is no longer in the tree: %w", author, &UnknownCallError{ID: responses[0].FunctionResponse.ID})
	}
	if len(direct.Parts) > 0 {
		userMsg = direct
	}
	return target, invID, resume, userMsg, nil
}

type callLocation struct {
	author, invID string
	// name is the called function's name, when the call is in this session.
	name string
	// viaCall is the agent-tool call (in this session) whose
	// sub-conversation holds the call; empty when the call is here.
	viaCall string
}

// locate finds the call a function response answers: an open call of this
// session, else one open in the sub-conversation of an agent-tool call
// still waiting (the newest such call first). The sub-conversations are
// read only when the call is not here.
func (t *turn) locate(ctx context.Context, sess *sessions.Session, callID string) (callLocation, error) {
	own, _ := OpenCallsIn(sess, "")
	for i := len(own) - 1; i >= 0; i-- {
		if c := own[i]; c.Call.ID == callID {
			return callLocation{author: c.Event.Author, invID: c.Event.InvocationID, name: c.Call.Name}, nil
		}
	}
	open, err := appendOpenCalls(ctx, t.svc.sessions, sess, own, nil, nil)
	if err != nil {
		return callLocation{}, err
	}
	for i := len(open) - 1; i >= 0; i-- {
		if c := open[i]; c.Via != nil && c.Call.ID == callID {
			top := c.Root()
			return callLocation{author: top.Event.Author, invID: top.Event.InvocationID, viaCall: top.Call.ID}, nil
		}
	}
	return callLocation{}, &UnknownCallError{ID: callID}
}

// nextAgent picks the agent for a new user turn: the agent that spoke last
// when it can own the conversation (an LLM agent reached through LLM agents
// only), else the root.
func (t *turn) nextAgent(sess *sessions.Session) Agent {
	if t.routeRoot || len(t.index.order) == 1 {
		// The root, or the only agent there is: whoever spoke last.
		return t.root
	}
	for author := range speakers(sess.Events) {
		a := t.index.byName[author]
		if a == nil {
			continue
		}
		for p := a; p != nil; p = t.index.parent[p.Name()] {
			if _, ok := p.(*LlmAgent); !ok {
				return t.root
			}
		}
		return a
	}
	return t.root
}
