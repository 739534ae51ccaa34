// Package agentcore is agentgate's agent runtime: ADK's agent model in Go.
//
// An Agent runs inside an Invocation and streams Events as an iterator. The
// Runner loads the session, applies every non-partial event to it before the
// agent's next step can see it and stores the turn's events (in one batch
// when the store allows it), routes a turn to the right agent, and resumes
// invocations that paused on long-running calls. LlmAgent drives the
// model-tool loop; SequentialAgent, ParallelAgent and LoopAgent compose
// agents; AgentTool calls an agent as a function in its own sub-conversation.
//
// Nothing here knows about HTTP, Redis, JWT or Prometheus: those plug in
// through sessions.Service, the model.LLM providers and the Observer hooks.
package agentcore

import (
	"context"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/agentcore/memory"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// Agent is a node of an agent tree.
//
// Run streams the agent's events. It stops as soon as yield returns false
// and releases everything it started before returning. Control flow
// (transfer, escalation, state changes) travels as data on events; an error
// from the sequence means the run failed and ends it.
type Agent interface {
	Name() string
	Description() string
	SubAgents() []Agent
	Run(ctx context.Context, inv *Invocation) iter.Seq2[*sessions.Event, error]
}

// RunConfig holds per-run settings.
type RunConfig struct {
	// Streaming asks models for partial responses (text deltas).
	Streaming bool
	// MaxLLMCalls caps model calls across the whole invocation, agents
	// called as tools included. 0 means DefaultMaxLLMCalls; negative means
	// no limit.
	MaxLLMCalls int
	// StreamSubAgents forwards the events of agents called as tools to the
	// caller (they still never enter the parent's history). Events that
	// pause on a long-running call are always forwarded.
	StreamSubAgents bool
}

// DefaultMaxLLMCalls is the invocation-wide model-call budget by default.
const DefaultMaxLLMCalls = 500

// Observer receives runtime notifications, for metrics and logs. Every
// method may be called from several goroutines at once. Embed NopObserver to
// implement only some methods.
type Observer interface {
	ModelCall(agent, model string, d time.Duration, usage *genai.GenerateContentResponseUsageMetadata, err error)
	ToolCall(agent, tool string, d time.Duration, err error)
	Transfer(from, to string)
}

// NopObserver ignores every notification.
type NopObserver struct{}

// ModelCall implements Observer.
func (NopObserver) ModelCall(string, string, time.Duration, *genai.GenerateContentResponseUsageMetadata, error) {
}

// ToolCall implements Observer.
func (NopObserver) ToolCall(string, string, time.Duration, error) {}

// Transfer implements Observer.
func (NopObserver) Transfer(string, string) {}

// Invocation is one user turn being processed by an agent tree. It is
// created by the Runner (or by an AgentTool for a sub-conversation) and
// derived, never mutated, as control moves to other agents or branches.
type Invocation struct {
	id          string
	agent       Agent
	branch      string
	userContent *genai.Content
	sh          *invShared
	// resume holds function responses destined for calls inside
	// sub-conversations, keyed by the id of the agent-tool call that leads
	// there.
	resume map[string]*genai.Content
	// confirmations are the client's answers for calls being run again
	// after a confirmation request, by call id.
	confirmations map[string]*ToolConfirmation
}

// invShared is what every agent of one invocation shares.
type invShared struct {
	root     Agent
	index    *treeIndex
	cfg      RunConfig
	svc      *services
	sess     *liveSession
	llmCalls *atomic.Int64
	usage    *usageTotal

	tempMu sync.Mutex
	temp   map[string]any // nil until the first temp: key

	params *Params
	// pstate resolves each agent's parameters and holds the hidden values.
	pstate *paramState
	// clientTools are offered to the agents of a top-level turn (never to
	// agents called as tools).
	clientTools []*genai.FunctionDeclaration
	overrides   *Overrides
	subLocks    *sync.Map

	// ids makes the random ids of the invocation's events (see newID).
	ids *idArena

	// agentLog is the log context of the first LLM agent of the
	// invocation that runs (agentLogTaken), made in the invocation's
	// allocation: see withAgentLogAttrs.
	agentLog      logCtx
	agentLogTaken atomic.Bool
	// noCalls: the invocation is new (its id made by this turn) and no
	// event of it calls a function yet (see persist): no agent has calls
	// of its own to look for (see LlmAgent.madeCalls).
	noCalls atomic.Bool
}

// withAgentLogAttrs is WithLogAttrs(ctx, agent=name) for an LLM agent of
// the invocation about to run: the first one's context is sh.agentLog.
func (sh *invShared) withAgentLogAttrs(ctx context.Context, name string) context.Context {
	if !sh.agentLogTaken.Swap(true) {
		sh.agentLog.init(ctx, slog.String("agent", name))
		return &sh.agentLog
	}
	return WithLogAttrs(ctx, slog.String("agent", name))
}

// clientTools wraps the client's declared functions for agent a.
func (inv *Invocation) clientTools(a Agent) []Tool {
	out := make([]Tool, 0, len(inv.sh.clientTools))
	for _, d := range inv.sh.clientTools {
		out = append(out, &ClientTool{Decl: d})
	}
	return out
}

// services are the collaborators of a run.
type services struct {
	sessions  sessions.Service
	artifacts artifact.Service
	memory    memory.Service
	now       func() time.Time
	newID     func() string
	// randomIDs: newID is newUUID (no RunnerConfig.NewID).
	randomIDs bool
	// writes are what sessions can (writesOf(sessions)).
	writes   storeWrites
	observer Observer
	tracer   Tracer // nil: not traced
	appName  string
	logger   *slog.Logger
}

// newInvocationID is the id of a new top-level invocation:
// NewInvocationID(newID()), in one allocation when the ids are random.
func (s *services) newInvocationID() string {
	if s.randomIDs {
		return newPrefixedUUID("e-")
	}
	return NewInvocationID(s.newID())
}

// newID is the id of a new event of the invocation: svc.newID's, made by
// the invocation's ids when they are random.
func (sh *invShared) newID() string {
	if sh.svc.randomIDs {
		return sh.ids.next()
	}
	return sh.svc.newID()
}

// usageTotal sums the usage of a run's model calls. Each sum is a record
// of its own (model.AddUsage), never changed once stored, so get hands out
// the record itself, without the lock: the lock orders the sums alone.
type usageTotal struct {
	mu sync.Mutex
	u  atomic.Pointer[genai.GenerateContentResponseUsageMetadata]
}

func (u *usageTotal) add(x *genai.GenerateContentResponseUsageMetadata) {
	if x == nil {
		return
	}
	u.mu.Lock()
	u.u.Store(model.AddUsage(u.u.Load(), x))
	u.mu.Unlock()
}

func (u *usageTotal) get() *genai.GenerateContentResponseUsageMetadata { return u.u.Load() }

// liveSession is the session of a running invocation: the driver appends to
// it while agents (possibly on parallel branches) read it. With a store that
// batches, pending holds the events applied to sess but not stored yet.
type liveSession struct {
	mu   sync.RWMutex
	sess *sessions.Session
	// batch is the store's BatchAppender, nil when each event is stored
	// as it is applied; w is what else the store can (the runner's).
	batch   sessions.BatchAppender
	w       *storeWrites
	pending []*sessions.Event
	lease   sessions.Lease // the run lease a flush releases, if any
	// A turn's first flush takes its few events from firstPending, and
	// hands the store scratch with room for them in scratchEvents: no
	// allocations of their own. Neither is written again after that
	// flush (the store may keep what it was given).
	firstPending  [4]*sessions.Event
	scratch       sessions.Session
	scratchEvents [4]*sessions.Event
	flushed       bool
	// detached is the context of the first flush's write.
	detached detachedCtx
}

// storeWrites are the ways a session store can write a turn's events, as
// its optional interfaces offer them (nil: it cannot): found once for a
// runner's store (see writesOf), not asserted again on every turn.
type storeWrites struct {
	batch     sessions.BatchAppender
	releasing sessions.ReleasingAppender
	ending    sessions.EndingAppender
}

// writesOf finds the ways store can write a turn's events.
func writesOf(store sessions.Service) storeWrites {
	var w storeWrites
	w.batch, _ = store.(sessions.BatchAppender)
	w.releasing, _ = store.(sessions.ReleasingAppender)
	w.ending, _ = store.(sessions.EndingAppender)
	return w
}

// init makes l the live session of sess, stored in the store that can
// write as w says.
func (l *liveSession) init(sess *sessions.Session, w *storeWrites) {
	l.sess = sess
	l.w, l.batch = w, w.batch
	if l.batch != nil {
		// The turn applies its events to sess itself (persist): room
		// for the two of a turn that calls no function, the user's
		// message and the reply, made at once and not one after the
		// other (an append that grows the slice grows it as much).
		sess.Events = slices.Grow(sess.Events, 2)
	}
}

// invState is what a turn allocates for its invocation (see turn.begin).
type invState struct {
	sh   invShared
	live liveSession
	inv  Invocation
	ps   paramState
	// logCtx is the context of the turn's log attributes (turn.begin).
	logCtx logCtx
	// ids makes the invocation's random ids (invShared.ids).
	ids idArena
	// How the agent's run ended (turn.runInto): its error, or the
	// consumer stopped.
	runErr  error
	stopped bool
}

// events returns the session's events so far without copying them: the
// session's events are only ever appended (sessions.ApplyEvent), which
// writes beyond the length of every view handed out, and a view's capacity
// ends at its length, so that an append to it copies.
func (l *liveSession) events() []*sessions.Event {
	l.mu.RLock()
	evs := l.sess.Events
	l.mu.RUnlock()
	return evs[:len(evs):len(evs)]
}

func (l *liveSession) get(key string) (any, bool) {
	l.mu.RLock()
	v, ok := l.sess.State[key]
	l.mu.RUnlock()
	return v, ok
}

// ID is the invocation id, shared by every event of the turn.
func (inv *Invocation) ID() string { return inv.id }

// Agent is the agent this invocation is currently running.
func (inv *Invocation) Agent() Agent { return inv.agent }

// Branch is the parallel branch path, empty outside fan-outs.
func (inv *Invocation) Branch() string { return inv.branch }

// UserContent is the content that started the turn.
func (inv *Invocation) UserContent() *genai.Content { return inv.userContent }

// SessionID, AppName and UserID identify the conversation.
func (inv *Invocation) SessionID() string { return inv.sh.sess.sess.ID }

// AppName is the app (virtual model) the session belongs to.
func (inv *Invocation) AppName() string { return inv.sh.sess.sess.AppName }

// UserID is the user the session belongs to.
func (inv *Invocation) UserID() string { return inv.sh.sess.sess.UserID }

// RunConfig is the run's configuration.
func (inv *Invocation) RunConfig() RunConfig { return inv.sh.cfg }

// Events returns a snapshot of the session's stored events. The slice is
// shared: callers must not modify it.
func (inv *Invocation) Events() []*sessions.Event { return inv.sh.sess.events() }

// withAgent derives the invocation for another agent; for its own agent
// it is inv itself (invocations are never modified).
func (inv *Invocation) withAgent(a Agent) *Invocation {
	if inv.agent == a {
		return inv
	}
	c := *inv
	c.agent = a
	return &c
}

// withBranch derives the invocation for a parallel child.
func (inv *Invocation) withBranch(a Agent, branch string) *Invocation {
	c := *inv
	c.agent = a
	c.branch = branch
	return &c
}

// NewEvent returns an event of this invocation authored by the current
// agent, with a fresh id and timestamp.
func (inv *Invocation) NewEvent() *sessions.Event {
	ev := &sessions.Event{ID: inv.sh.newID()}
	inv.stamp(ev)
	return ev
}

// newPartialEvent is NewEvent for a partial event (a streamed delta),
// filled from resp: with random ids, the event and its id are one
// allocation, not two, and so is the copy of a transient response's
// content with them (a provider rewrites such a response for its next
// delta). A session stores clones of its events, whose ids would keep such
// an event alive whole; partial events are never stored (the run log
// keeps them as they are), so only they are made this way.
func (inv *Invocation) newPartialEvent(resp *model.Response) *sessions.Event {
	var ev *sessions.Event
	var room *contentRoom
	switch {
	case !inv.sh.svc.randomIDs:
		ev = inv.NewEvent()
		if resp.Transient {
			room = new(contentRoom)
		}
	case resp.Transient:
		e := new(eventWithContent)
		e.setID()
		ev, room = &e.ev, &e.content
		inv.stamp(ev)
	default:
		ev = newEventWithID()
		inv.stamp(ev)
	}
	ev.Partial = true
	fillFromResponse(ev, resp)
	if room != nil {
		ev.Content = room.copyOf(ev.Content)
	}
	return ev
}

// stamp sets what NewEvent sets besides the id: the invocation, author,
// branch and time.
func (inv *Invocation) stamp(ev *sessions.Event) {
	ev.InvocationID = inv.id
	ev.Author = inv.agent.Name()
	ev.Branch = inv.branch
	ev.Timestamp = inv.sh.svc.now()
}

// stateGet reads a state key: temp: keys from the invocation, others from
// the session.
func (inv *Invocation) stateGet(key string) (any, bool) {
	if strings.HasPrefix(key, sessions.PrefixTemp) {
		inv.sh.tempMu.Lock()
		defer inv.sh.tempMu.Unlock()
		v, ok := inv.sh.temp[key]
		return v, ok
	}
	return inv.sh.sess.get(key)
}

// visible reports whether an event of branch evBranch is part of the history
// seen from branch b: events of b's ancestors and of b itself. An agent
// outside any fan-out (b empty) sees every branch, as in ADK, so the agents
// after a ParallelAgent see what its children said.
func visible(evBranch, b string) bool {
	return b == "" || evBranch == "" || evBranch == b || strings.HasPrefix(b, evBranch+".")
}

// ReadonlyContext is what instruction providers and toolsets may read.
type ReadonlyContext struct {
	inv *Invocation
}

// Invocation returns the running invocation.
func (c *ReadonlyContext) Invocation() *Invocation { return c.inv }

// AgentName is the name of the running agent.
func (c *ReadonlyContext) AgentName() string { return c.inv.agent.Name() }

// State reads a state key (session, app:, user: or temp: scope).
func (c *ReadonlyContext) State(key string) (any, bool) { return c.inv.stateGet(key) }

// CallbackContext is given to agent and model callbacks. State changes made
// through SetState are recorded in the actions of the event the callback
// leads to.
type CallbackContext struct {
	ReadonlyContext
	actions sessions.EventActions
}

func newCallbackContext(inv *Invocation) *CallbackContext {
	return &CallbackContext{ReadonlyContext: ReadonlyContext{inv: inv}}
}

// State reads a key, seeing this context's own pending changes first.
func (c *CallbackContext) State(key string) (any, bool) {
	if v, ok := c.actions.StateDelta[key]; ok {
		return v, true
	}
	return c.inv.stateGet(key)
}

// SetState records a state change.
func (c *CallbackContext) SetState(key string, v any) {
	if c.actions.StateDelta == nil {
		c.actions.StateDelta = map[string]any{}
	}
	c.actions.StateDelta[key] = v
}

// Actions are the pending actions of this context.
func (c *CallbackContext) Actions() *sessions.EventActions { return &c.actions }

// SaveArtifact stores a new version of a session artifact and records it in
// the event's artifactDelta.
func (c *CallbackContext) SaveArtifact(ctx context.Context, name string, part *genai.Part) (int64, error) {
	if c.inv.sh.svc.artifacts == nil {
		return 0, errNoArtifactService
	}
	v, err := c.inv.sh.svc.artifacts.Save(ctx, artifact.Key{App: c.inv.AppName(), User: c.inv.UserID(), Session: c.inv.SessionID(), Name: name}, part)
	if err != nil {
		return 0, err
	}
	if c.actions.ArtifactDelta == nil {
		c.actions.ArtifactDelta = map[string]int64{}
	}
	c.actions.ArtifactDelta[name] = v
	return v, nil
}

// LoadArtifact loads the latest version of a session artifact.
func (c *CallbackContext) LoadArtifact(ctx context.Context, name string) (*genai.Part, error) {
	if c.inv.sh.svc.artifacts == nil {
		return nil, errNoArtifactService
	}
	return c.inv.sh.svc.artifacts.Load(ctx, artifact.Key{App: c.inv.AppName(), User: c.inv.UserID(), Session: c.inv.SessionID(), Name: name}, 0)
}

// SearchMemory searches the user's long-term memory.
func (c *CallbackContext) SearchMemory(ctx context.Context, query string) ([]memory.Entry, error) {
	if c.inv.sh.svc.memory == nil {
		return nil, errNoMemoryService
	}
	return c.inv.sh.svc.memory.Search(ctx, c.inv.AppName(), c.inv.UserID(), query)
}

// ToolContext is given to a tool run and its callbacks.
type ToolContext struct {
	CallbackContext
	callID string
	// longRunningIDs, when set by a tool, pauses the invocation waiting for
	// responses to these call ids (a paused sub-conversation, for example).
	pausedOn []string
	// resume holds responses destined for this call's sub-conversation.
	resume *genai.Content
	// emit forwards events of sub-invocations to the caller's stream.
	emit func(*sessions.Event)
	// confirmation is the client's answer when the call is run again
	// after a confirmation request.
	confirmation *ToolConfirmation
}

// FunctionCallID is the id of the call being run.
func (c *ToolContext) FunctionCallID() string { return c.callID }

// Pause marks the invocation as waiting for responses to the given call ids.
func (c *ToolContext) Pause(callIDs ...string) { c.pausedOn = append(c.pausedOn, callIDs...) }
