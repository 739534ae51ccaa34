// Package sessions defines conversations (Session, Event), the Service that
// stores them, the run leases that serialise runs on them (Locker, Lease),
// a small index of references into them (Refs), and in-memory
// implementations. Backends live in sub-packages and are checked by the
// shared conformance suite in sessions/sessiontest.
//
// State scopes follow ADK: keys without a prefix belong to one session, keys
// prefixed "app:" are shared by every session of an app, "user:" by every
// session of one user in an app, and "temp:" keys live only for one
// invocation and are never stored.
package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// State key prefixes.
const (
	PrefixApp  = "app:"
	PrefixUser = "user:"
	PrefixTemp = "temp:"
)

// Sentinel errors returned by every Service.
var (
	// ErrNotFound: the session does not exist (or belongs to another user).
	ErrNotFound = errors.New("sessions: session not found")
	// ErrExists: a session with the requested id already exists.
	ErrExists = errors.New("sessions: session already exists")
	// ErrConflict: the session is in use by another run, or changed underneath.
	ErrConflict = errors.New("sessions: session busy")
	// ErrInvalid: the request itself is malformed (empty names, bad ids).
	ErrInvalid = errors.New("sessions: invalid request")
	// ErrUnavailable: the backing store cannot be reached.
	ErrUnavailable = errors.New("sessions: store unavailable")
)

// Session is one conversation of a user with an app. State holds the
// session's own keys merged with the app: and user: scoped keys (with their
// prefixes). A Session returned by a Service is the caller's own copy.
type Session struct {
	ID             string
	AppName        string
	UserID         string
	State          map[string]any
	Events         []*Event
	LastUpdateTime time.Time
}

type sessionJSON struct {
	ID             string         `json:"id"`
	AppName        string         `json:"appName"`
	UserID         string         `json:"userId"`
	State          map[string]any `json:"state"`
	Events         []*Event       `json:"events"`
	LastUpdateTime float64        `json:"lastUpdateTime"`
}

// MarshalJSON writes ADK's session JSON (lastUpdateTime in float seconds,
// state and events never null).
func (s Session) MarshalJSON() ([]byte, error) {
	v := sessionJSON{ID: s.ID, AppName: s.AppName, UserID: s.UserID, State: s.State, Events: s.Events,
		LastUpdateTime: EpochSeconds(s.LastUpdateTime)}
	if v.State == nil {
		v.State = map[string]any{}
	}
	if v.Events == nil {
		v.Events = []*Event{}
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads ADK's session JSON.
func (s *Session) UnmarshalJSON(b []byte) error {
	var v sessionJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = Session{ID: v.ID, AppName: v.AppName, UserID: v.UserID, State: v.State, Events: v.Events,
		LastUpdateTime: fromEpoch(v.LastUpdateTime)}
	return nil
}

// ChildID is the id of the sub-conversation that agent holds under a parent
// session (agents called as tools run in one).
func ChildID(parentID, agent string) string { return parentID + "/" + agent }

// ParentID returns the parent session of a sub-conversation, or "" for a
// top-level session.
func ParentID(id string) string {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return ""
	}
	return id[:i]
}

// CreateRequest creates a session. An empty SessionID asks the service to
// generate one.
type CreateRequest struct {
	AppName, UserID, SessionID string
	State                      map[string]any
	// Window is, for GetOrCreate, the events read of a session that
	// exists (a new one has none).
	Window Window
}

// GetRequest reads one session with its events: all of them, or the
// window of the latest ones its Window selects. State is always read whole.
type GetRequest struct {
	AppName, UserID, SessionID string
	Window
}

// Window selects the latest events of a session for a read (the zero
// Window: every event). Its two fields combine: the later start wins.
type Window struct {
	// SinceCompaction reads only the events from the session's latest
	// compaction event (Event.IsCompaction) on, that event included, and
	// the events stored just before it that it does not cover (see
	// CompactionStart); every event when the session has none. A store
	// finds where that is without reading the events before it.
	SinceCompaction bool
	// NumRecentEvents reads at most that many of the latest events (0:
	// no limit), as adk-go's GetRequest does.
	NumRecentEvents int
}

// Start is the index of the first event w selects from a session of n
// events where a read since its latest compaction starts at index
// compaction (its CompactionStart; -1: the session has none). Stores use
// it so that every store windows alike.
func (w Window) Start(n, compaction int) int {
	start := 0
	if w.SinceCompaction && compaction >= 0 {
		start = compaction
	}
	if w.NumRecentEvents > 0 && n-w.NumRecentEvents > start {
		start = n - w.NumRecentEvents
	}
	return min(start, n)
}

// CompactionStart is where a read SinceCompaction starts in evs, a
// session's events in the order stored, when evs[ci] is its latest
// compaction event: at the first of the events stored just before it that
// it does not cover (their timestamps are after its EndTimestamp: a turn
// stored them while the summary was being written), else at the compaction
// event itself. It goes back no further than the compaction event before.
// The events it leaves uncovered are shown after the summary in model
// requests, as ADK does.
func CompactionStart(evs []*Event, ci int) int {
	return compactionStart(evs[ci], ci, func(i int) *Event { return evs[i] }, func(i int) time.Time { return evs[i].Timestamp })
}

// compactionStart is CompactionStart over events held otherwise: c is the
// compaction event at ci; at(i) is the event at i when it may be a
// compaction event (nil: it is not), and ts(i) its timestamp.
func compactionStart(c *Event, ci int, at func(int) *Event, ts func(int) time.Time) int {
	end := c.Actions.Compaction.EndTimestamp
	i := ci
	for i > 0 && !at(i-1).IsCompaction() && ts(i-1).After(end) {
		i--
	}
	return i
}

// LastCompaction returns the index of the last compaction event in evs, or
// -1.
func LastCompaction(evs []*Event) int {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].IsCompaction() {
			return i
		}
	}
	return -1
}

// ListRequest lists a user's sessions in one app, newest first. Listed
// sessions carry no events. PageSize 0 means every session.
type ListRequest struct {
	AppName, UserID string
	PageSize        int
	PageToken       string
}

// ListResponse is one page of sessions; NextPageToken is empty on the last.
type ListResponse struct {
	Sessions      []*Session
	NextPageToken string
}

// DeleteRequest deletes a session and its sub-conversations.
type DeleteRequest struct {
	AppName, UserID, SessionID string
}

// Service stores sessions. Implementations are safe for concurrent use.
//
// AppendEvent stores a non-partial event and applies its stateDelta (session,
// app: and user: scopes) in one atomic step, updating sess in place (its State,
// Events and LastUpdateTime). temp: keys are removed from the event's
// stateDelta before it is stored; a partial event is neither stored nor
// applied.
type Service interface {
	Create(ctx context.Context, req CreateRequest) (*Session, error)
	Get(ctx context.Context, req GetRequest) (*Session, error)
	List(ctx context.Context, req ListRequest) (*ListResponse, error)
	Delete(ctx context.Context, req DeleteRequest) error
	AppendEvent(ctx context.Context, sess *Session, ev *Event) error
}

// BatchAppender is implemented by services that can store several events
// in one atomic step (for Redis: one round trip). The runtime uses it to
// write a whole turn at once.
//
// AppendEvents does for evs, in order, what AppendEvent does for one event
// (partial events skipped, temp: keys removed from each event's stateDelta,
// session, app: and user: deltas applied, sess updated in place), as one
// step: after an error nothing of the batch is stored and sess is unchanged.
// A batch with nothing to store succeeds without reaching the store.
type BatchAppender interface {
	AppendEvents(ctx context.Context, sess *Session, evs []*Event) error
}

// GetOrCreator is implemented by services that read a session and create
// it when it does not exist in one step (for Redis: one round trip). See
// GetOrCreate for the contract.
type GetOrCreator interface {
	GetOrCreate(ctx context.Context, req CreateRequest) (*Session, error)
}

// GetOrCreate returns the session req names with its events. When it does
// not exist it is created as Create would create it from req (its state,
// listing and expiry alike); when it exists, req.State is not applied. A
// session is created at most once however many callers race: every caller
// gets the one that was stored. req.SessionID must be set (ErrInvalid
// otherwise). It uses svc's GetOrCreator when svc has one, else Get, then
// Create, then Get again when another caller created the session first.
func GetOrCreate(ctx context.Context, svc Service, req CreateRequest) (*Session, error) {
	if req.SessionID == "" {
		return nil, fmt.Errorf("%w: get or create needs a session id", ErrInvalid)
	}
	if g, ok := svc.(GetOrCreator); ok {
		return g.GetOrCreate(ctx, req)
	}
	get := GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: req.SessionID, Window: req.Window}
	sess, err := svc.Get(ctx, get)
	if !errors.Is(err, ErrNotFound) {
		return sess, err
	}
	sess, err = svc.Create(ctx, req)
	if errors.Is(err, ErrExists) {
		return svc.Get(ctx, get)
	}
	return sess, err
}

// ApplyEvent does to sess, in memory only, what storing ev does to the
// caller's copy: a partial (or nil) event changes nothing; otherwise temp:
// keys are removed from ev's stateDelta, the rest of the delta is merged
// into sess.State, ev itself is appended to sess.Events and LastUpdateTime
// becomes ev's timestamp (a store may then set it to its own reading). It
// reports whether ev was applied. Services use it on their caller's copy
// after a write; the runtime uses it to keep a running session current
// between batched writes.
func ApplyEvent(sess *Session, ev *Event) bool {
	if ev == nil || ev.Partial {
		return false
	}
	trimEventTemp(ev)
	if sess.State == nil {
		sess.State = map[string]any{}
	}
	if len(ev.Actions.StateDelta) > 0 {
		maps.Copy(sess.State, ev.Actions.StateDelta)
	}
	sess.Events = append(sess.Events, ev)
	if !ev.Timestamp.IsZero() {
		sess.LastUpdateTime = ev.Timestamp
	}
	return true
}

// trimEventTemp removes temp: keys from ev's stateDelta, writing ev only
// when there are some (an event already shared with readers is not
// written again).
func trimEventTemp(ev *Event) {
	if len(ev.Actions.StateDelta) == 0 {
		return
	}
	if d := TrimTemp(ev.Actions.StateDelta); len(d) != len(ev.Actions.StateDelta) {
		ev.Actions.StateDelta = d
	}
}

// Storable returns the events of evs that a store keeps (the non-partial
// ones) with temp: keys removed from their stateDelta, or ErrInvalid for a
// nil event. Backends call it first in AppendEvents. When every event is
// kept the result is evs itself, else a new slice.
func Storable(evs []*Event) ([]*Event, error) {
	if slices.Contains(evs, nil) {
		return nil, fmt.Errorf("%w: nil event", ErrInvalid)
	}
	partial := func(ev *Event) bool { return ev.Partial }
	if slices.ContainsFunc(evs, partial) {
		evs = slices.DeleteFunc(slices.Clone(evs), partial)
	}
	for _, ev := range evs {
		trimEventTemp(ev)
	}
	return evs, nil
}

// Pinger is implemented by services whose backing store can be probed for
// readiness.
type Pinger interface {
	Ping(ctx context.Context) error
}

// PatchState records delta as a user-authored event on the session, the way
// ADK's PATCH route does, and returns the updated session.
func PatchState(ctx context.Context, svc Service, req GetRequest, ev *Event) (*Session, error) {
	sess, err := svc.Get(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := svc.AppendEvent(ctx, sess, ev); err != nil {
		return nil, err
	}
	return sess, nil
}

// SplitDelta divides a state delta by scope. temp: keys are dropped; app: and
// user: keys keep their prefix.
func SplitDelta(delta map[string]any) (session, app, user map[string]any) {
	for k, v := range delta {
		switch {
		case strings.HasPrefix(k, PrefixTemp):
		case strings.HasPrefix(k, PrefixApp):
			if app == nil {
				app = map[string]any{}
			}
			app[k] = v
		case strings.HasPrefix(k, PrefixUser):
			if user == nil {
				user = map[string]any{}
			}
			user[k] = v
		default:
			if session == nil {
				session = map[string]any{}
			}
			session[k] = v
		}
	}
	return session, app, user
}

// TrimTemp returns delta without its temp: keys (delta itself when it has none).
func TrimTemp(delta map[string]any) map[string]any {
	has := false
	for k := range delta {
		if strings.HasPrefix(k, PrefixTemp) {
			has = true
			break
		}
	}
	if !has {
		return delta
	}
	out := make(map[string]any, len(delta))
	for k, v := range delta {
		if !strings.HasPrefix(k, PrefixTemp) {
			out[k] = v
		}
	}
	return out
}

// ValidateKeys checks the identifying fields every request needs.
func ValidateKeys(app, user string) error {
	if app == "" || user == "" {
		return errors.Join(ErrInvalid, errors.New("app name and user id are required"))
	}
	return nil
}

// CloneState returns a copy of a state map (values shared; values are
// JSON-like and treated as immutable).
func CloneState(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return maps.Clone(m)
}
