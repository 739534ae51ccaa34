package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// InputRequiredToolName is the long-running function a remote agent's
// event calls when its task waits for the client (input-required or
// auth-required). The client answers it like any long-running call; the
// function response continues the same remote task. Its arguments are
// {"agent", "state", "message", "task_id", "context_id"} (and "data" when
// the remote attached structured data).
const InputRequiredToolName = "a2a_input_required"

// Error codes on the events of a remote agent whose task did not complete.
// The parent model sees them (with the message) as the agent tool's error.
const (
	// CodeFailed: the remote task failed or was rejected.
	CodeFailed = "A2A_FAILED"
	// CodeCanceled: the remote task was canceled on the remote side.
	CodeCanceled = "A2A_CANCELED"
	// CodeTimeout: the task did not finish within the endpoint's timeout;
	// it was canceled.
	CodeTimeout = "A2A_TIMEOUT"
	// CodeError: the remote agent could not be reached, refused the call,
	// or answered outside the protocol.
	CodeError = "A2A_ERROR"
)

// Keys of the custom metadata on a remote agent's events: which remote
// task and context the event belongs to, on which endpoint.
const (
	MetaTaskID    = "a2a:task_id"
	MetaContextID = "a2a:context_id"
	MetaEndpoint  = "a2a:endpoint"
	MetaState     = "a2a:state"
)

// Defaults of an Endpoint.
const (
	DefaultTimeout      = 5 * time.Minute
	DefaultPollInterval = 500 * time.Millisecond
)

// cancelGrace bounds the tasks/cancel sent after our run stopped.
const cancelGrace = 5 * time.Second

// Endpoint is where a remote agent lives and how to call it.
type Endpoint struct {
	// URL is the agent's base URL (its card is found under it) or the URL
	// of its card.
	URL   string
	Token model.Secret
	// Timeout bounds one call, from sending to the task's end (default
	// DefaultTimeout).
	Timeout time.Duration
	// PollInterval spaces tasks/get while polling (default
	// DefaultPollInterval).
	PollInterval time.Duration
	// Streaming forces message/stream (true) or polling (false); nil
	// follows the agent card's capabilities.streaming.
	Streaming *bool
}

// Resolver looks up a remote agent's current endpoint by name when the
// agent is called. ok is false when it has none for that name.
type Resolver interface {
	Endpoint(agent string) (ep Endpoint, ok bool)
}

// Directory is a Resolver whose endpoints are replaced all at once, as a
// config reload does. It is safe for concurrent use.
type Directory struct {
	p atomic.Pointer[map[string]Endpoint]
}

var _ Resolver = (*Directory)(nil)

// NewDirectory returns a directory holding endpoints.
func NewDirectory(endpoints map[string]Endpoint) *Directory {
	d := &Directory{}
	d.Set(endpoints)
	return d
}

// Set replaces every endpoint; calls that already started keep theirs.
func (d *Directory) Set(endpoints map[string]Endpoint) {
	m := maps.Clone(endpoints)
	if m == nil {
		m = map[string]Endpoint{}
	}
	d.p.Store(&m)
}

// Endpoint implements Resolver.
func (d *Directory) Endpoint(agent string) (Endpoint, bool) {
	m := d.p.Load()
	if m == nil {
		return Endpoint{}, false
	}
	ep, ok := (*m)[agent]
	return ep, ok
}

// AgentConfig configures a remote Agent.
type AgentConfig struct {
	Name        string
	Description string
	// Endpoint is used when Resolver has none for Name.
	Endpoint Endpoint
	// Client makes the calls; required.
	Client *Client
	// Resolver, when set, is asked for the endpoint at every call, so a
	// reload applies to the next call without rebuilding the tree.
	Resolver Resolver
	Logger   *slog.Logger
	// NewID generates message and call ids (default random).
	NewID func() string
}

// Agent is an agent on another server, called over A2A. It has no
// sub-agents; as a transfer target it answers the conversation, as an agent
// tool its sub-conversation. Each call sends the user's messages since the
// agent last spoke (or the function response that answers its pause) and
// turns the remote task's outcome into one event: the result text, an
// error (code CodeFailed, CodeCanceled, CodeTimeout or CodeError), or a
// pause on InputRequiredToolName. Cancelling the run cancels the remote
// task. Remote context ids are kept per session in the events' custom
// metadata, so one of our sessions is one remote context.
type Agent struct {
	cfg AgentConfig
}

var _ agentcore.Agent = (*Agent)(nil)

// NewAgent validates cfg and returns the agent.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	if cfg.Name == "" {
		return nil, errors.New("a2a agent: empty name")
	}
	if cfg.Client == nil {
		return nil, fmt.Errorf("a2a agent %q: no client", cfg.Name)
	}
	if err := ValidateEndpoint(cfg.Endpoint); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.NewID == nil {
		cfg.NewID = func() string { return strings.ReplaceAll(uuid.NewString(), "-", "") }
	}
	return &Agent{cfg: cfg}, nil
}

// ValidateEndpoint checks an endpoint: an absolute http(s) URL, no bearer
// token over plain http to a host other than the loopback interface, no
// negative durations.
func ValidateEndpoint(ep Endpoint) error {
	var errs []error
	if ep.URL == "" {
		errs = append(errs, errors.New("the endpoint URL is required"))
	} else if !strings.HasPrefix(ep.URL, "http://") && !strings.HasPrefix(ep.URL, "https://") {
		errs = append(errs, fmt.Errorf("endpoint %q is not an absolute http(s) URL", ep.URL))
	} else if ep.Token != "" && !TokenAllowed(ep.URL) {
		errs = append(errs, fmt.Errorf("a bearer token may only be sent over https (or plain http to the loopback interface), not to %q", ep.URL))
	}
	if ep.Timeout < 0 {
		errs = append(errs, errors.New("the timeout must not be negative"))
	}
	if ep.PollInterval < 0 {
		errs = append(errs, errors.New("the poll interval must not be negative"))
	}
	return errors.Join(errs...)
}

// Name implements agentcore.Agent.
func (a *Agent) Name() string { return a.cfg.Name }

// Description implements agentcore.Agent.
func (a *Agent) Description() string { return a.cfg.Description }

// SubAgents implements agentcore.Agent: a remote agent has none here.
func (a *Agent) SubAgents() []agentcore.Agent { return nil }

// Endpoint is the endpoint the next call would use.
func (a *Agent) Endpoint() Endpoint {
	if r := a.cfg.Resolver; r != nil {
		if ep, ok := r.Endpoint(a.cfg.Name); ok {
			return ep
		}
	}
	return a.cfg.Endpoint
}

// call is one prepared remote call.
type call struct {
	url   string
	token model.Secret
	msg   Message
}

// Run implements agentcore.Agent.
func (a *Agent) Run(ctx context.Context, inv *agentcore.Invocation) iter.Seq2[*sessions.Event, error] {
	return func(yield func(*sessions.Event, error) bool) {
		ctx := agentcore.WithLogAttrs(ctx, slog.String("agent", a.cfg.Name))
		ep := a.Endpoint()
		c, err := a.prepare(inv, ep)
		if err != nil {
			yield(a.errorEvent(inv, CodeError, err.Error(), nil), nil)
			return
		}
		timeout := ep.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r := &remoteRun{a: a, inv: inv, call: c, yield: yield, stream: inv.RunConfig().Streaming, contextID: c.msg.ContextID}
		err = r.run(cctx, ep)
		if r.stopped || err != nil || !(r.state.Terminal() || r.state.Interrupted() || r.direct != nil) {
			r.cancelRemote(ctx)
		}
		switch {
		case r.stopped:
			return
		case err == nil:
			yield(r.outcome(), nil)
		case ctx.Err() != nil:
			yield(nil, ctx.Err())
		case cctx.Err() != nil:
			yield(a.errorEvent(inv, CodeTimeout, fmt.Sprintf("remote agent %s did not finish within %s; its task was canceled", a.cfg.Name, timeout), r.meta()), nil)
		default:
			a.cfg.Logger.WarnContext(ctx, "remote agent call failed", "endpoint", c.url, "err", err)
			yield(a.errorEvent(inv, CodeError, fmt.Sprintf("remote agent %s %s", a.cfg.Name, describe(err)), r.meta()), nil)
		}
	}
}

// prepare decides what to send: the answer to this agent's pause when the
// turn carries one, else the user's messages since the agent last spoke.
// Either is redacted of the conversation's hidden values first.
func (a *Agent) prepare(inv *agentcore.Invocation, ep Endpoint) (call, error) {
	evs := inv.Events()
	red := inv.Redactor()
	if uc := inv.UserContent(); uc != nil {
		for _, p := range uc.Parts {
			if p == nil || p.FunctionResponse == nil {
				continue
			}
			if meta, ok := a.pausedCall(evs, p.FunctionResponse.ID); ok {
				url, _ := meta[MetaEndpoint].(string)
				taskID, _ := meta[MetaTaskID].(string)
				contextID, _ := meta[MetaContextID].(string)
				if url == "" || taskID == "" {
					return call{}, errors.New("the paused remote task is unknown")
				}
				// The task lives where it was paused, even if the
				// endpoint changed since; credentials only go to the
				// URL they were configured for.
				var token model.Secret
				switch url {
				case ep.URL:
					token = ep.Token
				case a.cfg.Endpoint.URL:
					token = a.cfg.Endpoint.Token
				}
				msg := Message{MessageID: a.cfg.NewID(), Role: RoleUser, TaskID: taskID, ContextID: contextID,
					Parts: answerParts(red.Object(p.FunctionResponse.Response))}
				return call{url: url, token: token, msg: msg}, nil
			}
		}
	}
	var parts []Part
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Author == a.cfg.Name {
			break
		}
		if ev.Author == "user" {
			parts = append(contentParts(red.Content(ev.Content)), parts...)
		}
	}
	if len(parts) == 0 {
		parts = contentParts(red.Content(inv.UserContent()))
	}
	if len(parts) == 0 {
		return call{}, errors.New("there is no message to send to the remote agent")
	}
	msg := Message{MessageID: a.cfg.NewID(), Role: RoleUser, Parts: parts}
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Author != a.cfg.Name || ev.CustomMetadata == nil {
			continue
		}
		if url, _ := ev.CustomMetadata[MetaEndpoint].(string); url == ep.URL {
			msg.ContextID, _ = ev.CustomMetadata[MetaContextID].(string)
		}
		break
	}
	return call{url: ep.URL, token: ep.Token, msg: msg}, nil
}

// pausedCall finds this agent's pause with call id in the history.
func (a *Agent) pausedCall(evs []*sessions.Event, id string) (map[string]any, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Author != a.cfg.Name {
			continue
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.ID == id && fc.Name == InputRequiredToolName {
				return ev.CustomMetadata, true
			}
		}
	}
	return nil, false
}

// contentParts converts the text and files of our content to A2A parts.
func contentParts(c *genai.Content) []Part {
	if c == nil {
		return nil
	}
	var out []Part
	for _, p := range c.Parts {
		switch {
		case p == nil || p.Thought:
		case p.Text != "":
			out = append(out, TextPart(p.Text))
		case p.InlineData != nil:
			out = append(out, Part{Kind: "file", File: &File{Bytes: p.InlineData.Data, MediaType: p.InlineData.MIMEType, Name: p.InlineData.DisplayName}})
		case p.FileData != nil:
			out = append(out, Part{Kind: "file", File: &File{URI: p.FileData.FileURI, MediaType: p.FileData.MIMEType, Name: p.FileData.DisplayName}})
		}
	}
	return out
}

// answerParts turns the client's function response to a pause into the
// message that continues the remote task: its "text" (or "result", as an
// OpenAI tool message in plain text arrives) as a text part, any other
// fields as one data part.
func answerParts(resp map[string]any) []Part {
	var parts []Part
	rest := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(resp)) {
		v := resp[k]
		if s, ok := v.(string); ok && (k == "text" || k == "result") {
			parts = append(parts, TextPart(s))
			continue
		}
		rest[k] = v
	}
	if len(rest) > 0 {
		parts = append(parts, DataPart(rest))
	}
	if len(parts) == 0 {
		parts = []Part{TextPart("")}
	}
	return parts
}

func (a *Agent) errorEvent(inv *agentcore.Invocation, code, msg string, meta map[string]any) *sessions.Event {
	ev := inv.NewEvent()
	ev.ErrorCode, ev.ErrorMessage, ev.CustomMetadata = code, msg, meta
	ev.TurnComplete = true
	return ev
}

// remoteRun follows one remote task.
type remoteRun struct {
	a      *Agent
	inv    *agentcore.Invocation
	call   call
	yield  func(*sessions.Event, error) bool
	stream bool // yield partial text events
	target *Target

	taskID, contextID string
	state             TaskState
	status            *Message
	artifacts         []*Artifact
	direct            *Message // the agent answered with a message, no task
	stopped           bool     // the consumer stopped
}

func (r *remoteRun) run(ctx context.Context, ep Endpoint) error {
	t, err := r.a.cfg.Client.Resolve(ctx, r.call.url, r.call.token)
	if err != nil {
		return err
	}
	r.target = t
	streaming := t.Streams()
	if ep.Streaming != nil && r.call.url == ep.URL {
		streaming = *ep.Streaming
	}
	params := SendParams{Message: r.call.msg, AcceptedOutputModes: []string{"text/plain", "application/json"}}
	if streaming {
		if err := r.runStream(ctx, params); err != nil || r.done() || r.stopped {
			return err
		}
		if r.taskID == "" {
			return errors.New("the stream ended without a task")
		}
		// The stream ended early: follow the task by polling.
	} else {
		params.ReturnImmediately = true
		// The send is not abandoned the moment our run is canceled: the
		// answer names the task to cancel. It gets a short grace.
		sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
		if d, ok := ctx.Deadline(); ok {
			sctx, scancel = context.WithDeadline(context.WithoutCancel(ctx), d)
		}
		stop := context.AfterFunc(ctx, func() { time.AfterFunc(cancelGrace, scancel) })
		e, err := r.a.cfg.Client.SendMessage(sctx, t, params)
		stop()
		scancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		r.apply(e)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	interval := ep.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for !r.done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		task, err := r.a.cfg.Client.GetTask(ctx, t, r.taskID)
		if err != nil {
			return err
		}
		r.apply(Event{Task: task})
		timer.Reset(interval)
	}
	return nil
}

func (r *remoteRun) done() bool {
	return r.direct != nil || r.state.Terminal() || r.state.Interrupted()
}

func (r *remoteRun) runStream(ctx context.Context, params SendParams) error {
	for e, err := range r.a.cfg.Client.StreamMessage(ctx, r.target, params) {
		if err != nil {
			return err
		}
		delta := r.apply(e)
		if delta != "" && r.stream {
			ev := r.inv.NewEvent()
			ev.Partial = true
			ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: delta}}}
			if !r.yield(ev, nil) {
				r.stopped = true
				return nil
			}
		}
		if r.done() || (e.Status != nil && e.Status.Final) {
			return nil
		}
	}
	return nil
}

// apply records an event of the task and returns the text it added.
func (r *remoteRun) apply(e Event) string {
	switch {
	case e.Message != nil:
		r.direct = e.Message
		if e.Message.ContextID != "" {
			r.contextID = e.Message.ContextID
		}
	case e.Task != nil:
		t := e.Task
		r.setTask(t.ID, t.ContextID, t.Status)
		if len(t.Artifacts) > 0 {
			r.artifacts = r.artifacts[:0]
			for i := range t.Artifacts {
				r.artifacts = append(r.artifacts, &t.Artifacts[i])
			}
		}
	case e.Status != nil:
		r.setTask(e.Status.TaskID, e.Status.ContextID, e.Status.Status)
	case e.Artifact != nil:
		u := e.Artifact
		r.setTask(u.TaskID, u.ContextID, TaskStatus{})
		for _, have := range r.artifacts {
			if have.ArtifactID == u.Artifact.ArtifactID && u.Artifact.ArtifactID != "" {
				if u.Append {
					have.Parts = append(have.Parts, u.Artifact.Parts...)
				} else {
					have.Parts = u.Artifact.Parts
				}
				return partsText(u.Artifact.Parts)
			}
		}
		art := u.Artifact
		r.artifacts = append(r.artifacts, &art)
		return partsText(art.Parts)
	}
	return ""
}

func (r *remoteRun) setTask(id, contextID string, st TaskStatus) {
	if id != "" {
		r.taskID = id
	}
	if contextID != "" {
		r.contextID = contextID
	}
	if st.State != "" {
		r.state = st.State
		r.status = st.Message
	}
}

// cancelRemote cancels the task on the remote side, when one was started
// and has not ended, within a short grace of its own.
func (r *remoteRun) cancelRemote(ctx context.Context) {
	if r.taskID == "" || r.target == nil || r.state.Terminal() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
	defer cancel()
	if _, err := r.a.cfg.Client.CancelTask(cctx, r.target, r.taskID); err != nil {
		r.a.cfg.Logger.WarnContext(ctx, "canceling the remote task failed", "task_id", r.taskID, "err", err)
	}
}

func (r *remoteRun) meta() map[string]any {
	if r.taskID == "" && r.contextID == "" {
		return nil
	}
	m := map[string]any{MetaEndpoint: r.call.url}
	if r.taskID != "" {
		m[MetaTaskID] = r.taskID
	}
	if r.contextID != "" {
		m[MetaContextID] = r.contextID
	}
	if r.state != "" {
		m[MetaState] = string(r.state)
	}
	return m
}

func (r *remoteRun) text() string {
	var b strings.Builder
	for _, a := range r.artifacts {
		b.WriteString(partsText(a.Parts))
	}
	return b.String()
}

// outcome is the event the finished call ends with.
func (r *remoteRun) outcome() *sessions.Event {
	a, inv := r.a, r.inv
	ev := inv.NewEvent()
	ev.TurnComplete = true
	ev.CustomMetadata = r.meta()
	textContent := func(s string) *genai.Content {
		if s == "" {
			return nil
		}
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s}}}
	}
	switch {
	case r.direct != nil:
		if ev.CustomMetadata == nil {
			ev.CustomMetadata = map[string]any{MetaEndpoint: r.call.url}
		}
		ev.Content = textContent(r.direct.Text())
	case r.state == StateCompleted:
		text := r.text()
		if text == "" {
			text = r.status.Text()
		}
		ev.Content = textContent(text)
	case r.state.Interrupted():
		question := r.status.Text()
		args := map[string]any{"agent": a.cfg.Name, "state": string(r.state), "message": question,
			"task_id": r.taskID, "context_id": r.contextID}
		var data []any
		if r.status != nil {
			for _, p := range r.status.Parts {
				if p.Kind == "data" {
					data = append(data, p.Data)
				}
			}
		}
		if len(data) > 0 {
			args["data"] = normalize(data)
		}
		id := "call_" + a.cfg.NewID()
		ev.Content = &genai.Content{Role: genai.RoleModel}
		if question != "" {
			ev.Content.Parts = append(ev.Content.Parts, &genai.Part{Text: question})
		}
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: InputRequiredToolName, Args: args}})
		ev.LongRunningToolIDs = []string{id}
	default:
		code := CodeFailed
		if r.state == StateCanceled {
			code = CodeCanceled
		}
		reason := r.status.Text()
		if reason == "" {
			reason = "no reason given"
		}
		ev.ErrorCode = code
		ev.ErrorMessage = fmt.Sprintf("remote agent %s: task %s: %s", a.cfg.Name, r.state, reason)
		if r.state == "" || r.state == StateUnknown || !r.state.Terminal() {
			ev.ErrorCode = CodeError
			ev.ErrorMessage = fmt.Sprintf("remote agent %s: the task ended without a result (state %q)", a.cfg.Name, r.state)
		}
	}
	return ev
}

// describe says what went wrong with a call in words fit for the model
// and the client: no URLs or addresses (those are logged).
func describe(err error) string {
	var he *HTTPError
	var re *RPCError
	switch {
	case errors.Is(err, ErrInsecureToken):
		return "was not called: its credentials would have gone over plain http"
	case errors.As(err, &he):
		switch he.Status {
		case 401, 403:
			return fmt.Sprintf("refused our credentials (HTTP %d)", he.Status)
		}
		return fmt.Sprintf("answered HTTP %d", he.Status)
	case errors.As(err, &re):
		return fmt.Sprintf("answered with error %d: %s", re.Code, re.Message)
	case strings.Contains(err.Error(), "a2a: decoding"), strings.Contains(err.Error(), "not a JSON-RPC"), strings.Contains(err.Error(), "agent card"):
		return "answered outside the A2A protocol"
	}
	return "could not be reached"
}

// normalize round-trips v through JSON so it holds only JSON types.
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
