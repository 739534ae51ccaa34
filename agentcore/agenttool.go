package agentcore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// AgentTool calls an agent as a function. The child runs in its own
// sub-conversation (session "<session>/<agent>", nested for deeper levels),
// shares the caller's cancellation and model-call budget, and runs under
// invocation id "<parent>.sub.<agent>" (SubInvocationID). The caller gets
// {"text": ...} with the newline-joined text of the child's events, plus
// "error" when a child event carried one. When the child pauses on a long-running call, the
// caller's invocation pauses too and resumes through it.
type AgentTool struct {
	agent Agent
	desc  string
	index *treeIndex
}

var _ CallableTool = (*AgentTool)(nil)

// AgentToolConfig configures an AgentTool.
type AgentToolConfig struct {
	// Description overrides the agent's description shown to the model.
	Description string
}

// NewAgentTool wraps a (validated) agent tree as a tool named after its root.
func NewAgentTool(a Agent, cfg AgentToolConfig) (*AgentTool, error) {
	ix, err := indexTree(a)
	if err != nil {
		return nil, err
	}
	if specs, _ := declaredParams(a); slices.ContainsFunc(specs, func(s ParamSpec) bool { return s.Name == "request" }) {
		return nil, fmt.Errorf("agent tool %s: a parameter may not be named \"request\" (the tool's own argument)", a.Name())
	}
	d := cfg.Description
	if d == "" {
		d = a.Description()
	}
	return &AgentTool{agent: a, desc: d, index: ix}, nil
}

// Agent is the wrapped agent.
func (t *AgentTool) Agent() Agent { return t.agent }

// Name implements Tool.
func (t *AgentTool) Name() string { return t.agent.Name() }

// Description implements Tool.
func (t *AgentTool) Description() string { return t.desc }

// IsLongRunning implements Tool.
func (t *AgentTool) IsLongRunning() bool { return false }

// Declaration implements CallableTool.
func (t *AgentTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{
		Name:        t.agent.Name(),
		Description: t.desc,
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"request": map[string]any{"type": "string", "description": "The task or question for " + t.agent.Name() + "."},
			},
			"required": []string{"request"},
		},
	}
}

// Run implements CallableTool.
func (t *AgentTool) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	parent := tc.inv
	values, err := t.childParams(parent, args)
	if err != nil {
		return nil, err
	}
	msg := tc.resume
	if msg == nil {
		req, _ := args["request"].(string)
		if strings.TrimSpace(req) == "" {
			return nil, errors.New("request is required")
		}
		msg = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: req}}}
	}
	childID := sessions.ChildID(parent.SessionID(), t.agent.Name())
	mu, _ := parent.sh.subLocks.LoadOrStore(childID, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	// Read and, on the first call, created in one step (one round trip on
	// Redis); the parameters are stored with a new sub-conversation only.
	sess, err := sessions.GetOrCreate(ctx, parent.sh.svc.sessions, sessions.CreateRequest{AppName: parent.AppName(),
		UserID: parent.UserID(), SessionID: childID, State: paramsState(values), Window: turnWindow})
	if err != nil {
		return nil, err
	}
	cfg := parent.sh.cfg
	if !cfg.StreamSubAgents {
		// Nobody sees the child's deltas: ask its models for whole answers.
		cfg.Streaming = false
	}
	child := &turn{root: t.agent, index: t.index, svc: parent.sh.svc, cfg: cfg, llmCalls: parent.sh.llmCalls,
		usage: parent.sh.usage, params: parent.sh.params, routeRoot: true, invID: SubInvocationID(parent.id, t.agent.Name()),
		subLocks: parent.sh.subLocks, rootValues: values, secrets: parent.sh.pstate.secrets}
	var texts []string
	var errMsg string
	var pausedOn []string
	for ev, err := range child.run(ctx, sess, msg, nil) {
		if err != nil {
			return nil, err
		}
		if len(ev.LongRunningToolIDs) > 0 {
			pausedOn = append(pausedOn, ev.LongRunningToolIDs...)
		}
		if !ev.Partial && ev.InvocationID == child.invID {
			if s := ev.Text(); s != "" {
				texts = append(texts, s)
			}
			if ev.ErrorMessage != "" {
				errMsg = ev.ErrorMessage
			}
		}
		if parent.sh.cfg.StreamSubAgents || len(ev.LongRunningToolIDs) > 0 {
			tc.emit(ev)
		}
	}
	if len(pausedOn) > 0 {
		tc.Pause(pausedOn...)
		return nil, nil
	}
	out := map[string]any{"text": strings.Join(texts, "\n")}
	if errMsg != "" {
		out["error"] = errMsg
	}
	return out, nil
}
