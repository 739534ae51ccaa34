package agentcore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// IncludeContents selects how much history a model sees.
type IncludeContents string

const (
	// IncludeDefault sends the whole (branch-visible) session history.
	IncludeDefault IncludeContents = "default"
	// IncludeNone sends only the current turn: from the latest user message
	// or other agent's reply onwards.
	IncludeNone IncludeContents = "none"
)

// DefaultMaxIterations caps the model-tool loop of one LlmAgent run.
const DefaultMaxIterations = 16

// Error codes put on events by the runtime.
const (
	CodeMaxIterations = "MAX_ITERATIONS"
	CodeMaxLLMCalls   = "MAX_LLM_CALLS"
)

// InstructionProvider computes an instruction per turn. Its result is used
// verbatim: it reads state itself and is never templated.
type InstructionProvider func(ctx context.Context, rc *ReadonlyContext) (string, error)

// Callbacks hook into an LlmAgent's run. Each is optional. A callback that
// returns a non-nil value short-circuits the step it wraps; an error fails
// the run (model and agent callbacks) or becomes the tool's error result
// (tool callbacks).
type Callbacks struct {
	// BeforeAgent runs first; returning content ends the run with one event
	// holding it.
	BeforeAgent func(ctx context.Context, cc *CallbackContext) (*genai.Content, error)
	// AfterAgent runs when the agent finishes (not after a transfer away);
	// returning content appends one more event.
	AfterAgent func(ctx context.Context, cc *CallbackContext) (*genai.Content, error)
	// BeforeModel may rewrite req, or return a response to skip the call.
	BeforeModel func(ctx context.Context, cc *CallbackContext, req *model.Request) (*model.Response, error)
	// AfterModel may return a response that replaces the model's.
	AfterModel func(ctx context.Context, cc *CallbackContext, resp *model.Response) (*model.Response, error)
	// OnModelError may return a response that recovers a failed call.
	OnModelError func(ctx context.Context, cc *CallbackContext, req *model.Request, err error) (*model.Response, error)
	// BeforeTool may rewrite args, or return a result to skip the tool.
	BeforeTool func(ctx context.Context, tc *ToolContext, tool Tool, args map[string]any) (map[string]any, error)
	// AfterTool may return a result that replaces the tool's.
	AfterTool func(ctx context.Context, tc *ToolContext, tool Tool, args, result map[string]any) (map[string]any, error)
	// OnToolError may return a result that recovers a failed call;
	// otherwise the model sees {"error": ...}.
	OnToolError func(ctx context.Context, tc *ToolContext, tool Tool, args map[string]any, err error) (map[string]any, error)
}

// LlmConfig configures an LlmAgent. Zero fields mean the defaults.
type LlmConfig struct {
	Name        string
	Description string
	// Model is required.
	Model model.LLM
	// Instruction is templated against state each turn (see InjectState).
	Instruction string
	// InstructionProvider replaces Instruction with a per-turn function.
	InstructionProvider InstructionProvider
	// GlobalInstruction is prefixed to the instruction, separated by a
	// blank line; also templated. A root agent's global instruction applies
	// to every agent of its tree that has none of its own.
	GlobalInstruction string
	// StaticInstruction is sent verbatim as the system instruction, never
	// templated, byte-identical across turns; the dynamic instruction then
	// rides at the end of the contents.
	StaticInstruction string
	Tools             []Tool
	Toolsets          []Toolset
	SubAgents         []Agent
	// DisableTransfer ignores transfer requests and registers no transfer
	// tool or sub-agent roster.
	DisableTransfer bool
	// MaxIterations caps the model-tool loop (default 16).
	MaxIterations int
	// OutputKey stores the final text (or parsed JSON with OutputSchema) in
	// state via the final event's stateDelta.
	OutputKey string
	// OutputSchema forces JSON output conforming to this JSON Schema.
	OutputSchema    map[string]any
	IncludeContents IncludeContents
	// GenerateConfig holds generation settings (temperature, ...) copied
	// into every request.
	GenerateConfig *genai.GenerateContentConfig
	Callbacks      Callbacks
	// Parameters declares the conversation parameters the agent uses (see
	// ParamSpec); it sees no others.
	Parameters []ParamSpec
}

// LlmAgent is an agent driven by a language model.
type LlmAgent struct {
	cfg LlmConfig
	// instruction is the dynamic instruction of every turn when plain is
	// set: no provider, nothing templated, and the global instruction its
	// own (see dynamicInstruction).
	instruction string
	plain       bool
}

var _ Agent = (*LlmAgent)(nil)

// NewLlmAgent validates cfg and returns the agent.
func NewLlmAgent(cfg LlmConfig) (*LlmAgent, error) {
	if cfg.Name == "" {
		return nil, errors.New("llm agent: empty name")
	}
	if cfg.Model == nil {
		return nil, fmt.Errorf("llm agent %q: no model", cfg.Name)
	}
	if cfg.MaxIterations < 0 {
		return nil, fmt.Errorf("llm agent %q: max_iterations must be positive", cfg.Name)
	}
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = DefaultMaxIterations
	}
	switch cfg.IncludeContents {
	case "":
		cfg.IncludeContents = IncludeDefault
	case IncludeDefault, IncludeNone:
	default:
		return nil, fmt.Errorf("llm agent %q: include_contents must be default or none, not %q", cfg.Name, cfg.IncludeContents)
	}
	if err := validateParamSpecs(cfg.Name, cfg.Parameters); err != nil {
		return nil, err
	}
	cfg.Parameters = append([]ParamSpec(nil), cfg.Parameters...)
	seen := map[string]bool{}
	for _, t := range cfg.Tools {
		if t == nil {
			return nil, fmt.Errorf("llm agent %q: nil tool", cfg.Name)
		}
		if seen[t.Name()] {
			return nil, fmt.Errorf("llm agent %q: duplicate tool %q", cfg.Name, t.Name())
		}
		seen[t.Name()] = true
	}
	cfg.Tools = append([]Tool(nil), cfg.Tools...)
	cfg.SubAgents = append([]Agent(nil), cfg.SubAgents...)
	a := &LlmAgent{cfg: cfg}
	if cfg.InstructionProvider == nil && !strings.Contains(cfg.GlobalInstruction, "{") && !strings.Contains(cfg.Instruction, "{") {
		// The same text every turn, joined once here. (Without a global
		// instruction of its own, the agent may get its root's: only
		// the root's own turns take this text then.)
		a.instruction, a.plain = joinNonEmpty("\n\n", cfg.GlobalInstruction, cfg.Instruction), true
	}
	return a, nil
}

// Name implements Agent.
func (a *LlmAgent) Name() string { return a.cfg.Name }

// Description implements Agent.
func (a *LlmAgent) Description() string { return a.cfg.Description }

// SubAgents implements Agent.
func (a *LlmAgent) SubAgents() []Agent { return a.cfg.SubAgents }

// Config returns a copy of the agent's configuration.
func (a *LlmAgent) Config() LlmConfig { return a.cfg }

// Run implements Agent.
func (a *LlmAgent) Run(ctx context.Context, inv *Invocation) iter.Seq2[*sessions.Event, error] {
	return func(yield func(*sessions.Event, error) bool) { a.run(ctx, inv, yield) }
}

// run is Run's sequence, called with its yield (see runAgentWith).
func (a *LlmAgent) run(ctx context.Context, inv *Invocation, yield func(*sessions.Event, error) bool) {
	// The callbacks are in functions of their own, out of this frame,
	// which stays on the stack under the whole run (see callModel).
	ctx, inv, ok := a.beforeAgent(ctx, inv, yield)
	if ok && a.loop(ctx, inv, yield) && a.cfg.Callbacks.AfterAgent != nil {
		a.afterAgent(ctx, inv, yield)
	}
}

// beforeAgent prepares the agent's context and invocation, checks its
// parameters and runs the before_agent callback. It reports whether the
// agent runs.
//
//go:noinline
func (a *LlmAgent) beforeAgent(ctx context.Context, inv *Invocation, yield func(*sessions.Event, error) bool) (context.Context, *Invocation, bool) {
	ctx = inv.sh.withAgentLogAttrs(ctx, a.cfg.Name)
	inv = inv.withAgent(a)
	if err := inv.checkParams(a); err != nil {
		// Reached without a caller to tell (a workflow step): the
		// agent does not run, and the event says why.
		ev := inv.NewEvent()
		ev.ErrorCode, ev.ErrorMessage = CodeMissingParameter, err.Error()
		yield(ev, nil)
		return ctx, inv, false
	}
	if cb := a.cfg.Callbacks.BeforeAgent; cb != nil && !a.agentCallback(ctx, inv, cb, "before_agent", yield) {
		return ctx, inv, false
	}
	return ctx, inv, true
}

// afterAgent runs the after_agent callback (set) of an agent that
// finished.
//
//go:noinline
func (a *LlmAgent) afterAgent(ctx context.Context, inv *Invocation, yield func(*sessions.Event, error) bool) {
	a.agentCallback(ctx, inv, a.cfg.Callbacks.AfterAgent, "after_agent", yield)
}

// agentCallback runs a before_agent or after_agent callback (which names
// it in errors) and yields the event it makes: its content, or a state
// change alone. It reports whether the agent goes on: not after an error,
// a stop by the consumer, or content.
func (a *LlmAgent) agentCallback(ctx context.Context, inv *Invocation, cb func(context.Context, *CallbackContext) (*genai.Content, error),
	which string, yield func(*sessions.Event, error) bool) bool {
	cc := newCallbackContext(inv)
	content, err := cb(ctx, cc)
	if err != nil {
		yield(nil, fmt.Errorf("agent %s: %s callback: %w", a.cfg.Name, which, err))
		return false
	}
	if content == nil && len(cc.actions.StateDelta) == 0 {
		return true
	}
	ev := inv.NewEvent()
	ev.Content = content
	ev.Actions = cc.actions
	return yield(ev, nil) && content == nil
}

// resume declares the agent's tools and, for a resumed invocation, first
// runs the calls the client has approved or rejected, then finishes the
// calls that were waiting. cont false means the loop ends with next (see
// afterCalls). Out of loop's frame, see callModel.
//
//go:noinline
func (a *LlmAgent) resume(ctx context.Context, inv *Invocation, yield func(*sessions.Event, error) bool) (tools *turnTools, next, cont bool) {
	tools, err := a.tools(ctx, inv)
	if err != nil {
		yield(nil, err)
		return nil, false, false
	}
	if inv.sh.noCalls.Load() || !a.madeCalls(inv) {
		return tools, false, true // no call to run again or to wait for
	}
	if next, cont := a.runConfirmed(ctx, inv, tools, yield); !cont {
		return nil, next, false
	}
	if last, pending := a.pendingCalls(inv); last != nil {
		var resumable []*genai.FunctionCall
		for _, c := range pending {
			if inv.resume[c.ID] != nil {
				resumable = append(resumable, c)
			}
		}
		if len(resumable) > 0 {
			next, cont := a.afterCalls(ctx, inv, resumable, tools, nil, yield)
			if !cont {
				return nil, next, false
			}
			if _, still := a.pendingCalls(inv); len(still) > 0 {
				return nil, false, false
			}
		} else if len(pending) > 0 {
			return nil, false, false // still waiting for the client
		}
	}
	return tools, false, true
}

//go:noinline
func (a *LlmAgent) maxIterations(inv *Invocation, yield func(*sessions.Event, error) bool) {
	ev := inv.NewEvent()
	ev.ErrorCode = CodeMaxIterations
	ev.ErrorMessage = fmt.Sprintf("agent %s stopped after max_iterations (%d) without a final answer", a.cfg.Name, a.cfg.MaxIterations)
	yield(ev, nil)
}

// loop runs the model-tool loop. It reports whether the agent finished on
// its own (false after a transfer, a stop by the consumer, or an error).
func (a *LlmAgent) loop(ctx context.Context, inv *Invocation, yield func(*sessions.Event, error) bool) bool {
	tools, next, cont := a.resume(ctx, inv, yield)
	if !cont {
		return next
	}
	for iter := 0; ; iter++ {
		if iter >= a.cfg.MaxIterations {
			a.maxIterations(inv, yield)
			return false
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return false
		}
		if iter > 0 {
			var err error
			if tools, err = a.tools(ctx, inv); err != nil {
				yield(nil, err)
				return false
			}
		}
		mr, err := a.buildRequest(ctx, inv, tools)
		if err != nil {
			yield(nil, fmt.Errorf("agent %s: %w", a.cfg.Name, err))
			return false
		}
		modelEv, ok := a.callModel(ctx, inv, mr, yield)
		if !ok {
			return false
		}
		calls := modelEv.FunctionCalls()
		for _, c := range calls {
			if t, ok := tools.byName[c.Name]; ok && t.IsLongRunning() {
				modelEv.LongRunningToolIDs = append(modelEv.LongRunningToolIDs, c.ID)
			}
		}
		if len(calls) == 0 && a.cfg.OutputKey != "" {
			a.stampOutput(modelEv)
		}
		if !yield(modelEv, nil) {
			return false
		}
		if modelEv.ErrorCode != "" || len(calls) == 0 {
			return true
		}
		next, cont := a.afterCalls(ctx, inv, calls, tools, modelEv.LongRunningToolIDs, yield)
		if !cont {
			return next
		}
	}
}

// afterCalls dispatches calls, yields the response event and acts on
// transfer, escalation and pauses (waitFor: long-running call ids the turn
// waits on). cont reports whether the loop goes on; when it does not,
// finished is loop's result.
func (a *LlmAgent) afterCalls(ctx context.Context, inv *Invocation, calls []*genai.FunctionCall, tools *turnTools, waitFor []string, yield func(*sessions.Event, error) bool) (finished, cont bool) {
	respEv, paused, ok := a.dispatch(ctx, inv, calls, tools, yield)
	if !ok {
		return false, false
	}
	if respEv != nil {
		if a.cfg.DisableTransfer {
			respEv.Actions.TransferToAgent = ""
		}
		if !yield(respEv, nil) {
			return false, false
		}
		for _, ask := range inv.confirmationRequests(respEv, calls) {
			if !yield(ask, nil) {
				return false, false
			}
			paused = append(paused, ask.LongRunningToolIDs...)
		}
		if target := respEv.Actions.TransferToAgent; target != "" && len(paused) == 0 {
			to := inv.resolveTransfer(a, target)
			if to == nil {
				yield(nil, fmt.Errorf("agent %s: transfer target %q vanished", a.cfg.Name, target))
				return false, false
			}
			inv.sh.svc.observer.Transfer(a.cfg.Name, to.Name())
			if tr := inv.sh.svc.tracer; tr != nil {
				tr.Transfer(ctx, a.cfg.Name, to.Name())
			}
			for ev, err := range runAgent(ctx, to, inv.withAgent(to)) {
				if !yield(ev, err) || err != nil {
					return false, false
				}
			}
			return false, false
		}
		if respEv.Actions.Escalate {
			return true, false
		}
	}
	if len(paused)+len(waitingOn(waitFor, respEv)) > 0 {
		return false, false
	}
	return true, true
}

// stampOutput stores the final response in state under output_key (set).
func (a *LlmAgent) stampOutput(ev *sessions.Event) {
	if ev.ErrorCode != "" {
		return
	}
	text := ev.Text()
	if strings.TrimSpace(text) == "" {
		return
	}
	var v any = text
	if a.cfg.OutputSchema != nil {
		var parsed any
		if err := json.Unmarshal([]byte(text), &parsed); err == nil {
			v = parsed
		}
	}
	if ev.Actions.StateDelta == nil {
		ev.Actions.StateDelta = map[string]any{}
	}
	ev.Actions.StateDelta[a.cfg.OutputKey] = v
}

// madeCalls reports whether the agent made a function call in the
// invocation: only then can it have confirmed calls to run again (see
// answeredConfirmations) or calls still waiting (see pendingCalls).
func (a *LlmAgent) madeCalls(inv *Invocation) bool {
	for _, ev := range inv.Events() {
		if ev.InvocationID == inv.id && ev.Author == a.cfg.Name && hasFunctionCall(ev.Content) {
			return true
		}
	}
	return false
}

// pendingCalls finds this agent's latest model event with function calls
// that still lack responses (a paused turn; see OpenCallsIn).
func (a *LlmAgent) pendingCalls(inv *Invocation) (*sessions.Event, []*genai.FunctionCall) {
	evs := inv.Events()
	var last *sessions.Event
	lastIdx := -1
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if !visible(ev.Branch, inv.branch) || ev.InvocationID != inv.id {
			if ev.InvocationID != inv.id {
				break
			}
			continue
		}
		if len(ev.FunctionResponses()) > 0 && len(ev.FunctionCalls()) == 0 {
			continue
		}
		if ev.Author == a.cfg.Name && len(ev.FunctionCalls()) > 0 {
			last, lastIdx = ev, i
		}
		break
	}
	if last == nil {
		return nil, nil
	}
	var pending []*genai.FunctionCall
	for _, c := range openCalls("", evs[lastIdx:], inv.id) {
		if c.Event == last {
			pending = append(pending, c.Call)
		}
	}
	return last, pending
}

// turnTools are the tools offered in one model call.
type turnTools struct {
	list   []Tool
	byName map[string]Tool // nil when there are none
	// unavailable names the toolsets that failed to supply their tools.
	unavailable []string
}

// noTools are the tools of a call that offers none (shared: never
// modified).
var noTools = &turnTools{}

// tools gathers the agent's tools, its toolsets' current tools, client
// tools and the transfer tool.
func (a *LlmAgent) tools(ctx context.Context, inv *Invocation) (*turnTools, error) {
	if len(a.cfg.Tools) == 0 && len(a.cfg.Toolsets) == 0 && len(inv.sh.clientTools) == 0 && !a.canTransfer(inv.sh.index) {
		return noTools, nil
	}
	tt := &turnTools{}
	add := func(t Tool) {
		if _, dup := tt.byName[t.Name()]; dup {
			return
		}
		if tt.byName == nil {
			tt.byName = map[string]Tool{}
		}
		tt.byName[t.Name()] = t
		tt.list = append(tt.list, t)
	}
	for _, t := range a.cfg.Tools {
		add(t)
	}
	var rc *ReadonlyContext
	if len(a.cfg.Toolsets) > 0 {
		rc = &ReadonlyContext{inv: inv}
	}
	for _, ts := range a.cfg.Toolsets {
		ts_tools, err := ts.Tools(ctx, rc)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("agent %s: toolset %s: %w", a.cfg.Name, ts.Name(), err)
			}
			// A toolset that cannot supply its tools (its server is down)
			// does not fail the agent: it runs without them, and the
			// model is told (see unavailableNote).
			tt.unavailable = append(tt.unavailable, ts.Name())
			if o, ok := inv.sh.svc.observer.(ToolsetObserver); ok {
				o.ToolsetUnavailable(a.cfg.Name, ts.Name(), err)
			}
			continue
		}
		for _, t := range ts_tools {
			add(t)
		}
	}
	if a.canTransfer(inv.sh.index) {
		add(&transferTool{targets: inv.sh.index.transferTargets(a)})
	}
	for _, t := range inv.clientTools(a) {
		add(t)
	}
	return tt, nil
}

// callModel makes one model call, of mr's request, yielding partial
// events, and returns the final model event (not yet yielded). ok is false
// when the run must end.
func (a *LlmAgent) callModel(ctx context.Context, inv *Invocation, mr *modelRequest, yield func(*sessions.Event, error) bool) (*sessions.Event, bool) {
	// Only the model call itself is in this function: its frame stays on
	// the stack under every delta of the answer (a push iterator runs its
	// consumer on the producer's stack) and, for a stream, under the whole
	// wait for the model; the callbacks and the bookkeeping around it are in
	// functions that return before it (see docs/benchmarks-memory.md).
	req := &mr.req
	cc := a.modelCallbackContext(inv)
	var final *model.Response
	ok := true
	if a.cfg.Callbacks.BeforeModel != nil {
		if final, ok = a.beforeModel(ctx, cc, req, yield); !ok {
			return nil, false
		}
	}
	if final == nil {
		// The model is called: once more against the invocation's
		// budget.
		if limit := inv.sh.cfg.MaxLLMCalls; limit >= 0 && inv.sh.llmCalls.Add(1) > int64(cmp.Or(limit, DefaultMaxLLMCalls)) {
			return a.budgetSpent(inv), true
		}
		start := time.Now()
		sent := inv.redactRequest(req)
		mctx, traced := ctx, (*ModelCall)(nil)
		if inv.sh.svc.tracer != nil {
			mctx, traced = a.modelStart(ctx, inv, sent)
		}
		if inv.sh.cfg.Streaming {
			// yieldPartial copies what a partial event keeps of a
			// partial response: model.WithCopiedPartials, made in the
			// request's allocation.
			mctx = mr.partials.Init(mctx)
		}
		// The responses' sequence is called with a function of its own,
		// not ranged over: a range's body is a closure as well, and when
		// it escapes (to the model), so does the loop's state, an
		// allocation of its own. The function escapes, so every
		// variable it assigns would go to the heap; it assigns only what
		// out points to, in the request's allocation.
		out := &mr.out
		a.cfg.Model.GenerateContent(mctx, sent, inv.sh.cfg.Streaming)(func(resp *model.Response, err error) bool {
			switch {
			case err != nil:
				out.err = err
				return false
			case resp.Partial:
				out.stopped = !yieldPartial(inv, resp, yield)
				return !out.stopped
			}
			out.final = resp
			return true
		})
		if out.stopped {
			modelEnd(mctx, inv, traced, ModelResult{Err: context.Canceled})
			return nil, false
		}
		callErr := out.err
		if final, ok = a.modelCalled(ctx, inv, cc, req, start, out.final, callErr, yield); !ok {
			modelEnd(mctx, inv, traced, ModelResult{Err: callErrOr(callErr, final)})
			return nil, false
		}
		if traced != nil {
			ev, ok := a.afterModel(ctx, inv, cc, final, yield)
			r := ModelResult{Response: final, Err: callErr}
			if ev != nil {
				r.EventID = ev.ID
			}
			modelEnd(mctx, inv, traced, r)
			return ev, ok
		}
	}
	return a.afterModel(ctx, inv, cc, final, yield)
}

// modelCallbackContext is the context of a model call's callbacks; nil
// when the agent has none (the call's event then has no actions of its
// own).
func (a *LlmAgent) modelCallbackContext(inv *Invocation) *CallbackContext {
	cb := &a.cfg.Callbacks
	if cb.BeforeModel == nil && cb.AfterModel == nil && cb.OnModelError == nil {
		return nil
	}
	return newCallbackContext(inv)
}

// beforeModel runs the before_model callback (set). It returns the
// callback's response (the model is not called), or ok false after
// yielding an error.
//
//go:noinline
func (a *LlmAgent) beforeModel(ctx context.Context, cc *CallbackContext, req *model.Request,
	yield func(*sessions.Event, error) bool) (final *model.Response, ok bool) {
	r, err := a.cfg.Callbacks.BeforeModel(ctx, cc, req)
	if err != nil {
		yield(nil, fmt.Errorf("agent %s: before_model callback: %w", a.cfg.Name, err))
		return nil, false
	}
	return r, true
}

// budgetSpent is the event that ends the agent when a model call would
// go beyond the invocation's max_llm_calls.
//
//go:noinline
func (a *LlmAgent) budgetSpent(inv *Invocation) *sessions.Event {
	ev := inv.NewEvent()
	ev.ErrorCode = CodeMaxLLMCalls
	ev.ErrorMessage = fmt.Sprintf("the invocation reached max_llm_calls (%d)", cmp.Or(inv.sh.cfg.MaxLLMCalls, DefaultMaxLLMCalls))
	return ev
}

// yieldPartial yields a partial response as a partial event; an empty one
// is skipped.
//
//go:noinline
func yieldPartial(inv *Invocation, resp *model.Response, yield func(*sessions.Event, error) bool) bool {
	if resp.Content == nil || len(resp.Content.Parts) == 0 {
		return true
	}
	return yield(inv.newPartialEvent(resp), nil)
}

// modelCalled records a finished model call and handles its failure: the
// on_model_error callback may answer instead. ok false means the error has
// been yielded.
//
//go:noinline
func (a *LlmAgent) modelCalled(ctx context.Context, inv *Invocation, cc *CallbackContext, req *model.Request, start time.Time,
	final *model.Response, callErr error, yield func(*sessions.Event, error) bool) (*model.Response, bool) {
	if callErr == nil && final == nil {
		callErr = fmt.Errorf("model %s returned no response", a.cfg.Model.Name())
	}
	if final != nil {
		inv.sh.usage.add(final.UsageMetadata)
	}
	inv.sh.svc.observer.ModelCall(a.cfg.Name, a.cfg.Model.Name(), time.Since(start), usageOf(final), callErr)
	if callErr == nil {
		return final, true
	}
	if cb := a.cfg.Callbacks.OnModelError; cb != nil && ctx.Err() == nil {
		r, err := cb(ctx, cc, req, callErr)
		if err != nil {
			yield(nil, fmt.Errorf("agent %s: on_model_error callback: %w", a.cfg.Name, err))
			return nil, false
		}
		final = r
	}
	if final == nil {
		if ctx.Err() != nil && errors.Is(callErr, ctx.Err()) {
			yield(nil, callErr)
		} else {
			yield(nil, fmt.Errorf("agent %s: %w", a.cfg.Name, callErr))
		}
		return nil, false
	}
	return final, true
}

// afterModel runs the after_model callback and makes the model's event.
//
//go:noinline
func (a *LlmAgent) afterModel(ctx context.Context, inv *Invocation, cc *CallbackContext, final *model.Response,
	yield func(*sessions.Event, error) bool) (*sessions.Event, bool) {
	if cb := a.cfg.Callbacks.AfterModel; cb != nil {
		r, err := cb(ctx, cc, final)
		if err != nil {
			yield(nil, fmt.Errorf("agent %s: after_model callback: %w", a.cfg.Name, err))
			return nil, false
		}
		if r != nil {
			final = r
		}
	}
	ev := inv.NewEvent()
	fillFromResponse(ev, final)
	if cc != nil {
		ev.Actions = cc.actions
	}
	ev.Content = cleanContent(ev.Content, inv)
	return ev, true
}

func usageOf(r *model.Response) *genai.GenerateContentResponseUsageMetadata {
	if r == nil {
		return nil
	}
	return r.UsageMetadata
}

func fillFromResponse(ev *sessions.Event, r *model.Response) {
	ev.Content = r.Content
	// A turn that calls functions goes on: ADK marks no such event
	// turnComplete (adk-web would show "Turn Complete" mid-turn).
	ev.TurnComplete = r.TurnComplete && !hasFunctionCall(r.Content)
	ev.FinishReason = r.FinishReason
	ev.ModelVersion = r.ModelVersion
	ev.UsageMetadata = r.UsageMetadata
	ev.ErrorCode = r.ErrorCode
	ev.ErrorMessage = r.ErrorMessage
	if ev.Content != nil && ev.Content.Role == "" {
		c := *ev.Content
		c.Role = genai.RoleModel
		ev.Content = &c
	}
}

// contentRoom is room for the copy of a content of one part (a streamed
// delta's): a onePartContent with room for the part itself.
type contentRoom struct {
	onePartContent
	part genai.Part
}

// copyOf copies c into r: the Content, its Parts array and the Parts, what
// a provider rewrites in a transient response (model.Response.Transient),
// not what they point to. A content of more parts than r has room for
// gets arrays of its own.
func (r *contentRoom) copyOf(c *genai.Content) *genai.Content {
	if c == nil {
		return nil
	}
	r.c = *c
	if len(c.Parts) == 1 && c.Parts[0] != nil {
		r.part = *c.Parts[0]
		r.parts[0] = &r.part
		r.c.Parts = r.parts[:]
		return &r.c
	}
	parts := make([]genai.Part, len(c.Parts))
	r.c.Parts = make([]*genai.Part, len(c.Parts))
	for i, p := range c.Parts {
		if p != nil {
			parts[i] = *p
			r.c.Parts[i] = &parts[i]
		}
	}
	return &r.c
}

// cleanContent drops empty text parts (they make a turn with calls look
// final to some clients) and gives every function call an id.
func cleanContent(c *genai.Content, inv *Invocation) *genai.Content {
	if c == nil {
		return nil
	}
	if clean(c) {
		return c // contents are not modified once made: no copy
	}
	out := &genai.Content{Role: c.Role}
	for _, p := range c.Parts {
		if p == nil {
			continue
		}
		if p.FunctionCall != nil && p.FunctionCall.ID == "" {
			fc := *p.FunctionCall
			fc.ID = "call_" + strings.ReplaceAll(inv.sh.svc.newID(), "-", "")
			np := *p
			np.FunctionCall = &fc
			p = &np
		}
		if emptyPart(p) {
			continue
		}
		out.Parts = append(out.Parts, p)
	}
	if len(out.Parts) == 0 {
		return nil
	}
	return out
}

// clean reports whether cleanContent would leave c as it is: parts, none
// of them nil or empty, and every function call with an id.
func clean(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p == nil || emptyPart(p) || (p.FunctionCall != nil && p.FunctionCall.ID == "") {
			return false
		}
	}
	return len(c.Parts) > 0
}

// emptyPart reports a part with nothing in it (an empty text part).
func emptyPart(p *genai.Part) bool {
	return p.Text == "" && p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil &&
		p.FileData == nil && p.ExecutableCode == nil && p.CodeExecutionResult == nil && len(p.ThoughtSignature) == 0
}

// callResult is the outcome of one function call.
type callResult struct {
	call   *genai.FunctionCall
	resp   map[string]any
	tc     *ToolContext
	paused []string
}

// dispatch runs the calls concurrently and builds their response event.
// Events of sub-invocations emitted by the tools are yielded as they come.
// ok is false when the consumer stopped.
func (a *LlmAgent) dispatch(ctx context.Context, inv *Invocation, calls []*genai.FunctionCall, tools *turnTools, yield func(*sessions.Event, error) bool) (respEv *sessions.Event, paused []string, ok bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]callResult, len(calls))
	sub := make(chan *sessions.Event)
	emit := func(ev *sessions.Event) {
		select {
		case sub <- ev:
		case <-ctx.Done():
		}
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i] = a.runCall(ctx, inv, c, tools, emit) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
wait:
	for {
		select {
		case ev := <-sub:
			if !yield(ev, nil) {
				cancel()
				<-done
				return nil, nil, false
			}
		case <-done:
			break wait
		}
	}

	ev := inv.NewEvent()
	ev.Content = &genai.Content{Role: genai.RoleUser}
	for _, r := range results {
		paused = append(paused, r.paused...)
		mergeActions(&ev.Actions, &r.tc.actions)
		if r.resp == nil {
			continue
		}
		resp := r.resp
		if len(resp) == 0 {
			// Gemini rejects an empty response object; ADK wraps as result.
			resp = map[string]any{"result": nil}
		}
		// A coded failure (MISSING_PARAMETER, ...) is also carried by the
		// event itself, so clients see it without reading the response.
		if code, ok := resp["code"].(string); ok && ev.ErrorCode == "" {
			if msg, ok := resp["error"].(string); ok {
				ev.ErrorCode, ev.ErrorMessage = code, msg
			}
		}
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: r.call.ID, Name: r.call.Name, Response: resp}})
	}
	if len(ev.Content.Parts) == 0 {
		ev.Content = nil
		if isEmptyActions(ev.Actions) {
			return nil, paused, true
		}
	}
	return ev, paused, true
}

// runCall runs one function call through the callbacks; failures and panics
// become {"error": ...} results.
func (a *LlmAgent) runCall(ctx context.Context, inv *Invocation, call *genai.FunctionCall, tools *turnTools, emit func(*sessions.Event)) (res callResult) {
	tc := &ToolContext{CallbackContext: *newCallbackContext(inv), callID: call.ID, resume: inv.resume[call.ID], emit: emit,
		confirmation: inv.confirmations[call.ID]}
	res = callResult{call: call, tc: tc}
	start := time.Now()
	t, found := tools.byName[call.Name]
	var runErr error
	if tr := inv.sh.svc.tracer; tr != nil {
		// Registered first, so it runs after the recovery below.
		traced := &ToolCall{TraceScope: TraceScope{inv: inv}, Tool: call.Name, CallID: call.ID, Args: call.Args}
		if found {
			traced.Description = t.Description()
		}
		ctx = tr.ToolStart(ctx, traced)
		defer func() { tr.ToolEnd(ctx, traced, res.resp, runErr) }()
	}
	defer func() {
		if p := recover(); p != nil {
			runErr = fmt.Errorf("tool %s panicked: %v", call.Name, p)
			res.resp = errorResult(runErr)
		}
		res.paused = tc.pausedOn
		inv.sh.svc.observer.ToolCall(a.cfg.Name, call.Name, time.Since(start), runErr)
	}()
	if !found {
		runErr = fmt.Errorf("tool %q not found", call.Name)
		msg := fmt.Sprintf("tool %q not found; available tools: %s", call.Name, strings.Join(toolNames(tools), ", "))
		if len(tools.unavailable) > 0 {
			msg += "; unavailable right now: the tools of " + strings.Join(quoteAll(tools.unavailable), ", ")
		}
		res.resp = errorResult(errors.New(msg))
		return res
	}
	ct, callable := t.(CallableTool)
	if !callable {
		runErr = fmt.Errorf("tool %q cannot be called", call.Name)
		res.resp = errorResult(runErr)
		return res
	}
	args := maps.Clone(call.Args)
	if args == nil {
		args = map[string]any{}
	}
	if resp, done := gateConfirmation(tc, t, args); done {
		res.resp = resp
		return res
	}
	cb := a.cfg.Callbacks
	if cb.BeforeTool != nil {
		r, err := cb.BeforeTool(ctx, tc, t, args)
		if err != nil {
			runErr = err
			res.resp = errorResult(err)
			return res
		}
		if r != nil {
			res.resp = r
			return res
		}
	}
	result, err := ct.Run(ctx, tc, args)
	if err != nil {
		runErr = err
		if cb.OnToolError != nil {
			r, cbErr := cb.OnToolError(ctx, tc, t, args, err)
			if cbErr != nil {
				res.resp = errorResult(cbErr)
				return res
			}
			if r != nil {
				res.resp = r
				return res
			}
		}
		res.resp = errorResult(err)
		return res
	}
	if cb.AfterTool != nil {
		r, err := cb.AfterTool(ctx, tc, t, args, result)
		if err != nil {
			runErr = err
			res.resp = errorResult(err)
			return res
		}
		if r != nil {
			result = r
		}
	}
	res.resp = result
	return res
}

func toolNames(t *turnTools) []string {
	var out []string
	for _, tl := range t.list {
		if _, ok := tl.(CallableTool); ok {
			out = append(out, tl.Name())
		}
	}
	return out
}

func mergeActions(dst, src *sessions.EventActions) {
	if len(src.StateDelta) > 0 {
		if dst.StateDelta == nil {
			dst.StateDelta = map[string]any{}
		}
		maps.Copy(dst.StateDelta, src.StateDelta)
	}
	if len(src.ArtifactDelta) > 0 {
		if dst.ArtifactDelta == nil {
			dst.ArtifactDelta = map[string]int64{}
		}
		maps.Copy(dst.ArtifactDelta, src.ArtifactDelta)
	}
	if len(src.RequestedToolConfirmations) > 0 {
		if dst.RequestedToolConfirmations == nil {
			dst.RequestedToolConfirmations = map[string]map[string]any{}
		}
		maps.Copy(dst.RequestedToolConfirmations, src.RequestedToolConfirmations)
	}
	if src.TransferToAgent != "" {
		dst.TransferToAgent = src.TransferToAgent
	}
	dst.Escalate = dst.Escalate || src.Escalate
	dst.SkipSummarization = dst.SkipSummarization || src.SkipSummarization
}

func isEmptyActions(a sessions.EventActions) bool {
	return len(a.StateDelta) == 0 && len(a.ArtifactDelta) == 0 && len(a.RequestedToolConfirmations) == 0 &&
		a.TransferToAgent == "" && !a.Escalate && !a.SkipSummarization
}
