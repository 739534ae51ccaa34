package randbatch

import (
	"bytes"
	"testing"
)

// TestFillHandsEachByteOnce fills past several batches and checks that no
// 16-byte window repeats (bytes handed out twice would) and that every
// byte value shows up (crypto/rand's bytes, not a fixed pattern).
func TestFillHandsEachByteOnce(t *testing.T) {
	seen := map[[16]byte]bool{}
	var counts [256]int
	for range 200 {
		var id [16]byte
		Fill(id[:])
		if seen[id] {
			t.Fatalf("id %x handed out twice", id)
		}
		seen[id] = true
		for _, c := range id {
			counts[c]++
		}
	}
	long := make([]byte, 3*size+7) // across batches in one call
	Fill(long)
	if bytes.Equal(long[:size], long[size:2*size]) {
		t.Fatal("two batches alike")
	}
	zero := 0
	for _, n := range counts {
		if n == 0 {
			zero++
		}
	}
	if zero > 16 { // 3,200 bytes: a value is missing with odds of e^-12.5
		t.Errorf("%d byte values never drawn", zero)
	}
}
