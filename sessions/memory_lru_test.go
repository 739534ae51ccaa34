package sessions

import (
	"container/list"
	"math/rand/v2"
	"testing"
)

// TestTreeListAsContainerList runs random operations on a treeList and on
// a container/list side by side and checks that both hold the same trees
// in the same order after each.
func TestTreeListAsContainerList(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	trees := make([]*memTree, 32)
	for i := range trees {
		trees[i] = &memTree{root: memKey{id: string(rune('a' + i))}}
	}
	var got treeList
	var want list.List
	elems := map[*memTree]*list.Element{}
	for step := range 20000 {
		tr := trees[r.IntN(len(trees))]
		switch e, in := elems[tr]; {
		case !in:
			if tr.inList() {
				t.Fatalf("step %d: %s in the list, not in the reference", step, tr.root.id)
			}
			got.pushFront(tr)
			elems[tr] = want.PushFront(tr)
		case r.IntN(2) == 0:
			got.moveToFront(tr)
			want.MoveToFront(e)
		default:
			got.remove(tr)
			want.Remove(e)
			delete(elems, tr)
		}
		if b := want.Back(); got.Len() != want.Len() || (b == nil) != (got.back() == nil) || (b != nil && b.Value != got.back()) {
			t.Fatalf("step %d: len %d back %v, want len %d", step, got.Len(), got.back(), want.Len())
		}
		// Walk both ways: the links are consistent.
		n := 0
		for e, tr := want.Front(), got.head.next; e != nil; e, tr = e.Next(), tr.next {
			if e.Value != tr {
				t.Fatalf("step %d: at %d %s, want %s", step, n, tr.root.id, e.Value.(*memTree).root.id)
			}
			n++
		}
		for e, tr := want.Back(), got.back(); e != nil; e, tr = e.Prev(), tr.prev {
			if e.Value != tr {
				t.Fatalf("step %d: backwards, %s, want %s", step, tr.root.id, e.Value.(*memTree).root.id)
			}
		}
	}
}
