package agentcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

var (
	errNoArtifactService = errors.New("no artifact service configured")
	errNoMemoryService   = errors.New("no memory service configured")
)

// Tool is anything an LlmAgent can be given. Callable tools also implement
// CallableTool; passive tools (provider built-ins, preload_memory) implement
// RequestProcessor only.
type Tool interface {
	Name() string
	Description() string
	// IsLongRunning reports whether a call pauses the invocation until the
	// client supplies the function response.
	IsLongRunning() bool
}

// CallableTool is a tool the model calls as a function.
type CallableTool interface {
	Tool
	Declaration() *genai.FunctionDeclaration
	// Run executes one call. A nil result with a nil error from a
	// long-running tool means the response will come from the client.
	Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error)
}

// RequestProcessor is implemented by tools that change the model request
// before each call (adding a provider built-in tool, or context).
type RequestProcessor interface {
	ProcessRequest(ctx context.Context, rc *ReadonlyContext, req *model.Request) error
}

// Toolset is a lazy supplier of tools whose list is only known at run time.
// The agent asks for the tools each time it builds a request.
type Toolset interface {
	Name() string
	Tools(ctx context.Context, rc *ReadonlyContext) ([]Tool, error)
}

// Confirmer is implemented by tools that need the user's approval before a
// call runs. Hint is shown to the user.
type Confirmer interface {
	RequiresConfirmation(args map[string]any) (required bool, hint string)
}

// StaticToolset is a Toolset over a fixed list.
type StaticToolset struct {
	name  string
	tools []Tool
}

// NewStaticToolset returns a toolset that always supplies tools.
func NewStaticToolset(name string, tools ...Tool) *StaticToolset {
	return &StaticToolset{name: name, tools: tools}
}

// Name implements Toolset.
func (s *StaticToolset) Name() string { return s.name }

// Tools implements Toolset.
func (s *StaticToolset) Tools(context.Context, *ReadonlyContext) ([]Tool, error) {
	return append([]Tool(nil), s.tools...), nil
}

// FunctionToolConfig describes a typed function tool.
type FunctionToolConfig struct {
	Name        string
	Description string
	LongRunning bool
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`)

// NewFunctionTool wraps fn as a tool. The parameters' JSON schema is derived
// from Args (a struct; json tags name the fields, `jsonschema` tags describe
// them). The result is marshalled to JSON: an object becomes the response as
// is, anything else is wrapped as {"result": value}.
func NewFunctionTool[Args, Result any](cfg FunctionToolConfig, fn func(ctx context.Context, tc *ToolContext, args Args) (Result, error)) (CallableTool, error) {
	if !toolNameRE.MatchString(cfg.Name) {
		return nil, fmt.Errorf("function tool: invalid name %q", cfg.Name)
	}
	if fn == nil {
		return nil, fmt.Errorf("function tool %s: nil function", cfg.Name)
	}
	schema, err := jsonschema.For[Args](nil)
	if err != nil {
		return nil, fmt.Errorf("function tool %s: schema: %w", cfg.Name, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("function tool %s: schema: %w", cfg.Name, err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var schemaMap map[string]any
	if err := json.Unmarshal(raw, &schemaMap); err != nil {
		return nil, err
	}
	return &funcTool[Args, Result]{cfg: cfg, schema: schemaMap, resolved: resolved, fn: fn}, nil
}

type funcTool[Args, Result any] struct {
	cfg      FunctionToolConfig
	schema   map[string]any
	resolved *jsonschema.Resolved
	fn       func(context.Context, *ToolContext, Args) (Result, error)
}

func (f *funcTool[A, R]) Name() string        { return f.cfg.Name }
func (f *funcTool[A, R]) Description() string { return f.cfg.Description }
func (f *funcTool[A, R]) IsLongRunning() bool { return f.cfg.LongRunning }
func (f *funcTool[A, R]) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: f.cfg.Name, Description: f.cfg.Description, ParametersJsonSchema: f.schema}
}

func (f *funcTool[A, R]) Run(ctx context.Context, tc *ToolContext, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	if err := f.resolved.Validate(args); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	var a A
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("invalid arguments: %w", err)
	}
	res, err := f.fn(ctx, tc, a)
	if err != nil {
		return nil, err
	}
	return toResponse(res)
}

// toResponse turns a tool result into a function-response map.
func toResponse(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("result not JSON: %w", err)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil && m != nil {
		return m, nil
	}
	var anyV any
	_ = json.Unmarshal(raw, &anyV)
	return map[string]any{"result": anyV}, nil
}

// errorResult is the response a model sees for a failed call.
// An error with an ErrorCode method adds {"code": ...}.
func errorResult(err error) map[string]any {
	out := map[string]any{"error": err.Error()}
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		out["code"] = coded.ErrorCode()
	}
	return out
}
