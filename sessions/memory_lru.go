package sessions

// treeList is the store's use order of its trees, most recently used
// first: a doubly linked list through the trees themselves (memTree.prev
// and next), so that putting a tree back in the order (every turn's
// lease release does) allocates nothing, where container/list made an
// element each time. The zero treeList is empty and ready to use; it must
// not be copied once used.
type treeList struct {
	head memTree // head.next is the front, head.prev the back
	n    int
}

// Len returns the number of trees in the list.
func (l *treeList) Len() int { return l.n }

// back returns the least recently used tree, nil when the list is empty.
func (l *treeList) back() *memTree {
	if l.n == 0 {
		return nil
	}
	return l.head.prev
}

// pushFront puts t, which is in no list, at the front.
func (l *treeList) pushFront(t *memTree) {
	if l.head.next == nil {
		l.head.next, l.head.prev = &l.head, &l.head
	}
	l.insertFront(t)
	l.n++
}

// insertFront links t in after the head.
func (l *treeList) insertFront(t *memTree) {
	t.prev, t.next = &l.head, l.head.next
	t.next.prev = t
	l.head.next = t
}

// unlink takes t's neighbours' links off it, leaving t's own.
func unlink(t *memTree) {
	t.prev.next = t.next
	t.next.prev = t.prev
}

// remove takes t, which is in l, out of it.
func (l *treeList) remove(t *memTree) {
	unlink(t)
	t.prev, t.next = nil, nil
	l.n--
}

// moveToFront moves t, which is in l, to the front.
func (l *treeList) moveToFront(t *memTree) {
	if l.head.next == t {
		return
	}
	unlink(t)
	l.insertFront(t)
}

// inList reports whether t is in its store's use order (not pinned).
func (t *memTree) inList() bool { return t.next != nil }
