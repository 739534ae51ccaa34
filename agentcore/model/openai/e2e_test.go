package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/sessions"
)

// wireMessage is the part of a chat-completions message the fake reads.
type wireMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireRequest struct {
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// TestTreeEndToEnd runs a real agent tree on the openai provider against a
// recording fake upstream: the coordinator transfers to billing, billing
// calls the summarizer agent as a tool, and answers with its result.
func TestTreeEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var seen []wireRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req wireRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		system, _ := req.Messages[0].Content.(string)
		last := req.Messages[len(req.Messages)-1]
		var chunks []string
		switch {
		case strings.Contains(system, "You are coordinator."):
			chunks = []string{
				delta(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_T1","type":"function","function":{"name":"transfer_to_agent","arguments":"{\"agent_"}}]}`, ""),
				delta(`{"tool_calls":[{"index":0,"function":{"arguments":"name\":\"billing\"}"}}]}`, ""),
				delta(`{}`, "tool_calls"),
			}
		case strings.Contains(system, "You are summarizer."):
			chunks = []string{delta(`{"content":"INV-7: 3 lines, "}`, ""), delta(`{"content":"42.50 EUR."}`, "stop")}
		case strings.Contains(system, "You are billing.") && last.Role == "tool":
			chunks = []string{delta(`{"content":"It is high because "}`, ""), delta(`{"content":"of 3 lines."}`, "stop")}
		case strings.Contains(system, "You are billing."):
			chunks = []string{
				delta(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"summarizer","arguments":"{\"request\":\"Summarize INV-7\"}"}}]}`, ""),
				delta(`{}`, "tool_calls"),
			}
		default:
			http.Error(w, "unexpected caller", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range append(chunks, `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],
			"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`) {
			fmt.Fprintf(w, "data: %s\n\n", strings.ReplaceAll(c, "\n", ""))
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		srv.Close()
	})

	p, err := openai.New(openai.Config{Name: "oai", BaseURL: srv.URL + "/v1", APIKey: "sk-test", HTTPClient: client, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	llm := p.Model("gpt-test")
	agent := func(cfg agentcore.LlmConfig) *agentcore.LlmAgent {
		cfg.Model, cfg.Instruction = llm, "You are "+cfg.Name+"."
		a, err := agentcore.NewLlmAgent(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	summarizer := agent(agentcore.LlmConfig{Name: "summarizer", Description: "Summarizes invoices."})
	tool, err := agentcore.NewAgentTool(summarizer, agentcore.AgentToolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	billing := agent(agentcore.LlmConfig{Name: "billing", Description: "Explains invoices.", Tools: []agentcore.Tool{tool}})
	root := agent(agentcore.LlmConfig{Name: "coordinator", Description: "Routes requests.", SubAgents: []agentcore.Agent{billing}})
	runner, err := agentcore.NewRunner(agentcore.RunnerConfig{
		AppName: "app", Agent: root, Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}), AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}

	run := runner.Run(context.Background(), agentcore.RunRequest{
		UserID: "u1", SessionID: "s1", NewMessage: genai.NewContentFromText("Why is INV-7 so high?", genai.RoleUser),
		Config: agentcore.RunConfig{Streaming: true},
	})
	var said []string
	var transfers []string
	for ev, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Actions.TransferToAgent != "" {
			transfers = append(transfers, ev.Author+"->"+ev.Actions.TransferToAgent)
		}
		if !ev.Partial && ev.Content != nil {
			for _, part := range ev.Content.Parts {
				if part.Text != "" {
					said = append(said, ev.Author+": "+part.Text)
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"coordinator->billing"}, transfers); diff != "" {
		t.Errorf("transfers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"billing: It is high because of 3 lines."}, said); diff != "" {
		t.Errorf("what the agents said (-want +got):\n%s", diff)
	}
	if got := run.Usage(); got == nil || got.TotalTokenCount != 4*12 || got.PromptTokenCount != 40 {
		t.Errorf("usage over the tree = %+v, want 4 calls of 12 tokens", got)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 {
		t.Fatalf("upstream got %d requests, want 4 (coordinator, billing, summarizer, billing)", len(seen))
	}
	// The coordinator was offered the transfer tool with billing in its enum.
	var enum []any
	for _, tl := range seen[0].Tools {
		if tl.Function.Name == "transfer_to_agent" {
			props, _ := tl.Function.Parameters["properties"].(map[string]any)
			name, _ := props["agent_name"].(map[string]any)
			enum, _ = name["enum"].([]any)
		}
	}
	if !containsAny(enum, "billing") {
		t.Errorf("transfer_to_agent enum = %v, want billing in it", enum)
	}
	// Billing's second call carries its summarizer call and the result under
	// the same id.
	final := seen[3].Messages
	var callID string
	for _, m := range final {
		for _, tc := range m.ToolCalls {
			if tc.Function.Name == "summarizer" {
				callID = tc.ID
			}
		}
	}
	var result string
	for _, m := range final {
		if m.Role == "tool" && m.ToolCallID == callID {
			result, _ = m.Content.(string)
		}
	}
	if callID == "" || !strings.Contains(result, "INV-7: 3 lines, 42.50 EUR.") {
		t.Errorf("billing's follow-up: call id %q, tool result %q", callID, result)
	}
}

func delta(d, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + f + `}]}`
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
