package openaiwire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
	"github.com/agentgate/agentgate/sessions"
)

// responsesTestEncoder returns an encoder with deterministic ids and clock
// for a request with the given body.
func responsesTestEncoder(t *testing.T, body string, clientTools map[string]string) *ResponsesEncoder {
	t.Helper()
	req, err := DecodeResponsesRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Validate(nil); err != nil {
		t.Fatal(err)
	}
	items, calls := 0, 0
	return NewResponsesEncoder(req.NewResponse("resp_test", 1700000000), ResponsesEncoderConfig{
		ClientTools:   clientTools,
		NewItemID:     func(prefix string) string { items++; return fmt.Sprintf("%s_%d", prefix, items) },
		NewToolCallID: func() string { calls++; return fmt.Sprintf("call_gen%d", calls) },
		Now:           func() time.Time { return time.Unix(1700000001, 0) },
	})
}

// encodeAll runs events through enc and ends it with end; it returns the
// SSE body.
func encodeAll(t *testing.T, enc *ResponsesEncoder, events []*sessions.Event, end func(*ResponsesEncoder) []ResponseEvent) []byte {
	t.Helper()
	var body []byte
	write := func(evs []ResponseEvent) {
		for i := range evs {
			var err error
			if body, err = AppendResponseEventFrame(body, &evs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(enc.Start())
	for _, ev := range events {
		write(enc.Event(ev))
	}
	write(end(enc))
	return body
}

// summarizeEvents renders a stream one line per event, for readable
// expectations: "<type> [index/content] detail".
func summarizeEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, f := range responsescheck.Frames(body) {
		var e struct {
			Type         string          `json:"type"`
			OutputIndex  int             `json:"output_index"`
			ContentIndex int             `json:"content_index"`
			Delta        string          `json:"delta"`
			Text         string          `json:"text"`
			Arguments    string          `json:"arguments"`
			Item         json.RawMessage `json:"item"`
			Response     *struct {
				Status string `json:"status"`
			} `json:"response"`
		}
		if err := json.Unmarshal(f.Data, &e); err != nil {
			t.Fatalf("frame %s: %v", f.Data, err)
		}
		line := strings.TrimPrefix(e.Type, "response.")
		switch e.Type {
		case EventCreated, EventInProgress, EventCompleted, EventFailed, EventIncomplete:
			line += " " + e.Response.Status
		case EventItemAdded, EventItemDone:
			var it map[string]any
			json.Unmarshal(e.Item, &it)
			ext, _ := it["agentgate"].(map[string]any)
			line += fmt.Sprintf(" %d %s %s by %s", e.OutputIndex, it["type"], it["status"], ext["author"])
			if from, ok := ext["transferred_from"]; ok {
				line += fmt.Sprintf(" from %s", from)
			}
			if it["type"] == ItemFunctionCall {
				line += fmt.Sprintf(" %s(%s)", it["name"], it["arguments"])
			}
		case EventTextDelta, EventArgumentsDelta:
			line += fmt.Sprintf(" %d %q", e.OutputIndex, e.Delta)
		case EventTextDone:
			line += fmt.Sprintf(" %d %q", e.OutputIndex, e.Text)
		case EventArgumentsDone:
			line += fmt.Sprintf(" %d %s", e.OutputIndex, e.Arguments)
		default:
			line += fmt.Sprintf(" %d/%d", e.OutputIndex, e.ContentIndex)
		}
		out = append(out, line)
	}
	return out
}

func TestResponsesEncoder(t *testing.T) {
	usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15}
	clientTools := map[string]string{"get_weather": "get_weather", "refund": "billing__refund"}
	finish := func(e *ResponsesEncoder) []ResponseEvent { return e.Finish(usage) }
	tests := []struct {
		name          string
		events        []*sessions.Event
		end           func(*ResponsesEncoder) []ResponseEvent
		want          []string
		wantOutput    string // the response's output as JSON, agentgate members included
		wantTransfers []Transfer
		wantStatus    string
	}{{
		name: "text only",
		events: []*sessions.Event{
			partial("root", textPart("Hel")), partial("root", textPart("lo")),
			final("root", genai.FinishReasonStop, textPart("Hello")),
		},
		end: finish,
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by root", "content_part.added 0/0",
			`output_text.delta 0 "Hel"`, `output_text.delta 0 "lo"`, `output_text.done 0 "Hello"`,
			"content_part.done 0/0", "output_item.done 0 message completed by root",
			"completed completed",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}],"agentgate":{"author":"root"}}]`,
		wantStatus: StatusCompleted,
	}, {
		name: "a transfer with two agents speaking",
		events: []*sessions.Event{
			partial("coordinator", textPart("One moment.")),
			final("coordinator", genai.FinishReasonStop, textPart("One moment."),
				callPart("adk-t1", "transfer_to_agent", map[string]any{"agent_name": "greeter"})),
			transferTo("coordinator", "adk-t1", "greeter"),
			partial("greeter", textPart("Hi")), partial("greeter", textPart("!")),
			final("greeter", genai.FinishReasonStop, textPart("Hi!")),
		},
		end: finish,
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by coordinator", "content_part.added 0/0",
			`output_text.delta 0 "One moment."`, `output_text.done 0 "One moment."`,
			"content_part.done 0/0", "output_item.done 0 message completed by coordinator",
			"output_item.added 1 message in_progress by greeter from coordinator", "content_part.added 1/0",
			`output_text.delta 1 "Hi"`, `output_text.delta 1 "!"`, `output_text.done 1 "Hi!"`,
			"content_part.done 1/0", "output_item.done 1 message completed by greeter from coordinator",
			"completed completed",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"One moment.","annotations":[],"logprobs":[]}],"agentgate":{"author":"coordinator"}},` +
			`{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi!","annotations":[],"logprobs":[]}],"agentgate":{"author":"greeter","transferred_from":"coordinator"}}]`,
		wantTransfers: []Transfer{{From: "coordinator", To: "greeter"}},
		wantStatus:    StatusCompleted,
	}, {
		name: "a client function call after text; internal calls are not shown",
		events: []*sessions.Event{
			partial("root", textPart("Checking.")),
			final("root", genai.FinishReasonStop, textPart("Checking."),
				callPart("adk-1", "summarizer", map[string]any{"request": "x"}),
				callPart("call_abc", "get_weather", map[string]any{"city": "Paris"})),
		},
		end: finish,
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by root", "content_part.added 0/0",
			`output_text.delta 0 "Checking."`, `output_text.done 0 "Checking."`,
			"content_part.done 0/0", "output_item.done 0 message completed by root",
			"output_item.added 1 function_call in_progress by root get_weather()",
			`function_call_arguments.delta 1 "{\"city\":\"Paris\"}"`,
			`function_call_arguments.done 1 {"city":"Paris"}`,
			`output_item.done 1 function_call completed by root get_weather({"city":"Paris"})`,
			"completed completed",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[],"logprobs":[]}],"agentgate":{"author":"root"}},` +
			`{"type":"function_call","id":"fc_2","call_id":"call_abc","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed","agentgate":{"author":"root"}}]`,
		wantStatus: StatusCompleted,
	}, {
		name: "a sub-agent's action is <agent>__<action>, with a generated id when the runtime's is not a client id",
		events: []*sessions.Event{
			final("coordinator", genai.FinishReasonStop, callPart("adk-t", "transfer_to_agent", map[string]any{"agent_name": "billing"})),
			transferTo("coordinator", "adk-t", "billing"),
			final("billing", genai.FinishReasonStop, callPart("adk-9f2/with.dots", "refund", nil)),
		},
		end: finish,
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 function_call in_progress by billing from coordinator billing__refund()",
			`function_call_arguments.delta 0 "{}"`, "function_call_arguments.done 0 {}",
			"output_item.done 0 function_call completed by billing from coordinator billing__refund({})",
			"completed completed",
		},
		wantOutput:    `[{"type":"function_call","id":"fc_1","call_id":"call_gen1","name":"billing__refund","arguments":"{}","status":"completed","agentgate":{"author":"billing","transferred_from":"coordinator"}}]`,
		wantTransfers: []Transfer{{From: "coordinator", To: "billing"}},
		wantStatus:    StatusCompleted,
	}, {
		name:   "a failure mid-stream closes the open item as incomplete",
		events: []*sessions.Event{partial("root", textPart("Half"))},
		end: func(e *ResponsesEncoder) []ResponseEvent {
			return e.Fail(UpstreamError("The model provider failed."), usage)
		},
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by root", "content_part.added 0/0",
			`output_text.delta 0 "Half"`, `output_text.done 0 "Half"`,
			"content_part.done 0/0", "output_item.done 0 message incomplete by root",
			"failed failed",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"Half","annotations":[],"logprobs":[]}],"agentgate":{"author":"root"}}]`,
		wantStatus: StatusFailed,
	}, {
		name:   "the token limit makes the response incomplete",
		events: []*sessions.Event{final("root", genai.FinishReasonMaxTokens, textPart("Cut"))},
		end:    finish,
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by root", "content_part.added 0/0",
			`output_text.delta 0 "Cut"`, `output_text.done 0 "Cut"`,
			"content_part.done 0/0", "output_item.done 0 message completed by root",
			"incomplete incomplete",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Cut","annotations":[],"logprobs":[]}],"agentgate":{"author":"root"}}]`,
		wantStatus: StatusIncomplete,
	}, {
		name: "interleaved parallel branches: each branch's text is its own item",
		events: []*sessions.Event{
			branchPartial("a", "p.a", "A1"), branchPartial("b", "p.b", "B1"),
			branchFinal("a", "p.a", "A1A2"), branchFinal("b", "p.b", "B1"),
		},
		end: func(e *ResponsesEncoder) []ResponseEvent { return e.Cancel(usage) },
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by a", "content_part.added 0/0", `output_text.delta 0 "A1"`,
			`output_text.done 0 "A1"`, "content_part.done 0/0", "output_item.done 0 message completed by a",
			"output_item.added 1 message in_progress by b", "content_part.added 1/0", `output_text.delta 1 "B1"`,
			`output_text.done 1 "B1"`, "content_part.done 1/0", "output_item.done 1 message completed by b",
			"output_item.added 2 message in_progress by a", "content_part.added 2/0", `output_text.delta 2 "A2"`,
			`output_text.done 2 "A2"`, "content_part.done 2/0", "output_item.done 2 message completed by a",
			"failed cancelled",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"A1","annotations":[],"logprobs":[]}],"agentgate":{"author":"a"}},` +
			`{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"B1","annotations":[],"logprobs":[]}],"agentgate":{"author":"b"}},` +
			`{"type":"message","id":"msg_3","status":"completed","role":"assistant","content":[{"type":"output_text","text":"A2","annotations":[],"logprobs":[]}],"agentgate":{"author":"a"}}]`,
		wantStatus: StatusCancelled,
	}, {
		// The turn ran to its end but its response could not be stored:
		// what Finish returned goes out with response.failed last.
		name: "finished, then revoked",
		events: []*sessions.Event{
			partial("root", textPart("Hel")),
			final("root", genai.FinishReasonStop, textPart("Hello")),
		},
		end: func(e *ResponsesEncoder) []ResponseEvent {
			e.Finish(usage)
			return e.Revoke(&Error{Type: "server_error", Code: "session_store_unavailable", Message: "not stored"})
		},
		want: []string{
			"created in_progress", "in_progress in_progress",
			"output_item.added 0 message in_progress by root", "content_part.added 0/0",
			`output_text.delta 0 "Hel"`, `output_text.delta 0 "lo"`, `output_text.done 0 "Hello"`,
			"content_part.done 0/0", "output_item.done 0 message completed by root",
			"failed failed",
		},
		wantOutput: `[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}],"agentgate":{"author":"root"}}]`,
		wantStatus: StatusFailed,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := responsesTestEncoder(t, `{"model":"support-desk","input":"hi","tools":[{"type":"function","name":"get_weather"}]}`, clientTools)
			body := encodeAll(t, enc, tt.events, tt.end)
			if err := responsescheck.Stream(body); err != nil {
				t.Errorf("the stream breaks the specification:\n%v\n%s", err, body)
			}
			if diff := cmp.Diff(tt.want, summarizeEvents(t, body)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			resp := enc.Response()
			raw, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			if err := responsescheck.Response(raw); err != nil {
				t.Errorf("the response breaks the specification:\n%v\n%s", err, raw)
			}
			output, _ := json.Marshal(resp.Output)
			if string(output) != tt.wantOutput {
				t.Errorf("output:\n got %s\nwant %s", output, tt.wantOutput)
			}
			if diff := cmp.Diff(tt.wantTransfers, resp.Agentgate.Transfers, cmp.Comparer(func(a, b []Transfer) bool {
				return len(a) == len(b) && (len(a) == 0 || cmp.Equal(a, b))
			})); diff != "" {
				t.Errorf("transfers (-want +got):\n%s", diff)
			}
			if resp.Status != tt.wantStatus || resp.Agentgate.InvocationID != testInv {
				t.Errorf("status %q, invocation %q; want %q, %q", resp.Status, resp.Agentgate.InvocationID, tt.wantStatus, testInv)
			}
			if want := (ResponseUsage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}); resp.Usage == nil || *resp.Usage != want {
				t.Errorf("usage %+v, want %+v", resp.Usage, want)
			}
			// Nothing more once ended.
			if evs := enc.Event(final("root", genai.FinishReasonStop, textPart("late"))); len(evs) != 0 {
				t.Errorf("events after the end: %+v", evs)
			}
			if evs := enc.Finish(usage); len(evs) != 0 {
				t.Errorf("a second ending: %+v", evs)
			}
			if evs := enc.Revoke(&Error{Message: "late"}); len(evs) != 0 || resp.Status != tt.wantStatus {
				t.Errorf("a revoke after another call: %+v, status %s", evs, resp.Status)
			}
		})
	}
}

func branchPartial(author, branch, text string) *sessions.Event {
	ev := partial(author, textPart(text))
	ev.Branch = branch
	return ev
}

func branchFinal(author, branch, text string) *sessions.Event {
	ev := final(author, genai.FinishReasonStop, textPart(text))
	ev.Branch = branch
	return ev
}

// One encoder, two outputs: a turn run without streaming (final events
// only) and the same turn streamed end in the same response.
func TestResponsesEncoderStreamedAndNotAgree(t *testing.T) {
	streamed := []*sessions.Event{
		partial("coordinator", textPart("On")), partial("coordinator", textPart("e.")),
		final("coordinator", genai.FinishReasonStop, textPart("One."), callPart("t1", "transfer_to_agent", nil)),
		transferTo("coordinator", "t1", "greeter"),
		partial("greeter", textPart("Two")),
		final("greeter", genai.FinishReasonStop, textPart("Two"), callPart("call_x", "get_weather", map[string]any{"city": "Oslo"})),
	}
	var whole []*sessions.Event
	for _, ev := range streamed {
		if !ev.Partial {
			whole = append(whole, ev)
		}
	}
	tools := map[string]string{"get_weather": "get_weather"}
	var outputs []string
	for _, evs := range [][]*sessions.Event{streamed, whole} {
		enc := responsesTestEncoder(t, `{"model":"m","input":"hi"}`, tools)
		body := encodeAll(t, enc, evs, func(e *ResponsesEncoder) []ResponseEvent { return e.Finish(nil) })
		if err := responsescheck.Stream(body); err != nil {
			t.Errorf("stream: %v", err)
		}
		b, _ := json.Marshal(enc.Response())
		outputs = append(outputs, string(b))
		if calls := enc.ToolCalls(); len(calls) != 1 || calls[0].Index != 2 || calls[0].ID != "call_x" || calls[0].Author != "greeter" {
			t.Errorf("tool calls: %+v", calls)
		}
	}
	if outputs[0] != outputs[1] {
		t.Errorf("streamed and whole responses differ:\n%s\n%s", outputs[0], outputs[1])
	}
}

// The hand-written frames are json.Marshal's bytes.
func TestAppendResponseEventFrame(t *testing.T) {
	resp := (&ResponsesRequest{Model: "m"}).NewResponse("resp_1", 1)
	errObj := InternalError("x").Envelope().Error
	item := OutputItem{Type: ItemMessage, ID: "msg_1", Status: StatusInProgress, Role: RoleAssistant, Agentgate: ItemExtension{Author: "a"}}
	events := []ResponseEvent{
		{Type: EventCreated, Response: resp},
		{Type: EventItemAdded, SequenceNumber: 1, OutputIndex: 0, Item: &item},
		{Type: EventPartAdded, SequenceNumber: 2, ItemID: "msg_1", Part: &OutputContent{Type: PartOutputText}},
		{Type: EventTextDelta, SequenceNumber: 3, ItemID: "msg_1", Delta: "a \"quoted\" <b>\n\u2028"},
		{Type: EventTextDone, SequenceNumber: 4, ItemID: "msg_1", OutputIndex: 2, ContentIndex: 1, Text: "t"},
		{Type: EventArgumentsDelta, SequenceNumber: 5, ItemID: "fc_1", OutputIndex: 3, Delta: `{"a":1}`},
		{Type: EventArgumentsDone, SequenceNumber: 6, ItemID: "fc_1", OutputIndex: 3, Arguments: `{"a":1}`},
		{Type: EventError, SequenceNumber: 7, Error: &errObj},
	}
	wants := []string{
		`"response":{"id":"resp_1"`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[],"agentgate":{"author":"a"}}}`,
		`{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"a \"quoted\" \u003cb\u003e\n\u2028","logprobs":[]}`,
		`{"type":"response.output_text.done","sequence_number":4,"item_id":"msg_1","output_index":2,"content_index":1,"text":"t","logprobs":[]}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":3,"delta":"{\"a\":1}"}`,
		`{"type":"response.function_call_arguments.done","sequence_number":6,"item_id":"fc_1","output_index":3,"arguments":"{\"a\":1}"}`,
		`{"type":"error","sequence_number":7,"error":{"message":"x","type":"server_error","param":null,"code":"internal_error"}}`,
	}
	for i := range events {
		frame, err := AppendResponseEventFrame(nil, &events[i])
		if err != nil {
			t.Fatal(err)
		}
		prefix := "event: " + events[i].Type + "\ndata: "
		data, ok := strings.CutPrefix(string(frame), prefix)
		if !ok || !strings.HasSuffix(data, "\n\n") {
			t.Fatalf("frame %q: want %q ... \\n\\n", frame, prefix)
		}
		data = strings.TrimSuffix(data, "\n\n")
		if !strings.Contains(data, wants[i]) {
			t.Errorf("event %d:\n got %s\nwant %s", i, data, wants[i])
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Errorf("event %d is not JSON: %v", i, err)
		}
	}
}

// The response object echoes the request's settings, and the
// specification's defaults where the request says nothing: never null
// where the specification wants a value.
func TestNewResponseEchoes(t *testing.T) {
	req, err := DecodeResponsesRequest([]byte(`{"model":"m","input":"hi","temperature":0.5,"top_p":0.9,"max_output_tokens":100,
		"instructions":"be brief","previous_response_id":"resp_0","store":false,"metadata":{"a":"b"},"user":"u1",
		"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]},
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}],
		"text":{"format":{"type":"json_schema","name":"answer","strict":true,"schema":{"type":"object"}},"verbosity":"low"},
		"reasoning":{"effort":"high"},"service_tier":"flex","parallel_tool_calls":false,"truncation":"auto"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Validate(nil); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(req.NewResponse("resp_1", 5))
	want := `{"id":"resp_1","object":"response","created_at":5,"completed_at":null,"status":"in_progress","incomplete_details":null,` +
		`"model":"m","previous_response_id":"resp_0","instructions":"be brief","output":[],"error":null,` +
		`"tools":[{"type":"function","name":"f","description":null,"parameters":{"type":"object"},"strict":true}],` +
		`"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]},"truncation":"auto",` +
		`"parallel_tool_calls":false,"text":{"format":{"type":"json_schema","name":"answer","description":null,"schema":{"type":"object"},"strict":true},"verbosity":"low"},` +
		`"top_p":0.9,"presence_penalty":0,"frequency_penalty":0,"top_logprobs":0,"temperature":0.5,"reasoning":{"effort":"high","summary":null},` +
		`"user":"u1","usage":null,"max_output_tokens":100,"max_tool_calls":null,"store":false,"background":false,"service_tier":"flex",` +
		`"metadata":{"a":"b"},"safety_identifier":null,"prompt_cache_key":null,"agentgate":{"invocation_id":"","session_id":null,"transfers":[]}}`
	if string(got) != want {
		t.Errorf("response:\n got %s\nwant %s", got, want)
	}
	if err := responsescheck.Response(got); err != nil {
		t.Errorf("spec: %v", err)
	}

	bare, _ := json.Marshal((&ResponsesRequest{Model: "m"}).NewResponse("resp_2", 5))
	for _, member := range []string{`"temperature":1`, `"top_p":1`, `"presence_penalty":0`, `"frequency_penalty":0`, `"top_logprobs":0`,
		`"service_tier":"default"`, `"truncation":"disabled"`, `"parallel_tool_calls":true`, `"tool_choice":"auto"`, `"tools":[]`,
		`"text":{"format":{"type":"text"}}`, `"metadata":{}`, `"reasoning":null`, `"instructions":null`, `"store":true`} {
		if !strings.Contains(string(bare), member) {
			t.Errorf("default response lacks %s: %s", member, bare)
		}
	}
	if err := responsescheck.Response(bare); err != nil {
		t.Errorf("spec: %v", err)
	}
}
