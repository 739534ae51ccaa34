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
	Stream   bool          `json:"stream"`
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
		var texts []string        // the answer, a chunk each when streamed
		var id, name, args string // or a call, its arguments split over two chunks
		switch {
		case strings.Contains(system, "You are coordinator."):
			id, name, args = "call_T1", "transfer_to_agent", `{"agent_name":"billing"}`
		case strings.Contains(system, "You are summarizer."):
			texts = []string{"INV-7: 3 lines, ", "42.50 EUR."}
		case strings.Contains(system, "You are billing.") && last.Role == "tool":
			texts = []string{"It is high because ", "of 3 lines."}
		case strings.Contains(system, "You are billing."):
			name, args = "summarizer", `{"request":"Summarize INV-7"}` // no id: the provider makes one
		default:
			http.Error(w, "unexpected caller", http.StatusBadRequest)
			return
		}
		finish := "stop"
		if name != "" {
			finish = "tool_calls"
		}
		call := func(arguments string) map[string]any {
			c := map[string]any{"index": 0, "type": "function", "function": map[string]any{"name": name, "arguments": arguments}}
			if id != "" {
				c["id"] = id
			}
			return c
		}
		usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
		if !req.Stream {
			// A whole answer (an agent called as a tool asks for one).
			msg := map[string]any{"role": "assistant", "content": strings.Join(texts, "")}
			if name != "" {
				msg["content"], msg["tool_calls"] = nil, []any{call(args)}
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(completion("chat.completion", map[string]any{"index": 0, "message": msg, "finish_reason": finish}, usage))
			return
		}
		var deltas []map[string]any
		for _, t := range texts {
			deltas = append(deltas, map[string]any{"content": t})
		}
		if name != "" {
			deltas = append(deltas, map[string]any{"role": "assistant", "tool_calls": []any{call(args[:len(args)/2])}},
				map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": args[len(args)/2:]}}}})
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, d := range append(deltas, map[string]any{}) {
			choice := map[string]any{"index": 0, "delta": d, "finish_reason": nil}
			if i == len(deltas) {
				choice["finish_reason"] = finish
			}
			fmt.Fprintf(w, "data: %s\n\n", completion("chat.completion.chunk", choice, nil))
		}
		fmt.Fprintf(w, "data: %s\n\n", completion("chat.completion.chunk", nil, usage))
		fmt.Fprint(w, "data: [DONE]\n\n")
	})

	p, err := openai.New(openai.Config{Name: "oai", BaseURL: up.Server.URL + "/v1", APIKey: "sk-test", HTTPClient: up.Client, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	providertest.Tree(t, up, p.Model("gpt-test"))
	seen := providertest.Bodies[wireRequest](t, up)
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

// completion is a chat.completion or chunk (object) with one choice, or
// none, and a usage, or none.
func completion(object string, choice, usage map[string]any) []byte {
	c := map[string]any{"id": "x", "object": object, "created": 1, "model": "m", "choices": []any{}}
	if choice != nil {
		c["choices"] = []any{choice}
	}
	if usage != nil {
		c["usage"] = usage
	}
	b, _ := json.Marshal(c)
	return b
}
