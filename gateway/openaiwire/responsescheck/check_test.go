package responsescheck

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A response as the specification's own example has it, in progress.
const baseResponse = `{"id":"resp_1","object":"response","created_at":1741476777,"completed_at":null,"status":"in_progress",` +
	`"incomplete_details":null,"model":"m","previous_response_id":null,"instructions":null,"output":[],"error":null,` +
	`"tools":[],"tool_choice":"auto","truncation":"disabled","parallel_tool_calls":true,"text":{"format":{"type":"text"}},` +
	`"top_p":1,"presence_penalty":0,"frequency_penalty":0,"top_logprobs":0,"temperature":1,"reasoning":null,"user":null,` +
	`"usage":null,"max_output_tokens":null,"max_tool_calls":null,"store":true,"background":false,"service_tier":"default",` +
	`"metadata":{},"safety_identifier":null,"prompt_cache_key":null}`

const (
	msgAdded = `{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}`
	msgDone  = `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}`
	fcAdded  = `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"","status":"in_progress"}`
	fcDone   = `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}","status":"completed"}`
)

func completedResponse() string {
	r := strings.Replace(baseResponse, `"status":"in_progress"`, `"status":"completed"`, 1)
	r = strings.Replace(r, `"completed_at":null`, `"completed_at":1741476778`, 1)
	r = strings.Replace(r, `"output":[]`, `"output":[`+msgDone+`,`+fcDone+`]`, 1)
	return strings.Replace(r, `"usage":null`, `"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5}`, 1)
}

// validEvents is a whole stream: a message and a function call.
func validEvents() []string {
	return []string{
		`{"type":"response.created","sequence_number":0,"response":` + baseResponse + `}`,
		`{"type":"response.in_progress","sequence_number":1,"response":` + baseResponse + `}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":` + msgAdded + `}`,
		`{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`,
		`{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo"}`,
		`{"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hello"}`,
		`{"type":"response.content_part.done","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello","annotations":[]}}`,
		`{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":` + msgDone + `}`,
		`{"type":"response.output_item.added","sequence_number":9,"output_index":1,"item":` + fcAdded + `}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_1","output_index":1,"delta":"{}"}`,
		`{"type":"response.function_call_arguments.done","sequence_number":11,"item_id":"fc_1","output_index":1,"arguments":"{}"}`,
		`{"type":"response.output_item.done","sequence_number":12,"output_index":1,"item":` + fcDone + `}`,
		`{"type":"response.completed","sequence_number":13,"response":` + completedResponse() + `}`,
	}
}

func sse(events []string) []byte {
	var b strings.Builder
	for _, e := range events {
		var head struct {
			Type string `json:"type"`
		}
		json.Unmarshal([]byte(e), &head)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", head.Type, e)
	}
	return []byte(b.String())
}

func TestValidStreamPasses(t *testing.T) {
	if err := Stream(sse(validEvents())); err != nil {
		t.Fatalf("a valid stream fails:\n%v", err)
	}
	// Comments (keepalives) and CRLF line ends are SSE, not events.
	body := ": keepalive\r\n\r\n" + strings.ReplaceAll(string(sse(validEvents())), "\n", "\r\n")
	if err := Stream([]byte(body)); err != nil {
		t.Fatalf("a valid stream with comments and CRLF fails:\n%v", err)
	}
	// A replay after any cursor: inside the first item's text, between
	// the two items, inside the function call, before the end.
	for after := range len(validEvents()) - 1 {
		if err := Events(Frames(sse(validEvents()[after+1:])), StreamOptions{After: int64(after)}); err != nil {
			t.Errorf("a replay after %d fails:\n%v", after, err)
		}
	}
	if err := Events(Frames(sse(validEvents()[:5])), StreamOptions{After: -1, Partial: true}); err != nil {
		t.Errorf("a partial stream fails: %v", err)
	}
}

// Every rule is enforced: each broken stream must fail with a message
// that names the problem.
func TestBrokenStreamsFail(t *testing.T) {
	replace := func(i int, old, new string) func([]string) []string {
		return func(evs []string) []string {
			if !strings.Contains(evs[i], old) {
				panic(fmt.Sprintf("event %d has no %q", i, old))
			}
			evs[i] = strings.Replace(evs[i], old, new, 1)
			return evs
		}
	}
	drop := func(i int) func([]string) []string {
		return func(evs []string) []string { return append(evs[:i:i], evs[i+1:]...) }
	}
	tests := []struct {
		name   string
		break_ func([]string) []string
		want   string
	}{
		{"sequence numbers skip", replace(5, `"sequence_number":5`, `"sequence_number":6`), "sequence_number 6, want 5"},
		{"sequence numbers start at 1", replace(0, `"sequence_number":0`, `"sequence_number":1`), "sequence_number 1, want 0"},
		{"an event type outside the specification", replace(4, `"response.output_text.delta"`, `"response.agent.transfer"`), "outside the specification"},
		{"an item type outside the specification", replace(2, `"type":"message"`, `"type":"agent_transfer"`), `"agent_transfer" is not one of`},
		{"a stream not starting with created", drop(0), "starts with response.created"},
		{"no terminal event", drop(13), "ended without"},
		{"a delta for an item never added", replace(4, `"output_index":0`, `"output_index":5`), "output_index 5 was never added"},
		{"an item_id not matching its output_index", replace(4, `"item_id":"msg_1"`, `"item_id":"msg_2"`), `item_id msg_2 is not the id "msg_1"`},
		{"deltas not adding up to the done text", replace(6, `"text":"Hello"`, `"text":"Hellp"`), "is not the deltas"},
		{"a part done before its text is done", drop(6), "before output_text.done"},
		{"content_index out of order", replace(3, `"content_index":0`, `"content_index":1`), "content_index 1, want 0"},
		{"items added out of order", replace(9, `"output_index":1,"item"`, `"output_index":2,"item"`), "output_index 2, want 1"},
		{"an item added while another is open", drop(8), `while "msg_1" is still open`},
		{"function arguments not adding up", replace(11, `"arguments":"{}"`, `"arguments":"{\"a\":1}"`), "are not the deltas"},
		{"a function call done without arguments done", drop(11), "without function_call_arguments.done"},
		{"the final output differs from the done items", replace(13, `"text":"Hello"`, `"text":"Bye"`), "differs from its output_item.done item"},
		{"null where a number is required", replace(1, `"temperature":1`, `"temperature":null`), "temperature: want a number, got null"},
		{"a required member missing", replace(0, `"top_logprobs":0,`, ``), `missing required member "top_logprobs"`},
		{"a bad enum value", replace(0, `"truncation":"disabled"`, `"truncation":"off"`), `"off" is not one of`},
		{"a completed response with the wrong status", replace(13, `"status":"completed","incomplete_details"`, `"status":"in_progress","incomplete_details"`), `status "in_progress", want one of [completed]`},
		{"usage that does not add up", replace(13, `"total_tokens":5`, `"total_tokens":6`), "total_tokens 6 is not"},
		{"an event after the end", func(evs []string) []string {
			return append(evs, `{"type":"response.in_progress","sequence_number":14,"response":`+baseResponse+`}`)
		}, "after the end"},
		{"the SSE event field differs from the type", func(evs []string) []string { return evs }, "differs from the type"},
		{"an added message with content", replace(2, `"content":[]`, `"content":[{"type":"output_text","text":"x","annotations":[]}]`), "has content"},
		{"an integer as a string", replace(4, `"output_index":0`, `"output_index":"0"`), "output_index: want an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := sse(tt.break_(validEvents()))
			if tt.name == "the SSE event field differs from the type" {
				body = []byte(strings.Replace(string(body), "event: response.output_text.delta", "event: message", 1))
			}
			err := Stream(body)
			if err == nil {
				t.Fatal("the broken stream passes")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error does not say %q:\n%v", tt.want, err)
			}
		})
	}
}

// A replay after a cursor is checked as far as what it holds tells:
// each broken one fails, naming the problem.
func TestBrokenReplaysFail(t *testing.T) {
	tests := []struct {
		name  string
		after int
		old   string // replaced by new in the replay's events
		new   string
		want  string
	}{
		{"a done text that the deltas after the cursor do not end", 4, `"text":"Hello"}`, `"text":"Hellx"}`, "is not the deltas"},
		{"a sequence number skipped after the cursor", 4, `"sequence_number":5`, `"sequence_number":6`, "sequence_number 6, want 5"},
		{"arguments that the deltas after the cursor do not end", 9, `"arguments":"{}"}`, `"arguments":"{\"a\":1}"}`, "are not the deltas"},
		{"an item added again at an index before the cursor", 8, `"output_index":1,"item"`, `"output_index":0,"item"`, "was never done"},
		{"an unknown event type", 2, `"response.output_text.delta"`, `"response.agent.note"`, "outside the specification"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replay := validEvents()[tt.after+1:]
			changed := false
			for i, e := range replay {
				if !changed && strings.Contains(e, tt.old) {
					replay[i], changed = strings.Replace(e, tt.old, tt.new, 1), true
				}
			}
			if !changed {
				t.Fatalf("no %q after %d", tt.old, tt.after)
			}
			err := Events(Frames(sse(replay)), StreamOptions{After: int64(tt.after)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want one saying %q", err, tt.want)
			}
		})
	}
}

func TestResponse(t *testing.T) {
	if err := Response([]byte(completedResponse())); err != nil {
		t.Fatalf("a valid response fails: %v", err)
	}
	tests := []struct{ name, old, new, want string }{
		{"a failed response without error", `"status":"completed","incomplete_details"`, `"status":"failed","incomplete_details"`, "has no error"},
		{"an incomplete response without details", `"status":"completed","incomplete_details"`, `"status":"incomplete","incomplete_details"`, "has no incomplete_details"},
		{"an unknown status", `"status":"completed","incomplete_details"`, `"status":"done","incomplete_details"`, `"done" is not one of`},
		{"service_tier null", `"service_tier":"default"`, `"service_tier":null`, "service_tier: want a string, got null"},
		{"metadata null", `"metadata":{}`, `"metadata":null`, "metadata: want an object"},
		{"a tool choice outside the enum", `"tool_choice":"auto"`, `"tool_choice":"any"`, `"any" is not one of`},
		{"object not response", `"object":"response"`, `"object":"chat.completion"`, `want "response"`},
		{"a json_schema format without strict", `"text":{"format":{"type":"text"}}`, `"text":{"format":{"type":"json_schema","name":"x","description":null,"schema":{}}}`, `missing required member "strict"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := strings.Replace(completedResponse(), tt.old, tt.new, 1)
			if raw == completedResponse() {
				t.Fatalf("no %q in the response", tt.old)
			}
			err := Response([]byte(raw))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want one saying %q", err, tt.want)
			}
		})
	}
}
