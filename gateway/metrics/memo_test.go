package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// A memo makes each key's value once, whoever asks first, and hands every
// caller that value, while others read and add keys (run with -race).
func TestMemo(t *testing.T) {
	var made atomic.Int32
	m := newMemo(func(k string) *string {
		made.Add(1)
		v := "v" + k
		return &v
	})
	const keys, readers = 20, 8
	got := make([][]*string, readers)
	var wg sync.WaitGroup
	for r := range readers {
		wg.Go(func() {
			for i := range keys {
				got[r] = append(got[r], m.get(strconv.Itoa((i+r)%keys)))
			}
		})
	}
	wg.Wait()
	if n := made.Load(); n != keys {
		t.Errorf("made %d values for %d keys", n, keys)
	}
	for r := range readers {
		for i, v := range got[r] {
			k := strconv.Itoa((i + r) % keys)
			if *v != "v"+k || v != m.get(k) {
				t.Fatalf("reader %d, key %s: %q, not the memo's value", r, k, *v)
			}
		}
	}
}
