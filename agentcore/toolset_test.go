package agentcore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// flakyToolset supplies tools, or fails while down is set.
type flakyToolset struct {
	name   string
	tools  []agentcore.Tool
	down   atomic.Bool
	closed atomic.Bool
}

func (f *flakyToolset) Name() string { return f.name }

func (f *flakyToolset) Tools(context.Context, *agentcore.ReadonlyContext) ([]agentcore.Tool, error) {
	if f.down.Load() {
		return nil, fmt.Errorf("server %s: %w: connection refused", f.name, agentcore.ErrToolsetUnavailable)
	}
	return f.tools, nil
}

func (f *flakyToolset) Close() error { f.closed.Store(true); return nil }

// toolsetObserver records unavailable toolsets.
type toolsetObserver struct {
	agentcore.NopObserver
	seen []string
}

func (o *toolsetObserver) ToolsetUnavailable(agent, toolset string, err error) {
	o.seen = append(o.seen, agent+"/"+toolset+": "+err.Error())
}

func TestFilterToolset(t *testing.T) {
	inner := &flakyToolset{name: "gh", tools: []agentcore.Tool{echoTool(t, "create_issue"), echoTool(t, "delete_repo"),
		agentcore.GoogleSearch()}}
	tests := []struct {
		name string
		opts agentcore.ToolsetOptions
		want []string
	}{
		{"as is", agentcore.ToolsetOptions{}, []string{"create_issue", "delete_repo", "google_search"}},
		{"prefix", agentcore.ToolsetOptions{Prefix: "github"}, []string{"github_create_issue", "github_delete_repo", "google_search"}},
		{"allow", agentcore.ToolsetOptions{Allow: []string{"create_issue"}}, []string{"create_issue"}},
		{"both", agentcore.ToolsetOptions{Prefix: "gh", Allow: []string{"create_issue", "missing"}}, []string{"gh_create_issue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := agentcore.FilterToolset(inner, tt.opts)
			tools, err := ts.Tools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tl := range tools {
				got = append(got, tl.Name())
				if ct, ok := tl.(agentcore.CallableTool); ok && ct.Declaration().Name != tl.Name() {
					t.Errorf("declaration name %q for tool %q", ct.Declaration().Name, tl.Name())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if ts.Name() != "gh" {
				t.Errorf("name = %q", ts.Name())
			}
		})
	}
	if err := agentcore.FilterToolset(inner, agentcore.ToolsetOptions{Prefix: "x"}).(io.Closer).Close(); err != nil || !inner.closed.Load() {
		t.Errorf("Close did not reach the wrapped toolset: %v", err)
	}
	// The inner declaration is not modified by the prefix.
	if d := inner.tools[0].(agentcore.CallableTool).Declaration(); d.Name != "create_issue" {
		t.Errorf("inner declaration renamed to %q", d.Name)
	}
}

// TestPrefixedToolRuns: the model calls the prefixed name; the tool runs
// and the response carries the called name.
func TestPrefixedToolRuns(t *testing.T) {
	inner := &flakyToolset{name: "gh", tools: []agentcore.Tool{echoTool(t, "create_issue")}}
	llm := replies(callResp("c1", "gh_create_issue", map[string]any{"x": 1}), textResp("done"))
	a := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm,
		Toolsets: []agentcore.Toolset{agentcore.FilterToolset(inner, agentcore.ToolsetOptions{Prefix: "gh"})}})
	h := newHarness(t, a)
	evs := h.mustRun("s1", userText("file it"), agentcore.RunConfig{})
	var names []string
	for _, ev := range evs {
		for _, r := range ev.FunctionResponses() {
			names = append(names, r.Name)
			if r.Response["error"] != nil {
				t.Errorf("error response: %v", r.Response)
			}
		}
	}
	if diff := cmp.Diff([]string{"gh_create_issue"}, names); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
}

// TestUnavailableToolset: a toolset that cannot supply its tools does not
// fail the agent: its other tools are offered, the model is told which
// toolset is missing, a call to one of its tools gets an error saying so,
// and an observer hears about it. When it comes back, its tools return.
func TestUnavailableToolset(t *testing.T) {
	down := &flakyToolset{name: "calendar", tools: []agentcore.Tool{echoTool(t, "book")}}
	down.down.Store(true)
	up := &flakyToolset{name: "mail", tools: []agentcore.Tool{echoTool(t, "send")}}
	llm := replies(callResp("c1", "book", map[string]any{}), textResp("could not book"))
	a := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Instruction: "Help.", Tools: []agentcore.Tool{echoTool(t, "local")},
		Toolsets: []agentcore.Toolset{down, up}})
	obs := &toolsetObserver{}
	h := newHarness(t, a, func(c *agentcore.RunnerConfig) { c.Observer = obs })
	evs := h.mustRun("s1", userText("book a room"), agentcore.RunConfig{})

	req := llm.requests()[0]
	if diff := cmp.Diff([]string{"local", "send"}, declNames(req)); diff != "" {
		t.Errorf("declared (-want +got):\n%s", diff)
	}
	if si := sysText(req); !strings.Contains(si, `The tools of "calendar" are unavailable right now`) {
		t.Errorf("system instruction: %q", si)
	}
	resp := responses(evs)["c1"]
	if msg, _ := resp["error"].(string); !strings.Contains(msg, `tool "book" not found`) || !strings.Contains(msg, `unavailable right now: the tools of "calendar"`) {
		t.Errorf("response = %v", resp)
	}
	if got := last(t, evs).Text(); got != "could not book" {
		t.Errorf("final = %q", got)
	}
	if len(obs.seen) == 0 || !strings.HasPrefix(obs.seen[0], "root/calendar: server calendar: toolset unavailable") {
		t.Errorf("observer saw %v", obs.seen)
	}

	down.down.Store(false)
	llm2 := replies(textResp("ok"))
	a2 := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm2, Toolsets: []agentcore.Toolset{down}})
	newHarness(t, a2).mustRun("s2", userText("again"), agentcore.RunConfig{})
	req = llm2.requests()[0]
	if diff := cmp.Diff([]string{"book"}, declNames(req)); diff != "" {
		t.Errorf("declared after recovery (-want +got):\n%s", diff)
	}
	if si := sysText(req); strings.Contains(si, "unavailable") {
		t.Errorf("system instruction after recovery: %q", si)
	}
}

// cancellingToolset fails because its caller gave up.
type cancellingToolset struct{ cancel context.CancelFunc }

func (c cancellingToolset) Name() string { return "slow" }
func (c cancellingToolset) Tools(ctx context.Context, _ *agentcore.ReadonlyContext) ([]agentcore.Tool, error) {
	c.cancel()
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestToolsetCancelled: a cancellation still ends the run.
func TestToolsetCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: replies(textResp("never")), Toolsets: []agentcore.Toolset{cancellingToolset{cancel}}})
	h := newHarness(t, a)
	_, err := h.runReq(ctx, agentcore.RunRequest{SessionID: "s1", NewMessage: userText("hi")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestServerTools: the Gemini built-ins add their provider tool once, are
// never declared as functions, and keep the agent's function tools.
func TestServerTools(t *testing.T) {
	llm := replies(textResp("grounded"))
	a := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm,
		Tools:          []agentcore.Tool{agentcore.GoogleSearch(), agentcore.URLContext(), agentcore.CodeExecution(), echoTool(t, "local")},
		GenerateConfig: &genai.GenerateContentConfig{Tools: []*genai.Tool{{GoogleSearch: &genai.GoogleSearch{}}}}})
	newHarness(t, a).mustRun("s1", userText("search"), agentcore.RunConfig{})
	req := llm.requests()[0]
	var kinds []string
	for _, tl := range req.Config.Tools {
		switch {
		case tl.GoogleSearch != nil:
			kinds = append(kinds, "google_search")
		case tl.URLContext != nil:
			kinds = append(kinds, "url_context")
		case tl.CodeExecution != nil:
			kinds = append(kinds, "code_execution")
		case len(tl.FunctionDeclarations) > 0:
			kinds = append(kinds, "functions")
		}
	}
	// google_search came from the agent's config already: not added twice.
	if diff := cmp.Diff([]string{"google_search", "functions", "url_context", "code_execution"}, kinds); diff != "" {
		t.Errorf("request tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"local"}, declNames(req)); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
	for _, tl := range []agentcore.Tool{agentcore.GoogleSearch(), agentcore.URLContext(), agentcore.CodeExecution()} {
		if _, callable := tl.(agentcore.CallableTool); callable {
			t.Errorf("%s is callable", tl.Name())
		}
		if _, ok := tl.(agentcore.RequestProcessor); !ok {
			t.Errorf("%s is not a request processor", tl.Name())
		}
	}
	// A processor on a request without config makes one.
	r := &model.Request{}
	if err := agentcore.URLContext().(agentcore.RequestProcessor).ProcessRequest(context.Background(), nil, r); err != nil || len(r.Config.Tools) != 1 {
		t.Errorf("empty request: %v, %+v", err, r.Config)
	}
}
