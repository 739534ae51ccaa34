package sessions

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/genai"
)

// UnmarshalEvent returns the event that json.Unmarshal reads from data
// into a new Event, or its error. The form StoredJSON and AppendJSON write
// is read by hand, in one pass without reflection: ids, flags, text parts
// and token counts; its strings without escapes are slices of data, not
// copies. A member of another shape (a non-text part, an action map,
// custom metadata, the compaction) goes through json.Unmarshal alone; any
// other input (an unknown or repeated key, null, a lone surrogate, invalid
// UTF-8, malformed JSON) through json.Unmarshal whole. FuzzUnmarshalEvent
// holds the two to the same result.
func UnmarshalEvent(data string) (*Event, error) {
	e := &Event{}
	d := eventDecoder{data: data}
	if d.event(e) && d.peek() == 0 && d.off == len(data) {
		return e, nil
	}
	*e = Event{}
	if err := json.Unmarshal([]byte(data), e); err != nil {
		return nil, err
	}
	return e, nil
}

// eventDecoder reads one event; each method reports false on what it does
// not take, and the caller gives up (json.Unmarshal reads the event then).
type eventDecoder struct {
	data string
	off  int
	buf  []byte // unescaping scratch
}

// The members of an event the decoder takes, as bits of a set to catch a
// repeated one.
const (
	evID = 1 << iota
	evInvocationID
	evAuthor
	evBranch
	evContent
	evPartial
	evTurnComplete
	evFinishReason
	evModelVersion
	evErrorCode
	evErrorMessage
	evUsage
	evActions
	evLongRunning
	evCustomMetadata
	evTimestamp
)

// eventMember is the bit of an event's member, 0 for another key.
func eventMember(key string) uint32 {
	switch key {
	case "id":
		return evID
	case "invocationId":
		return evInvocationID
	case "author":
		return evAuthor
	case "branch":
		return evBranch
	case "content":
		return evContent
	case "partial":
		return evPartial
	case "turnComplete":
		return evTurnComplete
	case "finishReason":
		return evFinishReason
	case "modelVersion":
		return evModelVersion
	case "errorCode":
		return evErrorCode
	case "errorMessage":
		return evErrorMessage
	case "usageMetadata":
		return evUsage
	case "actions":
		return evActions
	case "longRunningToolIds":
		return evLongRunning
	case "customMetadata":
		return evCustomMetadata
	case "timestamp":
		return evTimestamp
	}
	return 0
}

func (d *eventDecoder) event(e *Event) bool {
	var seen uint32
	return d.object(func(key string) bool {
		m := eventMember(key)
		if m == 0 || seen&m != 0 {
			return false
		}
		seen |= m
		switch m {
		case evID:
			return d.str(&e.ID)
		case evInvocationID:
			return d.str(&e.InvocationID)
		case evAuthor:
			return d.str(&e.Author)
		case evBranch:
			return d.str(&e.Branch)
		case evContent:
			return d.content(&e.Content)
		case evPartial:
			return d.bool(&e.Partial)
		case evTurnComplete:
			return d.bool(&e.TurnComplete)
		case evFinishReason:
			return d.str((*string)(&e.FinishReason))
		case evModelVersion:
			return d.str(&e.ModelVersion)
		case evErrorCode:
			return d.str(&e.ErrorCode)
		case evErrorMessage:
			return d.str(&e.ErrorMessage)
		case evUsage:
			return d.usage(&e.UsageMetadata)
		case evActions:
			return d.actions(&e.Actions)
		case evLongRunning:
			return d.strings(&e.LongRunningToolIDs)
		case evCustomMetadata:
			return d.unmarshal(&e.CustomMetadata)
		default: // evTimestamp
			var ts float64
			if !d.float(&ts) {
				return false
			}
			e.Timestamp = fromEpoch(ts)
			return true
		}
	})
}

// content reads a content of text parts by hand, any other part through
// json.Unmarshal.
func (d *eventDecoder) content(c **genai.Content) bool {
	*c = &genai.Content{}
	var seen uint32
	return d.object(func(key string) bool {
		switch {
		case key == "parts" && seen&1 == 0:
			seen |= 1
			return d.parts(&(*c).Parts)
		case key == "role" && seen&2 == 0:
			seen |= 2
			return d.str(&(*c).Role)
		}
		return false
	})
}

func (d *eventDecoder) parts(ps *[]*genai.Part) bool {
	if !d.consume('[') {
		return false
	}
	*ps = []*genai.Part{}
	if d.consume(']') {
		return true
	}
	for {
		p, ok := d.part()
		if !ok {
			return false
		}
		*ps = append(*ps, p)
		if d.consume(']') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// part reads a part: null, text by hand, another kind through
// json.Unmarshal.
func (d *eventDecoder) part() (*genai.Part, bool) {
	if d.null() {
		return nil, true
	}
	start := d.off
	if p := (&genai.Part{}); d.textPart(p) {
		return p, true
	}
	d.off = start
	p := &genai.Part{}
	return p, d.unmarshal(p)
}

// textPart reads a part that holds text and the thought flag alone.
func (d *eventDecoder) textPart(p *genai.Part) bool {
	var seen uint32
	return d.object(func(key string) bool {
		switch {
		case key == "text" && seen&1 == 0:
			seen |= 1
			return d.str(&p.Text)
		case key == "thought" && seen&2 == 0:
			seen |= 2
			return d.bool(&p.Thought)
		}
		return false
	})
}

// usage reads token counts by hand, usage of any other shape through
// json.Unmarshal.
func (d *eventDecoder) usage(u **genai.GenerateContentResponseUsageMetadata) bool {
	start := d.off
	v := &genai.GenerateContentResponseUsageMetadata{}
	var seen uint32
	ok := d.object(func(key string) bool {
		var n *int32
		var bit uint32
		switch key {
		case "promptTokenCount":
			n, bit = &v.PromptTokenCount, 1
		case "candidatesTokenCount":
			n, bit = &v.CandidatesTokenCount, 2
		case "totalTokenCount":
			n, bit = &v.TotalTokenCount, 4
		case "cachedContentTokenCount":
			n, bit = &v.CachedContentTokenCount, 8
		case "thoughtsTokenCount":
			n, bit = &v.ThoughtsTokenCount, 16
		case "toolUsePromptTokenCount":
			n, bit = &v.ToolUsePromptTokenCount, 32
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return d.int32(n)
	})
	if ok {
		*u = v
		return true
	}
	d.off = start
	return d.unmarshal(u)
}

// actions reads the flags and the transfer by hand, the maps and the
// compaction through json.Unmarshal.
func (d *eventDecoder) actions(a *EventActions) bool {
	var seen uint32
	once := func(bit uint32) bool {
		ok := seen&bit == 0
		seen |= bit
		return ok
	}
	return d.object(func(key string) bool {
		switch key {
		case "stateDelta":
			return once(1) && d.anyMap(&a.StateDelta)
		case "artifactDelta":
			return once(2) && d.unmarshal(&a.ArtifactDelta)
		case "requestedAuthConfigs":
			return once(4) && d.anyMap(&a.RequestedAuthConfigs)
		case "requestedToolConfirmations":
			return once(8) && d.unmarshal(&a.RequestedToolConfirmations)
		case "transferToAgent":
			return once(16) && d.str(&a.TransferToAgent)
		case "escalate":
			return once(32) && d.bool(&a.Escalate)
		case "skipSummarization":
			return once(64) && d.bool(&a.SkipSummarization)
		case "compaction":
			return once(128) && d.unmarshal(&a.Compaction)
		}
		return false
	})
}

// anyMap reads an object of strings, numbers, booleans and nulls by hand
// (numbers as float64, as encoding/json reads them into an any), one with
// other values through json.Unmarshal.
func (d *eventDecoder) anyMap(m *map[string]any) bool {
	start := d.off
	v := map[string]any{}
	if d.object(func(key string) bool {
		switch d.peek() {
		case '"':
			var s string
			if !d.str(&s) {
				return false
			}
			v[key] = s
		case 't', 'f':
			var b bool
			if !d.bool(&b) {
				return false
			}
			v[key] = b
		case 'n':
			if !d.null() {
				return false
			}
			v[key] = nil
		default:
			var f float64
			if !d.float(&f) {
				return false
			}
			v[key] = f
		}
		return true
	}) {
		*m = v
		return true
	}
	d.off = start
	return d.unmarshal(m)
}

// strings reads an array of strings (an empty one as an empty slice, as
// encoding/json does).
func (d *eventDecoder) strings(s *[]string) bool {
	if !d.consume('[') {
		return false
	}
	*s = []string{}
	if d.consume(']') {
		return true
	}
	for {
		var v string
		if !d.str(&v) {
			return false
		}
		*s = append(*s, v)
		if d.consume(']') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// unmarshal reads the object or array at d.off with json.Unmarshal into
// v, which must be what the same value of the whole event decodes into
// (a field not yet set).
func (d *eventDecoder) unmarshal(v any) bool {
	raw, ok := d.skip()
	return ok && json.Unmarshal([]byte(raw), v) == nil
}

// skip passes the object or array at d.off and returns its text. It only
// finds where the value ends (strings skipped, brackets counted):
// json.Unmarshal checks the rest.
func (d *eventDecoder) skip() (string, bool) {
	if c := d.peek(); c != '{' && c != '[' {
		return "", false
	}
	start, depth := d.off, 0
	for i := start; i < len(d.data); i++ {
		switch d.data[i] {
		case '"':
			for i++; i < len(d.data) && d.data[i] != '"'; i++ {
				if d.data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				d.off = i + 1
				return d.data[start:d.off], true
			}
		}
	}
	return "", false
}

// object reads an object, calling member for each key with d.off at its
// value; member reads the value, or reports false. Keys are taken only as
// they are written, without escapes.
func (d *eventDecoder) object(member func(key string) bool) bool {
	if !d.consume('{') {
		return false
	}
	if d.consume('}') {
		return true
	}
	for {
		if d.peek() != '"' {
			return false
		}
		key, plain, _ := d.rawString()
		if !plain || !d.consume(':') || !member(key) {
			return false
		}
		if d.consume('}') {
			return true
		}
		if !d.consume(',') {
			return false
		}
	}
}

// peek skips JSON's white space and returns the next byte, 0 at the end.
func (d *eventDecoder) peek() byte {
	for ; d.off < len(d.data); d.off++ {
		switch c := d.data[d.off]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// consume takes c when it comes next.
func (d *eventDecoder) consume(c byte) bool {
	if d.peek() == c {
		d.off++
		return true
	}
	return false
}

// null takes a null when it comes next.
func (d *eventDecoder) null() bool {
	d.peek()
	if len(d.data)-d.off >= 4 && d.data[d.off:d.off+4] == "null" {
		d.off += 4
		return true
	}
	return false
}

func (d *eventDecoder) bool(b *bool) bool {
	d.peek()
	rest := d.data[d.off:]
	switch {
	case len(rest) >= 4 && rest[:4] == "true":
		*b = true
		d.off += 4
	case len(rest) >= 5 && rest[:5] == "false":
		*b = false
		d.off += 5
	default:
		return false
	}
	return true
}

// number reads a number as JSON writes them and returns its text.
func (d *eventDecoder) number() (string, bool) {
	d.peek()
	s, i := d.data, d.off
	digits := func() bool {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return "", false
		}
	}
	n := s[d.off:i]
	d.off = i
	return n, true
}

// float reads a number as encoding/json reads it into a float64.
func (d *eventDecoder) float(f *float64) bool {
	n, ok := d.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseFloat(n, 64)
	*f = v
	return err == nil
}

// int32 reads a number as encoding/json reads it into an int32.
func (d *eventDecoder) int32(n *int32) bool {
	s, ok := d.number()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(s, 10, 32)
	*n = int32(v)
	return err == nil
}

// str reads a string as encoding/json does, except that it refuses a
// lone surrogate's escape and invalid UTF-8 (which encoding/json replaces
// with U+FFFD).
func (d *eventDecoder) str(s *string) bool {
	if d.peek() != '"' {
		return false
	}
	raw, plain, ok := d.rawString()
	if plain || !ok {
		*s = raw
		return ok
	}
	b, ok := d.unescape(raw)
	*s = string(b)
	return ok
}

// rawString passes the string at d.off (its opening quote) and returns
// its text between the quotes; plain reports that the text is its value:
// no escapes, valid UTF-8. ok is false when it is not a string JSON
// allows (a control character, no end), which it does not pass.
func (d *eventDecoder) rawString() (raw string, plain, ok bool) {
	start := d.off + 1
	plain = true
	ascii := true
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.off = i + 1
			raw = d.data[start:i]
			if plain && !ascii {
				plain = utf8.ValidString(raw)
			}
			return raw, plain, true
		case c == '\\':
			plain = false
			i++ // the escaped character: a quote does not end the string
		case c < ' ':
			return "", false, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false, false
}

// unescape returns the value of the string whose text is raw, or false
// when it is not one this decoder takes (a bad escape, a lone surrogate,
// invalid UTF-8).
func (d *eventDecoder) unescape(raw string) ([]byte, bool) {
	b := d.buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return nil, false
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			b = append(b, raw[i+1])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if i+6 > len(raw) {
				return nil, false
			}
			r, err := strconv.ParseUint(raw[i+2:i+6], 16, 32)
			if err != nil || utf16.IsSurrogate(rune(r)) {
				return nil, false
			}
			b = utf8.AppendRune(b, rune(r))
			i += 6
			continue
		default:
			return nil, false
		}
		i += 2
	}
	d.buf = b
	// The escapes write valid UTF-8, and none starts with a continuation
	// byte: what is invalid in raw's other bytes stays invalid here.
	return b, utf8.Valid(b)
}
