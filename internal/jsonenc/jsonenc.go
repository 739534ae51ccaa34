// Package jsonenc appends JSON values byte for byte as encoding/json's
// Marshal writes them, for the encoders written by hand where reflection
// costs too much (openaiwire's chunks, sessions' events, the openai and
// gemini providers' requests): their tests compare them with encoding/json, which
// stays the reference.
package jsonenc

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString writes s as a JSON string exactly as encoding/json does
// (with its default HTML escaping): \" \\ \b \f \n \r \t, other control
// characters and < > & as \u00XX, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped.
func AppendString(b []byte, s string) []byte { return appendString(b, s, true) }

// AppendStringNoHTML writes s as AppendString does but leaves < > & as
// they are, as a json.Encoder does after SetEscapeHTML(false) (the openai
// provider's requests: the upstream reads JSON, and prompts keep their
// bytes).
func AppendStringNoHTML(b []byte, s string) []byte { return appendString(b, s, false) }

func appendString(b []byte, s string, escapeHTML bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// The bytes written as they are, a word at a time.
		if i += plain(s[i:], escapeHTML); i >= len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat writes f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// on. NaN and the infinities have no JSON form: json.Marshal fails on
// them, and the caller must not pass them.
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-7, not strconv's e-07.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendAny writes v as json.Marshal does: the values encoding/json
// decodes into an `any` (nil, bool, float64, string, []any and
// map[string]any, its keys sorted) and ints by hand, any other type (and
// a NaN or infinite float, which fails) through json.Marshal. Function
// calls' arguments and responses are such values.
func AppendAny(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return AppendFloat(b, v), nil
		}
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case map[string]any:
		return appendMap(b, v)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendArray(b, v, AppendAny)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendMap writes m as json.Marshal does, its keys in order.
func appendMap(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k), ':')
		var err error
		if b, err = AppendAny(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
