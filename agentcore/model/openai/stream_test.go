package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test-0125","choices":[],
 "usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16,
  "prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`

var generatedID = regexp.MustCompile(`^call_[A-Za-z0-9]{32}$`)

// turn summarises a call's output for comparison.
type turn struct {
	Partials  []string // text deltas; thoughts prefixed "thought:"
	Text      string
	Thought   string
	Calls     []call0
	Finish    genai.FinishReason
	Usage     *genai.GenerateContentResponseUsageMetadata
	ErrorCode string
	Version   string
}

// call0 is a function call; ID "generated" stands for a fresh call_ id.
type call0 struct {
	ID, Name string
	Args     map[string]any
}

func summarize(t *testing.T, res result) turn {
	t.Helper()
	var s turn
	for _, p := range res.partials {
		for _, part := range p.Content.Parts {
			if part.Thought {
				s.Partials = append(s.Partials, "thought:"+part.Text)
			} else {
				s.Partials = append(s.Partials, part.Text)
			}
		}
	}
	f := res.final
	if !f.TurnComplete || f.Partial {
		t.Errorf("final response: TurnComplete=%v Partial=%v", f.TurnComplete, f.Partial)
	}
	s.Text = text(f)
	if f.Content != nil {
		for _, p := range f.Content.Parts {
			if p.Thought {
				s.Thought += p.Text
			}
		}
	}
	for _, c := range calls(f) {
		id := c.ID
		if generatedID.MatchString(id) {
			id = "generated"
		}
		s.Calls = append(s.Calls, call0{ID: id, Name: c.Name, Args: c.Args})
	}
	s.Finish, s.Usage, s.ErrorCode, s.Version = f.FinishReason, f.UsageMetadata, f.ErrorCode, f.ModelVersion
	return s
}

func TestStream(t *testing.T) {
	wantUsage := &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: 11, CandidatesTokenCount: 5, CachedContentTokenCount: 4, ThoughtsTokenCount: 2, TotalTokenCount: 16,
	}
	const v = "gpt-test-0125"
	for _, tc := range []struct {
		name   string
		chunks []string
		want   turn
	}{
		{
			name: "text split mid-word, then the usage chunk",
			chunks: []string{
				chunk(`{"role":"assistant","content":""}`, ""),
				chunk(`{"content":"Hel"}`, ""),
				chunk(`{"content":"lo wor"}`, ""),
				chunk(`{"content":"ld!"}`, ""),
				chunk(`{}`, "stop"),
				usageChunk,
			},
			want: turn{Partials: []string{"Hel", "lo wor", "ld!"}, Text: "Hello world!", Finish: genai.FinishReasonStop, Usage: wantUsage, Version: v},
		},
		{
			name: "tool arguments split across chunks",
			chunks: []string{
				chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"lookup_invoice","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"invo"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ice_id\":\"IN"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"V-7\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				usageChunk,
			},
			want: turn{
				Calls:  []call0{{ID: "call_abc", Name: "lookup_invoice", Args: map[string]any{"invoice_id": "INV-7"}}},
				Finish: genai.FinishReasonStop, Usage: wantUsage, Version: v,
			},
		},
		{
			name: "text, then two parallel tool calls interleaved by index",
			chunks: []string{
				chunk(`{"role":"assistant","content":"Checking both."}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"transfer_to_agent","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"lookup_invoice","arguments":"{\"invoice_id\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"agent_name\":\"billing\"}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"INV-7\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				usageChunk,
			},
			want: turn{
				Partials: []string{"Checking both."},
				Text:     "Checking both.",
				Calls: []call0{
					{ID: "call_A", Name: "transfer_to_agent", Args: map[string]any{"agent_name": "billing"}},
					{ID: "call_B", Name: "lookup_invoice", Args: map[string]any{"invoice_id": "INV-7"}},
				},
				Finish: genai.FinishReasonStop, Usage: wantUsage, Version: v,
			},
		},
		{
			name: "a call without an id gets call_ and 32 characters",
			chunks: []string{
				chunk(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"exit_loop","arguments":"{}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
			},
			want: turn{Calls: []call0{{ID: "generated", Name: "exit_loop", Args: map[string]any{}}}, Finish: genai.FinishReasonStop, Version: v},
		},
		{
			name: "every call at index 0 (Ollama), told apart by id",
			chunks: []string{
				chunk(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"n\":1}"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"c2","function":{"name":"f","arguments":"{\"n\":2}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
			},
			want: turn{
				Calls:  []call0{{ID: "c1", Name: "f", Args: map[string]any{"n": 1.0}}, {ID: "c2", Name: "f", Args: map[string]any{"n": 2.0}}},
				Finish: genai.FinishReasonStop, Version: v,
			},
		},
		{
			name: "fragments without index continue the last call",
			chunks: []string{
				chunk(`{"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"n\""}}]}`, ""),
				chunk(`{"tool_calls":[{"function":{"arguments":":1}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
			},
			want: turn{Calls: []call0{{ID: "c1", Name: "f", Args: map[string]any{"n": 1.0}}}, Finish: genai.FinishReasonStop, Version: v},
		},
		{
			name: "reasoning_content becomes thought parts",
			chunks: []string{
				chunk(`{"reasoning_content":"The user "}`, ""),
				chunk(`{"reasoning_content":"greets."}`, ""),
				chunk(`{"content":"Hi!"}`, "stop"),
			},
			want: turn{
				Partials: []string{"thought:The user ", "thought:greets.", "Hi!"},
				Text:     "Hi!", Thought: "The user greets.", Finish: genai.FinishReasonStop, Version: v,
			},
		},
		{
			name: "reasoning (Ollama, OpenRouter), and fields of unexpected types left empty",
			chunks: []string{
				chunk(`{"reasoning":"Hmm."}`, ""),
				chunk(`{"reasoning":{"effort":"low"},"content":"Hi","extra":[1,2]}`, ""),
				chunk(`{"content":[{"type":"text","text":"dropped"}]}`, ""),
				chunk(`{"content":"!"}`, "stop"),
			},
			want: turn{Partials: []string{"thought:Hmm.", "Hi", "!"}, Text: "Hi!", Thought: "Hmm.", Finish: genai.FinishReasonStop, Version: v},
		},
		{
			// The final response's model is the stream's last chunk that
			// named one, here after the text (and with no call).
			name: "the usage chunk names another model",
			chunks: []string{
				chunk(`{"content":"Hi"}`, "stop"),
				`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test-0126","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
			},
			want: turn{Partials: []string{"Hi"}, Text: "Hi", Finish: genai.FinishReasonStop, Version: "gpt-test-0126",
				Usage: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 1, CandidatesTokenCount: 1, TotalTokenCount: 2}},
		},
		{
			// A refusal is text; a delta with both sends them one after
			// the other.
			name: "refusal deltas",
			chunks: []string{
				chunk(`{"role":"assistant","content":null,"refusal":"I can't "}`, ""),
				chunk(`{"refusal":"help"}`, ""),
				chunk(`{"content":" with","refusal":" that."}`, ""),
				chunk(`{}`, "stop"),
			},
			want: turn{Partials: []string{"I can't ", "help", " with that."}, Text: "I can't help with that.", Finish: genai.FinishReasonStop, Version: v},
		},
		{
			name:   "length",
			chunks: []string{chunk(`{"content":"Once upon"}`, "length")},
			want:   turn{Partials: []string{"Once upon"}, Text: "Once upon", Finish: genai.FinishReasonMaxTokens, Version: v},
		},
		{
			name:   "content_filter",
			chunks: []string{chunk(`{"content":"Sure, here"}`, "content_filter")},
			want: turn{
				Partials: []string{"Sure, here"}, Text: "Sure, here", Finish: genai.FinishReasonSafety,
				ErrorCode: "SAFETY", Version: v,
			},
		},
		{
			name: "arguments that are not a JSON object",
			chunks: []string{
				chunk(`{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"n\":"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
			},
			want: turn{Finish: genai.FinishReasonMalformedFunctionCall, ErrorCode: "MALFORMED_FUNCTION_CALL", Version: v},
		},
		{
			name: "finish and usage but no [DONE]",
			chunks: []string{
				chunk(`{"content":"ok"}`, "stop"),
				usageChunk,
				"",
			},
			want: turn{Partials: []string{"ok"}, Text: "ok", Finish: genai.FinishReasonStop, Usage: wantUsage, Version: v},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, tc.chunks...) })
			res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, true)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if diff := cmp.Diff(tc.want, summarize(t, res)); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamBroken: a stream that stops early is an error, never a short
// final answer; what was already streamed stays streamed.
func TestStreamBroken(t *testing.T) {
	two := []string{chunk(`{"role":"assistant","content":"The invoice"}`, ""), chunk(`{"content":" is high bec"}`, "")}
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		code     string
		partials int
	}{
		{
			name:     "body ends after two chunks",
			handler:  func(w http.ResponseWriter, r *http.Request) { sse(w, append(two, "")...) },
			code:     "stream_cut",
			partials: 2,
		},
		{
			name: "connection dropped after two chunks",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sse(w, append(two, "")...)
				panic(http.ErrAbortHandler)
			},
			code:     "stream_cut",
			partials: 2,
		},
		{
			name:     "[DONE] without a finish reason",
			handler:  func(w http.ResponseWriter, r *http.Request) { sse(w, two...) },
			code:     "stream_cut",
			partials: 2,
		},
		{
			name: "error event after a chunk",
			handler: func(w http.ResponseWriter, r *http.Request) {
				sse(w, two[0], `{"error":{"message":"overloaded","type":"server_error"}}`, "")
			},
			code:     "upstream_error",
			partials: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, tc.handler)
			res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, true)
			me, ok := model.AsError(res.err)
			if !ok {
				t.Fatalf("err = %v, want a *model.Error", res.err)
			}
			if me.Code != tc.code || !me.Retryable || me.Status != 0 || me.Provider != "test" || me.Model != "gpt-test" {
				t.Errorf("error = %+v, want code %q, retryable, status 0", me, tc.code)
			}
			if len(res.partials) != tc.partials {
				t.Errorf("%d partials before the error, want %d", len(res.partials), tc.partials)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want turn
	}{
		{
			name: "text with usage",
			body: `{"id":"x","object":"chat.completion","created":1,"model":"gpt-test-0125","choices":[{"index":0,
				"message":{"role":"assistant","content":"Hello world!","refusal":null},"logprobs":null,"finish_reason":"stop"}],
				"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16,
				"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			want: turn{Text: "Hello world!", Finish: genai.FinishReasonStop, Version: "gpt-test-0125", Usage: &genai.GenerateContentResponseUsageMetadata{
				PromptTokenCount: 11, CandidatesTokenCount: 5, CachedContentTokenCount: 4, ThoughtsTokenCount: 2, TotalTokenCount: 16,
			}},
		},
		{
			name: "two tool calls, one without id, content null",
			body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
				"message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"transfer_to_agent","arguments":"{\"agent_name\":\"billing\"}"}},
				{"type":"function","function":{"name":"exit_loop","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			want: turn{
				Calls: []call0{
					{ID: "call_1", Name: "transfer_to_agent", Args: map[string]any{"agent_name": "billing"}},
					{ID: "generated", Name: "exit_loop", Args: map[string]any{}},
				},
				Finish: genai.FinishReasonStop, Version: "m",
			},
		},
		{
			name: "reasoning_content, usage null, and a count of an unexpected type left out",
			body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"logprobs":{"content":[]},
				"message":{"role":"assistant","content":"ok","reasoning_content":"Easy.","annotations":[]},"finish_reason":"stop"}],
				"usage":null,"usage":{"prompt_tokens":"3","completion_tokens":2,"total_tokens":5}}`,
			want: turn{Text: "ok", Thought: "Easy.", Finish: genai.FinishReasonStop, Version: "m",
				Usage: &genai.GenerateContentResponseUsageMetadata{CandidatesTokenCount: 2, TotalTokenCount: 5}},
		},
		{
			name: "finish_reason left out",
			body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`,
			want: turn{Text: "ok", Finish: genai.FinishReasonStop, Version: "m"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			})
			res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, false)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if len(res.partials) != 0 {
				t.Errorf("%d partials without streaming", len(res.partials))
			}
			if diff := cmp.Diff(tc.want, summarize(t, res)); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnreadableAnswer: a successful status with a body that is not a
// chat completion is an upstream error, never an empty answer.
func TestUnreadableAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		body   string
		code   string
	}{
		{name: "HTML page", body: "<html>ok</html>", code: "upstream_error"},
		{name: "empty body", body: "", code: "upstream_error"},
		{name: "no choices", body: `{"id":"x","object":"chat.completion","model":"m","choices":[]}`, code: "upstream_error"},
		{name: "stream of malformed JSON", stream: true, body: "data: {\"choices\":[\n\n", code: "upstream_error"},
		{name: "malformed JSON after a chunk", stream: true,
			body: "data: " + chunk(`{"content":"Hel"}`, "") + "\n\ndata: {oops}\n\n", code: "stream_cut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.stream {
					w.Header().Set("Content-Type", "text/event-stream")
				}
				_, _ = w.Write([]byte(tc.body))
			})
			res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, tc.stream)
			me, ok := model.AsError(res.err)
			if !ok || me.Code != tc.code || !me.Retryable {
				t.Fatalf("err = %#v, want a retryable %s *model.Error", res.err, tc.code)
			}
		})
	}
}

// TestStreamDeltaTextKept: the deltas' text, held in one buffer per
// stream (decoder.deltas), stays as it was in every partial response after
// the buffer is outgrown and after the stream ends; escaped text too.
func TestStreamDeltaTextKept(t *testing.T) {
	var chunks, want []string
	for i := range 60 {
		text := fmt.Sprintf("word %d, ", i)
		if i%7 == 0 {
			text = fmt.Sprintf("\"quoted\" é %d\n", i)
		}
		b, _ := json.Marshal(text)
		chunks = append(chunks, chunk(`{"content":`+string(b)+`}`, ""))
		want = append(want, text)
	}
	chunks = append(chunks, chunk(`{}`, "stop"))
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunks...) })
	res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, true)
	if res.err != nil {
		t.Fatal(res.err)
	}
	got := summarize(t, res)
	if diff := cmp.Diff(want, got.Partials); diff != "" {
		t.Errorf("partials (-want +got):\n%s", diff)
	}
	if whole := strings.Join(want, ""); got.Text != whole {
		t.Errorf("text %q, want %q", got.Text, whole)
	}
}

// TestStreamTransient: under model.WithCopiedPartials a stream yields one
// partial response, marked Transient and rewritten for every delta, whose
// text read at each yield and whose final response are those of a call
// that makes a response per delta.
func TestStreamTransient(t *testing.T) {
	chunks := []string{
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"reasoning_content":"Think."}`, ""),
		chunk(`{"content":"Hel"}`, ""),
		chunk(`{"reasoning_content":"More.","content":"lo"}`, ""),
		chunk(`{"content":"!"}`, "stop"),
		usageChunk,
	}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, chunks...) })
	llm := up.provider(t, Config{}).Model("gpt-test")
	want := summarize(t, run(t, context.Background(), llm, &model.Request{}, true))

	var seen []*model.Response
	var got turn
	var final *model.Response
	for r, err := range llm.GenerateContent(model.WithCopiedPartials(context.Background()), &model.Request{}, true) {
		if err != nil {
			t.Fatal(err)
		}
		if !r.Partial {
			final = r
			continue
		}
		if !r.Transient {
			t.Errorf("partial response not marked Transient: %+v", r)
		}
		seen = append(seen, r)
		for _, p := range r.Content.Parts {
			if p.Thought {
				got.Partials = append(got.Partials, "thought:"+p.Text)
			} else {
				got.Partials = append(got.Partials, p.Text)
			}
		}
	}
	if diff := cmp.Diff(want.Partials, got.Partials); diff != "" {
		t.Errorf("partials (-want +got):\n%s", diff)
	}
	for _, r := range seen[1:] {
		if r != seen[0] {
			t.Errorf("a partial response of its own for a delta: %p, %p", r, seen[0])
		}
	}
	if final == nil || final.Transient {
		t.Fatalf("final response %+v", final)
	}
	want.Partials = nil
	if diff := cmp.Diff(want, summarize(t, result{final: final})); diff != "" {
		t.Errorf("final (-want +got):\n%s", diff)
	}
}
