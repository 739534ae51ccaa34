package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/sessions"
)

// ParametersStateKey is the session state key under which a session's
// conversation parameters are kept (see params.go). Keys starting with '~'
// are the gateway's: clients cannot set them through state or stateDelta.
const ParametersStateKey = agentcore.ParamsStateKey

// legacyListNames are list routes older adk-web builds call under
// /apps/{app}/ directly; they answer [].
var legacyListNames = map[string]bool{"eval_sets": true, "eval-sets": true, "eval_results": true, "eval-results": true}

// nativeApps serves everything under /apps/: sessions (with ids that may
// hold an encoded '/'), their sub-conversations and artifacts.
//
//	/apps/{app}/users/{user}/sessions
//	/apps/{app}/users/{user}/sessions/{id}
//	/apps/{app}/users/{user}/sessions/{id}/artifacts[/{name}[/versions[/{n}]]]
//	/apps/{app}/users/{user}/sessions/{id}/runs[/{invocationId}/(events|cancel)] (native_runs.go)
func (s *Server) nativeApps(c *gin.Context) {
	segs, ok := escapedSegments(c.Request.URL.EscapedPath(), "/apps/")
	if !ok {
		writeNativeError(c, badRequest("", "The request path is not validly escaped."))
		return
	}
	if len(segs) == 2 && legacyListNames[segs[1]] && c.Request.Method == http.MethodGet {
		c.JSON(http.StatusOK, []any{})
		return
	}
	if len(segs) < 4 || segs[1] != "users" || segs[3] != "sessions" || segs[2] == "" {
		writeNativeError(c, notFound("Not Found"))
		return
	}
	a, ok := s.appByID(segs[0])
	if !ok {
		writeNativeError(c, appNotFound(segs[0]))
		return
	}
	noteModel(c, a.ID)
	user, rest := segs[2], segs[4:]
	user, ownErr := ownUser(c.Request.Context(), user)
	if ownErr == nil {
		ownErr = allowModel(c.Request.Context(), a.ID)
	}
	if ownErr != nil {
		writeNativeError(c, classify(ownErr))
		return
	}
	if len(rest) == 1 && rest[0] == "" {
		rest = nil // ".../sessions/"
	}
	var err error
	if len(rest) == 0 {
		switch c.Request.Method {
		case http.MethodGet:
			err = s.listSessions(c, a, user)
		case http.MethodPost:
			err = s.createSession(c, a, user)
		default:
			err = methodNotAllowed(c)
		}
	} else if len(rest) >= 2 && rest[1] == "runs" {
		err = s.nativeRuns(c, a, user, rest[0], rest[1:])
	} else if id, tail := splitSessionPath(rest); len(tail) > 0 {
		err = s.nativeArtifacts(c, a, user, id, tail[1:])
	} else {
		switch c.Request.Method {
		case http.MethodGet:
			err = s.getSession(c, a, user, id)
		case http.MethodPost:
			err = s.createSessionWithID(c, a, user, id)
		case http.MethodPatch:
			err = s.patchSession(c, a, user, id)
		case http.MethodDelete:
			err = s.deleteSession(c, a, user, id)
		default:
			err = methodNotAllowed(c)
		}
	}
	if err != nil {
		writeNativeError(c, classify(err))
	}
}

// escapedSegments splits the escaped path after prefix at its literal
// slashes and unescapes each segment, so "s1%2Fagent" stays one segment.
func escapedSegments(escaped, prefix string) ([]string, bool) {
	rest, ok := strings.CutPrefix(escaped, prefix)
	if !ok {
		return nil, false
	}
	segs := strings.Split(rest, "/")
	for i, sg := range segs {
		u, err := url.PathUnescape(sg)
		if err != nil {
			return nil, false
		}
		segs[i] = u
	}
	return segs, true
}

// splitSessionPath separates a session id from an artifacts tail. The id
// is normally one (encoded) segment; an unencoded sub-conversation id
// ("s1/agent") is accepted too, as long as no part of it is "artifacts".
func splitSessionPath(rest []string) (id string, tail []string) {
	for i := 1; i < len(rest); i++ {
		if rest[i] == "artifacts" {
			return strings.Join(rest[:i], "/"), rest[i:]
		}
	}
	return strings.Join(rest, "/"), nil
}

func methodNotAllowed(c *gin.Context) error {
	return &apiError{status: http.StatusMethodNotAllowed, kind: "invalid_request_error", code: "method_not_allowed",
		message: "Method " + c.Request.Method + " is not allowed on " + c.Request.URL.Path + "."}
}

// writeNull answers 200 with the JSON body null (ADK's DELETE answer;
// ADK's clients parse every body as JSON).
func writeNull(c *gin.Context) {
	writeJSON(c, []byte("null"))
}

// listSessions answers the user's top-level sessions (without events), or
// with ?parent=<id> the sub-conversations directly under that session. The
// gateway's own sessions ("~...") are unlisted: the store never lists them.
func (s *Server) listSessions(c *gin.Context, a *app, user string) error {
	ctx := c.Request.Context()
	parent := c.Query("parent")
	if parent != "" {
		if _, err := s.getVisibleSession(ctx, a.ID, user, parent); err != nil {
			return err
		}
	}
	list, err := s.subSessions(ctx, a.ID, user, parent)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, list)
	return nil
}

// subSessions lists the sessions directly under parent ("" for the
// top-level ones), without events.
func (s *Server) subSessions(ctx context.Context, app, user, parent string) ([]*sessions.Session, error) {
	resp, err := s.cfg.Sessions.List(ctx, sessions.ListRequest{AppName: app, UserID: user})
	if err != nil {
		return nil, err
	}
	out := []*sessions.Session{}
	for _, ss := range resp.Sessions {
		if sessions.ParentID(ss.ID) != parent { // the store lists no unlisted ("~") session
			continue
		}
		ss.Events = []*sessions.Event{}
		out = append(out, maskedSession(ss))
	}
	return out, nil
}

// sessionWithChildren is a session as GET returns it: ADK's session JSON
// plus "subSessions", the ids of its direct sub-conversations.
type sessionWithChildren struct {
	*sessions.Session
	SubSessions []string
}

// MarshalJSON appends subSessions to the session's own JSON object.
func (sc sessionWithChildren) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(sc.Session)
	if err != nil {
		return nil, err
	}
	ids := sc.SubSessions
	if ids == nil {
		ids = []string{}
	}
	extra, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1:len(b)-1], `,"subSessions":`...)
	out = append(out, extra...)
	return append(out, '}'), nil
}

func (s *Server) getSession(c *gin.Context, a *app, user, id string) error {
	ctx := c.Request.Context()
	sess, err := s.getVisibleSession(ctx, a.ID, user, id)
	if err != nil {
		return err
	}
	children, err := s.subSessions(ctx, a.ID, user, id)
	if err != nil {
		return err
	}
	out := sessionWithChildren{Session: maskedSession(sess), SubSessions: make([]string, 0, len(children))}
	for _, ch := range children {
		out.SubSessions = append(out.SubSessions, ch.ID)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// checkNewSessionID accepts an id a client may create: the rules of
// X-Session-Id, and no '/', which names sub-conversations.
func checkNewSessionID(id string) error {
	if id != "" && (!validSessionID(id) || strings.Contains(id, "/")) {
		return badRequest("sessionId", "Session ids are at most 256 characters, without control characters or '/', and may not start with '~'.")
	}
	return nil
}

func (s *Server) createSession(c *gin.Context, a *app, user string) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var req createSessionRequest
	if err := decodeCamel(body, &req); err != nil {
		return err
	}
	if err := checkNewSessionID(req.SessionID); err != nil {
		return err
	}
	if err := checkReservedKeys("state", req.State); err != nil {
		return err
	}
	events := make([]*sessions.Event, 0, len(req.Events))
	for i, raw := range req.Events {
		ev, err := sessions.UnmarshalEvent(string(raw))
		if err != nil {
			return badRequest("events", "events["+strconv.Itoa(i)+"] is not a valid event.")
		}
		if err := checkReservedKeys("events", ev.Actions.StateDelta); err != nil {
			return err
		}
		if ev.ID == "" {
			ev.ID = s.newEventID()
		}
		if ev.Timestamp.IsZero() {
			ev.Timestamp = s.cfg.Now()
		}
		events = append(events, ev)
	}
	ctx := c.Request.Context()
	state, err := s.sessionState(ctx, a, req.State, req.Parameters)
	if err != nil {
		return err
	}
	sess, err := s.createNativeSession(ctx, a.ID, user, req.SessionID, state)
	if err != nil {
		return err
	}
	// The events in one step when the store can (one round trip on Redis,
	// whatever their number); a session whose events could not be stored
	// is not left behind.
	if err := appendEvents(ctx, s.cfg.Sessions, sess, events); err != nil {
		_ = s.cfg.Sessions.Delete(context.WithoutCancel(ctx), sessions.DeleteRequest{AppName: a.ID, UserID: user, SessionID: sess.ID})
		return err
	}
	c.JSON(http.StatusOK, maskedSession(sess))
	return nil
}

// createSessionWithID is ADK's deprecated POST .../sessions/{id}: in ADK
// Python the whole body is the initial state; ADK's JS and Go servers (and
// ADK's JS client) send {"state": {...}} instead. A body whose only key is
// "state", holding an object, is read as that wrapper.
func (s *Server) createSessionWithID(c *gin.Context, a *app, user, id string) error {
	if err := checkNewSessionID(id); err != nil {
		return err
	}
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var state map[string]any
	if !isEmptyJSON(body) {
		if _, err := decodeObject(body, "The state"); err != nil {
			return err
		}
		_ = json.Unmarshal(body, &state)
		if inner, ok := state["state"].(map[string]any); ok && len(state) == 1 {
			state = inner
		}
	}
	if err := checkReservedKeys("state", state); err != nil {
		return err
	}
	sess, err := s.createNativeSession(c.Request.Context(), a.ID, user, id, state)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, maskedSession(sess))
	return nil
}

func (s *Server) createNativeSession(ctx context.Context, app, user, id string, state map[string]any) (*sessions.Session, error) {
	sess, err := s.cfg.Sessions.Create(ctx, sessions.CreateRequest{AppName: app, UserID: user, SessionID: id, State: state})
	if errors.Is(err, sessions.ErrExists) {
		return nil, &apiError{status: http.StatusConflict, kind: "invalid_request_error", code: "session_exists",
			message: "Session already exists: " + id}
	}
	return sess, err
}

// patchSession applies {"stateDelta": {...}} as a user event with
// invocation id "p-<uuid>", as ADK does. It waits for a run on the session
// (or on its parent, for a sub-conversation) like a run would.
func (s *Server) patchSession(c *gin.Context, a *app, user, id string) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	var req patchSessionRequest
	if err := decodeCamel(body, &req); err != nil {
		return err
	}
	if req.StateDelta == nil {
		return badRequest("stateDelta", "stateDelta is required: {\"stateDelta\": {...}}.")
	}
	if err := checkReservedKeys("stateDelta", req.StateDelta); err != nil {
		return err
	}
	ctx := c.Request.Context()
	if _, err := s.getVisibleSession(ctx, a.ID, user, id); err != nil {
		return err
	}
	lease, err := s.cfg.Locker.Acquire(ctx, a.ID, user, rootSessionID(id), s.cfg.BusyWait)
	if err != nil {
		return err
	}
	defer lease.Release()
	ev := &sessions.Event{ID: s.newEventID(), InvocationID: "p-" + uuid.NewString(), Author: "user", Timestamp: s.cfg.Now()}
	ev.Actions.StateDelta = req.StateDelta
	sess, err := sessions.PatchState(ctx, s.cfg.Sessions, sessions.GetRequest{AppName: a.ID, UserID: user, SessionID: id}, ev)
	if errors.Is(err, sessions.ErrNotFound) {
		return sessionNotFound(id)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, maskedSession(sess))
	return nil
}

// deleteSession deletes a session with its sub-conversations and answers
// null.
func (s *Server) deleteSession(c *gin.Context, a *app, user, id string) error {
	if ownSession(id) {
		return sessionNotFound(id)
	}
	err := s.cfg.Sessions.Delete(c.Request.Context(), sessions.DeleteRequest{AppName: a.ID, UserID: user, SessionID: id})
	if errors.Is(err, sessions.ErrNotFound) {
		return sessionNotFound(id)
	}
	if err != nil {
		return err
	}
	writeNull(c)
	return nil
}

func (s *Server) newEventID() string {
	if s.cfg.NewID != nil {
		return s.cfg.NewID()
	}
	return uuid.NewString()
}

// nativeArtifacts serves a session's artifacts, read-only but for DELETE:
// tail is what follows ".../artifacts".
func (s *Server) nativeArtifacts(c *gin.Context, a *app, user, id string, tail []string) error {
	ctx := c.Request.Context()
	if _, err := s.getVisibleSession(ctx, a.ID, user, id); err != nil {
		return err
	}
	key := artifact.Key{App: a.ID, User: user, Session: id}
	if len(tail) == 0 {
		if c.Request.Method != http.MethodGet {
			return methodNotAllowed(c)
		}
		names, err := s.cfg.Artifacts.List(ctx, a.ID, user, id)
		if err != nil {
			return err
		}
		if names == nil {
			names = []string{}
		}
		c.JSON(http.StatusOK, names)
		return nil
	}
	version := c.Query("version")
	n := len(tail)
	switch {
	case n >= 2 && tail[n-1] == "versions":
		key.Name = strings.Join(tail[:n-1], "/")
		if c.Request.Method != http.MethodGet {
			return methodNotAllowed(c)
		}
		vs, err := s.cfg.Artifacts.Versions(ctx, key)
		if errors.Is(err, artifact.ErrNotFound) {
			vs, err = []int64{}, nil
		}
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, vs)
		return nil
	case n >= 3 && tail[n-2] == "versions":
		key.Name, version = strings.Join(tail[:n-2], "/"), tail[n-1]
	default:
		key.Name = strings.Join(tail, "/")
	}
	switch c.Request.Method {
	case http.MethodGet:
		v := int64(0)
		if version != "" && version != "latest" {
			var err error
			if v, err = strconv.ParseInt(version, 10, 64); err != nil || v < 1 {
				return badRequest("version", "version must be a positive integer or latest.")
			}
		}
		part, err := s.cfg.Artifacts.Load(ctx, key, v)
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, part)
	case http.MethodDelete:
		if err := s.cfg.Artifacts.Delete(ctx, key); err != nil {
			return err
		}
		writeNull(c)
	default:
		return methodNotAllowed(c)
	}
	return nil
}
