package sessions

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// MemoryConfig configures a MemoryService. Zero fields mean the defaults.
type MemoryConfig struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NewID generates session ids (default: a random UUID).
	NewID func() string
	// TTL expires sessions idle for that long, as the Redis store does: a
	// top-level session and its sub-conversations expire together, TTL
	// after the last create or append in any of them; reads do not renew.
	// Zero keeps sessions forever. It is also the TTL of refs put without
	// one of their own.
	TTL time.Duration
	// MaxSessions bounds the top-level sessions held, each with its
	// sub-conversations (unlisted ones included): creating one more evicts
	// the least recently used tree (see MemoryService). Refs are bounded
	// at RefsPerSession times as many. Zero means no bound.
	MaxSessions int
}

// MemoryService is the embedded, process-local Service. It keeps everything
// in maps guarded by one mutex and hands out copies, never its own values.
//
// With a TTL, an expired session is gone at once for every method; its
// memory is freed when a method comes across it, or by the sweep every
// create does (up to sweepSample trees from the least recently used end),
// so that a store whose sessions are never read again does not grow
// without bound.
//
// The store keeps its trees (a top-level session and its
// sub-conversations) and its refs in order of use: any method that names a
// session uses its tree (List does not), PutRefs and GetRef use their refs.
// With MaxSessions, creating a tree beyond the bound evicts the least
// recently used trees, and putting a ref beyond its bound the least
// recently used refs; a tree whose session holds a run lease taken with
// the store's own Acquire is not evicted until the lease is released, so
// that the store may hold more trees than the bound, by at most the number
// of leases held. Each of these steps is O(1) in the number of sessions
// held; Delete and Tree walk one tree.
type MemoryService struct {
	now     func() time.Time
	newID   func() string
	ttl     time.Duration
	max     int // trees; 0: no bound
	maxRefs int
	locker  MemoryLocker // the leases of Acquire

	mu sync.Mutex
	// sessions holds the sub-conversations (made on first use); a
	// top-level session is in its tree, so that a turn on one looks up one
	// map.
	sessions map[memKey]*memSession
	trees    map[memKey]*memTree // by the root's key (id: the top-level session's)
	lru      treeList            // most recently used first; pinned trees are out of it
	// empty counts the trees held for their leases alone, with no session
	// (see memTree.pins): they are not among the trees the bound counts.
	empty int
	// appState, userSt and refs are made on first use too: a stateless
	// turn's store (one per turn) writes none of them.
	appState map[string]map[string]any
	userSt   map[[2]string]map[string]any
	refs     map[memKey]*memRef // id: the ref's key
	refLRU   list.List          // of *memRef, most recently used first
	evicted  StoreStats         // the counts of evictions
}

// memRef is a stored ref with its expiry (zero: never).
type memRef struct {
	key     memKey
	ref     Ref
	expires time.Time
	elem    *list.Element // in refLRU
}

type memKey struct{ app, user, id string }

type memSession struct {
	state  map[string]any // session scope only; nil while empty
	events []memEvent
	// packed holds the events AppendPacked packs (plain text ones: most
	// of a chat's), back to back in the order stored. It is memory the
	// collector does not scan, where a clone is a few objects for each
	// event, which every collection would mark.
	packed []byte
	// compaction is where a read SinceCompaction starts (the
	// CompactionStart of the latest compaction event; -1: none).
	compaction int
	update     time.Time
	tree       *memTree // shared by a top-level session and its sub-conversations
}

// memEvent is a stored event: packed in its session's packed bytes up to
// end, or, when AppendPacked cannot pack it, a clone.
type memEvent struct {
	// ts is the event's Timestamp as appended (its packed form has none:
	// a read gives back the value appended, not its microseconds).
	ts    time.Time
	clone *Event // nil when packed
	end   int
}

// memTree is a top-level session and its sub-conversations: every id
// under one root id, whether the root session exists or not.
type memTree struct {
	root    memKey
	top     *memSession // the top-level session; nil when it does not exist
	ids     []string    // of the sub-conversations held; first made in first
	expires time.Time   // zero: never
	// pins counts the run leases held on the tree (the store's Acquire).
	// A pinned tree is out of the lru, and stays in the store when it has
	// no session (the lease came first, or its sessions were deleted or
	// expired): a session created under the lease goes in it, pinned.
	pins int
	// spare is the memory for the top-level session made with the tree
	// (memTop), until that session uses it.
	spare *memSession
	// prev and next link the tree into the store's lru; nil while a run
	// lease pins the tree.
	prev, next *memTree
}

// memTop is a tree made for its top-level session, with room for the
// session and its first events (a chat turn's two: the user's message and
// the answer), in one allocation.
type memTop struct {
	ms  memSession
	t   memTree
	evs [2]memEvent
}

// newTree returns an empty tree for root, with room for its top-level
// session when k (a session of the tree) is that session.
func newTree(root memKey, k memKey) *memTree {
	if k.id != root.id {
		return &memTree{root: root}
	}
	top := &memTop{t: memTree{root: root}}
	top.ms.events = top.evs[:0]
	top.t.spare = &top.ms
	return &top.t
}

// isEmpty reports whether t holds no session.
func (t *memTree) isEmpty() bool { return t.top == nil && len(t.ids) == 0 }

// sweepSample is how many trees each create (and refs each PutRefs)
// examines for expiry, at most.
const sweepSample = 16

var (
	_ Service       = (*MemoryService)(nil)
	_ BatchAppender = (*MemoryService)(nil)
	_ GetOrCreator  = (*MemoryService)(nil)
	_ Refs          = (*MemoryService)(nil)
	_ Locker        = (*MemoryService)(nil)
	_ Queue         = (*MemoryService)(nil)
	_ StatsReporter = (*MemoryService)(nil)
)

// NewMemoryService returns an empty in-memory store.
func NewMemoryService(cfg MemoryConfig) *MemoryService {
	s := &MemoryService{now: cfg.Now, newID: cfg.NewID, ttl: cfg.TTL, max: max(cfg.MaxSessions, 0),
		trees: map[memKey]*memTree{}}
	s.maxRefs = s.max * RefsPerSession
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = uuid.NewString
	}
	return s
}

// Ping always succeeds: memory is always reachable.
func (s *MemoryService) Ping(context.Context) error { return nil }

// Create implements Service.
func (s *MemoryService) Create(ctx context.Context, req CreateRequest) (*Session, error) {
	if err := ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	id := req.SessionID
	if id == "" {
		id = s.newID()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{req.AppName, req.UserID, id}
	ms, t := s.lookup(k)
	if ms != nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, id)
	}
	return s.view(k, s.create(k, req.State, t)), nil
}

// GetOrCreate implements GetOrCreator under the store's lock.
func (s *MemoryService) GetOrCreate(ctx context.Context, req CreateRequest) (*Session, error) {
	if err := ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	if req.SessionID == "" {
		return nil, fmt.Errorf("%w: get or create needs a session id", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{req.AppName, req.UserID, req.SessionID}
	ms, t := s.lookup(k)
	if ms == nil {
		ms = s.create(k, req.State, t)
	}
	return s.window(k, ms, req.Window), nil
}

// create stores a new session under k with its initial state, in t when
// lookup found k's tree (nil: to be found); s.mu is held.
func (s *MemoryService) create(k memKey, state map[string]any, t *memTree) *memSession {
	s.sweep()
	var st map[string]any // made by the first delta when there is none yet
	if len(state) > 0 {
		own, app, user := SplitDelta(state)
		if len(own) > 0 {
			st = CloneState(own)
		}
		s.merge(k.app, k.user, app, user)
	}
	update := s.now()
	ms := s.plant(k, t)
	ms.state, ms.update, ms.compaction = st, update, -1
	s.renew(ms)
	return ms
}

// isTop reports whether id names a top-level session (not a
// sub-conversation).
func isTop(id string) bool { return strings.IndexByte(id, '/') < 0 }

// lookup returns the live session under k (nil when there is none), which
// uses its tree, removing the tree if it has expired; and k's tree when
// it found it still held (also when the session is not: a top-level
// session's tree is where it is looked up). s.mu is held.
func (s *MemoryService) lookup(k memKey) (*memSession, *memTree) {
	var ms *memSession
	var t *memTree
	if isTop(k.id) {
		if t = s.trees[k]; t == nil {
			return nil, nil
		}
		ms = t.top
	} else {
		if ms = s.sessions[k]; ms == nil {
			return nil, nil
		}
		t = ms.tree
	}
	if t.expired(s.now) {
		if s.drop(t) {
			return nil, t
		}
		return nil, nil
	}
	if ms != nil {
		s.use(t)
	}
	return ms, t
}

// expired reports whether t has expired; now is read only for a tree
// that expires at all (a test's clock may count its reads).
func (t *memTree) expired(now func() time.Time) bool {
	return !t.expires.IsZero() && !now().Before(t.expires)
}

// renew restarts the TTL of the tree of ms; s.mu is held.
func (s *MemoryService) renew(ms *memSession) {
	if s.ttl > 0 {
		ms.tree.expires = s.now().Add(s.ttl)
	}
}

// sweep removes expired trees from the least recently used end of the
// use order, up to sweepSample of them, and stops at the first that has
// not expired; s.mu is held. With one TTL for every tree, the trees used
// least recently are the first to expire: most creates look at one tree
// (the last in the order), not at sweepSample trees spread over the heap.
// A tree that expired while a later one in the order has not (it was read
// since its last write) is dropped when it is next named or when it
// reaches the end; pinned trees are out of the order, and are left to
// their next lookup.
func (s *MemoryService) sweep() {
	if s.ttl <= 0 {
		return
	}
	for range sweepSample {
		t := s.lru.back()
		if t == nil {
			return
		}
		if !t.expired(s.now) {
			return
		}
		s.drop(t)
	}
}

// sweepRefs removes the expired refs among up to sweepSample of them (map
// iteration starts at a random place: refs, each with its own TTL, have
// no order of expiry); s.mu is held.
func (s *MemoryService) sweepRefs() {
	n := 0
	for _, r := range s.refs {
		if r.expired(s.now) {
			s.dropRef(r)
		}
		if n++; n == sweepSample {
			return
		}
	}
}

// Get implements Service.
func (s *MemoryService) Get(ctx context.Context, req GetRequest) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ms, err := s.find(req)
	if err != nil {
		return nil, err
	}
	return s.window(k, ms, req.Window), nil
}

// find returns the live session req names, or ErrInvalid or ErrNotFound;
// s.mu is held.
func (s *MemoryService) find(req GetRequest) (memKey, *memSession, error) {
	k := memKey{req.AppName, req.UserID, req.SessionID}
	if err := ValidateKeys(req.AppName, req.UserID); err != nil {
		return k, nil, err
	}
	ms, _ := s.lookup(k)
	if ms == nil {
		return k, nil, fmt.Errorf("%w: %s", ErrNotFound, req.SessionID)
	}
	return k, ms, nil
}

// List implements Service. The page token is the offset of the next page.
// Unlisted sessions are skipped.
func (s *MemoryService) List(ctx context.Context, req ListRequest) (*ListResponse, error) {
	if err := ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	offset := 0
	if req.PageToken != "" {
		n, err := strconv.Atoi(req.PageToken)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: bad page token", ErrInvalid)
		}
		offset = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*Session
	for _, t := range s.trees {
		switch {
		case t.expired(s.now):
			s.drop(t)
		case t.root.app == req.AppName && t.root.user == req.UserID:
			if t.top != nil && !Unlisted(t.root.id) {
				all = append(all, s.view(t.root, t.top))
			}
			for _, id := range t.ids {
				if !Unlisted(id) {
					k := memKey{t.root.app, t.root.user, id}
					all = append(all, s.view(k, s.sessions[k]))
				}
			}
		}
	}
	slices.SortFunc(all, func(a, b *Session) int {
		if c := b.LastUpdateTime.Compare(a.LastUpdateTime); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	resp := &ListResponse{}
	if offset >= len(all) {
		resp.Sessions = []*Session{}
		return resp, nil
	}
	end := len(all)
	if req.PageSize > 0 && offset+req.PageSize < end {
		end = offset + req.PageSize
		resp.NextPageToken = strconv.Itoa(end)
	}
	resp.Sessions = all[offset:end]
	return resp, nil
}

// Delete implements Service; sub-conversations go with their parent.
func (s *MemoryService) Delete(ctx context.Context, req DeleteRequest) error {
	if err := ValidateKeys(req.AppName, req.UserID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{req.AppName, req.UserID, req.SessionID}
	ms, _ := s.lookup(k)
	if ms == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, req.SessionID)
	}
	s.prune(ms.tree, req.SessionID)
	return nil
}

// Tree returns the session req names and every sub-conversation under it,
// with their events, each parent before the sessions under it; unlisted
// sessions alike. It is how a caller reads back a whole tree from a store
// of its own (a stateless turn's), which List does not show.
func (s *MemoryService) Tree(ctx context.Context, req GetRequest) ([]*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ms, err := s.find(req)
	if err != nil {
		return nil, err
	}
	out := []*Session{s.window(k, ms, Window{})}
	prefix := req.SessionID + "/"
	for _, id := range ms.tree.ids {
		if strings.HasPrefix(id, prefix) {
			ck := memKey{k.app, k.user, id}
			out = append(out, s.window(ck, s.sessions[ck], Window{}))
		}
	}
	slices.SortFunc(out, func(a, b *Session) int { return cmp.Or(cmp.Compare(len(a.ID), len(b.ID)), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// PutRefs implements Refs.
func (s *MemoryService) PutRefs(ctx context.Context, app, user string, refs map[string]Ref, ttl time.Duration) error {
	if err := ValidateKeys(app, user); err != nil {
		return err
	}
	for key := range refs {
		if err := ValidateRefs(app, user, key); err != nil {
			return err
		}
	}
	if ttl <= 0 {
		ttl = s.ttl
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepRefs()
	var expires time.Time
	if ttl > 0 {
		expires = s.now().Add(ttl)
	}
	for key, ref := range refs {
		s.putRef(memKey{app, user, key}, ref, expires)
	}
	return nil
}

// GetRef implements Refs.
func (s *MemoryService) GetRef(ctx context.Context, app, user, key string) (Ref, error) {
	if err := ValidateRefs(app, user, key); err != nil {
		return Ref{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refs[memKey{app, user, key}]
	if ok && r.expired(s.now) {
		s.dropRef(r)
		ok = false
	}
	if !ok {
		return Ref{}, fmt.Errorf("%w: ref %s", ErrNotFound, key)
	}
	s.refLRU.MoveToFront(r.elem)
	return r.ref, nil
}

// DeleteRefs implements Refs.
func (s *MemoryService) DeleteRefs(ctx context.Context, app, user string, keys ...string) error {
	if err := ValidateRefs(app, user, keys...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range keys {
		if r, ok := s.refs[memKey{app, user, key}]; ok {
			s.dropRef(r)
		}
	}
	return nil
}

func (r *memRef) expired(now func() time.Time) bool {
	return !r.expires.IsZero() && !now().Before(r.expires)
}

// AppendEvent implements Service.
func (s *MemoryService) AppendEvent(ctx context.Context, sess *Session, ev *Event) error {
	return s.AppendEvents(ctx, sess, []*Event{ev})
}

// AppendEvents implements BatchAppender: the batch is applied under the
// store's lock, after every check that can fail.
func (s *MemoryService) AppendEvents(ctx context.Context, sess *Session, evs []*Event) error {
	evs, err := Storable(evs)
	if err != nil || len(evs) == 0 {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{sess.AppName, sess.UserID, sess.ID}
	ms, _ := s.lookup(k)
	if ms == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, sess.ID)
	}
	s.renew(ms)
	ms.events = slices.Grow(ms.events, len(evs))
	if cap(ms.packed) == 0 {
		// A session's first batch gets room for exactly its packed
		// bytes, where packing a field at a time would grow them from
		// nothing a few times over. Later batches pack straight in,
		// growing the bytes as append grows a slice (to twice the size,
		// then by a quarter and more): once every few turns, where sizing
		// every batch first walked each turn's events twice.
		need := 0
		for _, ev := range evs {
			need += ev.packedLen(false) // store packs them without their timestamps
		}
		ms.packed = make([]byte, 0, need)
	}
	sess.Events = slices.Grow(sess.Events, len(evs))
	for _, ev := range evs {
		ms.store(ev) // Storable trimmed it: ApplyEvent changes nothing
		if delta := ev.Actions.StateDelta; len(delta) > 0 {
			own, app, user := SplitDelta(delta)
			if len(own) > 0 && ms.state == nil {
				ms.state = make(map[string]any, len(own))
			}
			maps.Copy(ms.state, own)
			s.merge(sess.AppName, sess.UserID, app, user)
		}
		if ev.IsCompaction() {
			ms.compaction = compactionStart(ev, len(ms.events)-1, func(i int) *Event { return ms.events[i].clone },
				func(i int) time.Time { return ms.events[i].ts })
		}
		if ms.update = ev.Timestamp; ms.update.IsZero() {
			ms.update = s.now()
		}
		ApplyEvent(sess, ev)
	}
	sess.LastUpdateTime = ms.update
	return nil
}

// store keeps ev as the session's last event: packed without its
// timestamp when it packs, else a clone.
func (ms *memSession) store(ev *Event) {
	me := memEvent{ts: ev.Timestamp}
	if ev.packable() {
		ms.packed = ev.appendPacked(ms.packed, false)
	} else {
		me.clone = ev.Clone()
	}
	me.end = len(ms.packed)
	ms.events = append(ms.events, me)
}

// merge applies scoped deltas; keys are stored with their prefixes.
func (s *MemoryService) merge(app, user string, appDelta, userDelta map[string]any) {
	if len(appDelta) > 0 {
		m := s.appState[app]
		if m == nil {
			if s.appState == nil {
				s.appState = map[string]map[string]any{}
			}
			m = map[string]any{}
			s.appState[app] = m
		}
		maps.Copy(m, appDelta)
	}
	if len(userDelta) > 0 {
		uk := [2]string{app, user}
		m := s.userSt[uk]
		if m == nil {
			if s.userSt == nil {
				s.userSt = map[[2]string]map[string]any{}
			}
			m = map[string]any{}
			s.userSt[uk] = m
		}
		maps.Copy(m, userDelta)
	}
}

// window builds the caller's copy of a stored session with the events
// w selects (none, for a new session: view's empty slice).
func (s *MemoryService) window(k memKey, ms *memSession, w Window) *Session {
	out := s.view(k, ms)
	if from := w.Start(len(ms.events), ms.compaction); from < len(ms.events) {
		out.Events = ms.read(from)
	}
	return out
}

// read returns fresh copies of the session's events from the one at
// from: the events in one allocation, the packed ones' strings in
// another (one string of their packed bytes, which they are cut from),
// and their contents, parts and usages in an arena.
func (ms *memSession) read(from int) []*Event {
	evs := ms.events[from:]
	out := make([]*Event, len(evs))
	copies := make([]Event, len(evs))
	lo := 0
	if from > 0 {
		lo = ms.events[from-1].end
	}
	var contents, usages int
	start := lo
	for _, me := range evs {
		if me.clone == nil {
			flags := packFlags(ms.packed[start:])
			if flags&packContent != 0 {
				contents++
			}
			if flags&packUsage != 0 {
				usages++
			}
		}
		start = me.end
	}
	s, a := string(ms.packed[lo:start]), newUnpackArena(contents, usages)
	start = lo
	for i, me := range evs {
		e := &copies[i]
		out[i] = e
		if me.clone != nil {
			me.clone.cloneInto(e)
			continue
		}
		if err := a.unpack(e, ms.packed[start:me.end], s[start-lo:me.end-lo]); err != nil {
			panic("sessions: the memory store cannot read an event it packed: " + err.Error())
		}
		e.Timestamp = me.ts
		start = me.end
	}
	return out
}

// view builds the caller's copy of a stored session with merged state and
// no events.
func (s *MemoryService) view(k memKey, ms *memSession) *Session {
	st := CloneState(ms.state)
	if len(s.appState) > 0 { // made by the first app: or user: delta
		maps.Copy(st, s.appState[k.app])
	}
	if len(s.userSt) > 0 {
		maps.Copy(st, s.userSt[[2]string{k.app, k.user}])
	}
	return &Session{ID: k.id, AppName: k.app, UserID: k.user, State: st, LastUpdateTime: ms.update, Events: []*Event{}}
}
