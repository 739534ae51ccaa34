package sessions

import (
	"context"
	"slices"
	"strings"
	"time"
)

// RefsPerSession is how many refs a MemoryService with MaxSessions holds
// per session of its bound: a paused turn keeps one ref per client tool
// call it showed, usually one or a few.
const RefsPerSession = 4

// StoreStats is what a bounded store reports of its contents.
type StoreStats struct {
	// Sessions is the top-level sessions held now, each with its
	// sub-conversations (unlisted ones included); Refs, the refs.
	Sessions, Refs int
	// EvictedSessions counts the top-level sessions (each with its
	// sub-conversations) evicted to stay within the bound since the store
	// was made; EvictedRefs, the refs. Expired ones are not counted.
	EvictedSessions, EvictedRefs uint64
}

// StatsReporter is implemented by stores that hold a bounded number of
// sessions and evict the rest (the in-memory store).
type StatsReporter interface {
	// Stats reports the store's contents and evictions so far.
	Stats() StoreStats
}

// Stats implements StatsReporter.
func (s *MemoryService) Stats() StoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.evicted
	st.Sessions, st.Refs = len(s.trees), len(s.refs)
	return st
}

// Acquire implements Locker, as MemoryLocker does. While the lease is
// held, the tree of sessionID (its top-level session and every
// sub-conversation, existing now or created under the lease) is not
// evicted: a turn's session cannot vanish mid-turn. Delete and the TTL
// still remove it. The lease is one allocation: the locker's hold and the
// pin in one.
func (s *MemoryService) Acquire(ctx context.Context, app, user, sessionID string, wait time.Duration) (Lease, error) {
	h, err := s.locker.acquire(ctx, app, user, sessionID, wait)
	if err != nil {
		return nil, err
	}
	root := rootKey(memKey{app, user, sessionID})
	s.pinRoot(root)
	return &onceLease[treePin[heldLock]]{r: treePin[heldLock]{s: s, root: root, lease: h}}, nil
}

// Join implements Queue, as MemoryLocker does; the lease a ticket
// acquires keeps the session's tree as Acquire's does.
func (s *MemoryService) Join(ctx context.Context, app, user, sessionID string, max int) (Ticket, error) {
	t, err := s.locker.Join(ctx, app, user, sessionID, max)
	if err != nil {
		return nil, err
	}
	return &pinningTicket{Ticket: t, s: s, root: rootKey(memKey{app, user, sessionID})}, nil
}

// pinningTicket pins its session's tree while the lease it acquired is
// held.
type pinningTicket struct {
	Ticket
	s    *MemoryService
	root memKey
}

func (t *pinningTicket) Acquire(ctx context.Context) (Lease, error) {
	lease, err := t.Ticket.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return t.s.pinned(t.root, lease), nil
}

// pinned pins root's tree until lease is released.
func (s *MemoryService) pinned(root memKey, lease Lease) Lease {
	s.pinRoot(root)
	return &onceLease[treePin[releaser]]{r: treePin[releaser]{s: s, root: root, lease: releaser{lease}}}
}

// pinRoot pins root's tree, taking s.mu.
func (s *MemoryService) pinRoot(root memKey) {
	s.mu.Lock()
	s.pin(root)
	s.mu.Unlock()
}

// treePin is the pin of root's tree that lease holds.
type treePin[L interface{ release() }] struct {
	s     *MemoryService
	root  memKey
	lease L
}

// release unpins the tree, then releases the lease.
func (p treePin[L]) release() {
	p.s.mu.Lock()
	p.s.unpin(p.root)
	p.s.mu.Unlock()
	p.lease.release()
}

// releaser is a Lease as what a treePin releases.
type releaser struct{ Lease }

func (r releaser) release() { r.Release() }

// rootKey is the key of the top-level session of k's tree.
func rootKey(k memKey) memKey {
	k.id, _, _ = strings.Cut(k.id, "/")
	return k
}

// plant adds k to its tree, making the tree (and evicting the least
// recently used ones beyond the bound) when it is new; s.mu is held. When
// k is the top-level session of a new tree, the tree is made with room for
// k's session (top, nil otherwise).
func (s *MemoryService) plant(k memKey) (t *memTree, top *memTop) {
	root := rootKey(k)
	t, ok := s.trees[root]
	if ok && t.expired(s.now) {
		s.drop(t)
		ok = false
	}
	if ok {
		s.use(t)
	} else {
		if k.id == root.id {
			top = &memTop{t: memTree{root: root}}
			t = &top.t
		} else {
			t = &memTree{root: root}
		}
		t.ids = t.first[:0]
		s.trees[root] = t
		if s.pins[root] == 0 {
			s.lru.pushFront(t)
		}
		s.evict(t)
	}
	t.ids = append(t.ids, k.id)
	return t, top
}

// evict drops the least recently used trees but keep while more are held
// than the bound; s.mu is held. Pinned trees are not in s.lru, so the
// loop ends when only they and keep are left.
func (s *MemoryService) evict(keep *memTree) {
	for s.max > 0 && len(s.trees) > s.max {
		t := s.lru.back()
		if t == nil || t == keep {
			return
		}
		if !t.expired(s.now) {
			s.evicted.EvictedSessions++
		}
		s.drop(t)
	}
}

// use makes t the most recently used tree; s.mu is held.
func (s *MemoryService) use(t *memTree) {
	if t.inList() {
		s.lru.moveToFront(t)
	}
}

// drop removes t and every session in it; s.mu is held.
func (s *MemoryService) drop(t *memTree) {
	for _, id := range t.ids {
		delete(s.sessions, memKey{t.root.app, t.root.user, id})
	}
	t.ids = nil
	s.forget(t)
}

// forget removes t, emptied of its sessions, from the store; s.mu is
// held.
func (s *MemoryService) forget(t *memTree) {
	if t.inList() {
		s.lru.remove(t)
	}
	if s.trees[t.root] == t {
		delete(s.trees, t.root)
	}
}

// prune removes the session id of t and the sessions under it; s.mu is
// held.
func (s *MemoryService) prune(t *memTree, id string) {
	prefix := id + "/"
	t.ids = slices.DeleteFunc(t.ids, func(cid string) bool {
		if cid != id && !strings.HasPrefix(cid, prefix) {
			return false
		}
		delete(s.sessions, memKey{t.root.app, t.root.user, cid})
		return true
	})
	if len(t.ids) == 0 {
		s.forget(t)
	}
}

// pin takes the tree of root out of eviction for one more lease; s.mu is
// held.
func (s *MemoryService) pin(root memKey) {
	if s.pins == nil {
		s.pins = map[memKey]int{}
	}
	s.pins[root]++
	if t, ok := s.trees[root]; ok && t.inList() {
		s.lru.remove(t)
	}
}

// unpin ends one lease's pin on the tree of root; the last makes it the
// most recently used tree again. s.mu is held.
func (s *MemoryService) unpin(root memKey) {
	if s.pins[root]--; s.pins[root] > 0 {
		return
	}
	delete(s.pins, root)
	if t, ok := s.trees[root]; ok && !t.inList() {
		s.lru.pushFront(t)
	}
}

// putRef stores ref under k as the most recently used, evicting the least
// recently used refs beyond the bound; s.mu is held.
func (s *MemoryService) putRef(k memKey, ref Ref, expires time.Time) {
	if r, ok := s.refs[k]; ok {
		r.ref, r.expires = ref, expires
		s.refLRU.MoveToFront(r.elem)
		return
	}
	r := &memRef{key: k, ref: ref, expires: expires}
	r.elem = s.refLRU.PushFront(r)
	if s.refs == nil {
		s.refs = map[memKey]*memRef{}
	}
	s.refs[k] = r
	for s.maxRefs > 0 && len(s.refs) > s.maxRefs {
		old := s.refLRU.Back().Value.(*memRef)
		if !old.expired(s.now) {
			s.evicted.EvictedRefs++
		}
		s.dropRef(old)
	}
}

// dropRef removes r; s.mu is held.
func (s *MemoryService) dropRef(r *memRef) {
	s.refLRU.Remove(r.elem)
	delete(s.refs, r.key)
}
