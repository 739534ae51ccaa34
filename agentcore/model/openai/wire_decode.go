package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentgate/agentgate/internal/jsondec"
)

// A decoder for the few structs of wire.go, in one pass over the bytes and
// without reflection (internal/jsondec reads the tokens). It gives exactly what encoding/json.Unmarshal gives
// when its *json.UnmarshalTypeError is ignored (decodeBody's leniency);
// wire_decode_test.go checks that against encoding/json, and fuzzes it:
//
//   - malformed JSON is an error, with encoding/json's own error text (the
//     text is only built on that path, by asking encoding/json);
//   - a value of an unexpected type leaves its field as it was, except that
//     a pointer field (usage, a tool call's index) is allocated first, as
//     encoding/json does;
//   - null leaves a field as it was, but sets a pointer or slice to nil;
//   - `error`, present with any value (null too), keeps the value's bytes;
//   - keys match a field's name exactly or case-insensitively (encoding/json's
//     folding), unknown keys are skipped, and a repeated key decodes into
//     what the earlier one left (arrays are reused element by element);
//   - strings are unescaped and invalid UTF-8 is replaced by U+FFFD exactly
//     as encoding/json does; integers are what strconv.ParseInt accepts.

// decode decodes data into c (see above). A decoder may be used again: it
// keeps its scratch buffer, and the model name it decoded last, to reuse
// the string when the next document names the same model.
func (d *decoder) decode(data []byte, c *wireCompletion) error {
	d.Reset(data)
	if d.stream {
		if d.textDelta(c) {
			return nil
		}
		d.textMsg = nil
	}
	d.completion(c)
	if !d.End() {
		return syntaxError(data)
	}
	d.model = c.Model
	if d.stream {
		d.keepText(c)
	}
	return nil
}

// syntaxError returns encoding/json's error for malformed data: the error
// text the callers had before this decoder.
func syntaxError(data []byte) error {
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		return err
	}
	return errDecoder
}

// errDecoder would report a document this decoder rejects and
// encoding/json accepts; the fuzz test looks for one.
var errDecoder = errors.New("openai: the decoder rejected well-formed JSON")

// decoder reads one JSON document with jsondec. It keeps the model name it
// decoded last, to reuse the string when the next document names the same
// model.
type decoder struct {
	jsondec.Decoder
	model string
	// deltas, used by a stream's decoder (stream set; see chunkStream), holds the text
	// of the deltas it decoded (content, refusal, reasoning): each delta's
	// text is a slice of its buffer rather than a string of its own, an
	// allocation per delta. A strings.Builder only appends, so the bytes
	// under a string it gave stay as they were, and a buffer outgrown is
	// left to the strings that point into it. The text of a delta is
	// copied by all that keeps it (the model's aggregator, the gateway's
	// encoder), so the buffer lives no longer than the stream's partial
	// responses; the tool calls' ids and names, which the final response
	// keeps, are strings of their own.
	deltas strings.Builder
	stream bool
	// headBuf[:headLen] is, on a stream, the start of an earlier chunk: its members up
	// to the first that decodes into more than the model (id, object,
	// created, model, system_fingerprint: what every chunk of a stream
	// repeats), and the ',' after them. A chunk that starts with the same
	// bytes decodes them to the same model name, headModel, and leaves
	// the decoder in the same state, headEnd (the ',' ends the last value
	// the head holds: the bytes after it cannot change what it was): it
	// is decoded from there, as the gateway's ChunkFramer writes the
	// chunks it sends after their kept head. The chunks of a stream are
	// decoded into a cleared completion, on which the head sets the model
	// alone.
	headBuf   [256]byte
	headLen   int // a length, not a slice of headBuf: a pointer into itself would move d to the heap
	headEnd   jsondec.Mark
	headModel string
	// textBuf[:textMid] and textBuf[textMid:textLen] are, on a stream,
	// what an earlier chunk that was a text delta and nothing else (one
	// choice, of index 0, whose delta has content alone: most of a
	// stream's chunks) had between its head and its content's string, and
	// after that string to its end. A chunk that is the head, those bytes,
	// a string, and the same bytes after it decodes to what that chunk
	// did with its own text (see textDelta): the bytes around the string
	// are the same, and so is what they decode to. textAt is where the
	// string starts (after the head and textBuf[:textMid]); textOff is
	// set once a chunk had the same start and another end (a member that
	// changes from chunk to chunk, as OpenAI's obfuscation): the stream's
	// chunks are then decoded in whole.
	textBuf [128]byte
	textMid int
	textLen int // 0: none kept
	textAt  jsondec.Mark
	textOff bool
	// replayed: the document decoded last started with the head. textMsg
	// is the message whose content it decoded last (on a stream), and
	// textMark, textStart and textEnd where that value was.
	replayed           bool
	textMsg            *wireMessage
	textMark           jsondec.Mark
	textStart, textEnd int
	// roomChoices and roomUsage, when set (giveRoom), are where the first
	// choice and the usage decoded next go instead of new allocations;
	// each is taken once.
	roomChoices []wireChoice
	roomUsage   *wireUsage
}

// decodeRoom is the room giveRoom gives a decoder: a call asks for one
// choice, and an answer (a stream, in its usage chunk) has one usage, so
// an answer's two allocations are one.
type decodeRoom struct {
	choices [1]wireChoice
	usage   wireUsage
}

// giveRoom gives d room for the first choice and the usage of what it
// decodes next (the room is zero, and taken once: the decoded values are
// what new ones would be).
func (d *decoder) giveRoom() {
	r := new(decodeRoom)
	d.roomChoices, d.roomUsage = r.choices[:], &r.usage
}

var (
	completionNames = []string{"model", "choices", "usage", "error"}
	choiceNames     = []string{"index", "message", "delta", "finish_reason"}
	messageNames    = []string{"content", "refusal", "reasoning_content", "reasoning", "tool_calls"}
	toolCallNames   = []string{"index", "id", "function"}
	functionNames   = []string{"name", "arguments"}
	usageNames      = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details"}
	cachedNames     = []string{"cached_tokens"}
	reasoningNames  = []string{"reasoning_tokens"}
)

// completion decodes a completion or a chunk into c. On a stream, a
// chunk that starts as the one before did is decoded from where that
// start ended (see decoder.headBuf).
func (d *decoder) completion(c *wireCompletion) {
	more, replayed := false, false
	if d.stream && d.headLen > 0 && bytes.HasPrefix(d.Data, d.headBuf[:d.headLen]) {
		// What the head's bytes decode to: a member follows its ','.
		d.Rewind(d.headEnd)
		c.Model = d.headModel
		more, replayed = true, true
	} else if d.Open('{') {
		more = d.More('}', true)
	}
	d.replayed = replayed
	keep := d.stream && !replayed
	for first := true; more; first = false {
		at, mark := d.Off, d.Mark()
		i := jsondec.Field(d.Member(), completionNames)
		if keep && i > 0 {
			// The first member that decodes into more than the model:
			// the head ends before it, after the ',' of one before.
			keep = false
			if !first && at <= len(d.headBuf) {
				d.headLen = copy(d.headBuf[:], d.Data[:at])
				d.headEnd, d.headModel = mark, c.Model
				d.textLen = 0 // kept after another head
			}
		}
		switch i {
		case -1:
			d.Skip()
		case 0:
			d.modelName(&c.Model)
		case 1:
			array(d, &c.Choices, &d.roomChoices, d.choice)
		case 2:
			if d.Null() {
				c.Usage = nil
				break
			}
			if c.Usage == nil {
				if c.Usage, d.roomUsage = d.roomUsage, nil; c.Usage == nil {
					c.Usage = new(wireUsage)
				}
			}
			d.usage(c.Usage)
		case 3:
			d.Peek()
			start := d.Off
			d.Skip()
			c.Error = append(c.Error[:0], d.Data[start:d.Off]...)
		}
		more = d.More('}', false)
	}
}

// object decodes an object into a struct: set decodes the value of the
// member whose key is names[i]; other members are skipped. A value that is
// not an object is skipped.
func (d *decoder) object(names []string, set func(i int)) {
	if !d.Open('{') {
		return
	}
	for first := true; d.More('}', first); first = false {
		if i := jsondec.Field(d.Member(), names); i >= 0 {
			set(i)
		} else {
			d.Skip()
		}
	}
}

// array decodes an array into *s the way encoding/json fills a slice:
// elements already there (up to the capacity) are decoded into, not
// zeroed, and an empty array gives a new empty slice. null sets *s to nil;
// a value of another type is skipped. A first element with no room in *s
// goes into *room when that has any (it is taken: *room is set to nil).
func array[T any](d *decoder, s *[]T, room *[]T, elem func(*T)) {
	if d.Null() {
		*s = nil
		return
	}
	if !d.Open('[') {
		return
	}
	a, i := *s, 0
	for ; d.More(']', i == 0); i++ {
		switch {
		case cap(a) == 0 && room != nil && len(*room) > 0:
			a, *room = (*room)[:1], nil
		case i >= cap(a):
			var zero T
			a = append(a[:i], zero)
		case i >= len(a):
			a = a[:i+1]
		}
		elem(&a[i])
	}
	if i == 0 {
		a = []T{}
	}
	*s = a[:i]
}

func (d *decoder) choice(ch *wireChoice) {
	d.object(choiceNames, func(i int) {
		switch i {
		case 0:
			d.int(&ch.Index)
		case 1:
			d.message(&ch.Message, d.str)
		case 2:
			d.message(&ch.Delta, d.deltaText)
		case 3:
			d.finishReason(&ch.FinishReason)
		}
	})
}

// message decodes a message or a delta, its text with text (str or
// deltaText).
func (d *decoder) message(m *wireMessage, text func(*string)) {
	d.object(messageNames, func(i int) {
		switch i {
		case 0:
			if d.stream {
				d.Peek()
				d.textMsg, d.textMark, d.textStart = m, d.Mark(), d.Off
				text(&m.Content)
				d.textEnd = d.Off
				break
			}
			text(&m.Content)
		case 1:
			text(&m.Refusal)
		case 2:
			text(&m.ReasoningContent)
		case 3:
			text(&m.Reasoning)
		case 4:
			array(d, &m.ToolCalls, nil, d.toolCall)
		}
	})
}

func (d *decoder) toolCall(tc *wireToolCall) {
	d.object(toolCallNames, func(i int) {
		switch i {
		case 0:
			if d.Null() {
				tc.Index = nil
				return
			}
			if tc.Index == nil {
				tc.Index = new(int64)
			}
			d.int(tc.Index)
		case 1:
			d.str(&tc.ID)
		case 2:
			d.object(functionNames, func(i int) {
				if i == 0 {
					d.str(&tc.Function.Name)
				} else {
					d.str(&tc.Function.Arguments)
				}
			})
		}
	})
}

func (d *decoder) usage(u *wireUsage) {
	d.object(usageNames, func(i int) {
		switch i {
		case 0:
			d.int(&u.PromptTokens)
		case 1:
			d.int(&u.CompletionTokens)
		case 2:
			d.int(&u.TotalTokens)
		case 3:
			d.object(cachedNames, func(int) { d.int(&u.PromptTokensDetails.CachedTokens) })
		case 4:
			d.object(reasoningNames, func(int) { d.int(&u.CompletionTokensDetails.ReasoningTokens) })
		}
	})
}

// str decodes a string value into *s; any other value leaves it as it was.
func (d *decoder) str(s *string) {
	if d.Peek() != '"' {
		d.Skip()
		return
	}
	if b, ok := d.String(); ok {
		*s = string(b)
	}
}

// firstDeltas is the room a stream's first delta text makes in
// decoder.deltas.
const firstDeltas = 256

// deltaText is str for the text of a delta: into d.deltas on a stream
// (see decoder).
func (d *decoder) deltaText(s *string) {
	if !d.stream || d.Peek() != '"' {
		d.str(s)
		return
	}
	if b, ok := d.String(); ok {
		*s = d.keepDelta(b)
	}
}

// keepDelta returns b, a delta's text, as a string in d.deltas.
func (d *decoder) keepDelta(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	n := d.deltas.Len()
	if n == 0 {
		// Room for a short answer's deltas at once, rather than a
		// buffer of each size up to it.
		d.deltas.Grow(firstDeltas)
	}
	d.deltas.Write(b)
	return d.deltas.String()[n:]
}

// textDelta decodes into c, a cleared completion (see headBuf), a chunk
// of a stream that is the head, the bytes kept in textBuf around a string,
// and that string (see textBuf), and reports whether it did: c is then
// what the chunk kept decoded to, with the string as its text. Any other
// chunk is left to completion.
func (d *decoder) textDelta(c *wireCompletion) bool {
	if d.textLen == 0 || d.textOff || cap(c.Choices) == 0 {
		return false
	}
	data, mid := d.Data, d.textBuf[:d.textMid]
	at := d.headLen + len(mid)
	if len(data) <= at || string(data[d.headLen:at]) != string(mid) || string(data[:d.headLen]) != string(d.headBuf[:d.headLen]) ||
		data[at] != '"' {
		return false
	}
	d.Rewind(d.textAt)
	b, ok := d.String()
	if !ok || string(data[d.Off:]) != string(d.textBuf[d.textMid:d.textLen]) {
		// Another end (or a malformed string): decoded in whole, as
		// the stream's chunks from now on.
		d.textOff = true
		d.Reset(data)
		return false
	}
	c.Model, d.model = d.headModel, d.headModel
	c.Choices = c.Choices[:1]
	c.Choices[0].Delta.Content = d.keepDelta(b)
	return true
}

// keepText keeps, on a stream, the bytes of the chunk just decoded into c
// around its text (textBuf) when it was a text delta and nothing else,
// after the head: one choice of index 0 whose delta has content alone.
func (d *decoder) keepText(c *wireCompletion) {
	if !d.replayed || d.textOff || len(c.Choices) != 1 || d.textMsg != &c.Choices[0].Delta ||
		c.Model != d.headModel || c.Usage != nil || c.Error != nil {
		return
	}
	ch := &c.Choices[0]
	if m := &ch.Delta; ch.Index != 0 || ch.FinishReason != "" || !ch.Message.empty() ||
		m.Refusal != "" || m.ReasoningContent != "" || m.Reasoning != "" || m.ToolCalls != nil {
		return
	}
	mid, end := d.Data[d.headLen:d.textStart], d.Data[d.textEnd:]
	if len(mid)+len(end) > len(d.textBuf) {
		return
	}
	d.textMid = copy(d.textBuf[:], mid)
	d.textLen = d.textMid + copy(d.textBuf[d.textMid:], end)
	d.textAt = d.textMark
}

// modelName is str reusing d.model when the name is the same.
func (d *decoder) modelName(s *string) {
	if d.Peek() != '"' {
		d.Skip()
		return
	}
	if b, ok := d.String(); ok {
		if string(b) == d.model {
			*s = d.model
		} else {
			*s = string(b)
		}
	}
}

// finishReason is str without allocating the common reasons.
func (d *decoder) finishReason(s *string) {
	if d.Peek() != '"' {
		d.Skip()
		return
	}
	b, ok := d.String()
	if !ok {
		return
	}
	switch string(b) {
	case "stop":
		*s = "stop"
	case "length":
		*s = "length"
	case "tool_calls":
		*s = "tool_calls"
	case "content_filter":
		*s = "content_filter"
	default:
		*s = string(b)
	}
}

// int decodes an integer into *n when strconv.ParseInt(s, 10, 64) would
// take it; any other value leaves *n as it was.
func (d *decoder) int(n *int64) {
	switch c := d.Peek(); {
	case c == '-' || ('0' <= c && c <= '9'):
		if v, ok := jsondec.ParseInt(d.Number()); ok && !d.Bad {
			*n = v
		}
	default:
		d.Skip()
	}
}
