package sessions

import (
	"context"
	"errors"
	"testing"
)

// The entry a released session leaves is the next session's: each
// session's lease stays its own (an old lease's second Release frees no
// other session), and lines work on a reused entry.
func TestMemoryLockerSpareEntry(t *testing.T) {
	ctx := context.Background()
	var l MemoryLocker
	a, err := l.Acquire(ctx, "app", "u", "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	if l.spare == nil || len(l.locks) != 0 {
		t.Fatalf("after the release: spare %v, %d entries", l.spare, len(l.locks))
	}
	b, err := l.Acquire(ctx, "app", "u", "s2", 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.spare != nil {
		t.Fatal("the spare entry was not taken")
	}
	a.Release() // idempotent: s2 stays held
	if _, err := l.Acquire(ctx, "app", "u", "s2", 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("s2 after s1's second release: %v, want busy", err)
	}
	if err := a.Renew(ctx); !errors.Is(err, ErrConflict) {
		t.Fatalf("s1's released lease renews: %v", err)
	}
	// A line on s2, on the reused entry.
	tk, err := l.Join(ctx, "app", "u", "s2", 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	c, err := tk.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "app", "u", "s2", 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("s2 held by the ticket's lease: %v, want busy", err)
	}
	b.Release()
	if _, err := l.Acquire(ctx, "app", "u", "s2", 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("s2 after the first holder's second release: %v, want busy", err)
	}
	c.Release()
	d, err := l.Acquire(ctx, "app", "u", "s2", 0)
	if err != nil {
		t.Fatal(err)
	}
	d.Release()
	if len(l.locks) != 0 || l.spare == nil || l.spare.held || l.spare.line != nil || l.spare.changed != nil {
		t.Fatalf("at the end: %d entries, spare %+v", len(l.locks), l.spare)
	}
}
