package openai

import (
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A decoder for the few structs of wire.go, in one pass over the bytes and
// without reflection. It gives exactly what encoding/json.Unmarshal gives
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

// maxDepth is encoding/json's limit on nested arrays and objects.
const maxDepth = 10000

// decode decodes data into c (see above). A decoder may be used again: it
// keeps its scratch buffer, and the model name it decoded last, to reuse
// the string when the next document names the same model.
func (d *decoder) decode(data []byte, c *wireCompletion) error {
	*d = decoder{data: data, model: d.model, buf: d.buf}
	d.completion(c)
	if d.peek(); d.off < len(d.data) {
		d.fail() // something after the document
	}
	if d.bad {
		return syntaxError(data)
	}
	d.model = c.Model
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

// decoder reads one JSON document. After an error (bad) it is at the end of
// the data, so every loop stops.
type decoder struct {
	data  []byte
	off   int
	depth int
	bad   bool
	// model is a model name to reuse instead of allocating an equal one
	// (the previous document's).
	model string
	// buf holds the last unescaped key or string.
	buf []byte
}

func (d *decoder) fail() {
	d.bad = true
	d.off = len(d.data)
}

// peek skips white space and returns the next byte, 0 at the end.
func (d *decoder) peek() byte {
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

// null consumes a null if it is the next value.
func (d *decoder) null() bool {
	if d.peek() != 'n' {
		return false
	}
	d.literal("null")
	return true
}

// open consumes the '{' or '[' (c) that starts the next value; any other
// value is skipped (a null, or a value of an unexpected type) and open
// returns false.
func (d *decoder) open(c byte) bool {
	if d.peek() != c {
		d.skip()
		return false
	}
	d.off++
	d.depth++
	if d.depth > maxDepth {
		d.fail()
		return false
	}
	return true
}

// more reports whether the object or array opened before, ending with end,
// has another member: first is true before the first one. It consumes the
// ',' between members and the closing end.
func (d *decoder) more(end byte, first bool) bool {
	c := d.peek()
	switch {
	case c == end:
		d.off++
		d.depth--
		return false
	case first:
		return !d.bad
	case c == ',':
		d.off++
		return true
	}
	d.fail()
	return false
}

// member reads an object member's key and the ':' after it, and returns
// the key (unescaped; valid until the next key).
func (d *decoder) member() []byte {
	if d.peek() != '"' {
		d.fail()
		return nil
	}
	raw, plain := d.rawString()
	if d.peek() != ':' {
		d.fail()
		return nil
	}
	d.off++
	if plain {
		return raw
	}
	return d.unquote(raw)
}

// field returns the index of key in names (the struct's JSON names, all
// lower-case ASCII), matched as encoding/json matches: exactly, else
// case-insensitively with its folding; -1 if none.
func field(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	fold := false
	for _, c := range key {
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			fold = true
			break
		}
	}
	if !fold {
		return -1
	}
	var arr [32]byte
	folded := foldKey(arr[:0], key)
	for i, n := range names {
		if len(folded) == len(n) && upperEquals(folded, n) {
			return i
		}
	}
	return -1
}

// foldKey appends key folded as encoding/json folds field names: ASCII
// letters upper-cased, other runes mapped to the least rune of their
// simple case folding (so "ſ" matches "s", "K" (Kelvin) "k").
func foldKey(dst, key []byte) []byte {
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		dst = utf8.AppendRune(dst, leastFold(r))
		i += n
	}
	return dst
}

// leastFold returns the least rune that r folds to.
func leastFold(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// upperEquals reports whether folded equals name upper-cased (name is
// lower-case ASCII, of the same length).
func upperEquals(folded []byte, name string) bool {
	for i := range len(name) {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if folded[i] != c {
			return false
		}
	}
	return true
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

func (d *decoder) completion(c *wireCompletion) {
	d.object(completionNames, func(i int) {
		switch i {
		case 0:
			d.modelName(&c.Model)
		case 1:
			array(d, &c.Choices, d.choice)
		case 2:
			if d.null() {
				c.Usage = nil
				return
			}
			if c.Usage == nil {
				c.Usage = new(wireUsage)
			}
			d.usage(c.Usage)
		case 3:
			d.peek()
			start := d.off
			d.skip()
			c.Error = append(c.Error[:0], d.data[start:d.off]...)
		}
	})
}

// object decodes an object into a struct: set decodes the value of the
// member whose key is names[i]; other members are skipped. A value that is
// not an object is skipped.
func (d *decoder) object(names []string, set func(i int)) {
	if !d.open('{') {
		return
	}
	for first := true; d.more('}', first); first = false {
		if i := field(d.member(), names); i >= 0 {
			set(i)
		} else {
			d.skip()
		}
	}
}

// array decodes an array into *s the way encoding/json fills a slice:
// elements already there (up to the capacity) are decoded into, not
// zeroed, and an empty array gives a new empty slice. null sets *s to nil;
// a value of another type is skipped.
func array[T any](d *decoder, s *[]T, elem func(*T)) {
	if d.null() {
		*s = nil
		return
	}
	if !d.open('[') {
		return
	}
	a, i := *s, 0
	for ; d.more(']', i == 0); i++ {
		switch {
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
			d.message(&ch.Message)
		case 2:
			d.message(&ch.Delta)
		case 3:
			d.finishReason(&ch.FinishReason)
		}
	})
}

func (d *decoder) message(m *wireMessage) {
	d.object(messageNames, func(i int) {
		switch i {
		case 0:
			d.str(&m.Content)
		case 1:
			d.str(&m.Refusal)
		case 2:
			d.str(&m.ReasoningContent)
		case 3:
			d.str(&m.Reasoning)
		case 4:
			array(d, &m.ToolCalls, d.toolCall)
		}
	})
}

func (d *decoder) toolCall(tc *wireToolCall) {
	d.object(toolCallNames, func(i int) {
		switch i {
		case 0:
			if d.null() {
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
	if d.peek() != '"' {
		d.skip()
		return
	}
	if b, ok := d.stringValue(); ok {
		*s = string(b)
	}
}

// modelName is str reusing d.model when the name is the same.
func (d *decoder) modelName(s *string) {
	if d.peek() != '"' {
		d.skip()
		return
	}
	if b, ok := d.stringValue(); ok {
		if string(b) == d.model {
			*s = d.model
		} else {
			*s = string(b)
		}
	}
}

// finishReason is str without allocating the common reasons.
func (d *decoder) finishReason(s *string) {
	if d.peek() != '"' {
		d.skip()
		return
	}
	b, ok := d.stringValue()
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

// stringValue reads the string at d.off: its content unescaped, valid
// until the next string is read.
func (d *decoder) stringValue() ([]byte, bool) {
	raw, plain := d.rawString()
	if d.bad {
		return nil, false
	}
	if plain {
		return raw, true
	}
	return d.unquote(raw), true
}

// unquote unescapes raw into d.buf.
func (d *decoder) unquote(raw []byte) []byte {
	if cap(d.buf) < len(raw) {
		// Escapes only shorten; invalid UTF-8 may lengthen.
		d.buf = make([]byte, 0, len(raw)+len(raw)/4)
	}
	d.buf = appendUnquoted(d.buf[:0], raw)
	return d.buf
}

// int decodes an integer into *n when strconv.ParseInt(s, 10, 64) would
// take it; any other value leaves *n as it was.
func (d *decoder) int(n *int64) {
	switch c := d.peek(); {
	case c == '-' || ('0' <= c && c <= '9'):
		if v, ok := parseInt(d.number()); ok && !d.bad {
			*n = v
		}
	default:
		d.skip()
	}
}

// parseInt parses a JSON number that is an integer within int64's range.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0') // 19 digits fit in a uint64
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true // two's complement: -1<<63 included
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// skip consumes one value of any kind, checking that it is well-formed.
func (d *decoder) skip() {
	switch c := d.peek(); c {
	case '{':
		if !d.open('{') {
			return
		}
		for first := true; d.more('}', first); first = false {
			if d.peek() != '"' {
				d.fail()
				return
			}
			d.rawString()
			if d.peek() != ':' {
				d.fail()
				return
			}
			d.off++
			d.skip()
		}
	case '[':
		if !d.open('[') {
			return
		}
		for first := true; d.more(']', first); first = false {
			d.skip()
		}
	case '"':
		d.rawString()
	case 't':
		d.literal("true")
	case 'f':
		d.literal("false")
	case 'n':
		d.literal("null")
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			d.number()
			return
		}
		d.fail()
	}
}

// literal consumes lit, which must be next.
func (d *decoder) literal(lit string) {
	if len(d.data)-d.off >= len(lit) && string(d.data[d.off:d.off+len(lit)]) == lit {
		d.off += len(lit)
		return
	}
	d.fail()
}

// number consumes a JSON number and returns its bytes.
func (d *decoder) number() []byte {
	data, start := d.data, d.off
	i := start
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i)
	default:
		d.fail()
		return nil
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			d.fail()
			return nil
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			d.fail()
			return nil
		}
		i = j
	}
	d.off = i
	return data[start:i]
}

// digits returns the offset after the digits that start at i.
func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// rawString consumes the string at d.off (its opening quote) and returns
// its bytes between the quotes; plain reports that they need no
// unescaping nor UTF-8 repair.
func (d *decoder) rawString() (raw []byte, plain bool) {
	data := d.data
	start := d.off + 1
	plain = true
	ascii := true
	for i := start; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			d.off = i + 1
			raw = data[start:i]
			if plain && !ascii {
				plain = utf8.Valid(raw)
			}
			return raw, plain
		case c == '\\':
			plain = false
			n := escapeLen(data[i:])
			if n == 0 {
				d.fail()
				return nil, false
			}
			i += n
		case c < ' ':
			d.fail()
			return nil, false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
	d.fail()
	return nil, false
}

// escapeLen returns the length of the escape sequence at the start of b
// (its backslash), 0 if it is not one JSON allows.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(b) >= 6 && hex4(b[2:6]) >= 0 {
			return 6
		}
	}
	return 0
}

// hex4 decodes four hex digits, -1 if they are not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// escapedRune decodes the \uXXXX escape at the start of b (already
// checked) and returns the rune and the bytes it took: a surrogate pair
// takes both escapes, a lone surrogate stands for U+FFFD (encoding/json's
// rule).
func escapedRune(b []byte) (rune, int) {
	r := hex4(b[2:6])
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		if r2 := hex4(b[8:12]); r2 >= 0 {
			if pair := utf16.DecodeRune(r, r2); pair != unicode.ReplacementChar {
				return pair, 12
			}
		}
	}
	return unicode.ReplacementChar, 6
}

// appendUnquoted appends the content of a well-formed JSON string (raw,
// without its quotes) unescaped, every byte of invalid UTF-8 replaced by
// U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, n := escapedRune(raw[i:])
				dst = utf8.AppendRune(dst, r)
				i += n
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			dst = utf8.AppendRune(dst, r)
			i += n
		}
	}
	return dst
}
