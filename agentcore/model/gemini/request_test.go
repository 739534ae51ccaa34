package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

const okChunk = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"modelVersion":"gemini-test-001"}`

// TestGoldenRequests records what goes upstream: a tree's turn (system
// prompt with the sub-agent roster, transfer_to_agent with its enum, a tool
// with a Gemini schema, calls and results fed back with stable ids, an
// inline image, generation settings) and a turn with Gemini's server-side
// tools, an output schema and thinking.
func TestGoldenRequests(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		stream        bool
		path, query   string
	}{
		{"tree_turn_stream", "tree_request", true, "/v1beta/models/gemini-test:streamGenerateContent", "alt=sse"},
		{"tree_turn", "tree_request", false, "/v1beta/models/gemini-test:generateContent", ""},
		{"builtin_tools_stream", "builtin_tools_request", true, "/v1beta/models/gemini-test:streamGenerateContent", "alt=sse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.stream {
					sse(w, okChunk)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(okChunk))
			})
			req := providertest.LoadRequest(t, tc.request)
			before, _ := json.Marshal(req)
			res := providertest.Run(t, context.Background(), provider(t, up, Config{}).Model("gemini-test"), req, tc.stream)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			after, _ := json.Marshal(req)
			if diff := cmp.Diff(string(before), string(after)); diff != "" {
				t.Errorf("the request was modified (-before +after):\n%s", diff)
			}
			reqs := up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("upstream got %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Method != http.MethodPost || got.Path != tc.path || got.Query != tc.query {
				t.Errorf("request = %s %s?%s, want POST %s?%s", got.Method, got.Path, got.Query, tc.path, tc.query)
			}
			if k := got.Header.Get("X-Goog-Api-Key"); k != testKey {
				t.Errorf("x-goog-api-key = %q", k)
			}
			providertest.CheckGolden(t, tc.name, got.Body)
		})
	}
}

// TestOutgoingIDs: ids Gemini issued are sent back; the "adk-" ids made for
// calls that came without one are not (Gemini never saw them).
func TestOutgoingIDs(t *testing.T) {
	in := []*genai.Content{{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "gem-1", Name: "a"}},
		{FunctionCall: &genai.FunctionCall{ID: "adk-123", Name: "b"}},
	}}, {Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "gem-1", Name: "a"}},
		{FunctionResponse: &genai.FunctionResponse{ID: "adk-123", Name: "b"}},
	}}}
	out := outgoing(in)
	var ids []string
	for _, c := range out {
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				ids = append(ids, p.FunctionCall.ID)
			} else {
				ids = append(ids, p.FunctionResponse.ID)
			}
		}
	}
	if diff := cmp.Diff([]string{"gem-1", "", "gem-1", ""}, ids); diff != "" {
		t.Errorf("ids sent (-want +got):\n%s", diff)
	}
	if in[0].Parts[1].FunctionCall.ID != "adk-123" || in[1].Parts[1].FunctionResponse.ID != "adk-123" {
		t.Error("outgoing modified its input")
	}
}

// TestNilConfig: a request with neither config nor contents still works.
func TestNilConfig(t *testing.T) {
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, okChunk) })
	res := providertest.Run(t, context.Background(), provider(t, up, Config{}).Model("gemini-test"), &model.Request{}, true)
	if res.Err != nil || providertest.Text(res.Final) != "ok" {
		t.Fatalf("got %v / %q", res.Err, providertest.Text(res.Final))
	}
}
