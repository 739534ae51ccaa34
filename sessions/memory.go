package sessions

import (
	"cmp"
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
}

// MemoryService is the embedded, process-local Service. It keeps everything
// in maps guarded by one mutex and hands out copies, never its own values.
type MemoryService struct {
	now   func() time.Time
	newID func() string

	mu       sync.Mutex
	sessions map[memKey]*memSession
	appState map[string]map[string]any
	userSt   map[[2]string]map[string]any
}

type memKey struct{ app, user, id string }

type memSession struct {
	state  map[string]any // session scope only
	events []*Event
	update time.Time
}

var (
	_ Service       = (*MemoryService)(nil)
	_ BatchAppender = (*MemoryService)(nil)
	_ GetOrCreator  = (*MemoryService)(nil)
)

// NewMemoryService returns an empty in-memory store.
func NewMemoryService(cfg MemoryConfig) *MemoryService {
	s := &MemoryService{now: cfg.Now, newID: cfg.NewID,
		sessions: map[memKey]*memSession{}, appState: map[string]map[string]any{}, userSt: map[[2]string]map[string]any{}}
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
	if _, ok := s.sessions[k]; ok {
		return nil, fmt.Errorf("%w: %s", ErrExists, id)
	}
	return s.view(k, s.create(k, req.State), true), nil
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
	ms, ok := s.sessions[k]
	if !ok {
		ms = s.create(k, req.State)
	}
	return s.view(k, ms, true), nil
}

// create stores a new session under k with its initial state; s.mu is held.
func (s *MemoryService) create(k memKey, state map[string]any) *memSession {
	own, app, user := SplitDelta(state)
	ms := &memSession{state: CloneState(own), update: s.now()}
	s.sessions[k] = ms
	s.merge(k.app, k.user, app, user)
	return ms
}

// Get implements Service.
func (s *MemoryService) Get(ctx context.Context, req GetRequest) (*Session, error) {
	if err := ValidateKeys(req.AppName, req.UserID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := memKey{req.AppName, req.UserID, req.SessionID}
	ms, ok := s.sessions[k]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, req.SessionID)
	}
	return s.view(k, ms, true), nil
}

// List implements Service. The page token is the offset of the next page.
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
	for k, ms := range s.sessions {
		if k.app == req.AppName && k.user == req.UserID {
			all = append(all, s.view(k, ms, false))
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
	if _, ok := s.sessions[k]; !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, req.SessionID)
	}
	delete(s.sessions, k)
	prefix := req.SessionID + "/"
	for ck := range s.sessions {
		if ck.app == k.app && ck.user == k.user && strings.HasPrefix(ck.id, prefix) {
			delete(s.sessions, ck)
		}
	}
	return nil
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
	ms, ok := s.sessions[k]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, sess.ID)
	}
	for _, ev := range evs {
		own, app, user := SplitDelta(ev.Actions.StateDelta)
		maps.Copy(ms.state, own)
		s.merge(sess.AppName, sess.UserID, app, user)
		ms.events = append(ms.events, ev.Clone())
		if ms.update = ev.Timestamp; ms.update.IsZero() {
			ms.update = s.now()
		}
		ApplyEvent(sess, ev)
	}
	sess.LastUpdateTime = ms.update
	return nil
}

// merge applies scoped deltas; keys are stored with their prefixes.
func (s *MemoryService) merge(app, user string, appDelta, userDelta map[string]any) {
	if len(appDelta) > 0 {
		m := s.appState[app]
		if m == nil {
			m = map[string]any{}
			s.appState[app] = m
		}
		maps.Copy(m, appDelta)
	}
	if len(userDelta) > 0 {
		uk := [2]string{app, user}
		m := s.userSt[uk]
		if m == nil {
			m = map[string]any{}
			s.userSt[uk] = m
		}
		maps.Copy(m, userDelta)
	}
}

// view builds the caller's copy of a stored session with merged state.
func (s *MemoryService) view(k memKey, ms *memSession, withEvents bool) *Session {
	st := CloneState(ms.state)
	maps.Copy(st, s.appState[k.app])
	maps.Copy(st, s.userSt[[2]string{k.app, k.user}])
	out := &Session{ID: k.id, AppName: k.app, UserID: k.user, State: st, LastUpdateTime: ms.update}
	if withEvents {
		out.Events = make([]*Event, len(ms.events))
		for i, e := range ms.events {
			out.Events[i] = e.Clone()
		}
	} else {
		out.Events = []*Event{}
	}
	return out
}
