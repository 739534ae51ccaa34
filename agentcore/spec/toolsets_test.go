package spec_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
)

// namedToolset supplies tools with the given names.
type namedToolset struct{ names []string }

func (n namedToolset) Name() string { return "named" }
func (n namedToolset) Tools(context.Context, *agentcore.ReadonlyContext) ([]agentcore.Tool, error) {
	var out []agentcore.Tool
	for _, name := range n.names {
		out = append(out, &agentcore.ClientTool{Decl: &genai.FunctionDeclaration{Name: name}})
	}
	return out, nil
}

// toolsetHook records what it was asked to make.
type toolsetHook struct{ got []spec.Toolset }

func (h *toolsetHook) make(agent string, ts spec.Toolset) (agentcore.Toolset, error) {
	h.got = append(h.got, ts)
	if ts.OpenAPI != nil && ts.OpenAPI.Spec == "broken.yaml" {
		return nil, errors.New("openapi.spec: reading broken.yaml: no such file")
	}
	return namedToolset{names: []string{"create_issue", "delete_repo"}}, nil
}

func oneAgent(a spec.Agent) spec.Set {
	a.Name = "solo"
	if a.Model == "" && a.Type == "" {
		a.Model = "demo/m"
	}
	return spec.Set{Providers: []spec.Provider{demoProvider}, Agents: []spec.Agent{a},
		Models: []spec.VirtualModel{{ID: "m", Agent: "solo"}}}
}

// TestToolsetsBuilt: each entry goes to the hook; the prefix and the
// allow-list apply to what the made toolset supplies.
func TestToolsetsBuilt(t *testing.T) {
	hook := &toolsetHook{}
	set := oneAgent(spec.Agent{Toolsets: []spec.Toolset{
		{MCP: &spec.MCPToolset{URL: "http://127.0.0.1:9/mcp"}, Prefix: "gh", Allow: []string{"create_issue"}},
		{OpenAPI: &spec.OpenAPIToolset{Spec: "pets.yaml", BaseURL: "https://api.example"}},
		{MCP: &spec.MCPToolset{Command: "server", Args: []string{"--stdio"}}, Prefix: "local"},
	}})
	cat, err := spec.Build(set, spec.BuildOptions{Toolsets: hook.make})
	if err != nil {
		t.Fatal(err)
	}
	if len(hook.got) != 3 {
		t.Fatalf("hook called %d times", len(hook.got))
	}
	var names []string
	for _, ts := range cat.Agents["solo"].(*agentcore.LlmAgent).Config().Toolsets {
		tools, err := ts.Tools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			names = append(names, tl.Name())
		}
	}
	want := []string{"gh_create_issue", "create_issue", "delete_repo", "local_create_issue", "local_delete_repo"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestToolsetErrorsNameTheKey(t *testing.T) {
	hook := &toolsetHook{}
	tests := []struct {
		name  string
		agent spec.Agent
		opts  spec.BuildOptions
		want  string
	}{
		{"empty entry", spec.Agent{Toolsets: []spec.Toolset{{Prefix: "x"}}}, spec.BuildOptions{Toolsets: hook.make},
			"agents[0].toolsets[0]: needs mcp or openapi"},
		{"both sources", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{URL: "http://x"}, OpenAPI: &spec.OpenAPIToolset{Spec: "a"}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0].toolsets[0]: takes one of mcp or openapi, not both"},
		{"mcp without target", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{}}}}, spec.BuildOptions{Toolsets: hook.make},
			"agents[0].toolsets[0].mcp: url or command required"},
		{"mcp url and command", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{URL: "http://x", Command: "y"}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0].toolsets[0].mcp: url and command exclude each other"},
		{"mcp relative url", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{URL: "localhost:9000/mcp"}}}},
			spec.BuildOptions{Toolsets: hook.make}, `agents[0].toolsets[0].mcp.url: must be an absolute http(s) URL, got "localhost:9000/mcp"`},
		{"mcp args with url", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{URL: "http://x", Args: []string{"a"}}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0].toolsets[0].mcp: args and env go with command, not url"},
		{"mcp headers with command", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y", Headers: map[string]model.Secret{"A": "b"}}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0].toolsets[0].mcp.headers: headers go with url, not command"},
		{"mcp negative timeout", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y", Timeout: -1}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0].toolsets[0].mcp.timeout: must not be negative"},
		{"openapi without spec", spec.Agent{Toolsets: []spec.Toolset{{OpenAPI: &spec.OpenAPIToolset{}}}}, spec.BuildOptions{Toolsets: hook.make},
			"agents[0].toolsets[0].openapi.spec: required (the path of an OpenAPI 3 document)"},
		{"openapi bad base url", spec.Agent{Toolsets: []spec.Toolset{{OpenAPI: &spec.OpenAPIToolset{Spec: "a", BaseURL: "api"}}}},
			spec.BuildOptions{Toolsets: hook.make}, `agents[0].toolsets[0].openapi.base_url: must be an absolute http(s) URL, got "api"`},
		{"bad prefix", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y"}, Prefix: "g-h"}}}, spec.BuildOptions{Toolsets: hook.make},
			`agents[0].toolsets[0].prefix: must match [a-zA-Z][a-zA-Z0-9_]*, at most 32 characters, got "g-h"`},
		{"duplicate prefix", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y"}, Prefix: "p"}, {MCP: &spec.MCPToolset{Command: "z"}, Prefix: "p"}}},
			spec.BuildOptions{Toolsets: hook.make}, `agents[0].toolsets[1].prefix: duplicate prefix "p" on this agent`},
		{"empty allow name", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y"}, Allow: []string{"a", ""}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0].toolsets[0].allow[1]: empty tool name"},
		{"hook error", spec.Agent{Toolsets: []spec.Toolset{{OpenAPI: &spec.OpenAPIToolset{Spec: "broken.yaml"}}}}, spec.BuildOptions{Toolsets: hook.make},
			"agents[0].toolsets[0]: openapi.spec: reading broken.yaml: no such file"},
		{"no hook", spec.Agent{Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y"}}}}, spec.BuildOptions{},
			"agents[0].toolsets[0]: toolsets are not available in this build"},
		{"workflow agent", spec.Agent{Type: "sequential", Toolsets: []spec.Toolset{{MCP: &spec.MCPToolset{Command: "y"}}}},
			spec.BuildOptions{Toolsets: hook.make}, "agents[0]: a sequential agent takes only sub_agents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := spec.Build(oneAgent(tt.agent), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// fakeLLM is a model that is never called.
type fakeLLM struct{ name string }

func (f fakeLLM) Name() string { return f.name }
func (f fakeLLM) GenerateContent(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(func(*model.Response, error) bool) {}
}

// TestGeminiBuiltins: google_search, url_context and code_execution are
// accepted on a Gemini model, as passive tools, and rejected elsewhere
// with the key named.
func TestGeminiBuiltins(t *testing.T) {
	gem := func(p spec.Provider) (func(string) (model.LLM, error), error) {
		return func(id string) (model.LLM, error) { return fakeLLM{id}, nil }, nil
	}
	opts := spec.BuildOptions{Factories: map[string]spec.ProviderFactory{"gemini": gem}}
	tools := []spec.Tool{{Builtin: "google_search"}, {Builtin: "url_context"}, {Builtin: "code_execution"}}
	set := spec.Set{
		Providers: []spec.Provider{demoProvider, {Name: "g", Type: "gemini"}},
		Agents: []spec.Agent{
			{Name: "searcher", Model: "g/gemini-2.5-flash", Tools: tools},
		},
		Models: []spec.VirtualModel{{ID: "m", Agent: "searcher"}},
	}
	cat, err := spec.Build(set, opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range cat.Agents["searcher"].(*agentcore.LlmAgent).Config().Tools {
		names = append(names, tl.Name())
		if _, ok := tl.(agentcore.RequestProcessor); !ok {
			t.Errorf("%s is not passive", tl.Name())
		}
	}
	if diff := cmp.Diff([]string{"google_search", "url_context", "code_execution"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	set.Agents = append(set.Agents, spec.Agent{Name: "other", Model: "demo/m", Tools: []spec.Tool{{Builtin: "exit_loop"}, {Builtin: "code_execution"}}})
	set.Agents[0].SubAgents = []string{"other"}
	_, err = spec.Build(set, opts)
	want := `agents[1].tools[1].builtin: code_execution runs on Gemini only, but model "demo/m" is on a provider of type "scripted"`
	if err == nil || !slices.Contains(strings.Split(err.Error(), "\n"), want) {
		t.Errorf("err = %v\nwant the line %q", err, want)
	}
}
