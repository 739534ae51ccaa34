package gemini

import (
	"context"
	"net/http"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
)

const usageTail = `{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],
 "usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"cachedContentTokenCount":4,"thoughtsTokenCount":2,"totalTokenCount":18},
 "modelVersion":"gemini-test-001"}`

var generatedID = regexp.MustCompile(`^adk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// turn summarises a call's output for comparison.
type turn struct {
	Partials  []string // text deltas; thoughts prefixed "thought:"
	Parts     []string // the final content's parts, one word each
	Calls     []call0
	Finish    genai.FinishReason
	Usage     *genai.GenerateContentResponseUsageMetadata
	ErrorCode string
	Version   string
}

// call0 is a function call; ID "generated" stands for a fresh adk- id.
type call0 struct {
	ID, Name string
	Args     map[string]any
}

func summarize(t *testing.T, res providertest.Result) turn {
	t.Helper()
	s := turn{Partials: res.PartialTexts(t)}
	f := res.Final
	if f.Content != nil {
		for _, p := range f.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if generatedID.MatchString(id) {
					id = "generated"
				}
				s.Parts = append(s.Parts, "call")
				s.Calls = append(s.Calls, call0{ID: id, Name: p.FunctionCall.Name, Args: p.FunctionCall.Args})
			case p.ExecutableCode != nil:
				s.Parts = append(s.Parts, "code:"+p.ExecutableCode.Code)
			case p.CodeExecutionResult != nil:
				s.Parts = append(s.Parts, "result:"+p.CodeExecutionResult.Output)
			case p.Thought:
				s.Parts = append(s.Parts, "thought:"+p.Text)
			default:
				s.Parts = append(s.Parts, p.Text)
			}
		}
	}
	s.Finish, s.Usage, s.ErrorCode, s.Version = f.FinishReason, f.UsageMetadata, f.ErrorCode, f.ModelVersion
	return s
}

func TestStream(t *testing.T) {
	wantUsage := &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: 11, CandidatesTokenCount: 5, CachedContentTokenCount: 4, ThoughtsTokenCount: 2, TotalTokenCount: 18,
	}
	const v = "gemini-test-001"
	for _, tc := range []struct {
		name   string
		chunks []string
		want   turn
	}{
		{
			name: "text split mid-word, usage at the end",
			chunks: []string{
				chunk(`[{"text":"Hel"}]`, ""),
				chunk(`[{"text":"lo wor"}]`, ""),
				chunk(`[{"text":"ld!"}]`, ""),
				usageTail,
			},
			want: turn{Partials: []string{"Hel", "lo wor", "ld!"}, Parts: []string{"Hello world!"}, Finish: genai.FinishReasonStop, Usage: wantUsage, Version: v},
		},
		{
			name: "two parallel calls without ids get adk- ids; an upstream id is kept",
			chunks: []string{
				chunk(`[{"text":"Checking both."}]`, ""),
				chunk(`[{"functionCall":{"name":"transfer_to_agent","args":{"agent_name":"billing"}}},
				        {"functionCall":{"name":"lookup_invoice","args":{"invoice_id":"INV-7"}}}]`, ""),
				chunk(`[{"functionCall":{"id":"gem-9","name":"exit_loop","args":{}}}]`, "STOP"),
			},
			want: turn{
				Partials: []string{"Checking both."},
				Parts:    []string{"Checking both.", "call", "call", "call"},
				Calls: []call0{
					{ID: "generated", Name: "transfer_to_agent", Args: map[string]any{"agent_name": "billing"}},
					{ID: "generated", Name: "lookup_invoice", Args: map[string]any{"invoice_id": "INV-7"}},
					{ID: "gem-9", Name: "exit_loop", Args: map[string]any{}},
				},
				Finish: genai.FinishReasonStop, Version: v,
			},
		},
		{
			name: "thoughts, code execution and its result",
			chunks: []string{
				chunk(`[{"text":"Need to compute.","thought":true}]`, ""),
				chunk(`[{"executableCode":{"language":"PYTHON","code":"print(240*0.19)"}}]`, ""),
				chunk(`[{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"45.6"}}]`, ""),
				chunk(`[{"text":"It is 45.6."}]`, "STOP"),
			},
			want: turn{
				Partials: []string{"thought:Need to compute.", "It is 45.6."},
				Parts:    []string{"thought:Need to compute.", "code:print(240*0.19)", "result:45.6", "It is 45.6."},
				Finish:   genai.FinishReasonStop, Version: v,
			},
		},
		{
			name:   "MAX_TOKENS",
			chunks: []string{chunk(`[{"text":"Once upon"}]`, "MAX_TOKENS")},
			want:   turn{Partials: []string{"Once upon"}, Parts: []string{"Once upon"}, Finish: genai.FinishReasonMaxTokens, Version: v},
		},
		{
			name:   "SAFETY",
			chunks: []string{chunk(`[{"text":"Sure"}]`, ""), chunk(`[]`, "SAFETY")},
			want:   turn{Partials: []string{"Sure"}, Parts: []string{"Sure"}, Finish: genai.FinishReasonSafety, ErrorCode: "SAFETY", Version: v},
		},
		{
			name:   "blocked prompt",
			chunks: []string{`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"modelVersion":"gemini-test-001"}`},
			want:   turn{ErrorCode: "PROHIBITED_CONTENT", Version: v},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, tc.chunks...) })
			res := providertest.Run(t, context.Background(), provider(t, up, Config{}).Model("gemini-test"), &model.Request{}, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if diff := cmp.Diff(tc.want, summarize(t, res)); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamBroken: a stream that stops early is an error, never a short
// final answer.
func TestStreamBroken(t *testing.T) {
	two := []string{chunk(`[{"text":"The invoice"}]`, ""), chunk(`[{"text":" is high bec"}]`, "")}
	providertest.StreamBroken(t, harness, []providertest.BrokenCase{
		{
			Name:     "body ends after two chunks",
			Handler:  func(w http.ResponseWriter, r *http.Request) { sse(w, two...) },
			Code:     "stream_cut",
			Partials: 2,
		},
		{
			Name: "connection dropped after two chunks",
			Handler: func(w http.ResponseWriter, r *http.Request) {
				sse(w, two...)
				panic(http.ErrAbortHandler)
			},
			Code:     "stream_cut",
			Partials: 2,
		},
		{
			Name: "error event after a chunk",
			Handler: func(w http.ResponseWriter, r *http.Request) {
				sse(w, two[0], `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)
			},
			Code:     "upstream_error",
			Status:   503,
			Partials: 1,
		},
	})
}

func TestNonStreaming(t *testing.T) {
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[
			{"text":"Handing over."},
			{"functionCall":{"name":"transfer_to_agent","args":{"agent_name":"billing"}}}]},
			"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"totalTokenCount":16},
			"modelVersion":"gemini-test-001"}`))
	})
	res := providertest.Run(t, context.Background(), provider(t, up, Config{}).Model("gemini-test"), &model.Request{}, false)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := turn{
		Parts:  []string{"Handing over.", "call"},
		Calls:  []call0{{ID: "generated", Name: "transfer_to_agent", Args: map[string]any{"agent_name": "billing"}}},
		Finish: genai.FinishReasonStop, Version: "gemini-test-001",
		Usage: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 11, CandidatesTokenCount: 5, TotalTokenCount: 16},
	}
	if len(res.Partials) != 0 {
		t.Errorf("%d partials without streaming", len(res.Partials))
	}
	if diff := cmp.Diff(want, summarize(t, res)); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
}
