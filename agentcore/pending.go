package agentcore

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// ErrUnknownInvocation reports an invocation id that no event of the
// session carries.
var ErrUnknownInvocation = errors.New("agentcore: no such invocation in the session")

// OpenCall is a function call no response answers yet: the invocation that
// made it is paused on it (or, while a turn runs, waits for the tool).
type OpenCall struct {
	Call *genai.FunctionCall
	// Event is the stored event that made the call: its author, its
	// invocation ("<invocation>.sub.<agent>" in a sub-conversation, see
	// SubInvocationID) and branch. It is the session's own: read only.
	Event *sessions.Event
	// SessionID is the (sub-)conversation that holds the call.
	SessionID string
	// LongRunning reports a call that waits for the client (a long-running
	// or client tool, a confirmation): only a response from the user
	// answers it. Any other open call is an agent-tool call whose
	// sub-conversation paused, or a call whose turn is still running.
	LongRunning bool
	// Via is the open agent-tool call, one level up, whose sub-conversation
	// holds this call; nil for a call of the session queried.
	Via *OpenCall
}

// Root is the call of the session queried that c is, or that leads to c
// through sub-conversations.
func (c *OpenCall) Root() *OpenCall {
	for c.Via != nil {
		c = c.Via
	}
	return c
}

// OpenCallsIn lists the open calls of sess itself, made in invocation invID
// ("" for any invocation), in the order they were made. A response answers
// a call unless the call is long-running and the response is not the
// user's (a long-running tool's interim reply). Calls inside
// sub-conversations are not read: see OpenCalls. The error is
// ErrUnknownInvocation when invID is set and no event of sess carries it.
func OpenCallsIn(sess *sessions.Session, invID string) ([]OpenCall, error) {
	if invID != "" && !slices.ContainsFunc(sess.Events, func(ev *sessions.Event) bool { return ev.InvocationID == invID }) {
		return nil, ErrUnknownInvocation
	}
	return openCalls(sess.ID, sess.Events, invID), nil
}

// OpenCalls lists the calls a session still waits for: the open calls of
// sess made in invocation invID ("" for any invocation), in the order they
// were made, each agent-tool call followed by the calls open in its
// sub-conversation (read from svc as a turn reads it, from its latest
// compaction on; the calls of its own invocation, SubInvocationID(the
// caller's, agent)), at any depth. The error is
// ErrUnknownInvocation when invID is set and no event of sess carries it,
// or the store's.
func OpenCalls(ctx context.Context, svc sessions.Service, sess *sessions.Session, invID string) ([]OpenCall, error) {
	own, err := OpenCallsIn(sess, invID)
	if err != nil {
		return nil, err
	}
	return appendOpenCalls(ctx, svc, sess, own, nil, nil)
}

// appendOpenCalls appends own (the open calls of sess, one level below via)
// to out, each followed by the calls open in its sub-conversation.
func appendOpenCalls(ctx context.Context, svc sessions.Service, sess *sessions.Session, own []OpenCall, via *OpenCall, out []OpenCall) ([]OpenCall, error) {
	for i := range own {
		c := &own[i]
		c.Via = via
		out = append(out, *c)
		if c.LongRunning {
			continue
		}
		child, err := svc.Get(ctx, sessions.GetRequest{AppName: sess.AppName, UserID: sess.UserID, SessionID: sessions.ChildID(sess.ID, c.Call.Name),
			Window: turnWindow})
		if errors.Is(err, sessions.ErrNotFound) {
			continue // not an agent tool, or one that never ran
		}
		if err != nil {
			return nil, err
		}
		sub := openCalls(child.ID, child.Events, SubInvocationID(c.Event.InvocationID, c.Call.Name))
		if out, err = appendOpenCalls(ctx, svc, child, sub, c, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// openCalls is the one reading of which calls of evs are open: those made
// in invocation invID ("" for any) by an agent that no response in evs
// answers.
func openCalls(sessID string, evs []*sessions.Event, invID string) []OpenCall {
	var longRunning, answered map[string]bool
	for _, ev := range evs {
		for _, id := range ev.LongRunningToolIDs {
			if longRunning == nil {
				longRunning = map[string]bool{}
			}
			longRunning[id] = true
		}
		for _, r := range ev.FunctionResponses() {
			if !longRunning[r.ID] || ev.Author == "user" {
				if answered == nil {
					answered = map[string]bool{}
				}
				answered[r.ID] = true
			}
		}
	}
	var out []OpenCall
	for _, ev := range evs {
		if ev.Author == "user" || (invID != "" && ev.InvocationID != invID) {
			continue
		}
		for _, c := range ev.FunctionCalls() {
			if !answered[c.ID] {
				out = append(out, OpenCall{Call: c, Event: ev, SessionID: sessID, LongRunning: longRunning[c.ID]})
			}
		}
	}
	return out
}
