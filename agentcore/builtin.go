package agentcore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Names of the built-in tools.
const (
	TransferToolName      = "transfer_to_agent"
	ExitLoopToolName      = "exit_loop"
	GetUserChoiceToolName = "get_user_choice"
	LoadMemoryToolName    = "load_memory"
	PreloadMemoryToolName = "preload_memory"
	LoadArtifactsToolName = "load_artifacts"
)

// transferTool is auto-registered on agents with sub-agents. Its one
// argument is an enum of the names the agent can reach.
type transferTool struct {
	targets []string
}

var _ CallableTool = (*transferTool)(nil)

func (t *transferTool) Name() string { return TransferToolName }
func (t *transferTool) Description() string {
	return "Transfer control to another agent by name, when that agent is better suited to handle the user's request."
}
func (t *transferTool) IsLongRunning() bool { return false }
func (t *transferTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{
		Name:        TransferToolName,
		Description: t.Description(),
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"agent_name": map[string]any{"type": "string", "description": "The name of the agent to transfer to.", "enum": t.targets},
			},
			"required": []string{"agent_name"},
		},
	}
}

func (t *transferTool) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	name, _ := args["agent_name"].(string)
	if name == "" {
		return nil, errors.New("agent_name is required; transfer not performed")
	}
	self := tc.inv.agent.Name()
	if name == self {
		return nil, fmt.Errorf("cannot transfer to %s: it is the current agent; transfer not performed", name)
	}
	if tc.inv.resolveTransfer(tc.inv.agent, name) == nil {
		return nil, fmt.Errorf("unknown agent %s; transfer not performed", name)
	}
	if err := tc.inv.checkParams(tc.inv.resolveTransfer(tc.inv.agent, name)); err != nil {
		return nil, fmt.Errorf("%w; transfer not performed", err)
	}
	tc.actions.TransferToAgent = name
	return map[string]any{"result": nil}, nil
}

// ExitLoop returns the exit_loop tool: it escalates, which ends the
// enclosing LoopAgent.
func ExitLoop() CallableTool { return exitLoop{} }

type exitLoop struct{}

func (exitLoop) Name() string { return ExitLoopToolName }
func (exitLoop) Description() string {
	return "Exits the loop. Call this function only when you are instructed to do so."
}
func (exitLoop) IsLongRunning() bool { return false }
func (exitLoop) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: ExitLoopToolName, Description: exitLoop{}.Description(),
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}
func (exitLoop) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	tc.actions.Escalate = true
	tc.actions.SkipSummarization = true
	return map[string]any{"result": nil}, nil
}

// GetUserChoice returns the get_user_choice tool: a long-running call that
// pauses the invocation until the client answers with the chosen option.
func GetUserChoice() CallableTool { return getUserChoice{} }

type getUserChoice struct{}

func (getUserChoice) Name() string { return GetUserChoiceToolName }
func (getUserChoice) Description() string {
	return "Asks the user to choose one of the given options and waits for the answer."
}
func (getUserChoice) IsLongRunning() bool { return true }
func (getUserChoice) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: GetUserChoiceToolName, Description: getUserChoice{}.Description(),
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"prompt":  map[string]any{"type": "string", "description": "The question to show the user."},
				"options": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The options to choose from."},
			},
			"required": []string{"options"},
		}}
}
func (getUserChoice) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	opts, ok := args["options"].([]any)
	if !ok || len(opts) == 0 {
		return nil, errors.New("options must be a non-empty list of strings")
	}
	return map[string]any{"status": "awaiting_user", "prompt": args["prompt"], "options": opts}, nil
}

// LoadMemory returns the load_memory tool, which searches the user's memory.
func LoadMemory() CallableTool { return loadMemory{} }

type loadMemory struct{}

func (loadMemory) Name() string { return LoadMemoryToolName }
func (loadMemory) Description() string {
	return "Loads relevant memories of earlier conversations with the current user."
}
func (loadMemory) IsLongRunning() bool { return false }
func (loadMemory) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: LoadMemoryToolName, Description: loadMemory{}.Description(),
		ParametersJsonSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"query": map[string]any{"type": "string", "description": "What to look for."}},
			"required":   []string{"query"},
		}}
}
func (loadMemory) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	q, _ := args["query"].(string)
	if q == "" {
		return nil, errors.New("query is required")
	}
	hits, err := tc.SearchMemory(ctx, q)
	if err != nil {
		return nil, err
	}
	mem := make([]any, 0, len(hits))
	for _, h := range hits {
		mem = append(mem, map[string]any{"author": h.Author, "text": contentText(h.Content)})
	}
	return map[string]any{"memories": mem}, nil
}

// PreloadMemory returns the passive preload_memory tool: before each model
// call it searches memory with the turn's user text and appends up to
// maxEntries hits to the system instruction. It does nothing without a
// memory service or user text.
func PreloadMemory(maxEntries int) Tool {
	if maxEntries <= 0 {
		maxEntries = 5
	}
	return preloadMemory{max: maxEntries}
}

type preloadMemory struct{ max int }

var _ RequestProcessor = preloadMemory{}

func (preloadMemory) Name() string        { return PreloadMemoryToolName }
func (preloadMemory) Description() string { return "Preloads relevant memories into the instruction." }
func (preloadMemory) IsLongRunning() bool { return false }
func (p preloadMemory) ProcessRequest(ctx context.Context, rc *ReadonlyContext, req *model.Request) error {
	inv := rc.inv
	q := contentText(inv.userContent)
	if inv.sh.svc.memory == nil || strings.TrimSpace(q) == "" {
		return nil
	}
	hits, err := inv.sh.svc.memory.Search(ctx, inv.AppName(), inv.UserID(), q)
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("Relevant prior context:")
	for i, h := range hits {
		if i == p.max {
			break
		}
		b.WriteString("\n- ")
		if h.Author != "" {
			b.WriteString(h.Author + ": ")
		}
		b.WriteString(contentText(h.Content))
	}
	appendSystem(req, b.String())
	return nil
}

// appendSystem appends text to the request's system instruction.
func appendSystem(req *model.Request, text string) {
	if req.Config.SystemInstruction == nil {
		req.Config.SystemInstruction = &genai.Content{Role: genai.RoleUser}
	}
	si := *req.Config.SystemInstruction
	si.Parts = append(slices.Clone(si.Parts), &genai.Part{Text: "\n\n" + text})
	req.Config.SystemInstruction = &si
}

// LoadArtifacts returns the load_artifacts tool.
func LoadArtifacts() CallableTool { return loadArtifacts{} }

type loadArtifacts struct{}

func (loadArtifacts) Name() string { return LoadArtifactsToolName }
func (loadArtifacts) Description() string {
	return "Loads the named artifacts of this session into the conversation."
}
func (loadArtifacts) IsLongRunning() bool { return false }
func (loadArtifacts) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: LoadArtifactsToolName, Description: loadArtifacts{}.Description(),
		ParametersJsonSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"artifact_names": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			},
			"required": []string{"artifact_names"},
		}}
}
func (loadArtifacts) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	names, ok := args["artifact_names"].([]any)
	if !ok {
		return nil, errors.New("artifact_names must be a list of strings")
	}
	loaded := make([]any, 0, len(names))
	for _, n := range names {
		name, _ := n.(string)
		part, err := tc.LoadArtifact(ctx, name)
		if err != nil {
			if errors.Is(err, errNoArtifactService) {
				return nil, err
			}
			loaded = append(loaded, map[string]any{"name": name, "error": "not found"})
			continue
		}
		loaded = append(loaded, map[string]any{"name": name, "part": part})
	}
	return map[string]any{"loaded": loaded}, nil
}

func contentText(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p != nil && !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ClientTool is an action the calling client executes: the model's call
// reaches the client (an OpenAI tool_call, an ADK long-running call) and the
// invocation pauses until the client sends the function response.
type ClientTool struct {
	Decl *genai.FunctionDeclaration
}

var _ CallableTool = (*ClientTool)(nil)

// Name implements Tool.
func (c *ClientTool) Name() string { return c.Decl.Name }

// Description implements Tool.
func (c *ClientTool) Description() string { return c.Decl.Description }

// IsLongRunning implements Tool: client tools always pause.
func (c *ClientTool) IsLongRunning() bool { return true }

// Declaration implements CallableTool.
func (c *ClientTool) Declaration() *genai.FunctionDeclaration { return c.Decl }

// Run implements CallableTool: nothing runs here; the response comes from
// the client.
func (c *ClientTool) Run(context.Context, *ToolContext, map[string]any) (map[string]any, error) {
	return nil, nil
}
