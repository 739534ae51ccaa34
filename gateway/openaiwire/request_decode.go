package openaiwire

import (
	"encoding/json"
	"strconv"

	"github.com/agentgate/agentgate/internal/jsondec"
)

// A decoder for the request bodies, written by hand: one pass over the
// bytes, without reflection. When it takes a body, it gives exactly what
// encoding/json.Unmarshal gives (request_decode_test.go fuzzes the two
// against each other). It takes only what it knows to decode the same
// way: on anything else (malformed JSON, a value of the wrong type, a
// number out of range, a member given twice, which encoding/json decodes
// into what the first one left) it gives up and the caller decodes the
// body with encoding/json, which then gives the value or the error.
type wireDecoder struct {
	jsondec.Decoder
	// msgRoom and contentRoom, when set (decodeChatIn), are where the
	// first message and the first content decoded go instead of new
	// allocations; each is taken once.
	msgRoom     []ChatMessage
	contentRoom *Content
}

// object decodes an object member by member: set decodes the value of the
// member named names[i] (its key matched as encoding/json matches field
// names); other members are skipped. null leaves everything as it was
// (the caller sets a pointer to nil); another value, or a member given
// twice, fails. It returns whether an object was read.
func (d *wireDecoder) object(names []string, set func(name string)) bool {
	switch d.Peek() {
	case '{':
	case 'n':
		d.Literal("null")
		return false
	default:
		d.Fail()
		return false
	}
	d.Open('{')
	var seen uint64
	for first := true; d.More('}', first); first = false {
		i := jsondec.Field(d.Member(), names)
		if i < 0 {
			d.Skip()
			continue
		}
		if seen&(1<<i) != 0 {
			d.Fail()
			return false
		}
		seen |= 1 << i
		set(names[i])
	}
	return true
}

// array decodes an array into *s, elem decoding each element into a zero
// T. An empty array gives an empty slice, null a nil one.
func array[T any](d *wireDecoder, s *[]T, elem func(*T)) { arrayIn(d, s, nil, elem) }

// arrayIn is array with its first element in room's array (empty, with
// room for one), when that is not nil.
func arrayIn[T any](d *wireDecoder, s *[]T, room []T, elem func(*T)) {
	switch d.Peek() {
	case '[':
	case 'n':
		d.Literal("null")
		*s = nil
		return
	default:
		d.Fail()
		return
	}
	d.Open('[')
	a := room
	if a == nil {
		a = make([]T, 0, 1)
	}
	for first := true; d.More(']', first); first = false {
		var zero T
		a = append(a, zero)
		elem(&a[len(a)-1])
	}
	*s = a
}

// str decodes a string; null leaves *s as it was.
func (d *wireDecoder) str(s *string) {
	switch d.Peek() {
	case '"':
		if b, ok := d.String(); ok {
			*s = string(b)
		}
	case 'n':
		d.Literal("null")
	default:
		d.Fail()
	}
}

// known is str without allocating the values in common (a role, a part's
// or a tool's type).
func (d *wireDecoder) known(s *string, common ...string) {
	if d.Peek() != '"' {
		d.str(s)
		return
	}
	b, ok := d.String()
	if !ok {
		return
	}
	for _, c := range common {
		if string(b) == c {
			*s = c
			return
		}
	}
	*s = string(b)
}

// strPtr decodes a string into a new *p; null sets *p to nil.
func (d *wireDecoder) strPtr(p **string) {
	if d.Null() {
		*p = nil
		return
	}
	s := new(string)
	d.str(s)
	*p = s
}

// bool decodes true or false; null leaves *b as it was.
func (d *wireDecoder) bool(b *bool) {
	if v, ok := d.Bool(); ok {
		*b = v
	} else if !d.Null() {
		d.Fail()
	}
}

// boolPtr decodes true or false into a new *p; null sets *p to nil.
func (d *wireDecoder) boolPtr(p **bool) {
	if d.Null() {
		*p = nil
		return
	}
	b := new(bool)
	d.bool(b)
	*p = b
}

// number returns the number that is next, nil (and fails) if the next
// value is not one.
func (d *wireDecoder) number() []byte {
	if c := d.Peek(); c != '-' && (c < '0' || c > '9') {
		d.Fail()
		return nil
	}
	return d.Number()
}

// floatPtr decodes a number into a new *p as encoding/json decodes a
// float64 (strconv.ParseFloat; out of range fails); null sets *p to nil.
func (d *wireDecoder) floatPtr(p **float64) {
	if d.Null() {
		*p = nil
		return
	}
	b := d.number()
	if d.Bad {
		return
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		d.Fail()
		return
	}
	*p = &v
}

// intPtr decodes an integer into a new *p as encoding/json decodes an
// int64 (a fraction, an exponent or out of range fails); null sets *p to
// nil.
func (d *wireDecoder) intPtr(p **int64) {
	if d.Null() {
		*p = nil
		return
	}
	b := d.number()
	if d.Bad {
		return
	}
	v, ok := jsondec.ParseInt(b)
	if !ok {
		d.Fail()
		return
	}
	*p = &v
}

// raw keeps the next value's bytes (null too), as json.RawMessage does.
func (d *wireDecoder) raw(m *json.RawMessage) {
	d.Peek()
	start := d.Off
	d.Skip()
	if !d.Bad {
		*m = append((*m)[:0], d.Data[start:d.Off]...)
	}
}

// stringMap decodes an object of strings into *m (a value null is "");
// null sets *m to nil.
func (d *wireDecoder) stringMap(m *map[string]string) {
	if d.Null() {
		*m = nil
		return
	}
	if d.Peek() != '{' {
		d.Fail()
		return
	}
	d.Open('{')
	if *m == nil {
		*m = map[string]string{}
	}
	for first := true; d.More('}', first); first = false {
		key := string(d.Member())
		var v string
		d.str(&v)
		(*m)[key] = v
	}
}

// anyMap decodes an object into a new map of generic values (a JSON
// Schema); null sets *m to nil.
func (d *wireDecoder) anyMap(m *map[string]any) {
	if d.Null() {
		*m = nil
		return
	}
	if d.Peek() != '{' {
		d.Fail()
		return
	}
	*m, _ = d.Any().(map[string]any)
}

// stringOrArray is the shape of a member that is a string or an array
// (Content, StopSequences, ResponseInput, InputContent): it reports which
// one is next, and fails on any other value but null.
func (d *wireDecoder) stringOrArray() byte {
	switch c := d.Peek(); c {
	case '"', '[':
		return c
	case 'n':
		d.Literal("null")
	default:
		d.Fail()
	}
	return 0
}

var (
	chatNames = []string{"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "response_format",
		"stream", "stream_options", "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed",
		"presence_penalty", "frequency_penalty", "n", "logprobs", "top_logprobs", "reasoning_effort", "reasoning",
		"verbosity", "service_tier", "user", "safety_identifier", "metadata", "functions"}
	streamOptionsNames  = []string{"include_usage"}
	messageNames        = []string{"role", "content", "tool_calls", "tool_call_id", "refusal"}
	partNames           = []string{"type", "text", "image_url", "input_audio", "file", "refusal"}
	imageURLNames       = []string{"url", "detail"}
	inputAudioNames     = []string{"data", "format"}
	fileNames           = []string{"file_data", "file_id", "filename"}
	toolCallNames       = []string{"id", "type", "function"}
	functionCallNames   = []string{"name", "arguments"}
	toolNames           = []string{"type", "function"}
	functionDefNames    = []string{"name", "description", "parameters", "strict"}
	toolChoiceNames     = []string{"type", "function"}
	nameNames           = []string{"name"}
	responseFormatNames = []string{"type", "json_schema"}
	jsonSchemaNames     = []string{"name", "description", "schema", "strict"}
	reasoningNames      = []string{"effort", "summary"}
)

// decodeChat decodes body into r, which is zero; false if it gave up.
func decodeChat(body []byte, r *ChatCompletionRequest) bool {
	return decodeChatIn(body, r, nil, nil)
}

// decodeChatIn is decodeChat with room for the first message (msg, empty
// with room for one) and the first content, when they are not nil.
func decodeChatIn(body []byte, r *ChatCompletionRequest, msg []ChatMessage, content *Content) bool {
	d := wireDecoder{msgRoom: msg, contentRoom: content}
	d.Reset(body)
	d.chatRequest(r)
	return d.End()
}

func (d *wireDecoder) chatRequest(r *ChatCompletionRequest) {
	d.object(chatNames, func(name string) {
		switch name {
		case "model":
			d.str(&r.Model)
		case "messages":
			arrayIn(d, &r.Messages, d.msgRoom, d.message)
		case "tools":
			array(d, &r.Tools, d.tool)
		case "tool_choice":
			d.toolChoice(&r.ToolChoice)
		case "parallel_tool_calls":
			d.boolPtr(&r.ParallelToolCalls)
		case "response_format":
			d.responseFormat(&r.ResponseFormat)
		case "stream":
			d.bool(&r.Stream)
		case "stream_options":
			o := new(StreamOptions)
			if d.object(streamOptionsNames, func(string) { d.bool(&o.IncludeUsage) }) {
				r.StreamOptions = o
			}
		case "temperature":
			d.floatPtr(&r.Temperature)
		case "top_p":
			d.floatPtr(&r.TopP)
		case "max_tokens":
			d.intPtr(&r.MaxTokens)
		case "max_completion_tokens":
			d.intPtr(&r.MaxCompletionTokens)
		case "stop":
			d.stop(&r.Stop)
		case "seed":
			d.intPtr(&r.Seed)
		case "presence_penalty":
			d.floatPtr(&r.PresencePenalty)
		case "frequency_penalty":
			d.floatPtr(&r.FrequencyPenalty)
		case "n":
			d.intPtr(&r.N)
		case "logprobs":
			d.boolPtr(&r.Logprobs)
		case "top_logprobs":
			d.intPtr(&r.TopLogprobs)
		case "reasoning_effort":
			d.str(&r.ReasoningEffort)
		case "reasoning":
			d.reasoning(&r.Reasoning)
		case "verbosity":
			d.str(&r.Verbosity)
		case "service_tier":
			d.str(&r.ServiceTier)
		case "user":
			d.str(&r.User)
		case "safety_identifier":
			d.str(&r.SafetyIdentifier)
		case "metadata":
			d.stringMap(&r.Metadata)
		case "functions":
			d.raw(&r.Functions)
		}
	})
}

func (d *wireDecoder) message(m *ChatMessage) {
	d.object(messageNames, func(name string) {
		switch name {
		case "role":
			d.known(&m.Role, RoleUser, RoleAssistant, RoleSystem, RoleTool, RoleDeveloper)
		case "content":
			d.content(&m.Content)
		case "tool_calls":
			array(d, &m.ToolCalls, d.toolCall)
		case "tool_call_id":
			d.str(&m.ToolCallID)
		case "refusal":
			d.strPtr(&m.Refusal)
		}
	})
}

// newContent returns a zero Content: the room for one, the first time.
func (d *wireDecoder) newContent() *Content {
	if c := d.contentRoom; c != nil {
		d.contentRoom = nil
		return c
	}
	return new(Content)
}

// content decodes as Content.UnmarshalJSON does.
func (d *wireDecoder) content(p **Content) {
	switch d.stringOrArray() {
	case '"':
		c := d.newContent()
		d.str(&c.Text)
		*p = c
	case '[':
		c := d.newContent()
		array(d, &c.Parts, d.part)
		*p = c
	default:
		*p = nil
	}
}

func (d *wireDecoder) part(p *ContentPart) {
	d.object(partNames, func(name string) {
		switch name {
		case "type":
			d.known(&p.Type, PartText, PartImageURL)
		case "text":
			d.str(&p.Text)
		case "image_url":
			u := new(ImageURL)
			p.ImageURL = nil
			if d.object(imageURLNames, func(name string) {
				if name == "url" {
					d.str(&u.URL)
				} else {
					d.str(&u.Detail)
				}
			}) {
				p.ImageURL = u
			}
		case "input_audio":
			a := new(InputAudio)
			p.InputAudio = nil
			if d.object(inputAudioNames, func(name string) {
				if name == "data" {
					d.str(&a.Data)
				} else {
					d.str(&a.Format)
				}
			}) {
				p.InputAudio = a
			}
		case "file":
			f := new(File)
			p.File = nil
			if d.object(fileNames, func(name string) {
				switch name {
				case "file_data":
					d.str(&f.FileData)
				case "file_id":
					d.str(&f.FileID)
				default:
					d.str(&f.Filename)
				}
			}) {
				p.File = f
			}
		case "refusal":
			d.str(&p.Refusal)
		}
	})
}

func (d *wireDecoder) toolCall(tc *ToolCall) {
	d.object(toolCallNames, func(name string) {
		switch name {
		case "id":
			d.str(&tc.ID)
		case "type":
			d.known(&tc.Type, ToolChoiceFunction)
		case "function":
			d.object(functionCallNames, func(name string) {
				if name == "name" {
					d.str(&tc.Function.Name)
				} else {
					d.str(&tc.Function.Arguments)
				}
			})
		}
	})
}

func (d *wireDecoder) tool(t *Tool) {
	d.object(toolNames, func(name string) {
		if name == "type" {
			d.known(&t.Type, ToolChoiceFunction)
			return
		}
		f := new(FunctionDefinition)
		t.Function = nil
		if d.object(functionDefNames, func(name string) {
			switch name {
			case "name":
				d.str(&f.Name)
			case "description":
				d.str(&f.Description)
			case "parameters":
				d.anyMap(&f.Parameters)
			case "strict":
				d.boolPtr(&f.Strict)
			}
		}) {
			t.Function = f
		}
	})
}

// toolChoice decodes as ToolChoice.UnmarshalJSON does.
func (d *wireDecoder) toolChoice(p **ToolChoice) {
	*p = nil
	switch d.Peek() {
	case '"':
		t := new(ToolChoice)
		d.str(&t.Mode)
		*p = t
	case '{':
		t := new(ToolChoice)
		d.object(toolChoiceNames, func(name string) {
			if name == "type" {
				d.str(&t.Mode)
				return
			}
			t.Name = ""
			d.object(nameNames, func(string) { d.str(&t.Name) })
		})
		*p = t
	case 'n':
		d.Literal("null")
	default:
		d.Fail()
	}
}

func (d *wireDecoder) responseFormat(p **ResponseFormat) {
	f := new(ResponseFormat)
	*p = nil
	if d.object(responseFormatNames, func(name string) {
		if name == "type" {
			d.str(&f.Type)
			return
		}
		s := new(JSONSchemaFormat)
		if d.object(jsonSchemaNames, func(name string) {
			switch name {
			case "name":
				d.str(&s.Name)
			case "description":
				d.str(&s.Description)
			case "schema":
				d.anyMap(&s.Schema)
			case "strict":
				d.boolPtr(&s.Strict)
			}
		}) {
			f.JSONSchema = s
		}
	}) {
		*p = f
	}
}

func (d *wireDecoder) reasoning(p **ReasoningConfig) {
	c := new(ReasoningConfig)
	*p = nil
	if d.object(reasoningNames, func(name string) {
		if name == "effort" {
			d.strPtr(&c.Effort)
		} else {
			d.strPtr(&c.Summary)
		}
	}) {
		*p = c
	}
}

// stop decodes as StopSequences.UnmarshalJSON does.
func (d *wireDecoder) stop(s *StopSequences) {
	switch d.stringOrArray() {
	case '"':
		var one string
		d.str(&one)
		*s = StopSequences{one}
	case '[':
		array(d, (*[]string)(s), d.str)
	default:
		*s = nil
	}
}
