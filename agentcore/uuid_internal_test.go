package agentcore

import (
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/uuid"
)

// newUUID's ids are what uuid.NewString makes: canonical version 4 UUIDs
// (appendUUID writes a UUID's bytes as uuid.UUID.String does).
func TestNewUUIDIsCanonicalV4(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		s := newUUID()
		u, err := uuid.Parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if u.String() != s || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%q: string %q, version %d, variant %v", s, u.String(), u.Version(), u.Variant())
		}
		if seen[s] {
			t.Fatalf("%q made twice", s)
		}
		seen[s] = true
	}
	for range 1000 {
		u := uuid.New()
		b := [16]byte(u)
		if got := string(appendUUID(nil, &b)); got != u.String() {
			t.Fatalf("appendUUID(%v) = %q, want %q", u, got, u.String())
		}
	}
}

func TestNewPrefixedUUID(t *testing.T) {
	for _, prefix := range []string{"", "e-", "call_", strings.Repeat("p", 27), strings.Repeat("p", 28), strings.Repeat("long", 40)} {
		s := newPrefixedUUID(prefix)
		rest, ok := strings.CutPrefix(s, prefix)
		if !ok {
			t.Fatalf("%q: prefix %q missing", s, prefix)
		}
		if u, err := uuid.Parse(rest); err != nil || u.String() != rest || u.Version() != 4 {
			t.Fatalf("%q: %q is not a canonical v4 UUID (%v)", s, rest, err)
		}
	}
	svc := &services{newID: newUUID, randomIDs: true}
	if id := svc.newInvocationID(); !strings.HasPrefix(id, "e-") || len(id) != 38 {
		t.Fatalf("random invocation id %q", id)
	}
	svc = &services{newID: func() string { return "7" }}
	if id := svc.newInvocationID(); id != NewInvocationID("7") {
		t.Fatalf("invocation id from a given NewID: %q", id)
	}
}

func BenchmarkNewUUID(b *testing.B) {
	b.Run("newUUID", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = newUUID()
		}
	})
	b.Run("uuid.NewString", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = uuid.NewString()
		}
	})
	b.Run("invocation", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = newPrefixedUUID("e-")
		}
	})
}

// An idArena's ids are newUUID's, canonical v4 UUIDs, each distinct, and
// none changed by the ids made after it, in the same buffer or the next,
// from several goroutines at once.
func TestIDArena(t *testing.T) {
	var a idArena
	out := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				out <- a.next()
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	var all []string
	seen := map[string]bool{}
	for id := range out {
		all = append(all, id)
		if seen[id] {
			t.Fatalf("%q made twice", id)
		}
		seen[id] = true
	}
	for _, id := range all { // checked once every id is made
		if u, err := uuid.Parse(id); err != nil || u.String() != id || u.Version() != 4 {
			t.Fatalf("%q is not a canonical v4 UUID (%v)", id, err)
		}
	}
}

// A turn's two event ids are made in one buffer, one after the other.
func TestIDArenaSharesABuffer(t *testing.T) {
	var a idArena
	user, reply := a.next(), a.next()
	p, q := uintptr(unsafe.Pointer(unsafe.StringData(user))), uintptr(unsafe.Pointer(unsafe.StringData(reply)))
	if q != p+36 {
		t.Fatalf("ids at %#x and %#x: not one after the other in one buffer", p, q)
	}
	if cap(a.room) != 0 {
		t.Fatalf("room for %d bytes left after a turn's two ids, want none", cap(a.room))
	}
}

// The ids of partial events, from batched random bytes, are canonical
// version 4 UUIDs, none made twice across batches and goroutines.
func TestPartialEventIDs(t *testing.T) {
	const workers, each = 4, 2000
	ids := make(chan string, workers*each)
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				ids <- newEventWithID().ID
			}
		}()
	}
	for range workers {
		<-done
	}
	close(ids)
	seen := map[string]bool{}
	for s := range ids {
		u, err := uuid.Parse(s)
		if err != nil || u.String() != s || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%q: not a canonical v4 UUID (%v)", s, err)
		}
		if seen[s] {
			t.Fatalf("%q made twice", s)
		}
		seen[s] = true
	}
}

// formatUUID writes every byte's digits in place, 0 to 255 at each place.
func TestFormatUUIDEveryByte(t *testing.T) {
	for b := range 256 {
		for at := range 16 {
			var u uuid.UUID
			u[at] = byte(b)
			var s [36]byte
			formatUUID(&s, (*[16]byte)(&u))
			if string(s[:]) != u.String() {
				t.Fatalf("formatUUID(%v) = %q", u, s)
			}
		}
	}
}
