package openaiwire

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

const testInv = "e-1"

func textPart(s string) *genai.Part    { return &genai.Part{Text: s} }
func thoughtPart(s string) *genai.Part { return &genai.Part{Text: s, Thought: true} }
func callPart(id, name string, args map[string]any) *genai.Part {
	return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}
}

// partial is a streamed fragment of a model turn.
func partial(author string, parts ...*genai.Part) *sessions.Event {
	return &sessions.Event{InvocationID: testInv, Author: author, Partial: true,
		Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}
}

// final is the non-partial event that ends a model turn.
func final(author string, reason genai.FinishReason, parts ...*genai.Part) *sessions.Event {
	return &sessions.Event{InvocationID: testInv, Author: author, FinishReason: reason,
		Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}
}

// toolResult is the event carrying a tool's response.
func toolResult(author, id, name string, resp map[string]any) *sessions.Event {
	return &sessions.Event{InvocationID: testInv, Author: author, Content: &genai.Content{Role: genai.RoleUser,
		Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: resp}}}}}
}

// transferTo is the response of transfer_to_agent, which moves control.
func transferTo(author, id, target string) *sessions.Event {
	ev := toolResult(author, id, "transfer_to_agent", map[string]any{"result": nil})
	ev.Actions.TransferToAgent = target
	return ev
}

func testConfig() EncoderConfig {
	n := 0
	return EncoderConfig{ID: "chatcmpl-test", Model: "support-desk", Created: 1700000000,
		NewToolCallID: func() string { n++; return fmt.Sprintf("call_gen%d", n) }}
}

// summarize renders chunks one line each, for readable expectations:
// "<author>: role content=\"Hi\" tool[0] id=... name=... args=\"\" finish=stop transfer=x usage=p/c/t".
// kept copies what Event returned so that it outlives the next call,
// which reuses the chunks and what they point to.
func kept(chunks []ChatCompletionChunk) []ChatCompletionChunk {
	out := slices.Clone(chunks)
	for i := range out {
		out[i].Choices = slices.Clone(out[i].Choices)
		for j := range out[i].Choices {
			if d := &out[i].Choices[j].Delta; d.Content != nil {
				text := *d.Content
				d.Content = &text
			}
		}
	}
	return out
}

func summarize(chunks []ChatCompletionChunk) []string {
	var out []string
	for _, c := range chunks {
		fields := []string{c.Agentgate.Author + ":"}
		if len(c.Choices) == 0 && c.Usage != nil {
			fields = append(fields, fmt.Sprintf("usage=%d/%d/%d", c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.TotalTokens))
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			if d.Role != "" {
				fields = append(fields, "role")
			}
			if d.Content != nil {
				fields = append(fields, fmt.Sprintf("content=%q", *d.Content))
			}
			for _, tc := range d.ToolCalls {
				s := fmt.Sprintf("tool[%d]", tc.Index)
				if tc.ID != "" || tc.Type != "" || tc.Function.Name != "" {
					s += fmt.Sprintf(" id=%s type=%s name=%s", tc.ID, tc.Type, tc.Function.Name)
				}
				fields = append(fields, s+fmt.Sprintf(" args=%q", tc.Function.Arguments))
			}
			if ch.FinishReason != nil {
				fields = append(fields, "finish="+string(*ch.FinishReason))
			}
		}
		if c.Agentgate.TransferToAgent != "" {
			fields = append(fields, "transfer="+c.Agentgate.TransferToAgent)
		}
		out = append(out, strings.Join(fields, " "))
	}
	return out
}

// checkStream asserts the conformance rules every stream must keep,
// whatever the scenario.
func checkStream(t *testing.T, chunks []ChatCompletionChunk, includeUsage bool) {
	t.Helper()
	finishes, lastChoice := 0, -1
	for i, c := range chunks {
		if c.ID != "chatcmpl-test" || c.Created != 1700000000 || c.Model != "support-desk" || c.Object != ObjectChunk {
			t.Errorf("chunk %d: id/created/model/object = %q/%d/%q/%q", i, c.ID, c.Created, c.Model, c.Object)
		}
		if c.Agentgate.InvocationID == "" || c.Agentgate.Author == "" {
			t.Errorf("chunk %d: agentgate extension incomplete: %+v", i, c.Agentgate)
		}
		b, _ := json.Marshal(c)
		if strings.Contains(string(b), `"error"`) {
			t.Errorf("chunk %d has an error key: %s", i, b)
		}
		if f, err := Frame(c); err != nil || string(f) != "data: "+string(b)+"\n\n" {
			t.Errorf("chunk %d: frame %q, %v; want json.Marshal's %s", i, f, err, b)
		}
		if len(c.Choices) == 0 {
			if !includeUsage || c.Usage == nil || i != len(chunks)-1 {
				t.Errorf("chunk %d: empty choices outside the final usage chunk", i)
			}
			continue
		}
		if len(c.Choices) != 1 || c.Choices[0].Index != 0 || c.Usage != nil {
			t.Errorf("chunk %d: want one choice with index 0 and no usage, got %+v", i, c)
		}
		lastChoice = i
		d := c.Choices[0].Delta
		if (d.Role != "") != (i == 0) {
			t.Errorf("chunk %d: role %q; role belongs on the first delta only", i, d.Role)
		}
		if d.Content != nil && len(d.ToolCalls) > 0 {
			t.Errorf("chunk %d: content and tool calls in one delta", i)
		}
		if len(d.ToolCalls) > 1 {
			t.Errorf("chunk %d: more than one tool call fragment in a delta", i)
		}
		if c.Choices[0].FinishReason != nil {
			finishes++
			if *c.Choices[0].FinishReason == "" {
				t.Errorf("chunk %d: empty finish reason", i)
			}
		}
	}
	if finishes != 1 || lastChoice < 0 || chunks[lastChoice].Choices[0].FinishReason == nil {
		t.Errorf("want exactly one finish reason, on the last choice chunk; got %d", finishes)
	}
	if includeUsage && (len(chunks) == 0 || chunks[len(chunks)-1].Usage == nil) {
		t.Error("include_usage: no final usage chunk")
	}
}

func TestEncoder(t *testing.T) {
	usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5}
	clientTools := map[string]string{"open_file": "open_file", "get_weather": "get_weather", "refund": "billing__refund"}
	tests := []struct {
		name         string
		includeUsage bool
		start        []string // author, invocation for Start
		events       []*sessions.Event
		want         []string
		wantMessage  string // the completion's choices[0].message as JSON
		wantFinish   FinishReason
		wantTransfer string
	}{{
		name: "partials then final are not repeated",
		events: []*sessions.Event{
			partial("root", textPart("Hel")), partial("root", textPart("lo")),
			final("root", genai.FinishReasonStop, textPart("Hello")),
		},
		want: []string{
			`root: role content="Hel"`,
			`root: content="lo"`,
			`root: finish=stop`,
		},
		wantMessage: `{"role":"assistant","content":"Hello","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name:        "final without partials is sent as one delta",
		events:      []*sessions.Event{final("root", genai.FinishReasonStop, textPart("Hello "), textPart("there"))},
		want:        []string{`root: role content="Hello there"`, `root: finish=stop`},
		wantMessage: `{"role":"assistant","content":"Hello there","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name: "thoughts are never content; a turn streamed only as thoughts sends its final text",
		events: []*sessions.Event{
			partial("root", thoughtPart("thinking...")),
			final("root", genai.FinishReasonStop, thoughtPart("thinking..."), textPart("Answer")),
			partial("root", thoughtPart("more")), partial("root", textPart("A2")),
			final("root", genai.FinishReasonStop, thoughtPart("more"), textPart("A2")),
		},
		want:        []string{`root: role content="Answer"`, `root: content="A2"`, `root: finish=stop`},
		wantMessage: `{"role":"assistant","content":"AnswerA2","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name: "final longer than its partials sends the rest; a rewritten final sends nothing",
		events: []*sessions.Event{
			partial("root", textPart("Hel")), final("root", genai.FinishReasonStop, textPart("Hello")),
			partial("root", textPart("Bye")), final("root", genai.FinishReasonStop, textPart("[redacted]")),
		},
		want:        []string{`root: role content="Hel"`, `root: content="lo"`, `root: content="Bye"`, `root: finish=stop`},
		wantMessage: `{"role":"assistant","content":"HelloBye","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name: "transfer mid-stream with author change",
		events: []*sessions.Event{
			partial("coordinator", textPart("Let me get billing.")),
			final("coordinator", genai.FinishReasonStop, textPart("Let me get billing."),
				callPart("adk-t1", "transfer_to_agent", map[string]any{"agent_name": "billing"})),
			transferTo("coordinator", "adk-t1", "billing"),
			partial("billing", textPart("Hi, ")), partial("billing", textPart("billing here.")),
			final("billing", genai.FinishReasonStop, textPart("Hi, billing here.")),
		},
		want: []string{
			`coordinator: role content="Let me get billing."`,
			`coordinator: transfer=billing`,
			`billing: content="Hi, "`,
			`billing: content="billing here."`,
			`billing: finish=stop`,
		},
		wantMessage:  `{"role":"assistant","content":"Let me get billing.Hi, billing here.","refusal":null}`,
		wantFinish:   FinishStop,
		wantTransfer: "billing",
	}, {
		name:   "transfer as the first output carries the role",
		events: []*sessions.Event{transferTo("coordinator", "adk-t1", "billing"), final("billing", genai.FinishReasonStop, textPart("Hi"))},
		want: []string{
			`coordinator: role content="" transfer=billing`,
			`billing: content="Hi"`,
			`billing: finish=stop`,
		},
		wantMessage:  `{"role":"assistant","content":"Hi","refusal":null}`,
		wantFinish:   FinishStop,
		wantTransfer: "billing",
	}, {
		name: "two parallel client tool calls after text",
		events: []*sessions.Event{
			partial("root", textPart("Checking both.")),
			final("root", genai.FinishReasonStop, textPart("Checking both."),
				callPart("call_abc", "get_weather", map[string]any{"city": "Paris"}),
				callPart("", "get_weather", map[string]any{"city": "Rome"})),
		},
		want: []string{
			`root: role content="Checking both."`,
			`root: tool[0] id=call_abc type=function name=get_weather args=""`,
			`root: tool[0] args="{\"city\":\"Paris\"}"`,
			`root: tool[1] id=call_gen1 type=function name=get_weather args=""`,
			`root: tool[1] args="{\"city\":\"Rome\"}"`,
			`root: finish=tool_calls`,
		},
		wantMessage: `{"role":"assistant","content":"Checking both.","refusal":null,"tool_calls":[
			{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_gen1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}`,
		wantFinish: FinishToolCalls,
	}, {
		name: "tool calls only: content null; sub-agent action shown by its client name; indexes count across turns",
		events: []*sessions.Event{
			final("root", genai.FinishReasonStop, callPart("call_1", "open_file", nil)),
			final("billing", genai.FinishReasonStop, callPart("id with spaces", "refund", map[string]any{"amount": 5})),
		},
		want: []string{
			`root: role tool[0] id=call_1 type=function name=open_file args=""`,
			`root: tool[0] args="{}"`,
			`billing: tool[1] id=call_gen1 type=function name=billing__refund args=""`,
			`billing: tool[1] args="{\"amount\":5}"`,
			`billing: finish=tool_calls`,
		},
		wantMessage: `{"role":"assistant","content":null,"refusal":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"open_file","arguments":"{}"}},
			{"id":"call_gen1","type":"function","function":{"name":"billing__refund","arguments":"{\"amount\":5}"}}]}`,
		wantFinish: FinishToolCalls,
	}, {
		name: "internal agent-tool calls and responses are hidden",
		events: []*sessions.Event{
			final("root", genai.FinishReasonStop, callPart("adk-1", "summarizer", map[string]any{"request": "sum it"})),
			toolResult("root", "adk-1", "summarizer", map[string]any{"text": "a summary"}),
			partial("root", textPart("Summary: a summary")),
			final("root", genai.FinishReasonStop, textPart("Summary: a summary")),
		},
		want:        []string{`root: role content="Summary: a summary"`, `root: finish=stop`},
		wantMessage: `{"role":"assistant","content":"Summary: a summary","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name:         "usage chunk when asked",
		includeUsage: true,
		events:       []*sessions.Event{final("root", genai.FinishReasonStop, textPart("Hi"))},
		want:         []string{`root: role content="Hi"`, `root: finish=stop`, `root: usage=10/5/15`},
		wantMessage:  `{"role":"assistant","content":"Hi","refusal":null}`,
		wantFinish:   FinishStop,
	}, {
		name:        "no output at all still has a role and a finish",
		events:      []*sessions.Event{{InvocationID: testInv, Author: "root"}},
		want:        []string{`root: role content="" finish=stop`},
		wantMessage: `{"role":"assistant","content":"","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name:   "start sends the role chunk before any event",
		start:  []string{"root", testInv},
		events: []*sessions.Event{partial("root", textPart("Hi")), final("root", genai.FinishReasonStop, textPart("Hi"))},
		want: []string{
			`root: role content=""`,
			`root: content="Hi"`,
			`root: finish=stop`,
		},
		wantMessage: `{"role":"assistant","content":"Hi","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name:        "max tokens gives length",
		events:      []*sessions.Event{final("root", genai.FinishReasonMaxTokens, textPart("Cut"))},
		want:        []string{`root: role content="Cut"`, `root: finish=length`},
		wantMessage: `{"role":"assistant","content":"Cut","refusal":null}`,
		wantFinish:  FinishLength,
	}, {
		name: "only the last model turn's reason counts, and tool calls beat length",
		events: []*sessions.Event{
			final("root", genai.FinishReasonMaxTokens, textPart("a")),
			final("root", genai.FinishReasonStop, textPart("b")),
			final("root", genai.FinishReasonMaxTokens, callPart("call_1", "open_file", nil)),
		},
		want: []string{
			`root: role content="a"`, `root: content="b"`,
			`root: tool[0] id=call_1 type=function name=open_file args=""`, `root: tool[0] args="{}"`,
			`root: finish=tool_calls`,
		},
		wantMessage: `{"role":"assistant","content":"ab","refusal":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"open_file","arguments":"{}"}}]}`,
		wantFinish: FinishToolCalls,
	}, {
		name:        "a blocked turn gives content_filter",
		events:      []*sessions.Event{final("root", genai.FinishReasonSafety)},
		want:        []string{`root: role content="" finish=content_filter`},
		wantMessage: `{"role":"assistant","content":"","refusal":null}`,
		wantFinish:  FinishContentFilter,
	}, {
		name: "function calls in partials are ignored, and a repeated call is sent once",
		events: []*sessions.Event{
			partial("root", callPart("call_1", "open_file", nil)),
			final("root", genai.FinishReasonStop, callPart("call_1", "open_file", nil)),
			final("root", genai.FinishReasonStop, callPart("call_1", "open_file", nil)),
		},
		want: []string{
			`root: role tool[0] id=call_1 type=function name=open_file args=""`, `root: tool[0] args="{}"`,
			`root: finish=tool_calls`,
		},
		wantMessage: `{"role":"assistant","content":null,"refusal":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"open_file","arguments":"{}"}}]}`,
		wantFinish: FinishToolCalls,
	}, {
		name: "interleaved parallel branches keep their own turns; user events are ignored",
		events: []*sessions.Event{
			{InvocationID: testInv, Author: "user", Content: genai.NewContentFromText("hi", genai.RoleUser)},
			withBranch(partial("a", textPart("A1")), "p.a"), withBranch(partial("b", textPart("B1")), "p.b"),
			withBranch(final("a", genai.FinishReasonStop, textPart("A1")), "p.a"),
			withBranch(final("b", genai.FinishReasonStop, textPart("B1B2")), "p.b"),
		},
		want:        []string{`a: role content="A1"`, `b: content="B1"`, `b: content="B2"`, `b: finish=stop`},
		wantMessage: `{"role":"assistant","content":"A1B1B2","refusal":null}`,
		wantFinish:  FinishStop,
	}, {
		name: "a turn that starts after another finished has its own text, beside turns still going",
		events: []*sessions.Event{
			withBranch(partial("a", textPart("A1")), "p.a"), withBranch(partial("b", textPart("B1")), "p.b"),
			withBranch(partial("c", textPart("C1")), "p.c"),
			withBranch(final("a", genai.FinishReasonStop, textPart("A1A2")), "p.a"),
			withBranch(partial("d", textPart("D1")), "p.d"),
			withBranch(final("c", genai.FinishReasonStop, textPart("C1")), "p.c"),
			withBranch(partial("b", textPart("B2")), "p.b"),
			withBranch(final("b", genai.FinishReasonStop, textPart("rewritten")), "p.b"),
			withBranch(final("d", genai.FinishReasonStop, textPart("D1D2")), "p.d"),
		},
		want: []string{`a: role content="A1"`, `b: content="B1"`, `c: content="C1"`, `a: content="A2"`, `d: content="D1"`,
			`b: content="B2"`, `d: content="D2"`, `d: finish=stop`},
		wantMessage: `{"role":"assistant","content":"A1B1C1A2D1B2D2","refusal":null}`,
		wantFinish:  FinishStop,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			encode := func(streamed bool) (*Encoder, []ChatCompletionChunk) {
				cfg := testConfig()
				cfg.IncludeUsage = tt.includeUsage
				cfg.ClientTools = clientTools
				cfg.Streamed = streamed
				enc := NewEncoder(cfg)
				var chunks []ChatCompletionChunk
				if tt.start != nil {
					chunks = append(chunks, enc.Start(tt.start[0], tt.start[1])...)
				}
				for _, ev := range tt.events {
					chunks = append(chunks, kept(enc.Event(ev))...)
				}
				return enc, append(chunks, enc.Finish(usage)...)
			}
			enc, chunks := encode(false)
			if diff := cmp.Diff(tt.want, summarize(chunks)); diff != "" {
				t.Errorf("chunks mismatch (-want +got):\n%s", diff)
			}
			checkStream(t, chunks, tt.includeUsage)
			if more := append(enc.Finish(usage), enc.Event(final("root", "", textPart("late")))...); len(more) != 0 {
				t.Errorf("chunks after Finish: %v", summarize(more))
			}

			// A streamed encoder (it keeps no completion) sends the same.
			if _, streamed := encode(true); !cmp.Equal(chunks, streamed) {
				t.Errorf("a streamed encoder sends other chunks:\n%s", cmp.Diff(chunks, streamed))
			}

			// The non-streaming path gives what the stream adds up to.
			cfg := testConfig()
			cfg.ClientTools = clientTools
			enc = NewEncoder(cfg)
			for _, ev := range tt.events {
				enc.Event(ev)
			}
			got := enc.Completion(usage)
			var acc Accumulator
			for _, c := range chunks {
				acc.Add(c)
			}
			fromStream := acc.Completion()
			fromStream.Usage = UsageFrom(usage)
			if diff := cmp.Diff(fromStream, got); diff != "" {
				t.Errorf("completion differs from the accumulated stream (-stream +completion):\n%s", diff)
			}
			assertJSON(t, tt.wantMessage, got.Choices[0].Message)
			if got.Choices[0].FinishReason != tt.wantFinish || got.Agentgate.TransferToAgent != tt.wantTransfer {
				t.Errorf("finish %q transfer %q, want %q %q", got.Choices[0].FinishReason, got.Agentgate.TransferToAgent,
					tt.wantFinish, tt.wantTransfer)
			}
		})
	}
}

func withBranch(ev *sessions.Event, branch string) *sessions.Event {
	ev.Branch = branch
	return ev
}

// TestEncoderGolden pins the exact wire form of the canonical client tool
// call sequence and its non-streaming equivalent.
func TestEncoderGolden(t *testing.T) {
	events := []*sessions.Event{
		partial("coordinator", textPart("Let me open it.")),
		final("coordinator", genai.FinishReasonStop, textPart("Let me open it."),
			callPart("call_abc", "open_file", map[string]any{"path": "a.txt"})),
	}
	usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 82, CandidatesTokenCount: 12, ThoughtsTokenCount: 5,
		CachedContentTokenCount: 64}
	cfg := testConfig()
	cfg.IncludeUsage = true
	cfg.ClientTools = map[string]string{"open_file": "open_file"}
	enc := NewEncoder(cfg)
	var chunks []ChatCompletionChunk
	for _, ev := range events {
		chunks = append(chunks, kept(enc.Event(ev))...)
	}
	chunks = append(chunks, enc.Finish(usage)...)

	const head = `"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"support-desk",` +
		`"agentgate":{"author":"coordinator","invocation_id":"e-1"}`
	const usageJSON = `{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,
		"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},
		"completion_tokens_details":{"reasoning_tokens":5,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`
	assertJSON(t, `[
		{`+head+`,"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me open it."},"logprobs":null,"finish_reason":null}]},
		{`+head+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function",
			"function":{"name":"open_file","arguments":""}}]},"logprobs":null,"finish_reason":null}]},
		{`+head+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a.txt\"}"}}]},
			"logprobs":null,"finish_reason":null}]},
		{`+head+`,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]},
		{`+head+`,"choices":[],"usage":`+usageJSON+`}
	]`, chunks)

	frame, err := Frame(chunks[3])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(frame); !strings.HasPrefix(s, "data: {") || !strings.HasSuffix(s, "}\n\n") || strings.Count(s, "\n") != 2 {
		t.Errorf("frame %q is not one data line", s)
	}

	enc = NewEncoder(EncoderConfig{ID: "chatcmpl-test", Model: "support-desk", Created: 1700000000,
		ClientTools: map[string]string{"open_file": "open_file"}})
	for _, ev := range events {
		enc.Event(ev)
	}
	assertJSON(t, `{"id":"chatcmpl-test","object":"chat.completion","created":1700000000,"model":"support-desk",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Let me open it.","refusal":null,
			"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"open_file","arguments":"{\"path\":\"a.txt\"}"}}]},
			"logprobs":null,"finish_reason":"tool_calls"}],
		"usage":`+usageJSON+`,
		"agentgate":{"author":"coordinator","invocation_id":"e-1"}}`, enc.Completion(usage))
	want := []EmittedToolCall{{Index: 0, ID: "call_abc", FunctionCallID: "call_abc", Name: "open_file", ClientName: "open_file",
		Author: "coordinator", InvocationID: testInv}}
	if diff := cmp.Diff(want, enc.ToolCalls()); diff != "" {
		t.Errorf("ToolCalls mismatch (-want +got):\n%s", diff)
	}
}

// TestEncoderFold: folding a turn's events gives the completion that the
// same events given to Event give, without a chunk made, and
// Encoder.AppendCompletion writes it as AppendCompletion does.
func TestEncoderFold(t *testing.T) {
	usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 4, TotalTokenCount: 7}
	for name, events := range map[string][]*sessions.Event{
		"none": nil,
		"text": {final("root", genai.FinishReasonStop, textPart("Hello!"))},
		"partials": {partial("root", textPart("Hel")), partial("root", textPart("lo")),
			final("root", genai.FinishReasonMaxTokens, textPart("Hello!"))},
		"calls": {partial("coordinator", textPart("Let me open it.")),
			final("coordinator", genai.FinishReasonStop, textPart("Let me open it."),
				callPart("call_abc", "open_file", map[string]any{"path": "a.txt"}), callPart("", "open_file", nil),
				callPart("x", "internal", nil))},
		"transfer": {final("root", "", textPart("Passing you on.")), transferTo("root", "t1", "billing"),
			final("billing", genai.FinishReasonSafety), {Author: "user", InvocationID: testInv}},
	} {
		t.Run(name, func(t *testing.T) {
			var got [2]*ChatCompletion
			for i := range got {
				cfg := testConfig()
				cfg.ClientTools = map[string]string{"open_file": "open_file"}
				enc := NewEncoder(cfg)
				for _, ev := range events {
					if i == 0 {
						enc.Event(ev)
					} else {
						enc.Fold(ev)
					}
				}
				got[i] = enc.Completion(usage)
			}
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				t.Errorf("completion (-Event +Fold):\n%s", diff)
			}
			cfg := testConfig()
			cfg.ClientTools = map[string]string{"open_file": "open_file"}
			enc := NewEncoder(cfg)
			for _, ev := range events {
				enc.Fold(ev)
			}
			want := *got[1]
			if want.Agentgate.Author == "" {
				want.Agentgate.Author, want.Agentgate.InvocationID = "first", "inv-0"
			}
			wantJSON, err := AppendCompletion([]byte("x"), &want)
			if err != nil {
				t.Fatal(err)
			}
			if gotJSON := enc.AppendCompletion([]byte("x"), usage, "first", "inv-0"); string(gotJSON) != string(wantJSON) {
				t.Errorf("Encoder.AppendCompletion wrote\n%s\nwant\n%s", gotJSON, wantJSON)
			}
		})
	}
}

func TestEncoderToolCallMapping(t *testing.T) {
	cfg := testConfig()
	cfg.ClientTools = map[string]string{"refund": "billing__refund"}
	enc := NewEncoder(cfg)
	enc.Event(final("billing", genai.FinishReasonStop, callPart("", "refund", nil), callPart("adk-0b6e7c1a-6a43-4e8d-9f51-2f1c3b9a7d10", "refund", nil)))
	want := []EmittedToolCall{
		{Index: 0, ID: "call_gen1", FunctionCallID: "", Name: "refund", ClientName: "billing__refund", Author: "billing", InvocationID: testInv},
		{Index: 1, ID: "adk-0b6e7c1a-6a43-4e8d-9f51-2f1c3b9a7d10", FunctionCallID: "adk-0b6e7c1a-6a43-4e8d-9f51-2f1c3b9a7d10",
			Name: "refund", ClientName: "billing__refund", Author: "billing", InvocationID: testInv},
	}
	if diff := cmp.Diff(want, enc.ToolCalls()); diff != "" {
		t.Errorf("ToolCalls mismatch (-want +got):\n%s", diff)
	}
}

func TestEncoderDefaults(t *testing.T) {
	enc := NewEncoder(EncoderConfig{Model: "m", ClientTools: map[string]string{"f": "f"}})
	chunks := enc.Event(final("root", genai.FinishReasonStop, callPart("", "f", nil)))
	if len(chunks) != 2 {
		t.Fatalf("got %d chunks, want 2", len(chunks))
	}
	c := chunks[0]
	if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Created == 0 {
		t.Errorf("default id/created: %q %d", c.ID, c.Created)
	}
	if id := c.Choices[0].Delta.ToolCalls[0].ID; !strings.HasPrefix(id, "call_") || len(id) != 37 {
		t.Errorf("generated tool call id %q", id)
	}
}

func TestAccumulatorDropsOutOfOrderToolFragments(t *testing.T) {
	var acc Accumulator
	acc.Add(ChatCompletionChunk{Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCallDelta{{Index: 3, ID: "x"}}}}}})
	acc.Add(ChatCompletionChunk{Choices: []ChunkChoice{{Index: 1, Delta: Delta{Content: ptr("other choice")}}}})
	got := acc.Completion()
	if len(got.Choices[0].Message.ToolCalls) != 0 || *got.Choices[0].Message.Content != "" {
		t.Errorf("got %+v", got.Choices[0].Message)
	}
}

// The content is the chunks' texts joined, whether it is one chunk's text
// or several's, empty texts anywhere among them.
func TestAccumulatorJoinsContent(t *testing.T) {
	for _, pieces := range [][]string{nil, {""}, {"a"}, {"", "a"}, {"a", ""}, {"a", "b"}, {"ab", "", "c", "def"},
		{"", "", "x"}, {"héllo ", "wörld", "!"}} {
		var acc Accumulator
		for _, p := range pieces {
			acc.Add(ChatCompletionChunk{Choices: []ChunkChoice{{Delta: Delta{Content: ptr(p)}}}})
		}
		if got, want := *acc.Completion().Choices[0].Message.Content, strings.Join(pieces, ""); got != want {
			t.Errorf("%q: content %q, want %q", pieces, got, want)
		}
		// Completion may be asked again, after more content.
		acc.Add(ChatCompletionChunk{Choices: []ChunkChoice{{Delta: Delta{Content: ptr("z")}}}})
		if got, want := *acc.Completion().Choices[0].Message.Content, strings.Join(pieces, "")+"z"; got != want {
			t.Errorf("%q then z: content %q, want %q", pieces, got, want)
		}
	}
}

// A text answer's completion is one allocation: the completion, its
// choice and its text.
func TestAccumulatorCompletionAllocatesOnce(t *testing.T) {
	var acc Accumulator
	acc.Add(ChatCompletionChunk{Choices: []ChunkChoice{{Delta: Delta{Content: ptr("Hello!")}}}})
	if n := testing.AllocsPerRun(100, func() { _ = acc.Completion() }); n != 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// BenchmarkEncoderCompletion is a non-streamed turn's encoding: the
// encoder, the turn's final event, the completion.
func BenchmarkEncoderCompletion(b *testing.B) {
	ev := final("root", genai.FinishReasonStop, genai.NewPartFromText("Hello! I am fine, thank you."))
	b.ReportAllocs()
	for b.Loop() {
		enc := NewEncoder(EncoderConfig{ID: "chatcmpl-1", Created: 1, Model: "m"})
		enc.Event(ev)
		if c := enc.Completion(nil); c.Choices[0].Message.Content == nil {
			b.Fatal("no content")
		}
	}
}

// BenchmarkEncoderStream is a streamed turn's encoding of ten deltas and
// the finish.
func BenchmarkEncoderStream(b *testing.B) {
	ev := partial("root", genai.NewPartFromText("Hello "))
	b.ReportAllocs()
	for b.Loop() {
		enc := NewEncoder(EncoderConfig{ID: "chatcmpl-1", Created: 1, Model: "m", Streamed: true})
		for range 10 {
			enc.Event(ev)
		}
		enc.Finish(nil)
	}
}
