package gemini_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model/gemini"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

// wireRequest is the part of a generateContent body the fake reads.
type wireRequest struct {
	SystemInstruction *genai.Content   `json:"systemInstruction"`
	Contents          []*genai.Content `json:"contents"`
	Tools             []*genai.Tool    `json:"tools"`
}

// TestTreeEndToEnd runs a real agent tree on the gemini provider against a
// recording fake upstream: the coordinator transfers to billing, billing
// calls the summarizer agent as a tool (Gemini sends the call without an
// id), and answers with its result.
func TestTreeEndToEnd(t *testing.T) {
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var system string
		for _, p := range req.SystemInstruction.Parts {
			system += p.Text
		}
		last := req.Contents[len(req.Contents)-1].Parts
		answered := len(last) > 0 && last[len(last)-1].FunctionResponse != nil
		var parts []string // a chunk each when streamed
		switch {
		case strings.Contains(system, "You are coordinator."):
			parts = []string{`{"functionCall":{"name":"transfer_to_agent","args":{"agent_name":"billing"}}}`}
		case strings.Contains(system, "You are summarizer."):
			parts = []string{`{"text":"INV-7: 3 lines, "}`, `{"text":"42.50 EUR."}`}
		case strings.Contains(system, "You are billing.") && answered:
			parts = []string{`{"text":"It is high because "}`, `{"text":"of 3 lines."}`}
		case strings.Contains(system, "You are billing."):
			parts = []string{`{"functionCall":{"name":"summarizer","args":{"request":"Summarize INV-7"}}}`}
		default:
			http.Error(w, "unexpected caller", http.StatusBadRequest)
			return
		}
		if !strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
			// A whole answer (an agent called as a tool asks for one).
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, part(strings.Join(parts, ","), "STOP"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, p := range parts {
			finish := ""
			if i == len(parts)-1 {
				finish = "STOP"
			}
			fmt.Fprintf(w, "data: %s\n\n", part(p, finish))
		}
	})

	p, err := gemini.New(gemini.Config{Name: "gem", BaseURL: up.Server.URL, APIKey: "test-key", HTTPClient: up.Client, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	providertest.Tree(t, up, p.Model("gemini-test"))
	seen := providertest.Bodies[wireRequest](t, up)
	var enum []any
	for _, tl := range seen[0].Tools {
		for _, fd := range tl.FunctionDeclarations {
			if fd.Name == "transfer_to_agent" {
				schema, _ := fd.ParametersJsonSchema.(map[string]any)
				props, _ := schema["properties"].(map[string]any)
				name, _ := props["agent_name"].(map[string]any)
				enum, _ = name["enum"].([]any)
			}
		}
	}
	if !slices.Contains(enum, any("billing")) {
		t.Errorf("transfer_to_agent enum = %v, want billing in it", enum)
	}
	// Billing's second call carries the summarizer call and its result; the
	// ids made for Gemini's id-less call are not sent back.
	var call *genai.FunctionCall
	var resp *genai.FunctionResponse
	for _, c := range seen[3].Contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == "summarizer" {
				call = p.FunctionCall
			}
			if p.FunctionResponse != nil && p.FunctionResponse.Name == "summarizer" {
				resp = p.FunctionResponse
			}
		}
	}
	if call == nil || resp == nil || call.ID != "" || resp.ID != "" {
		t.Fatalf("billing's follow-up: call %+v, response %+v; want both, without ids", call, resp)
	}
	if got, _ := resp.Response["text"].(string); !strings.Contains(got, "INV-7: 3 lines, 42.50 EUR.") {
		t.Errorf("summarizer result = %v", resp.Response)
	}
}

func part(p, finish string) string {
	f := ""
	if finish != "" {
		f = `,"finishReason":"` + finish + `"`
	}
	return `{"candidates":[{"content":{"role":"model","parts":[` + p + `]}` + f + `}],` +
		`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12}}`
}
