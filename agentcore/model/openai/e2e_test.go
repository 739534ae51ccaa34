package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
	"github.com/agentgate/agentgate/agentcore/model/openai"
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
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
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
	})

	p, err := openai.New(openai.Config{Name: "oai", BaseURL: up.Server.URL + "/v1", APIKey: "sk-test", HTTPClient: up.Client, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	providertest.Tree(t, p.Model("gpt-test"))

	seen := providertest.Bodies[wireRequest](t, up)
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
	if !slices.Contains(enum, any("billing")) {
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
