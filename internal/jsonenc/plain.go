package jsonenc

// Where the bytes a string is written with as they are end, found eight
// at a time: byte by byte, that scan was most of what writing ids, names
// and short text cost (a streamed chunk's, an event's).

const (
	ones  = 0x0101010101010101 // 0x01 in every byte
	highs = 0x8080808080808080 // 0x80 in every byte
)

// plain returns the length of the leading bytes of s that a JSON string
// holds as they are: ASCII from 0x20 on, neither '"' nor '\\', and with
// html neither '<', '>' nor '&' (encoding/json's HTML escaping).
func plain(s string, html bool) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		if special(w, html) {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || (html && (c == '<' || c == '>' || c == '&')) {
			return i
		}
	}
	return i
}

// special reports whether a byte of w is one plain stops at.
func special(w uint64, html bool) bool {
	m := w | // 0x80 and over
		(w-ones*0x20)&^w | // under 0x20
		zero(w^(ones*'"')) | zero(w^(ones*'\\'))
	if html {
		m |= zero(w^(ones*'<')) | zero(w^(ones*'>')) | zero(w^(ones*'&'))
	}
	return m&highs != 0
}

// zero has the high bit set in some byte when some byte of w is zero
// (and only then, as the other bits of a byte are not looked at).
func zero(w uint64) uint64 { return (w - ones) &^ w }
