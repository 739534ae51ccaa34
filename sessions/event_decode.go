package sessions

import (
	"encoding/json"
	"strconv"
	"unsafe"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/internal/jsondec"
)

// UnmarshalEvent returns the event that json.Unmarshal reads from data
// into a new Event, or its error. The form StoredJSON and AppendJSON write
// is read by hand with internal/jsondec, in one pass without reflection:
// ids, flags, text parts, token counts and state deltas; its strings
// without escapes are slices of data, not copies. A member of another
// shape (a non-text part, an action map of other values, custom metadata,
// the compaction) goes through json.Unmarshal alone; any other input (an
// unknown or repeated key, null, malformed JSON) through json.Unmarshal
// whole. FuzzUnmarshalEvent holds the two to the same result.
func UnmarshalEvent(data string) (*Event, error) {
	e := &Event{}
	var d eventDecoder
	// data's bytes, never written: the decoder only reads them, and what
	// it keeps of them (text) stays as immutable as data.
	d.Reset(unsafe.Slice(unsafe.StringData(data), len(data)))
	if d.event(e); d.End() {
		return e, nil
	}
	*e = Event{}
	if err := json.Unmarshal([]byte(data), e); err != nil {
		return nil, err
	}
	return e, nil
}

// eventDecoder reads one event from a string's bytes; a method fails the
// decoder on what it does not take, and the caller gives up
// (json.Unmarshal reads the event then).
type eventDecoder struct {
	jsondec.Decoder
}

// text returns b, read from the decoder, as a string: a slice of the
// event's string when inData (b is a slice of Data), else a copy.
func text(b []byte, inData bool) string {
	if inData {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return string(b)
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
func eventMember(key []byte) uint32 {
	switch string(key) {
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

func (d *eventDecoder) event(e *Event) {
	var seen uint32
	d.object(func(key []byte) {
		m := eventMember(key)
		if m == 0 || seen&m != 0 {
			d.Fail()
			return
		}
		seen |= m
		switch m {
		case evID:
			d.str(&e.ID)
		case evInvocationID:
			d.str(&e.InvocationID)
		case evAuthor:
			d.str(&e.Author)
		case evBranch:
			d.str(&e.Branch)
		case evContent:
			d.content(&e.Content)
		case evPartial:
			d.bool(&e.Partial)
		case evTurnComplete:
			d.bool(&e.TurnComplete)
		case evFinishReason:
			d.str((*string)(&e.FinishReason))
		case evModelVersion:
			d.str(&e.ModelVersion)
		case evErrorCode:
			d.str(&e.ErrorCode)
		case evErrorMessage:
			d.str(&e.ErrorMessage)
		case evUsage:
			d.usage(&e.UsageMetadata)
		case evActions:
			d.actions(&e.Actions)
		case evLongRunning:
			d.strings(&e.LongRunningToolIDs)
		case evCustomMetadata:
			d.unmarshal(&e.CustomMetadata)
		default: // evTimestamp
			e.Timestamp = fromEpoch(d.float())
		}
	})
}

// content reads a content of text parts by hand, any other part through
// json.Unmarshal.
func (d *eventDecoder) content(c **genai.Content) {
	*c = &genai.Content{}
	var seen uint32
	d.object(func(key []byte) {
		switch {
		case string(key) == "parts" && seen&1 == 0:
			seen |= 1
			d.parts(&(*c).Parts)
		case string(key) == "role" && seen&2 == 0:
			seen |= 2
			d.str(&(*c).Role)
		default:
			d.Fail()
		}
	})
}

func (d *eventDecoder) parts(ps *[]*genai.Part) {
	d.array(func() {
		*ps = append(*ps, d.part())
	})
	if *ps == nil && !d.Bad {
		*ps = []*genai.Part{}
	}
}

// part reads a part: null, text by hand, another kind through
// json.Unmarshal.
func (d *eventDecoder) part() *genai.Part {
	if d.Null() {
		return nil
	}
	start := d.Mark()
	p := &genai.Part{}
	if d.textPart(p); !d.Bad {
		return p
	}
	d.Rewind(start)
	p = &genai.Part{}
	d.unmarshal(p)
	return p
}

// textPart reads a part that holds text and the thought flag alone.
func (d *eventDecoder) textPart(p *genai.Part) {
	var seen uint32
	d.object(func(key []byte) {
		switch {
		case string(key) == "text" && seen&1 == 0:
			seen |= 1
			d.str(&p.Text)
		case string(key) == "thought" && seen&2 == 0:
			seen |= 2
			d.bool(&p.Thought)
		default:
			d.Fail()
		}
	})
}

// usage reads token counts by hand, usage of any other shape through
// json.Unmarshal.
func (d *eventDecoder) usage(u **genai.GenerateContentResponseUsageMetadata) {
	start := d.Mark()
	v := &genai.GenerateContentResponseUsageMetadata{}
	var seen uint32
	d.object(func(key []byte) {
		var n *int32
		var bit uint32
		switch string(key) {
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
		}
		if bit == 0 || seen&bit != 0 {
			d.Fail()
			return
		}
		seen |= bit
		d.int32(n)
	})
	if !d.Bad {
		*u = v
		return
	}
	d.Rewind(start)
	d.unmarshal(u)
}

// actions reads the flags, the transfer and the state delta by hand, the
// other maps and the compaction through json.Unmarshal.
func (d *eventDecoder) actions(a *EventActions) {
	var seen uint32
	d.object(func(key []byte) {
		switch string(key) {
		case "stateDelta":
			d.once(&seen, 1)
			d.anyMap(&a.StateDelta)
		case "artifactDelta":
			d.once(&seen, 2)
			d.unmarshal(&a.ArtifactDelta)
		case "requestedAuthConfigs":
			d.once(&seen, 4)
			d.anyMap(&a.RequestedAuthConfigs)
		case "requestedToolConfirmations":
			d.once(&seen, 8)
			d.unmarshal(&a.RequestedToolConfirmations)
		case "transferToAgent":
			d.once(&seen, 16)
			d.str(&a.TransferToAgent)
		case "escalate":
			d.once(&seen, 32)
			d.bool(&a.Escalate)
		case "skipSummarization":
			d.once(&seen, 64)
			d.bool(&a.SkipSummarization)
		case "compaction":
			d.once(&seen, 128)
			d.unmarshal(&a.Compaction)
		default:
			d.Fail()
		}
	})
}

// once fails the decoder when bit, a member's, is in *seen already (a
// member given twice), and adds it.
func (d *eventDecoder) once(seen *uint32, bit uint32) {
	if *seen&bit != 0 {
		d.Fail()
	}
	*seen |= bit
}

// anyMap reads an object as encoding/json reads it into a map[string]any
// (jsondec.Any), its keys and string values without escapes slices of the
// event; null and other values through json.Unmarshal.
func (d *eventDecoder) anyMap(m *map[string]any) {
	if d.Peek() != '{' {
		d.unmarshal(m)
		return
	}
	v := map[string]any{}
	d.Open('{')
	for first := true; d.More('}', first); first = false {
		key := text(d.Key())
		if d.Peek() == '"' {
			var s string
			d.str(&s)
			v[key] = s
		} else {
			v[key] = d.Any()
		}
	}
	*m = v
}

// strings reads an array of strings (an empty one as an empty slice, as
// encoding/json does).
func (d *eventDecoder) strings(s *[]string) {
	*s = []string{}
	d.array(func() {
		var v string
		d.str(&v)
		*s = append(*s, v)
	})
}

// unmarshal reads the value at d.Off with json.Unmarshal into v, which
// must be what the same value of the whole event decodes into (a field
// not yet set).
func (d *eventDecoder) unmarshal(v any) {
	d.Peek()
	from := d.Off
	d.Skip()
	if !d.Bad && json.Unmarshal(d.Data[from:d.Off], v) != nil {
		d.Fail()
	}
}

// object reads an object, calling member with each key (valid until the
// next string is read) and d.Off at its value; member reads the value or
// fails the decoder.
func (d *eventDecoder) object(member func(key []byte)) {
	if d.Peek() != '{' {
		d.Fail()
		return
	}
	d.Open('{')
	for first := true; d.More('}', first); first = false {
		member(d.Member())
	}
}

// array reads an array, calling elem for each element.
func (d *eventDecoder) array(elem func()) {
	if d.Peek() != '[' {
		d.Fail()
		return
	}
	d.Open('[')
	for first := true; d.More(']', first); first = false {
		elem()
	}
}

func (d *eventDecoder) bool(b *bool) {
	v, ok := d.Bool()
	if !ok {
		d.Fail()
	}
	*b = v
}

// number reads a number and returns its text.
func (d *eventDecoder) number() []byte {
	if c := d.Peek(); c != '-' && (c < '0' || c > '9') {
		d.Fail()
		return nil
	}
	return d.Number()
}

// float reads a number as encoding/json reads it into a float64.
func (d *eventDecoder) float() float64 {
	n := d.number()
	if d.Bad {
		return 0
	}
	v, err := strconv.ParseFloat(text(n, true), 64)
	if err != nil {
		d.Fail()
	}
	return v
}

// int32 reads a number as encoding/json reads it into an int32.
func (d *eventDecoder) int32(n *int32) {
	v, ok := jsondec.ParseInt(d.number())
	if !ok || v != int64(int32(v)) {
		d.Fail()
		return
	}
	*n = int32(v)
}

// str reads a string as encoding/json does, a slice of the event when it
// has no escapes.
func (d *eventDecoder) str(s *string) {
	if d.Peek() != '"' {
		d.Fail()
		return
	}
	raw, plain := d.RawString()
	switch {
	case d.Bad:
	case plain:
		*s = text(raw, true)
	default:
		*s = string(d.Unquote(raw))
	}
}
