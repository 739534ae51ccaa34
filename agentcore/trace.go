package agentcore

import (
	"context"
	"errors"
	"iter"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// Tracer hears the runtime's units of work begin and end: every agent run
// (workflow agents, transfer targets, agents called as tools and remote
// agents included), every model call and every tool call. Each Start method
// returns the context the unit runs with, which is the context its End
// method is given: a tracer keeps its span there (package telemetry plugs
// OpenTelemetry in this way), and units started inside it (a tool's HTTP
// request, an agent called as a tool) see it as their parent.
//
// A Runner without a Tracer calls none of this and builds none of the
// arguments. Every method may be called from several goroutines at once.
type Tracer interface {
	AgentStart(ctx context.Context, s TraceScope) context.Context
	AgentEnd(ctx context.Context, s TraceScope, err error)
	ModelStart(ctx context.Context, c *ModelCall) context.Context
	ModelEnd(ctx context.Context, c *ModelCall, r ModelResult)
	ToolStart(ctx context.Context, c *ToolCall) context.Context
	ToolEnd(ctx context.Context, c *ToolCall, result map[string]any, err error)
	// Transfer reports that the agent running in ctx hands the turn to
	// another agent.
	Transfer(ctx context.Context, from, to string)
}

// TraceScope is where a traced unit runs: the agent, its conversation and
// invocation. It also redacts, for what a tracer records, exactly as the
// agent's model requests are redacted.
type TraceScope struct{ inv *Invocation }

// Agent is the name of the running agent.
func (s TraceScope) Agent() string { return s.inv.agent.Name() }

// AgentDescription is the running agent's description.
func (s TraceScope) AgentDescription() string { return s.inv.agent.Description() }

// SessionID is the conversation's session id (a sub-conversation's, for an
// agent called as a tool).
func (s TraceScope) SessionID() string { return s.inv.SessionID() }

// InvocationID is the invocation's id.
func (s TraceScope) InvocationID() string { return s.inv.id }

// AppName is the app (virtual model) the session belongs to.
func (s TraceScope) AppName() string { return s.inv.AppName() }

// Branch is the parallel branch path, empty outside fan-outs.
func (s TraceScope) Branch() string { return s.inv.branch }

// UserID is the session's user, or empty when the user id is the value of
// a hidden parameter (a parameter taken from the token's user claim that
// models may not see).
func (s TraceScope) UserID() string {
	id := s.inv.UserID()
	if ps := s.inv.sh.pstate; ps != nil && ps.secrets != nil && ps.secrets.has(id) {
		return ""
	}
	return id
}

// Redact returns v with every hidden value the agent's model may not see
// replaced by "[hidden:<name>]", as in the agent's model requests (see
// Invocation.Redactor). v is not changed.
func (s TraceScope) Redact(v any) any { return s.inv.Redactor().Value(v) }

// RedactText is Redact for a string.
func (s TraceScope) RedactText(text string) string { return s.inv.Redactor().Text(text) }

// RedactContent is Redact for a content (every part type).
func (s TraceScope) RedactContent(c *genai.Content) *genai.Content {
	return s.inv.Redactor().Content(c)
}

// ModelCall is one model call as a Tracer sees it.
type ModelCall struct {
	TraceScope
	// Model is the model id sent upstream.
	Model string
	// Provider is the GenAI conventions' provider name ("openai",
	// "gcp.gemini"), empty when the model does not say (model.ProviderNamer).
	Provider string
	// Request is the request as sent: hidden values already redacted.
	Request *model.Request
	Stream  bool
}

// ModelResult is how a model call ended.
type ModelResult struct {
	// Response is the final (aggregated) response, nil when the call failed
	// and no on_model_error callback answered.
	Response *model.Response
	// EventID is the id of the event that carries the response, when one
	// was made.
	EventID string
	Err     error
}

// ToolCall is one tool call as a Tracer sees it.
type ToolCall struct {
	TraceScope
	Tool        string
	Description string
	CallID      string
	// Args are the arguments the model sent (not redacted: use Redact).
	Args map[string]any
}

// runAgent runs agent a on inv (already derived for a), inside the
// tracer's agent unit when the run is traced.
func runAgent(ctx context.Context, a Agent, inv *Invocation) iter.Seq2[*sessions.Event, error] {
	tr := inv.sh.svc.tracer
	if tr == nil {
		return a.Run(ctx, inv)
	}
	return func(yield func(*sessions.Event, error) bool) {
		s := TraceScope{inv: inv}
		ctx := tr.AgentStart(ctx, s)
		var runErr error
		defer func() { tr.AgentEnd(ctx, s, runErr) }()
		for ev, err := range a.Run(ctx, inv) {
			runErr = err
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// runAgentWith runs agent a on inv as a range over runAgent's sequence
// with yield as its body does. An untraced LLM agent runs straight into
// yield, without the sequence, which would be an allocation of its own.
func runAgentWith(ctx context.Context, a Agent, inv *Invocation, yield func(*sessions.Event, error) bool) {
	if la, ok := a.(*LlmAgent); ok && inv.sh.svc.tracer == nil {
		la.run(ctx, inv, yield)
		return
	}
	runAgent(ctx, a, inv)(yield)
}

// modelStart begins a model call of a traced run: the context the call
// runs with, and the call's description for modelEnd.
//
//go:noinline
func (a *LlmAgent) modelStart(ctx context.Context, inv *Invocation, req *model.Request) (context.Context, *ModelCall) {
	tr := inv.sh.svc.tracer
	c := &ModelCall{TraceScope: TraceScope{inv: inv}, Model: req.Model, Request: req, Stream: inv.sh.cfg.Streaming}
	if c.Model == "" {
		c.Model = a.cfg.Model.Name()
	}
	if p, ok := a.cfg.Model.(model.ProviderNamer); ok {
		c.Provider = p.ProviderName()
	}
	return tr.ModelStart(ctx, c), c
}

// modelEnd ends a traced model call (c from modelStart; nil: not traced).
func modelEnd(ctx context.Context, inv *Invocation, c *ModelCall, r ModelResult) {
	if c != nil {
		inv.sh.svc.tracer.ModelEnd(ctx, c, r)
	}
}

// has reports whether v is one of the hidden values.
func (s *secretSet) has(v string) bool {
	if v == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.values[v]
	return ok
}

// callErrOr is the error a failed model call is traced with.
func callErrOr(err error, final *model.Response) error {
	if err == nil && final == nil {
		return errNoResponse
	}
	return err
}

var errNoResponse = errors.New("the model returned no response")

// hasFunctionCall reports whether c calls a function.
func hasFunctionCall(c *genai.Content) bool {
	if c == nil {
		return false
	}
	for _, p := range c.Parts {
		if p != nil && p.FunctionCall != nil {
			return true
		}
	}
	return false
}
