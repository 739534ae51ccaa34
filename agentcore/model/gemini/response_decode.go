package gemini

import (
	"encoding/base64"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/genai"
)

// A decoder for the chunks Gemini sends, in one pass over the bytes and
// without reflection, for the members the provider reads: text and thought
// parts, function calls and their arguments, the finish reason and
// message, the usage, the prompt feedback's block reason, the model
// version and an error event's code, message and status.
//
// It is a fast path, not a second JSON decoder: it gives up (ok false) on
// anything it does not know, and decodeChunk then leaves the document to
// encoding/json, which stays the reference. So what it accepts decodes
// exactly as encoding/json decodes it (response_decode_test.go checks that,
// and fuzzes it), and what it gives up on costs one pass more:
//
//   - a member of a genai type that it does not decode (inline data,
//     executable code, a function response, safety ratings, an error's
//     details, ...), or a key that matches one only as encoding/json's
//     case-insensitive matching would, or a key that is escaped or not
//     ASCII; unknown keys are skipped, as encoding/json skips them;
//   - a repeated member, a null, a value of another type than its field's,
//     an integer that is not an int32, a number or string an `any` cannot
//     hold as encoding/json would give it (a float out of range, a lone
//     surrogate, invalid UTF-8);
//   - malformed JSON (encoding/json then gives its own error) and nesting
//     deeper than maxDepth.

// maxDepth is the nesting the fast path follows; deeper documents go to
// encoding/json (whose own limit is 10000).
const maxDepth = 200

// chunkDecoder is the fast path's state over one document. last is the
// previous chunk's model version, reused instead of an equal new string.
type chunkDecoder struct {
	data  []byte
	off   int
	depth int
	last  string
	// buf holds a string being unescaped.
	buf []byte
	// blk is the current chunk's block; freeContent and freePart are its
	// content and part until the first candidate and part take them.
	blk         *chunkBlock
	freeContent *genai.Content
	freePart    *genai.Part
}

// chunkBlock holds what a chunk of one candidate with one part is made of,
// in one allocation instead of five (a streamed text delta's chunk). The
// parts share the block's lifetime: the partial response that holds the
// content keeps it all.
type chunkBlock struct {
	w       wireResponse
	cands   [1]wireCandidate
	content genai.Content
	parts   [1]*genai.Part
	part    genai.Part
}

// decode decodes data into a new wireResponse and reports whether it
// could; when it could not, the response is zero again, for encoding/json
// to decode into.
func (d *chunkDecoder) decode(data []byte) (*wireResponse, bool) {
	d.data, d.off, d.depth = data, 0, 0
	d.blk = new(chunkBlock)
	d.freeContent, d.freePart = &d.blk.content, &d.blk.part
	w := &d.blk.w
	ok := d.response(w)
	if ok {
		d.ws()
		ok = d.off == len(data)
	}
	if !ok {
		*w = wireResponse{}
		return w, false
	}
	if w.ModelVersion != "" {
		d.last = w.ModelVersion
	}
	return w, true
}

// The JSON names of the structs decoded into, as encoding/json matches
// keys against them: a key that is none of them is skipped.
var (
	responseFields      = jsonNames(reflect.TypeFor[wireResponse]())
	candidateFields     = jsonNames(reflect.TypeFor[wireCandidate]())
	contentFields       = jsonNames(reflect.TypeFor[genai.Content]())
	partFields          = jsonNames(reflect.TypeFor[genai.Part]())
	functionCallFields  = jsonNames(reflect.TypeFor[genai.FunctionCall]())
	usageFields         = jsonNames(reflect.TypeFor[genai.GenerateContentResponseUsageMetadata]())
	modalityCountFields = jsonNames(reflect.TypeFor[genai.ModalityTokenCount]())
	feedbackFields      = jsonNames(reflect.TypeFor[genai.GenerateContentResponsePromptFeedback]())
	errorFields         = jsonNames(reflect.TypeFor[wireError]())
)

// jsonNames returns the names encoding/json gives t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() || f.Anonymous {
			panic("gemini: jsonNames does not handle " + t.String() + "." + f.Name)
		}
		name := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			name = tag
			for i := 0; i < len(tag); i++ {
				if tag[i] == ',' {
					name = tag[:i]
					break
				}
			}
		}
		if name == "-" {
			continue
		}
		names = append(names, name)
	}
	return names
}

func (d *chunkDecoder) response(w *wireResponse) bool {
	return d.object(responseFields, func(key string) bool {
		switch key {
		case "candidates":
			w.Candidates = d.blk.cands[:0]
			return d.array(func() bool {
				w.Candidates = append(w.Candidates, wireCandidate{})
				return d.candidate(&w.Candidates[len(w.Candidates)-1])
			}) && nonNil(&w.Candidates)
		case "promptFeedback":
			w.PromptFeedback = new(genai.GenerateContentResponsePromptFeedback)
			return d.feedback(w.PromptFeedback)
		case "usageMetadata":
			w.UsageMetadata = new(genai.GenerateContentResponseUsageMetadata)
			return d.usage(w.UsageMetadata)
		case "modelVersion":
			s, ok := d.stringValue()
			if ok {
				if string(s) == d.last {
					w.ModelVersion = d.last
				} else {
					w.ModelVersion = string(s)
				}
			}
			return ok
		case "error":
			w.Error = new(wireError)
			return d.errorEvent(w.Error)
		}
		return false
	})
}

func (d *chunkDecoder) candidate(c *wireCandidate) bool {
	return d.object(candidateFields, func(key string) bool {
		switch key {
		case "content":
			c.Content, d.freeContent = d.freeContent, nil
			if c.Content == nil {
				c.Content = new(genai.Content)
			}
			return d.content(c.Content)
		case "finishReason":
			s, ok := d.stringValue()
			c.FinishReason = finishReason(s)
			return ok
		case "finishMessage":
			return d.stringInto(&c.FinishMessage)
		}
		return false
	})
}

// finishReason returns s as a FinishReason, without allocating for the
// usual ones.
func finishReason(s []byte) genai.FinishReason {
	switch string(s) {
	case "":
		return ""
	case string(genai.FinishReasonStop):
		return genai.FinishReasonStop
	case string(genai.FinishReasonMaxTokens):
		return genai.FinishReasonMaxTokens
	}
	return genai.FinishReason(s)
}

func (d *chunkDecoder) content(c *genai.Content) bool {
	return d.object(contentFields, func(key string) bool {
		switch key {
		case "parts":
			if c == &d.blk.content {
				c.Parts = d.blk.parts[:0]
			}
			return d.array(func() bool {
				p := d.freePart
				if d.freePart = nil; p == nil {
					p = new(genai.Part)
				}
				c.Parts = append(c.Parts, p)
				return d.part(p)
			}) && nonNil(&c.Parts)
		case "role":
			s, ok := d.stringValue()
			switch string(s) {
			case genai.RoleModel:
				c.Role = genai.RoleModel
			case genai.RoleUser:
				c.Role = genai.RoleUser
			default:
				c.Role = string(s)
			}
			return ok
		}
		return false
	})
}

func (d *chunkDecoder) part(p *genai.Part) bool {
	return d.object(partFields, func(key string) bool {
		switch key {
		case "text":
			return d.stringInto(&p.Text)
		case "thought":
			return d.boolInto(&p.Thought)
		case "thoughtSignature":
			s, ok := d.stringValue()
			if !ok {
				return false
			}
			// encoding/json's way with a []byte.
			b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
			n, err := base64.StdEncoding.Decode(b, s)
			p.ThoughtSignature = b[:n]
			return err == nil
		case "functionCall":
			p.FunctionCall = new(genai.FunctionCall)
			return d.functionCall(p.FunctionCall)
		}
		return false
	})
}

func (d *chunkDecoder) functionCall(fc *genai.FunctionCall) bool {
	return d.object(functionCallFields, func(key string) bool {
		switch key {
		case "id":
			return d.stringInto(&fc.ID)
		case "name":
			return d.stringInto(&fc.Name)
		case "args":
			m, ok := d.anyValue()
			fc.Args, _ = m.(map[string]any)
			return ok && fc.Args != nil
		}
		return false
	})
}

func (d *chunkDecoder) usage(u *genai.GenerateContentResponseUsageMetadata) bool {
	return d.object(usageFields, func(key string) bool {
		switch key {
		case "promptTokenCount":
			return d.int32Into(&u.PromptTokenCount)
		case "candidatesTokenCount":
			return d.int32Into(&u.CandidatesTokenCount)
		case "totalTokenCount":
			return d.int32Into(&u.TotalTokenCount)
		case "thoughtsTokenCount":
			return d.int32Into(&u.ThoughtsTokenCount)
		case "cachedContentTokenCount":
			return d.int32Into(&u.CachedContentTokenCount)
		case "toolUsePromptTokenCount":
			return d.int32Into(&u.ToolUsePromptTokenCount)
		case "promptTokensDetails":
			return d.modalityCounts(&u.PromptTokensDetails)
		case "candidatesTokensDetails":
			return d.modalityCounts(&u.CandidatesTokensDetails)
		case "cacheTokensDetails":
			return d.modalityCounts(&u.CacheTokensDetails)
		case "toolUsePromptTokensDetails":
			return d.modalityCounts(&u.ToolUsePromptTokensDetails)
		case "trafficType":
			s, ok := d.stringValue()
			u.TrafficType = genai.TrafficType(s)
			return ok
		}
		return false
	})
}

func (d *chunkDecoder) modalityCounts(out *[]*genai.ModalityTokenCount) bool {
	return d.array(func() bool {
		m := new(genai.ModalityTokenCount)
		*out = append(*out, m)
		return d.object(modalityCountFields, func(key string) bool {
			switch key {
			case "modality":
				s, ok := d.stringValue()
				if string(s) == string(genai.MediaModalityText) {
					m.Modality = genai.MediaModalityText
				} else {
					m.Modality = genai.MediaModality(s)
				}
				return ok
			case "tokenCount":
				return d.int32Into(&m.TokenCount)
			}
			return false
		})
	}) && nonNil(out)
}

func (d *chunkDecoder) feedback(f *genai.GenerateContentResponsePromptFeedback) bool {
	return d.object(feedbackFields, func(key string) bool {
		switch key {
		case "blockReason":
			s, ok := d.stringValue()
			f.BlockReason = genai.BlockedReason(s)
			return ok
		case "blockReasonMessage":
			return d.stringInto(&f.BlockReasonMessage)
		}
		return false
	})
}

func (d *chunkDecoder) errorEvent(e *wireError) bool {
	return d.object(errorFields, func(key string) bool {
		switch key {
		case "code":
			var n int32
			ok := d.int32Into(&n)
			e.Code = int(n)
			return ok
		case "message":
			return d.stringInto(&e.Message)
		case "status":
			return d.stringInto(&e.Status)
		}
		return false
	})
}

// nonNil makes an empty slice non-nil, as encoding/json leaves a [] (the
// elements' callbacks append to it).
func nonNil[T any](s *[]T) bool {
	if *s == nil {
		*s = []T{}
	}
	return true
}

// ws skips white space and returns the next byte, 0 at the end.
func (d *chunkDecoder) ws() byte {
	for d.off < len(d.data) {
		switch c := d.data[d.off]; c {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return c
		}
	}
	return 0
}

// members reads the object that is the next value, calling member with
// each key (unescaped, valid until the next string is read) to read its
// value.
func (d *chunkDecoder) members(member func(key []byte) bool) bool {
	return d.list('{', '}', func() bool {
		key, ok := d.stringValue()
		if !ok || d.ws() != ':' {
			return false
		}
		d.off++
		return member(key)
	})
}

// object reads the object that is the next value into a struct whose
// JSON names are fields: member is called with each key that is exactly
// one of them, to read its value, and returns whether it could. Other keys
// are skipped, unless encoding/json would match them to one of fields all
// the same (case-insensitively); a key given twice is given up on.
func (d *chunkDecoder) object(fields []string, member func(key string) bool) bool {
	var seen uint64
	return d.members(func(key []byte) bool {
		switch i := fieldIndex(key, fields); {
		case i >= 0:
			if i >= 64 || seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			return member(fields[i])
		case i == -1:
			return d.skip()
		}
		return false
	})
}

// fieldIndex returns the index of key in fields if it is exactly one of
// them, -2 if encoding/json might match it to one otherwise (it folds case,
// ſ and K (Kelvin) included), and -1 if it is none.
func fieldIndex(key []byte, fields []string) int {
	for i, f := range fields {
		if string(key) == f {
			return i
		}
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return -2
		}
	}
	for _, f := range fields {
		if len(f) == len(key) && asciiEqualFold(f, key) {
			return -2
		}
	}
	return -1
}

func asciiEqualFold(s string, b []byte) bool {
	for i := range len(b) {
		x, y := s[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// array reads the array that is the next value, calling elem for each
// element.
func (d *chunkDecoder) array(elem func() bool) bool { return d.list('[', ']', elem) }

// list reads the array or object (start and end its brackets) that is the
// next value, calling elem for each element or member.
func (d *chunkDecoder) list(start, end byte, elem func() bool) bool {
	if d.ws() != start || d.depth >= maxDepth {
		return false
	}
	d.off++
	d.depth++
	for first := true; ; first = false {
		c := d.ws()
		if c == end && first {
			break
		}
		if !first {
			if c != ',' {
				if c != end {
					return false
				}
				break
			}
			d.off++
		}
		if !elem() {
			return false
		}
	}
	d.off++
	d.depth--
	return true
}

// skip reads a value of any kind, checking that it is well-formed.
func (d *chunkDecoder) skip() bool {
	switch c := d.ws(); c {
	case '{':
		return d.members(func([]byte) bool { return d.skip() })
	case '[':
		return d.array(d.skip)
	case '"':
		_, _, ok := d.rawString()
		return ok
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, ok := d.number()
	return ok
}

func (d *chunkDecoder) literal(s string) bool {
	if len(d.data)-d.off < len(s) || string(d.data[d.off:d.off+len(s)]) != s {
		return false
	}
	d.off += len(s)
	return true
}

// number reads a number and returns its text.
func (d *chunkDecoder) number() ([]byte, bool) {
	start, i, data := d.off, d.off, d.data
	digits := func() bool {
		j := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	d.off = i
	return data[start:i], true
}

// int32Into reads an integer that fits an int32 into v.
func (d *chunkDecoder) int32Into(v *int32) bool {
	if c := d.ws(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	s, ok := d.number()
	if !ok || len(s) > 11 {
		return false
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return false // a fraction or an exponent
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if n != int64(int32(n)) {
		return false
	}
	*v = int32(n)
	return true
}

func (d *chunkDecoder) boolInto(v *bool) bool {
	switch d.ws() {
	case 't':
		*v = true
		return d.literal("true")
	case 'f':
		*v = false
		return d.literal("false")
	}
	return false
}

// stringInto reads a string into v.
func (d *chunkDecoder) stringInto(v *string) bool {
	s, ok := d.stringValue()
	if ok {
		*v = string(s)
	}
	return ok
}

// stringValue reads a string and returns it unescaped (valid until the
// next string; a non-nil empty slice for ""). It gives up on invalid UTF-8
// and lone surrogates, which encoding/json replaces.
func (d *chunkDecoder) stringValue() ([]byte, bool) {
	if d.ws() != '"' {
		return nil, false
	}
	raw, plain, ok := d.rawString()
	switch {
	case !ok:
		return nil, false
	case plain:
		return raw, true
	}
	return d.unescape(raw)
}

// rawString reads the string the next byte starts and returns what is
// between its quotes, and whether that is ASCII or valid UTF-8 without
// escapes (plain). It checks the escapes; control characters are malformed.
func (d *chunkDecoder) rawString() (raw []byte, plain, ok bool) {
	start := d.off + 1
	plain, ascii := true, true
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.off = i + 1
			raw = d.data[start:i]
			if plain && !ascii {
				plain = utf8.Valid(raw)
			}
			return raw, plain, true
		case c == '\\':
			plain = false
			i++
			if i >= len(d.data) {
				return nil, false, false
			}
			switch d.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(d.data) {
					return nil, false, false
				}
				for _, h := range d.data[i+1 : i+5] {
					if hexValue(h) < 0 {
						return nil, false, false
					}
				}
				i += 4
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false, false
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// unescape returns raw (checked by rawString) unescaped in d.buf.
func (d *chunkDecoder) unescape(raw []byte) ([]byte, bool) {
	b := d.buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			if !utf8.Valid(raw[i:j]) {
				return nil, false
			}
			b = append(b, raw[i:j]...)
			i = j
			continue
		}
		switch e := raw[i+1]; e {
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
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
					return nil, false
				}
				r = utf16.DecodeRune(r, hex4(raw[i+2:]))
				if r == utf8.RuneError {
					return nil, false
				}
				i += 6
			}
			b = utf8.AppendRune(b, r)
			continue
		default: // " \ /
			b = append(b, e)
		}
		i += 2
	}
	d.buf = b
	return b, true
}

func hex4(h []byte) rune {
	return hexValue(h[0])<<12 | hexValue(h[1])<<8 | hexValue(h[2])<<4 | hexValue(h[3])
}

// anyValue reads a value as encoding/json reads it into an `any`: objects
// as map[string]any, arrays as []any, numbers as float64.
func (d *chunkDecoder) anyValue() (any, bool) {
	switch c := d.ws(); c {
	case '{':
		m := map[string]any{}
		ok := d.members(func(key []byte) bool {
			k := string(key)
			v, ok := d.anyValue()
			m[k] = v
			return ok
		})
		return m, ok
	case '[':
		a := []any{}
		ok := d.array(func() bool {
			v, ok := d.anyValue()
			a = append(a, v)
			return ok
		})
		return a, ok
	case '"':
		s, ok := d.stringValue()
		return string(s), ok
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	s, ok := d.number()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(s), 64)
	return f, err == nil
}
