package gateway

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/gateway/openaiwire"
	"github.com/agentgate/agentgate/sessions"
)

// Call references: how a tool message finds the invocation paused on the
// call it answers. For every client tool call a chat turn shows, a ref
// (sessions.Refs) goes from the tool_call_id the client received to the
// session, the invocation that made the call and the call's runtime id.
// A stateless turn (no session id) that pauses keeps its history in an
// unlisted session (sessions.Unlisted, "~tmp-<uuid>") of the user, found
// again only through those refs; it is deleted once the resumed turn
// finishes without pausing again.
const (
	// tmpSessionPrefix starts the unlisted session of a paused stateless
	// turn.
	tmpSessionPrefix = sessions.UnlistedPrefix + "tmp-"
	// callRefPrefix starts the ref key of a client tool call.
	callRefPrefix = "call:"
	// legacyCallPrefix started the sessions that earlier versions kept as
	// the call index ("~call-<tool_call_id>", state session_id and
	// call_id). They are read when a call has no ref, until they expire.
	legacyCallPrefix = sessions.UnlistedPrefix + "call-"
)

// ownSession reports whether id is one of the gateway's own (unlisted)
// sessions: clients cannot name, see or delete them, and no listing shows
// them.
func ownSession(id string) bool { return sessions.Unlisted(id) }

// callEntry is what the gateway knows of a client tool call: the session
// and invocation paused on it and the runtime's id of the call (it differs
// from the id the client was shown only when the runtime's was not a valid
// client id). key is what to drop once the call is answered: the ref's key,
// or the id of a legacy index session.
type callEntry struct {
	shown, key string
	ref        sessions.Ref
}

// callIndex reads the entry of the tool call the client knows as shown;
// nil when there is none.
func (s *Server) callIndex(ctx context.Context, app, user, shown string) (*callEntry, error) {
	key := callRefPrefix + shown
	ref, err := s.refs.GetRef(ctx, app, user, key)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return s.legacyCall(ctx, app, user, shown)
	case err != nil:
		return nil, err
	}
	return &callEntry{shown: shown, key: key, ref: ref}, nil
}

// legacyCall reads the index session an earlier version kept for a call;
// nil when there is none.
func (s *Server) legacyCall(ctx context.Context, app, user, shown string) (*callEntry, error) {
	id := legacyCallPrefix + shown
	idx, err := s.cfg.Sessions.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: id})
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sid, _ := idx.State["session_id"].(string)
	callID, _ := idx.State["call_id"].(string)
	return &callEntry{shown: shown, key: id, ref: sessions.Ref{SessionID: sid, CallID: callID}}, nil
}

// mapCallIDs rewrites tool_call_ids the client was shown to the runtime's
// call ids, and remembers the entries to drop after the turn. known, when
// not nil, is an entry already read.
func (s *Server) mapCallIDs(ctx context.Context, app, user string, responses []*genai.FunctionResponse, sid string, turn *chatTurn, known *callEntry) error {
	for _, r := range responses {
		e := known
		if e == nil || e.shown != r.ID {
			var err error
			if e, err = s.callIndex(ctx, app, user, r.ID); err != nil {
				return err
			}
		}
		if e == nil || e.ref.SessionID != sid {
			continue
		}
		if e.ref.CallID != "" {
			r.ID = e.ref.CallID
		}
		turn.resumedVia = append(turn.resumedVia, e.key)
	}
	return nil
}

// resolveCall finds the session paused on a tool call.
func (s *Server) resolveCall(ctx context.Context, app, user, callID string) (*callEntry, error) {
	e, err := s.callIndex(ctx, app, user, callID)
	if err != nil {
		return nil, err
	}
	if e == nil || e.ref.SessionID == "" {
		return nil, &agentcore.UnknownCallError{ID: callID}
	}
	return e, nil
}

// statelessTurn runs on a throwaway session seeded with the request's
// history; it reaches the store only if the turn pauses on client tools.
func (s *Server) statelessTurn(ctx context.Context, turn *chatTurn, history []*genai.Content, user string) error {
	a := turn.app
	eph := sessions.NewMemoryService(sessions.MemoryConfig{Now: s.cfg.Now})
	runner := a.runner.WithSessions(eph, true) // the app's tree, indexed once
	sid := tmpSessionPrefix + uuid.NewString()
	sess, err := eph.Create(ctx, sessions.CreateRequest{AppName: a.ID, UserID: user, SessionID: sid})
	if err != nil {
		return err
	}
	if err := eph.AppendEvents(ctx, sess, s.seedEvents(a, history)); err != nil {
		return err
	}
	turn.runner, turn.ephemeral, turn.sessionID, turn.tmp, turn.unlogged = runner, eph, sid, true, true
	return nil
}

// seedEvents are the events that put a client's history into a new
// session: its model contents authored by the root agent, the rest by the
// user.
func (s *Server) seedEvents(a *app, history []*genai.Content) []*sessions.Event {
	now := s.cfg.Now()
	events := make([]sessions.Event, len(history)) // one allocation for them all
	seed := make([]*sessions.Event, len(history))
	for i, c := range history {
		author := "user"
		if c.Role == genai.RoleModel {
			author = a.Root.Name()
		}
		events[i] = sessions.Event{ID: "seed-" + strconv.Itoa(i), InvocationID: "seed", Author: author, Timestamp: now, Content: c}
		seed[i] = &events[i]
	}
	return seed
}

// afterRun stores what must outlive the turn: for every client tool call
// the client now holds, a ref from its id to the session (and, for a
// stateless turn, the session itself, unlisted); the entries of the calls
// this turn answered go, and a resumed stateless turn that finished is
// deleted. A turn that leaves none of these (most) derives no context.
func (s *Server) afterRun(ctx context.Context, turn *chatTurn, calls []openaiwire.EmittedToolCall) error {
	if len(calls) == 0 && len(turn.resumedVia) == 0 && (!turn.tmp || turn.ephemeral != nil) {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	app, user := turn.app.ID, turn.req.UserID
	if len(calls) > 0 && turn.ephemeral != nil {
		if err := copyTree(ctx, turn.ephemeral, s.cfg.Sessions, sessions.GetRequest{AppName: app, UserID: user, SessionID: turn.sessionID}); err != nil {
			return err
		}
		turn.stored = true
	}
	var put map[string]sessions.Ref
	if len(calls) > 0 {
		put = make(map[string]sessions.Ref, len(calls))
		for _, call := range calls {
			put[callRefPrefix+call.ID] = sessions.Ref{SessionID: turn.sessionID, InvocationID: call.InvocationID, CallID: call.FunctionCallID}
		}
		if err := s.refs.PutRefs(ctx, app, user, put, 0); err != nil {
			return err
		}
	}
	var drop []string
	for _, key := range turn.resumedVia {
		switch _, again := put[key]; {
		case again: // shown again by this turn: its new ref stays
		case strings.HasPrefix(key, legacyCallPrefix):
			_ = s.cfg.Sessions.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: key})
		default:
			drop = append(drop, key)
		}
	}
	if len(drop) > 0 {
		_ = s.refs.DeleteRefs(ctx, app, user, drop...)
	}
	if len(calls) == 0 && turn.tmp && turn.ephemeral == nil {
		_ = s.cfg.Sessions.Delete(ctx, sessions.DeleteRequest{AppName: app, UserID: user, SessionID: turn.sessionID})
		turn.stored = false
	}
	return nil
}

// copyTree replays a session and its sub-conversations from a store of
// the turn's own into another, parents first, so a sub-conversation never
// outlives its parent.
func copyTree(ctx context.Context, from *sessions.MemoryService, to sessions.Service, req sessions.GetRequest) error {
	tree, err := from.Tree(ctx, req)
	if err != nil {
		return err
	}
	for _, src := range tree {
		dst, err := to.Create(ctx, sessions.CreateRequest{AppName: req.AppName, UserID: req.UserID, SessionID: src.ID})
		if err != nil {
			return err
		}
		for _, ev := range src.Events {
			if err := to.AppendEvent(ctx, dst, ev); err != nil { // Tree's own copy
				return err
			}
		}
	}
	return nil
}
