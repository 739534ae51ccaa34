package agentcore

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"google.golang.org/genai"
)

// ErrToolsetUnavailable is wrapped by toolset errors that mean the source of
// the tools cannot be reached right now (a server that is down). The agent
// then runs without that toolset's tools and tells the model so; any other
// toolset error does the same, this sentinel only lets callers tell the
// cases apart.
var ErrToolsetUnavailable = errors.New("toolset unavailable")

// ToolsetOptions rename and filter the tools of a toolset.
type ToolsetOptions struct {
	// Prefix, when set, is prepended to every tool name with an underscore
	// ("github" turns create_issue into github_create_issue), so that two
	// toolsets can offer tools of the same name.
	Prefix string
	// Allow, when not empty, keeps only the tools with these names (the
	// names the source gives them, before the prefix).
	Allow []string
}

// FilterToolset wraps ts: its tools are filtered by opts.Allow and renamed
// with opts.Prefix. Closing the result closes ts when ts is an io.Closer.
// With zero options ts is returned as is.
func FilterToolset(ts Toolset, opts ToolsetOptions) Toolset {
	if opts.Prefix == "" && len(opts.Allow) == 0 {
		return ts
	}
	return &filteredToolset{inner: ts, prefix: opts.Prefix, allow: slices.Clone(opts.Allow)}
}

type filteredToolset struct {
	inner  Toolset
	prefix string
	allow  []string
}

var (
	_ Toolset   = (*filteredToolset)(nil)
	_ io.Closer = (*filteredToolset)(nil)
)

func (f *filteredToolset) Name() string { return f.inner.Name() }

func (f *filteredToolset) Tools(ctx context.Context, rc *ReadonlyContext) ([]Tool, error) {
	tools, err := f.inner.Tools(ctx, rc)
	if err != nil {
		return nil, err
	}
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		if len(f.allow) > 0 && !slices.Contains(f.allow, t.Name()) {
			continue
		}
		if ct, ok := t.(CallableTool); ok && f.prefix != "" {
			t = &prefixedTool{CallableTool: ct, name: f.prefix + "_" + ct.Name()}
		}
		out = append(out, t)
	}
	return out, nil
}

// Close closes the wrapped toolset.
func (f *filteredToolset) Close() error {
	if c, ok := f.inner.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// prefixedTool is a callable tool offered under another name.
type prefixedTool struct {
	CallableTool
	name string
}

func (p *prefixedTool) Name() string { return p.name }

func (p *prefixedTool) Declaration() *genai.FunctionDeclaration {
	d := p.CallableTool.Declaration()
	if d == nil {
		return nil
	}
	c := *d
	c.Name = p.name
	return &c
}

// unavailableNote tells the model which toolsets could not supply their
// tools for this request.
func unavailableNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "The tools of " + strings.Join(quoteAll(names), ", ") +
		" are unavailable right now (their server could not be reached). If the user needs them, say so; do not pretend to have used them."
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = `"` + n + `"`
	}
	return out
}

// ToolsetObserver is an optional Observer ability: it hears about toolsets
// that could not supply their tools for a request (the error says why).
type ToolsetObserver interface {
	ToolsetUnavailable(agent, toolset string, err error)
}

// DeclaredTool is the declaration half of a callable tool whose
// declaration never changes (tools made from config, MCP listings, OpenAPI
// operations): embed it and add Run. Decl is shared by every call and must
// not be modified.
type DeclaredTool struct {
	Decl *genai.FunctionDeclaration
}

// Name implements Tool.
func (d DeclaredTool) Name() string { return d.Decl.Name }

// Description implements Tool.
func (d DeclaredTool) Description() string { return d.Decl.Description }

// IsLongRunning implements Tool: such tools answer within the call.
func (d DeclaredTool) IsLongRunning() bool { return false }

// Declaration implements CallableTool.
func (d DeclaredTool) Declaration() *genai.FunctionDeclaration { return d.Decl }
