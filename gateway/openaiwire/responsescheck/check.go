// Package responsescheck checks Responses API output against the Open
// Responses specification (openresponses.org): a response object
// (Response) and a stream of server-sent events (Stream, Events). It reads
// the wire bytes, not our Go types, so that it judges what a client would
// receive: required members and their JSON types, allowed enum values, no
// item or event type outside the specification, the order of streaming
// events, output_index, content_index and item_id consistency, sequence
// numbers, and that the deltas add up to what the done events and the
// final response say. Members the specification does not name (our
// agentgate extension) are allowed.
//
// It is written for tests (of the wire encoder, the HTTP surface, and
// real clients' runs); it does no I/O.
package responsescheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Enumerations of the specification.
var (
	responseStatuses  = []string{"queued", "in_progress", "completed", "failed", "incomplete", "cancelled"}
	itemStatuses      = []string{"in_progress", "completed", "incomplete"}
	messageRoles      = []string{"user", "assistant", "system", "developer"}
	itemTypes         = []string{"message", "function_call", "function_call_output", "reasoning", "compaction"}
	contentTypes      = []string{"input_text", "output_text", "text", "summary_text", "reasoning_text", "refusal", "input_image", "input_file", "input_video"}
	toolChoiceValues  = []string{"none", "auto", "required"}
	truncations       = []string{"auto", "disabled"}
	formatTypes       = []string{"text", "json_object", "json_schema"}
	verbosities       = []string{"low", "medium", "high"}
	reasoningEfforts  = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	reasoningSummarys = []string{"auto", "concise", "detailed"}
	imageDetails      = []string{"low", "high", "auto"}
)

// eventFields lists, for every streaming event type of the specification,
// the members it requires besides type and sequence_number.
var eventFields = map[string][]string{
	"response.created":                       {"response"},
	"response.queued":                        {"response"},
	"response.in_progress":                   {"response"},
	"response.completed":                     {"response"},
	"response.failed":                        {"response"},
	"response.incomplete":                    {"response"},
	"response.output_item.added":             {"output_index", "item"},
	"response.output_item.done":              {"output_index", "item"},
	"response.content_part.added":            {"item_id", "output_index", "content_index", "part"},
	"response.content_part.done":             {"item_id", "output_index", "content_index", "part"},
	"response.output_text.delta":             {"item_id", "output_index", "content_index", "delta"},
	"response.output_text.done":              {"item_id", "output_index", "content_index", "text"},
	"response.refusal.delta":                 {"item_id", "output_index", "content_index", "delta"},
	"response.refusal.done":                  {"item_id", "output_index", "content_index", "refusal"},
	"response.reasoning.delta":               {"item_id", "output_index", "content_index", "delta"},
	"response.reasoning.done":                {"item_id", "output_index", "content_index", "text"},
	"response.reasoning_summary_part.added":  {"item_id", "output_index", "summary_index", "part"},
	"response.reasoning_summary_part.done":   {"item_id", "output_index", "summary_index", "part"},
	"response.reasoning_summary_text.delta":  {"item_id", "output_index", "summary_index", "delta"},
	"response.reasoning_summary_text.done":   {"item_id", "output_index", "summary_index", "text"},
	"response.output_text.annotation.added":  {"item_id", "output_index", "content_index", "annotation_index", "annotation"},
	"response.function_call_arguments.delta": {"item_id", "output_index", "delta"},
	"response.function_call_arguments.done":  {"item_id", "output_index", "arguments"},
	"error":                                  {"error"},
}

// terminal maps the events that end a response to the statuses their
// response may have.
var terminal = map[string][]string{
	"response.completed":  {"completed"},
	"response.incomplete": {"incomplete"},
	"response.failed":     {"failed", "cancelled"},
}

// responseRequired lists the members of the response object the
// specification requires.
var responseRequired = []string{"id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
	"previous_response_id", "instructions", "output", "error", "tools", "tool_choice", "truncation",
	"parallel_tool_calls", "text", "top_p", "presence_penalty", "frequency_penalty", "top_logprobs",
	"temperature", "reasoning", "user", "usage", "max_output_tokens", "max_tool_calls", "store", "background",
	"service_tier", "metadata", "safety_identifier", "prompt_cache_key"}

// obj is a decoded JSON object; numbers are json.Number.
type obj = map[string]any

func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// checker collects problems, each prefixed with where it was found.
type checker struct{ errs []error }

func (c *checker) errorf(at, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s", at, fmt.Sprintf(format, args...)))
}

// Response checks one response object (the body of a create or retrieve
// call, or the response member of an event).
func Response(raw []byte) error {
	v, err := decode(raw)
	if err != nil {
		return fmt.Errorf("response: not JSON: %w", err)
	}
	var c checker
	c.response("response", v)
	return errors.Join(c.errs...)
}

func (c *checker) response(at string, v any) {
	o, ok := v.(obj)
	if !ok {
		c.errorf(at, "want an object, got %s", kind(v))
		return
	}
	for _, k := range responseRequired {
		if _, ok := o[k]; !ok {
			c.errorf(at, "missing required member %q", k)
		}
	}
	c.str(at, o, "id", false)
	c.constant(at, o, "object", "response")
	c.integer(at, o, "created_at", false)
	c.integer(at, o, "completed_at", true)
	status := c.enum(at, o, "status", responseStatuses, false)
	if d, ok := o["incomplete_details"].(obj); ok {
		c.str(at+".incomplete_details", d, "reason", false)
	} else {
		c.null(at, o, "incomplete_details")
	}
	c.str(at, o, "model", false)
	c.str(at, o, "previous_response_id", true)
	if _, isArr := o["instructions"].([]any); !isArr {
		c.str(at, o, "instructions", true)
	}
	if items, ok := c.array(at, o, "output"); ok {
		for i, it := range items {
			c.item(fmt.Sprintf("%s.output[%d]", at, i), it)
		}
	}
	if e, ok := o["error"].(obj); ok {
		c.str(at+".error", e, "code", false)
		c.str(at+".error", e, "message", false)
	} else {
		c.null(at, o, "error")
	}
	if tools, ok := c.array(at, o, "tools"); ok {
		for i, t := range tools {
			c.tool(fmt.Sprintf("%s.tools[%d]", at, i), t)
		}
	}
	c.toolChoice(at+".tool_choice", o["tool_choice"])
	c.enum(at, o, "truncation", truncations, false)
	c.boolean(at, o, "parallel_tool_calls")
	c.text(at+".text", o["text"])
	for _, k := range []string{"top_p", "presence_penalty", "frequency_penalty", "temperature"} {
		c.number(at, o, k)
	}
	c.integer(at, o, "top_logprobs", false)
	if r, ok := o["reasoning"].(obj); ok {
		c.enum(at+".reasoning", r, "effort", reasoningEfforts, true)
		c.enum(at+".reasoning", r, "summary", reasoningSummarys, true)
	} else {
		c.null(at, o, "reasoning")
	}
	c.str(at, o, "user", true)
	if u, ok := o["usage"].(obj); ok {
		c.usage(at+".usage", u)
	} else {
		c.null(at, o, "usage")
	}
	c.integer(at, o, "max_output_tokens", true)
	c.integer(at, o, "max_tool_calls", true)
	c.boolean(at, o, "store")
	c.boolean(at, o, "background")
	c.str(at, o, "service_tier", false)
	if md, ok := o["metadata"].(obj); ok {
		for k, v := range md {
			if _, ok := v.(string); !ok {
				c.errorf(at+".metadata."+k, "want a string, got %s", kind(v))
			}
		}
	} else {
		c.errorf(at+".metadata", "want an object, got %s", kind(o["metadata"]))
	}
	c.str(at, o, "safety_identifier", true)
	c.str(at, o, "prompt_cache_key", true)
	switch status {
	case "completed":
		if _, ok := o["completed_at"].(json.Number); !ok {
			c.errorf(at, "a completed response has no completed_at")
		}
	case "incomplete":
		if _, ok := o["incomplete_details"].(obj); !ok {
			c.errorf(at, "an incomplete response has no incomplete_details")
		}
	case "failed":
		if _, ok := o["error"].(obj); !ok {
			c.errorf(at, "a failed response has no error")
		}
	}
}

func (c *checker) usage(at string, u obj) {
	in := c.integer(at, u, "input_tokens", false)
	out := c.integer(at, u, "output_tokens", false)
	total := c.integer(at, u, "total_tokens", false)
	if in+out != total {
		c.errorf(at, "total_tokens %d is not input_tokens %d + output_tokens %d", total, in, out)
	}
	if d, ok := u["input_tokens_details"].(obj); ok {
		c.integer(at+".input_tokens_details", d, "cached_tokens", false)
	} else {
		c.errorf(at, "input_tokens_details: want an object, got %s", kind(u["input_tokens_details"]))
	}
	if d, ok := u["output_tokens_details"].(obj); ok {
		c.integer(at+".output_tokens_details", d, "reasoning_tokens", false)
	} else {
		c.errorf(at, "output_tokens_details: want an object, got %s", kind(u["output_tokens_details"]))
	}
}

func (c *checker) tool(at string, v any) {
	t, ok := v.(obj)
	if !ok {
		c.errorf(at, "want an object, got %s", kind(v))
		return
	}
	c.constant(at, t, "type", "function")
	c.str(at, t, "name", false)
	c.str(at, t, "description", true)
	if _, ok := t["parameters"].(obj); !ok {
		c.null(at, t, "parameters")
	}
	if _, ok := t["strict"].(bool); !ok {
		c.null(at, t, "strict")
	}
}

func (c *checker) toolChoice(at string, v any) {
	switch t := v.(type) {
	case string:
		if !slices.Contains(toolChoiceValues, t) {
			c.errorf(at, "%q is not one of %v", t, toolChoiceValues)
		}
	case obj:
		switch t["type"] {
		case "function":
			if _, ok := t["name"]; ok {
				c.str(at, t, "name", false)
			}
		case "allowed_tools":
			c.enum(at, t, "mode", toolChoiceValues, false)
			if tools, ok := c.array(at, t, "tools"); ok {
				for i, tool := range tools {
					to, ok := tool.(obj)
					if !ok || to["type"] != "function" {
						c.errorf(fmt.Sprintf("%s.tools[%d]", at, i), "want a function tool choice, got %v", tool)
					}
				}
			}
		default:
			c.errorf(at, "unknown tool choice type %v", t["type"])
		}
	default:
		c.errorf(at, "want a string or an object, got %s", kind(v))
	}
}

func (c *checker) text(at string, v any) {
	t, ok := v.(obj)
	if !ok {
		c.errorf(at, "want an object, got %s", kind(v))
		return
	}
	if _, ok := t["verbosity"]; ok {
		c.enum(at, t, "verbosity", verbosities, false)
	}
	f, ok := t["format"].(obj)
	if !ok {
		c.errorf(at+".format", "want an object, got %s", kind(t["format"]))
		return
	}
	if c.enum(at+".format", f, "type", formatTypes, false) == "json_schema" {
		c.str(at+".format", f, "name", false)
		c.str(at+".format", f, "description", true)
		c.boolean(at+".format", f, "strict")
		if _, ok := f["schema"].(obj); !ok {
			c.null(at+".format", f, "schema")
		}
	}
}

// item checks an output item; it returns its type and id.
func (c *checker) item(at string, v any) (typ, id string) {
	it, ok := v.(obj)
	if !ok {
		c.errorf(at, "want an object, got %s", kind(v))
		return "", ""
	}
	typ = c.enum(at, it, "type", itemTypes, false)
	id = c.str(at, it, "id", false)
	switch typ {
	case "message":
		c.enum(at, it, "status", itemStatuses, false)
		c.enum(at, it, "role", messageRoles, false)
		if parts, ok := c.array(at, it, "content"); ok {
			for i, p := range parts {
				c.part(fmt.Sprintf("%s.content[%d]", at, i), p)
			}
		}
	case "function_call":
		c.str(at, it, "call_id", false)
		c.str(at, it, "name", false)
		c.str(at, it, "arguments", false)
		c.enum(at, it, "status", itemStatuses, false)
	case "function_call_output":
		c.str(at, it, "call_id", false)
		c.enum(at, it, "status", itemStatuses, false)
		if _, ok := it["output"].([]any); !ok {
			c.str(at, it, "output", false)
		}
	case "reasoning":
		c.array(at, it, "summary")
	case "compaction":
		c.str(at, it, "encrypted_content", false)
	}
	return typ, id
}

// part checks a content part; it returns its type.
func (c *checker) part(at string, v any) string {
	p, ok := v.(obj)
	if !ok {
		c.errorf(at, "want an object, got %s", kind(v))
		return ""
	}
	typ := c.enum(at, p, "type", contentTypes, false)
	switch typ {
	case "output_text":
		c.str(at, p, "text", false)
		c.array(at, p, "annotations")
		if _, ok := p["logprobs"]; ok {
			c.array(at, p, "logprobs")
		}
	case "input_text", "text", "summary_text", "reasoning_text":
		c.str(at, p, "text", false)
	case "refusal":
		c.str(at, p, "refusal", false)
	case "input_image":
		c.str(at, p, "image_url", true)
		c.enum(at, p, "detail", imageDetails, false)
	case "input_video":
		c.str(at, p, "video_url", false)
	}
	return typ
}

func (c *checker) member(at string, o obj, k string) (any, bool) {
	v, ok := o[k]
	if !ok {
		c.errorf(at, "missing required member %q", k)
	}
	return v, ok
}

func (c *checker) str(at string, o obj, k string, nullable bool) string {
	v, ok := c.member(at, o, k)
	if !ok {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil && nullable {
		return ""
	}
	c.errorf(at+"."+k, "want a string%s, got %s", orNull(nullable), kind(v))
	return ""
}

func (c *checker) constant(at string, o obj, k, want string) {
	if s := c.str(at, o, k, false); s != want && s != "" {
		c.errorf(at+"."+k, "want %q, got %q", want, s)
	}
}

func (c *checker) enum(at string, o obj, k string, allowed []string, nullable bool) string {
	s := c.str(at, o, k, nullable)
	if s != "" && !slices.Contains(allowed, s) {
		c.errorf(at+"."+k, "%q is not one of %v", s, allowed)
	}
	return s
}

func (c *checker) integer(at string, o obj, k string, nullable bool) int64 {
	v, ok := c.member(at, o, k)
	if !ok {
		return 0
	}
	if n, ok := v.(json.Number); ok {
		i, err := n.Int64()
		if err != nil {
			c.errorf(at+"."+k, "want an integer, got %s", n)
		}
		return i
	}
	if !(v == nil && nullable) {
		c.errorf(at+"."+k, "want an integer%s, got %s", orNull(nullable), kind(v))
	}
	return 0
}

func (c *checker) number(at string, o obj, k string) {
	if v, ok := c.member(at, o, k); ok {
		if _, ok := v.(json.Number); !ok {
			c.errorf(at+"."+k, "want a number, got %s", kind(v))
		}
	}
}

func (c *checker) boolean(at string, o obj, k string) {
	if v, ok := c.member(at, o, k); ok {
		if _, ok := v.(bool); !ok {
			c.errorf(at+"."+k, "want a boolean, got %s", kind(v))
		}
	}
}

func (c *checker) null(at string, o obj, k string) {
	if v, ok := c.member(at, o, k); ok && v != nil {
		c.errorf(at+"."+k, "unexpected %s", kind(v))
	}
}

func (c *checker) array(at string, o obj, k string) ([]any, bool) {
	v, ok := c.member(at, o, k)
	if !ok {
		return nil, false
	}
	a, ok := v.([]any)
	if !ok {
		c.errorf(at+"."+k, "want an array, got %s", kind(v))
	}
	return a, ok
}

func orNull(nullable bool) string {
	if nullable {
		return " or null"
	}
	return ""
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case obj:
		return "object"
	}
	return reflect.TypeOf(v).String()
}

// Frame is one server-sent event of a stream: its event field and its
// data.
type Frame struct {
	Event string
	Data  []byte
}

// Frames splits an SSE body into frames, as an EventSource would: blocks
// separated by a blank line, "event:" and "data:" fields (several data
// lines joined by a newline), comments and other fields skipped. Blocks
// without data are dropped.
func Frames(body []byte) []Frame {
	var out []Frame
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	for _, block := range strings.Split(string(body), "\n\n") {
		var f Frame
		var data []string
		for _, line := range strings.Split(block, "\n") {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				f.Event = value
			case "data":
				data = append(data, value)
			}
		}
		if data != nil {
			f.Data = []byte(strings.Join(data, "\n"))
			out = append(out, f)
		}
	}
	return out
}

// StreamOptions adjusts Stream and Events for streams that are not whole.
type StreamOptions struct {
	// After is the sequence number a replay starts after
	// (starting_after); the first event is then After+1 and need not be
	// response.created, and it may be inside an item added before it:
	// what came before the cursor is not known, so the deltas seen of an
	// item must end what its done event says, and the items the replay
	// does not name are taken as done. Negative (or the zero options)
	// means a whole stream, which starts at 0 with response.created.
	After int64
	// Partial allows the stream to stop before its terminal event.
	Partial bool
}

// Stream checks a whole streamed response: the SSE body of a create call
// with stream true.
func Stream(body []byte) error {
	return Events(Frames(body), StreamOptions{After: -1})
}

// Events checks the frames of a stream as StreamOptions says.
func Events(frames []Frame, opt StreamOptions) error {
	s := &stream{items: map[int]*itemState{}}
	if opt.After < 0 {
		opt.After = -1
	}
	s.next = opt.After + 1
	s.replay = opt.After >= 0
	s.started = s.replay // a replay after a cursor started before it
	for i, f := range frames {
		s.frame(fmt.Sprintf("event %d", i), f, i == 0 && opt.After < 0)
	}
	if len(frames) == 0 {
		s.errorf("stream", "no events")
	} else if !s.ended && !opt.Partial {
		s.errorf("stream", "ended without response.completed, response.failed, response.incomplete or error")
	}
	return errors.Join(s.errs...)
}

// stream is the state of Events: what has been added and finished so far.
type stream struct {
	checker
	next       int64 // the sequence number the next event must have
	responseID string
	ended      bool
	started    bool // response.created was seen
	replay     bool // the stream starts after a cursor
	order      []*itemState
	items      map[int]*itemState
}

type itemState struct {
	// prior: added before a replay's cursor (then typ and id are what
	// its events say, and what it had before the cursor is unknown).
	prior     bool
	typ, id   string
	done      bool
	item      any // the item of output_item.done
	parts     []*partState
	args      strings.Builder
	argsDone  bool
	argsFinal string
}

type partState struct {
	prior    bool // added before a replay's cursor
	typ      string
	text     strings.Builder
	textDone bool
	final    string
	done     bool
}

func (s *stream) frame(at string, f Frame, first bool) {
	v, err := decode(f.Data)
	if err != nil {
		s.errorf(at, "data is not JSON: %v", err)
		return
	}
	e, ok := v.(obj)
	if !ok {
		s.errorf(at, "data: want an object, got %s", kind(v))
		return
	}
	typ := s.str(at, e, "type", false)
	at = fmt.Sprintf("%s (%s)", at, typ)
	if f.Event != "" && f.Event != typ {
		s.errorf(at, "the SSE event field %q differs from the type", f.Event)
	}
	if s.ended {
		s.errorf(at, "event after the end of the response")
	}
	if seq := s.integer(at, e, "sequence_number", false); seq != s.next {
		s.errorf(at, "sequence_number %d, want %d", seq, s.next)
		s.next = seq
	}
	s.next++
	fields, known := eventFields[typ]
	if !known {
		s.errorf(at, "event type outside the specification")
		return
	}
	for _, k := range fields {
		s.member(at, e, k)
	}
	if first && typ != "response.created" {
		s.errorf(at, "a stream starts with response.created")
	}
	switch typ {
	case "response.created", "response.queued", "response.in_progress":
		if typ == "response.created" {
			if s.started {
				s.errorf(at, "a second response.created")
			}
			s.started = true
		}
		status := s.responseEvent(at, e)
		if status != "in_progress" && status != "queued" {
			s.errorf(at, "response status %q, want in_progress or queued", status)
		}
	case "response.completed", "response.failed", "response.incomplete":
		status := s.responseEvent(at, e)
		if !slices.Contains(terminal[typ], status) {
			s.errorf(at, "response status %q, want one of %v", status, terminal[typ])
		}
		s.finish(at, e)
	case "error":
		if er, ok := e["error"].(obj); ok {
			s.str(at+".error", er, "type", false)
			s.str(at+".error", er, "message", false)
			s.str(at+".error", er, "code", true)
			s.str(at+".error", er, "param", true)
		}
		s.ended = true
	case "response.output_item.added":
		s.itemAdded(at, e)
	case "response.output_item.done":
		s.itemDone(at, e)
	case "response.content_part.added", "response.content_part.done", "response.output_text.delta", "response.output_text.done":
		s.content(at, typ, e)
	case "response.function_call_arguments.delta", "response.function_call_arguments.done":
		s.arguments(at, typ, e)
	}
}

// responseEvent checks the response of a response.* event; it returns its
// status.
func (s *stream) responseEvent(at string, e obj) string {
	r, ok := e["response"].(obj)
	if !ok {
		s.errorf(at, "response: want an object, got %s", kind(e["response"]))
		return ""
	}
	s.response(at+".response", r)
	if id, _ := r["id"].(string); s.responseID == "" {
		s.responseID = id
	} else if id != s.responseID {
		s.errorf(at, "response id %q differs from %q", id, s.responseID)
	}
	status, _ := r["status"].(string)
	return status
}

// finish checks the end: every item done, and the response's output the
// items as they were done.
func (s *stream) finish(at string, e obj) {
	s.ended = true
	for i, it := range s.order {
		if !it.done {
			s.errorf(at, "output item %d (%s) was never done", i, it.id)
		}
	}
	r, _ := e["response"].(obj)
	output, _ := r["output"].([]any)
	if s.replay {
		s.priorItems(len(output))
	}
	if len(output) != len(s.order) {
		s.errorf(at, "response.output has %d items, the stream added %d", len(output), len(s.order))
		return
	}
	for i, it := range s.order {
		if it.item != nil && !reflect.DeepEqual(output[i], it.item) {
			s.errorf(at, "response.output[%d] differs from its output_item.done item", i)
		}
	}
}

// priorItems adds, to a replay, the items before index n it never named:
// they were added and done before its cursor.
func (s *stream) priorItems(n int) {
	for len(s.order) < n {
		it := &itemState{prior: true, done: true}
		s.items[len(s.order)] = it
		s.order = append(s.order, it)
	}
}

// open reads output_index and finds its item, which must be open; in a
// replay, an item never added is one added before the cursor, of type typ
// (its events say which).
func (s *stream) open(at string, e obj, typ string) *itemState {
	idx := int(s.integer(at, e, "output_index", false))
	it, ok := s.items[idx]
	if !ok && s.replay && idx >= len(s.order) {
		s.priorItems(idx)
		id, _ := e["item_id"].(string)
		it = &itemState{prior: true, typ: typ, id: id}
		s.items[idx] = it
		s.order = append(s.order, it)
		ok = true
	}
	if !ok {
		s.errorf(at, "output_index %d was never added", idx)
		return nil
	}
	if it.done {
		s.errorf(at, "output_index %d is already done", idx)
		return nil
	}
	if id, ok := e["item_id"]; ok && id != it.id {
		s.errorf(at, "item_id %v is not the id %q of output_index %d", id, it.id, idx)
	}
	return it
}

func (s *stream) itemAdded(at string, e obj) {
	if !s.started {
		s.errorf(at, "output item before response.created")
	}
	idx := int(s.integer(at, e, "output_index", false))
	if s.replay {
		s.priorItems(idx)
	}
	if idx != len(s.order) {
		s.errorf(at, "output_index %d, want %d (items are added in order)", idx, len(s.order))
	}
	for _, it := range s.order {
		if !it.done {
			s.errorf(at, "an item is added while %q is still open", it.id)
		}
	}
	typ, id := s.item(at+".item", e["item"])
	if item, ok := e["item"].(obj); ok {
		if st, _ := item["status"].(string); st != "in_progress" {
			s.errorf(at, "an added item has status %q, want in_progress", st)
		}
		if parts, _ := item["content"].([]any); len(parts) > 0 {
			s.errorf(at, "an added message has content; parts come with content_part.added")
		}
	}
	it := &itemState{typ: typ, id: id}
	s.items[idx] = it
	s.order = append(s.order, it)
}

func (s *stream) itemDone(at string, e obj) {
	item, _ := e["item"].(obj)
	itemType, _ := item["type"].(string)
	it := s.open(at, e, itemType)
	if it == nil {
		return
	}
	typ, id := s.item(at+".item", e["item"])
	if it.prior && it.id == "" {
		it.id = id
	}
	if typ != it.typ || id != it.id {
		s.errorf(at, "done item %s %q, added as %s %q", typ, id, it.typ, it.id)
	}
	it.done, it.item = true, e["item"]
	if st, _ := item["status"].(string); st == "in_progress" {
		s.errorf(at, "a done item has status in_progress")
	}
	switch it.typ {
	case "message":
		parts, _ := item["content"].([]any)
		if it.prior {
			it.priorParts(len(parts), true)
		}
		if len(parts) != len(it.parts) {
			s.errorf(at, "the done message has %d parts, the stream added %d", len(parts), len(it.parts))
			return
		}
		for j, p := range it.parts {
			if !p.done {
				s.errorf(at, "content part %d was never done", j)
			}
			if po, _ := parts[j].(obj); p.typ == "output_text" && (!p.prior || p.textDone) && po["text"] != p.final {
				s.errorf(at, "content[%d].text %q differs from output_text.done's %q", j, po["text"], p.final)
			}
		}
	case "function_call":
		if !it.argsDone && !it.prior {
			s.errorf(at, "function call done without function_call_arguments.done")
		}
		if (!it.prior || it.argsDone) && item["arguments"] != it.argsFinal {
			s.errorf(at, "arguments %q differ from function_call_arguments.done's %q", item["arguments"], it.argsFinal)
		}
	}
}

// priorParts adds, to an item a replay did not see added, the parts
// before index n it never named (done before the cursor, when done).
func (it *itemState) priorParts(n int, done bool) {
	for len(it.parts) < n {
		it.parts = append(it.parts, &partState{prior: true, typ: "output_text", done: done})
	}
}

func (s *stream) content(at, typ string, e obj) {
	it := s.open(at, e, "message")
	if it == nil {
		return
	}
	if it.typ != "message" {
		s.errorf(at, "content events for a %s item", it.typ)
		return
	}
	ci := int(s.integer(at, e, "content_index", false))
	if it.prior {
		it.priorParts(ci, true)
		if typ != "response.content_part.added" {
			it.priorParts(ci+1, false)
		}
	}
	if typ == "response.content_part.added" {
		if ci != len(it.parts) {
			s.errorf(at, "content_index %d, want %d (parts are added in order)", ci, len(it.parts))
		}
		ptyp := s.part(at+".part", e["part"])
		if p, ok := e["part"].(obj); ok && ptyp == "output_text" && p["text"] != "" {
			s.errorf(at, "an added output_text part has text %q", p["text"])
		}
		it.parts = append(it.parts, &partState{typ: ptyp})
		return
	}
	if ci < 0 || ci >= len(it.parts) {
		s.errorf(at, "content_index %d was never added", ci)
		return
	}
	p := it.parts[ci]
	if p.done {
		s.errorf(at, "content part %d is already done", ci)
		return
	}
	switch typ {
	case "response.output_text.delta":
		if p.textDone {
			s.errorf(at, "a delta after output_text.done")
		}
		d, _ := e["delta"].(string)
		p.text.WriteString(d)
	case "response.output_text.done":
		if p.textDone {
			s.errorf(at, "a second output_text.done")
		}
		p.textDone = true
		p.final, _ = e["text"].(string)
		if p.final != p.text.String() && !(p.prior && strings.HasSuffix(p.final, p.text.String())) {
			s.errorf(at, "text %q is not the deltas %q", p.final, p.text.String())
		}
	case "response.content_part.done":
		s.part(at+".part", e["part"])
		if p.typ == "output_text" && !p.textDone && !p.prior {
			s.errorf(at, "content part done before output_text.done")
		}
		if po, _ := e["part"].(obj); p.typ == "output_text" && (!p.prior || p.textDone) && po["text"] != p.final {
			s.errorf(at, "part text %q differs from output_text.done's %q", po["text"], p.final)
		}
		p.done = true
	}
}

func (s *stream) arguments(at, typ string, e obj) {
	it := s.open(at, e, "function_call")
	if it == nil {
		return
	}
	if it.typ != "function_call" {
		s.errorf(at, "function call arguments for a %s item", it.typ)
		return
	}
	if it.argsDone {
		s.errorf(at, "arguments event after function_call_arguments.done")
	}
	if typ == "response.function_call_arguments.delta" {
		d, _ := e["delta"].(string)
		it.args.WriteString(d)
		return
	}
	it.argsDone = true
	it.argsFinal, _ = e["arguments"].(string)
	if it.argsFinal != it.args.String() && !(it.prior && strings.HasSuffix(it.argsFinal, it.args.String())) {
		s.errorf(at, "arguments %q are not the deltas %q", it.argsFinal, it.args.String())
	}
}
