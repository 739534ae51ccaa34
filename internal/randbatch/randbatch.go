// Package randbatch hands out random bytes from crypto/rand read a batch
// at a time, each byte handed out once: for ids made on every request or
// event (request, completion and event ids), where a read of crypto/rand
// each (a system call, or the kernel's vDSO) was most of what making the
// id cost. The bytes are as random as crypto/rand's; use them only for
// ids that name nothing a client must keep secret.
package randbatch

import (
	"crypto/rand"
	"sync"
)

// size is a batch: a read of at most 256 bytes, which getrandom(2) never
// cuts short.
const size = 256

type batch struct {
	b    [size]byte
	next int
}

// batches: a goroutine holds a batch between Get and Put, so no two
// callers take the same bytes.
var batches = sync.Pool{New: func() any { return &batch{next: size} }}

// Fill fills dst with random bytes.
func Fill(dst []byte) {
	b := batches.Get().(*batch)
	for len(dst) > 0 {
		if b.next == size {
			_, _ = rand.Read(b.b[:]) // never fails (crypto/rand panics instead)
			b.next = 0
		}
		n := copy(dst, b.b[b.next:])
		b.next += n
		dst = dst[n:]
	}
	batches.Put(b)
}
