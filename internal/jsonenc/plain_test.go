package jsonenc

import (
	"strings"
	"testing"
)

// plainBytewise is plain one byte at a time: the definition.
func plainBytewise(s string, html bool) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || (html && (c == '<' || c == '>' || c == '&')) {
			return i
		}
	}
	return len(s)
}

// Every byte value, at every offset of a word and past it, stops plain
// exactly where the byte-wise scan stops.
func TestPlainEveryByte(t *testing.T) {
	for c := range 256 {
		for at := range 20 {
			for _, n := range []int{at + 1, at + 9, 24} {
				s := strings.Repeat("a", at) + string(rune(0)) + strings.Repeat("b", n-at-1)
				b := []byte(s)
				b[at] = byte(c)
				for _, html := range []bool{false, true} {
					want := plainBytewise(string(b), html)
					if got := plain(string(b), html); got != want {
						t.Fatalf("byte %#x at %d of %d, html %v: plain %d, want %d", c, at, len(b), html, got, want)
					}
				}
			}
		}
	}
}

func FuzzPlain(f *testing.F) {
	for _, s := range []string{"", "chatcmpl-AbCdEfGhIjKlMnOpQrStUv", "tok \"x\"", "é<>&\x00\x7f\xff"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := plain(s, html), plainBytewise(s, html); got != want {
			t.Fatalf("plain(%q, %v) = %d, want %d", s, html, got, want)
		}
	})
}

func BenchmarkPlain(b *testing.B) {
	s := "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz01\""
	b.Run("words", func(b *testing.B) {
		for b.Loop() {
			plain(s, true)
		}
	})
	b.Run("bytewise", func(b *testing.B) {
		for b.Loop() {
			plainBytewise(s, true)
		}
	})
}
