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
	st.Sessions, st.Refs = len(s.trees)-s.empty, len(s.refs)
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
	t := s.pinTree(memKey{app, user, sessionID})
	return &onceLease[treePin[heldLock]]{r: treePin[heldLock]{t: t, s: s, lease: h}}, nil
}

// Join implements Queue, as MemoryLocker does; the lease a ticket
// acquires keeps the session's tree as Acquire's does.
func (s *MemoryService) Join(ctx context.Context, app, user, sessionID string, max int) (Ticket, error) {
	t, err := s.locker.Join(ctx, app, user, sessionID, max)
	if err != nil {
		return nil, err
	}
	return &pinningTicket{Ticket: t, s: s, k: memKey{app, user, sessionID}}, nil
}

// pinningTicket pins its session's tree while the lease it acquired is
// held.
type pinningTicket struct {
	Ticket
	s *MemoryService
	k memKey // the session's
}

func (t *pinningTicket) Acquire(ctx context.Context) (Lease, error) {
	lease, err := t.Ticket.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return t.s.pinned(t.k, lease), nil
}

// pinned pins the tree of k's session until lease is released.
func (s *MemoryService) pinned(k memKey, lease Lease) Lease {
	t := s.pinTree(k)
	return &onceLease[treePin[releaser]]{r: treePin[releaser]{t: t, s: s, lease: releaser{lease}}}
}

// pinTree pins the tree of k's session, taking s.mu, and returns it.
func (s *MemoryService) pinTree(k memKey) *memTree {
	s.mu.Lock()
	t := s.pin(k)
	s.mu.Unlock()
	return t
}

// treePin is the pin of tree t that lease holds.
type treePin[L interface{ release() }] struct {
	t     *memTree
	s     *MemoryService
	lease L
}

// release unpins the tree, then releases the lease.
func (p treePin[L]) release() {
	p.s.mu.Lock()
	p.s.unpin(p.t)
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

// plant adds a new session under k to its tree (t, when the caller
// found it; nil: to be found), making the tree (and evicting the least
// recently used ones beyond the bound) when it is new, and returns the
// session, empty, with its tree set; s.mu is held.
func (s *MemoryService) plant(k memKey, t *memTree) *memSession {
	root := rootKey(k)
	if t == nil {
		t = s.trees[root]
	}
	if t != nil && t.expired(s.now) && !s.drop(t) {
		t = nil
	}
	switch {
	case t == nil:
		t = newTree(root, k)
		s.trees[root] = t
		s.lru.pushFront(t)
		s.evict(t)
	case t.isEmpty(): // held for its leases: a tree the bound counts from now on
		s.empty--
		s.evict(t)
	default:
		s.use(t)
	}
	var ms *memSession
	if k.id == root.id && t.spare != nil {
		ms, t.spare = t.spare, nil
	} else {
		ms = new(memSession)
	}
	ms.tree = t
	if k.id == root.id {
		t.top = ms
	} else {
		t.ids = append(t.ids, k.id)
		if s.sessions == nil {
			s.sessions = map[memKey]*memSession{}
		}
		s.sessions[k] = ms
	}
	return ms
}

// evict drops the least recently used trees but keep while more are held
// than the bound; s.mu is held. Pinned trees are not in s.lru, so the
// loop ends when only they and keep are left.
func (s *MemoryService) evict(keep *memTree) {
	for s.max > 0 && len(s.trees)-s.empty > s.max {
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

// drop removes every session in t, which holds some, and t with them
// unless it is pinned; it reports whether t was kept. s.mu is held.
func (s *MemoryService) drop(t *memTree) bool {
	for _, id := range t.ids {
		delete(s.sessions, memKey{t.root.app, t.root.user, id})
	}
	t.top, t.ids = nil, nil
	return s.forget(t)
}

// forget removes t, emptied of its sessions, from the store, unless it is
// pinned: then t stays, empty and never expiring, for its leases (a
// session created under them goes in it). It reports whether t was kept.
// s.mu is held.
func (s *MemoryService) forget(t *memTree) bool {
	if t.pins > 0 {
		t.expires = time.Time{}
		s.empty++
		return true
	}
	if t.inList() {
		s.lru.remove(t)
	}
	if s.trees[t.root] == t {
		delete(s.trees, t.root)
	}
	return false
}

// prune removes the session id of t and the sessions under it; s.mu is
// held.
func (s *MemoryService) prune(t *memTree, id string) {
	if id == t.root.id {
		t.top = nil
	}
	prefix := id + "/"
	t.ids = slices.DeleteFunc(t.ids, func(cid string) bool {
		if cid != id && !strings.HasPrefix(cid, prefix) {
			return false
		}
		delete(s.sessions, memKey{t.root.app, t.root.user, cid})
		return true
	})
	if t.isEmpty() {
		s.forget(t)
	}
}

// pin takes the tree of k's session out of eviction for one more lease,
// making it, empty, when there is none, and returns it; s.mu is held.
func (s *MemoryService) pin(k memKey) *memTree {
	root := rootKey(k)
	t := s.trees[root]
	switch {
	case t == nil:
		t = newTree(root, k)
		s.trees[root] = t
		s.empty++
	case t.inList():
		s.lru.remove(t)
	}
	t.pins++
	return t
}

// unpin ends one lease's pin on t; the last makes it the most recently
// used tree again, or removes it when it holds no session. s.mu is held.
func (s *MemoryService) unpin(t *memTree) {
	if t.pins--; t.pins > 0 {
		return
	}
	if t.isEmpty() {
		s.empty--
		s.forget(t)
		return
	}
	s.lru.pushFront(t)
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
