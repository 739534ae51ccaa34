package wire

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestSSEReaderPastItsRoom: events and lines longer than the room Init
// makes, read a byte at a time (every line spans reads), come out whole,
// and the room's two halves do not overwrite each other.
func TestSSEReaderPastItsRoom(t *testing.T) {
	var want []string
	var body strings.Builder
	for _, n := range []int{10, lineRoom - 10, lineRoom, lineRoom + 1, 3 * lineRoom, 20} {
		a, b := strings.Repeat("a", n), strings.Repeat("b", n/2)
		want = append(want, a+"\n"+b)
		body.WriteString("data: " + a + "\r\ndata: " + b + "\n: " + strings.Repeat("c", n) + "\n\n")
	}
	s := NewSSEReader(iotest.OneByteReader(strings.NewReader(body.String())))
	for i, w := range want {
		got, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if string(got) != w {
			t.Fatalf("event %d: %d bytes, want %d", i, len(got), len(w))
		}
	}
	if _, err := s.Next(); err != io.EOF {
		t.Errorf("after the last event: %v", err)
	}
}
