// Package jsondec reads JSON one token at a time, for the decoders written
// by hand where encoding/json's reflection costs too much (openaiwire's
// requests): it checks the syntax as encoding/json's scanner does, and
// unescapes strings, repairs invalid UTF-8, matches keys and parses
// integers as encoding/json.Unmarshal does. Its tests and the decoders'
// fuzz tests compare it with encoding/json, which stays the reference.
//
// A Decoder does not build errors: after anything it cannot take it is
// Bad, at the end of the data so that every loop stops, and its caller
// asks encoding/json for the error (or the value) of that document.
package jsondec

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is encoding/json's limit on nested arrays and objects.
const MaxDepth = 10000

// Decoder reads one JSON document, Data, from Off. A Decoder may be Reset
// and used again: it keeps its scratch buffer.
type Decoder struct {
	Data []byte
	Off  int
	// Bad is set by Fail: the document is malformed, or its caller met a
	// value it does not take.
	Bad   bool
	depth int
	// buf holds the last unescaped key or string.
	buf []byte
}

// Reset starts reading data.
func (d *Decoder) Reset(data []byte) {
	*d = Decoder{Data: data, buf: d.buf[:0]}
}

// Fail marks the decoder Bad and moves it to the end of the data.
func (d *Decoder) Fail() {
	d.Bad = true
	d.Off = len(d.Data)
}

// Mark is a place in the document, to read it again from there (Rewind).
type Mark struct{ off, depth int }

// Mark returns where the decoder is.
func (d *Decoder) Mark() Mark { return Mark{d.Off, d.depth} }

// Rewind goes back to m and clears Bad: a caller that gave up on a value
// it read from m reads it again another way (if the document is
// malformed there, that way fails too).
func (d *Decoder) Rewind(m Mark) {
	d.Off, d.depth, d.Bad = m.off, m.depth, false
}

// End reports whether the document read so far is all there is (white
// space may follow) and nothing failed.
func (d *Decoder) End() bool {
	if d.Peek(); d.Off < len(d.Data) {
		d.Fail()
	}
	return !d.Bad
}

// Peek skips white space and returns the next byte, 0 at the end.
func (d *Decoder) Peek() byte {
	for d.Off < len(d.Data) {
		switch c := d.Data[d.Off]; c {
		case ' ', '\t', '\n', '\r':
			d.Off++
		default:
			return c
		}
	}
	return 0
}

// Null consumes a null if it is the next value.
func (d *Decoder) Null() bool {
	if d.Peek() != 'n' {
		return false
	}
	d.Literal("null")
	return true
}

// Open consumes the '{' or '[' (c) that starts the next value; any other
// value is skipped and Open returns false.
func (d *Decoder) Open(c byte) bool {
	if d.Peek() != c {
		d.Skip()
		return false
	}
	d.Off++
	d.depth++
	if d.depth > MaxDepth {
		d.Fail()
		return false
	}
	return true
}

// More reports whether the object or array opened before, ending with
// end, has another member: first is true before the first one. It
// consumes the ',' between members and the closing end.
func (d *Decoder) More(end byte, first bool) bool {
	c := d.Peek()
	switch {
	case c == end:
		d.Off++
		d.depth--
		return false
	case first:
		return !d.Bad
	case c == ',':
		d.Off++
		return true
	}
	d.Fail()
	return false
}

// Member reads an object member's key and the ':' after it, and returns
// the key (unescaped; valid until the next key or string is read).
func (d *Decoder) Member() []byte {
	key, _ := d.Key()
	return key
}

// Key is Member that also reports whether the key is a slice of Data
// (it needed no unescaping), which a caller may then keep.
func (d *Decoder) Key() (key []byte, inData bool) {
	if d.Peek() != '"' {
		d.Fail()
		return nil, false
	}
	raw, plain := d.RawString()
	if d.Peek() != ':' {
		d.Fail()
		return nil, false
	}
	d.Off++
	if plain {
		return raw, true
	}
	return d.Unquote(raw), false
}

// Field returns the index of key in names (a struct's JSON names, all
// ASCII), matched as encoding/json matches: exactly, else
// case-insensitively with its folding; -1 if none.
func Field(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	ascii := true
	for _, c := range key {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		for i, n := range names {
			if len(n) == len(key) && asciiEqualFold(key, n) {
				return i
			}
		}
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

// asciiEqualFold reports whether key and name (ASCII, of the same length)
// are equal but for the case of their letters.
func asciiEqualFold(key []byte, name string) bool {
	for i := range len(name) {
		if upper(key[i]) != upper(name[i]) {
			return false
		}
	}
	return true
}

// upper upper-cases an ASCII letter.
func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		c -= 'a' - 'A'
	}
	return c
}

// foldKey appends key folded as encoding/json folds field names: ASCII
// letters upper-cased, other runes mapped to the least rune of their
// simple case folding (so "ſ" matches "s", "K" (Kelvin) "k").
func foldKey(dst, key []byte) []byte {
	for i := 0; i < len(key); {
		if c := key[i]; c < utf8.RuneSelf {
			dst = append(dst, upper(c))
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
// ASCII, of the same length).
func upperEquals(folded []byte, name string) bool {
	for i := range len(name) {
		if folded[i] != upper(name[i]) {
			return false
		}
	}
	return true
}

// String reads the string at Off: its content unescaped, valid until the
// next key or string is read; false after a malformed one.
func (d *Decoder) String() ([]byte, bool) {
	raw, plain := d.RawString()
	if d.Bad {
		return nil, false
	}
	if plain {
		return raw, true
	}
	return d.Unquote(raw), true
}

// Unquote returns raw, the bytes between a string's quotes as RawString
// returns them, unescaped (AppendUnquoted) into the decoder's scratch
// buffer: valid until the next key or string is read.
func (d *Decoder) Unquote(raw []byte) []byte {
	if cap(d.buf) < len(raw) {
		// Escapes only shorten; invalid UTF-8 may lengthen.
		d.buf = make([]byte, 0, len(raw)+len(raw)/4)
	}
	d.buf = AppendUnquoted(d.buf[:0], raw)
	return d.buf
}

// ParseInt parses a JSON number as strconv.ParseInt(s, 10, 64) would:
// false unless it is an integer within int64's range.
func ParseInt(b []byte) (int64, bool) {
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

// Skip consumes one value of any kind, checking that it is well-formed.
func (d *Decoder) Skip() {
	switch c := d.Peek(); c {
	case '{':
		if !d.Open('{') {
			return
		}
		for first := true; d.More('}', first); first = false {
			if d.Peek() != '"' {
				d.Fail()
				return
			}
			d.RawString()
			if d.Peek() != ':' {
				d.Fail()
				return
			}
			d.Off++
			d.Skip()
		}
	case '[':
		if !d.Open('[') {
			return
		}
		for first := true; d.More(']', first); first = false {
			d.Skip()
		}
	case '"':
		d.RawString()
	case 't', 'f':
		d.Bool()
	case 'n':
		d.Literal("null")
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			d.Number()
			return
		}
		d.Fail()
	}
}

// Any reads the next value as encoding/json reads one into an any:
// objects as map[string]any, arrays as []any, numbers as float64 (one out
// of float64's range fails, as encoding/json refuses it), strings copied.
func (d *Decoder) Any() any {
	switch c := d.Peek(); c {
	case '{':
		m := map[string]any{}
		d.Open('{')
		for first := true; d.More('}', first); first = false {
			k := string(d.Member())
			m[k] = d.Any()
		}
		return m
	case '[':
		a := []any{}
		d.Open('[')
		for first := true; d.More(']', first); first = false {
			a = append(a, d.Any())
		}
		return a
	case '"':
		b, _ := d.String()
		return string(b)
	case 't', 'f':
		v, _ := d.Bool()
		return v
	case 'n':
		d.Literal("null")
		return nil
	}
	n := d.Number()
	if d.Bad {
		return nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		d.Fail()
	}
	return f
}

// Bool consumes true or false if it is the next value: ok reports that it
// was.
func (d *Decoder) Bool() (v, ok bool) {
	switch d.Peek() {
	case 't':
		d.Literal("true")
		return true, true
	case 'f':
		d.Literal("false")
		return false, true
	}
	return false, false
}

// Literal consumes lit, which must be next.
func (d *Decoder) Literal(lit string) {
	if len(d.Data)-d.Off >= len(lit) && string(d.Data[d.Off:d.Off+len(lit)]) == lit {
		d.Off += len(lit)
		return
	}
	d.Fail()
}

// Number consumes a JSON number and returns its bytes.
func (d *Decoder) Number() []byte {
	data, start := d.Data, d.Off
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
		d.Fail()
		return nil
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			d.Fail()
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
			d.Fail()
			return nil
		}
		i = j
	}
	d.Off = i
	return data[start:i]
}

// digits returns the offset after the digits that start at i.
func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// RawString consumes the string at Off (its opening quote) and returns its
// bytes between the quotes; plain reports that they need no unescaping
// nor UTF-8 repair.
func (d *Decoder) RawString() (raw []byte, plain bool) {
	data := d.Data
	start := d.Off + 1
	plain = true
	var high uint64 // the bytes passed eight at a time, or'ed: bit 7 of any set if one is not ASCII
	ascii := true
	for i := start; i < len(data); {
		if i+8 <= len(data) {
			// Eight bytes at once, up to the first that needs a look.
			w := binary.LittleEndian.Uint64(data[i:])
			stops := stringStops(w)
			if stops == 0 {
				high |= w
				i += 8
				continue
			}
			n := bits.TrailingZeros64(stops) / 8
			high |= w & (1<<(8*n) - 1)
			i += n
		}
		switch c := data[i]; {
		case c == '"':
			d.Off = i + 1
			raw = data[start:i]
			if plain && (!ascii || high&msbs != 0) {
				plain = utf8.Valid(raw)
			}
			return raw, plain
		case c == '\\':
			plain = false
			n := escapeLen(data[i:])
			if n == 0 {
				d.Fail()
				return nil, false
			}
			i += n
		case c < ' ':
			d.Fail()
			return nil, false
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			i++
		}
	}
	d.Fail()
	return nil, false
}

// lsbs and msbs are the lowest and the highest bit of each of a word's
// eight bytes.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// stringStops marks, in the high bit of each of w's eight bytes (a
// string's content), the bytes RawString must look at alone: quotes,
// backslashes and control characters. Each test is the classic "has a
// zero byte" one: (x-lsbs)&^x&msbs marks the bytes of x that are zero (x
// is w with the byte looked for XOR'ed out), or, with x = w and 0x20
// taken from each byte instead, the bytes of w below 0x20. A borrow can
// mark a byte wrongly only above one marked rightly, so the lowest mark
// is always right.
func stringStops(w uint64) uint64 {
	q := w ^ (lsbs * '"')
	b := w ^ (lsbs * '\\')
	return ((q-lsbs)&^q | (b-lsbs)&^b | (w-lsbs*' ')&^w) & msbs
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

// AppendUnquoted appends the content of a well-formed JSON string (raw,
// without its quotes, as RawString returns it) unescaped, every byte of
// invalid UTF-8 replaced by U+FFFD.
func AppendUnquoted(dst, raw []byte) []byte {
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
