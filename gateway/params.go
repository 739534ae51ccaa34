package gateway

// Conversation parameters at the HTTP edge. Trusted values come from the
// token (auth.jwt.parameters); callers add their own: `metadata` entries
// "param.<name>" on /v1 ("param.<name>.send_to_model": "false" hides one),
// `parameters` in the native session-create body ({"name": value} or
// {"name": {"value": v, "sendToModel": false}}). A caller may not set a
// name the token binds (403 parameter_bound_by_token) nor one no agent of
// the tree declares (400 unknown_parameter). Sessions keep the values they
// were created with; REST shows them with hidden values masked.

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/auth"
	"github.com/agentgate/agentgate/sessions"
)

// paramError is a refused caller-supplied parameter.
type paramError struct {
	// bound: the token binds the name (403); otherwise code says what is
	// wrong (400).
	bound   bool
	code    string
	field   string
	message string
}

func (e *paramError) Error() string { return e.message }

// metadataParamPrefix starts the /v1 metadata keys holding parameters.
const metadataParamPrefix = "param."

// metadataParams reads the caller's parameters from /v1 metadata.
func metadataParams(md map[string]string) (map[string]agentcore.Param, error) {
	if len(md) == 0 {
		return nil, nil // most requests: no metadata
	}
	var out map[string]agentcore.Param // nil until the first parameter
	hidden := map[string]string{}
	for k, v := range md {
		rest, ok := strings.CutPrefix(k, metadataParamPrefix)
		if !ok {
			continue
		}
		if name, ok := strings.CutSuffix(rest, ".send_to_model"); ok {
			hidden[name] = v
			continue
		}
		if out == nil {
			out = map[string]agentcore.Param{}
		}
		out[rest] = agentcore.Param{Value: v, SendToModel: true}
	}
	for name, v := range hidden {
		p, ok := out[name]
		send, err := strconv.ParseBool(v)
		if !ok || err != nil {
			return nil, &paramError{code: "invalid_parameter", field: "metadata." + metadataParamPrefix + name + ".send_to_model",
				message: "metadata " + metadataParamPrefix + name + ".send_to_model must be \"true\" or \"false\" and go with " + metadataParamPrefix + name + "."}
		}
		p.SendToModel = send
		out[name] = p
	}
	return out, nil
}

// bodyParams reads the caller's parameters from a native session-create
// body: plain values, or {"value": v, "sendToModel": b} objects.
func bodyParams(raw map[string]any) (map[string]agentcore.Param, error) {
	out := make(map[string]agentcore.Param, len(raw))
	for name, v := range raw {
		p := agentcore.Param{Value: v, SendToModel: true}
		if m, ok := v.(map[string]any); ok && isLongForm(m) {
			p.Value = m["value"]
			if send, has := m["sendToModel"]; has {
				b, ok := send.(bool)
				if !ok {
					return nil, &paramError{code: "invalid_parameter", field: "parameters." + name + ".sendToModel", message: "parameters." + name + ".sendToModel must be a boolean."}
				}
				p.SendToModel = b
			}
		}
		out[name] = p
	}
	return out, nil
}

// isLongForm reports {"value": v} with, at most, "sendToModel" beside it.
func isLongForm(m map[string]any) bool {
	if _, ok := m["value"]; !ok {
		return false
	}
	for k := range m {
		if k != "value" && k != "sendToModel" {
			return false
		}
	}
	return true
}

// conversationParams checks the caller's values against the token and the
// tree, and lays the token's trusted values over them.
func (s *Server) conversationParams(ctx context.Context, a *app, field string, caller map[string]agentcore.Param) (*agentcore.Params, error) {
	if len(caller) > 0 { // most turns set none
		if err := s.checkCallerParams(a, field, caller); err != nil {
			return nil, err
		}
	}
	var trusted map[string]auth.Param
	if p := principalOf(ctx); p != nil {
		trusted = p.Params
	}
	if len(caller)+len(trusted) == 0 {
		return nil, nil
	}
	out := make(map[string]agentcore.Param, len(caller)+len(trusted))
	maps.Copy(out, caller)
	for name, v := range trusted {
		out[name] = agentcore.Param{Value: v.Value, SendToModel: v.SendToModel, Trusted: true}
	}
	return agentcore.NewParams(out), nil
}

// checkCallerParams checks that the caller's values have valid names,
// declared by an agent of the tree and not bound by the token.
func (s *Server) checkCallerParams(a *app, field string, caller map[string]agentcore.Param) error {
	bound := s.boundParameters()
	declared := agentcore.TreeParams(a.Root)
	for _, name := range slices.Sorted(maps.Keys(caller)) {
		switch {
		case !agentcore.ValidParamName(name):
			return &paramError{code: "invalid_parameter", field: field + name, message: "Parameter name " + strconv.Quote(name) + " is not valid: use letters, digits and _."}
		case slices.Contains(bound, name):
			return &paramError{bound: true, field: field + name,
				message: "Parameter " + name + " is bound by the token: its value comes from your credentials and cannot be set by the request."}
		}
		if _, ok := declared[name]; !ok {
			return &paramError{code: "unknown_parameter", field: field + name, message: "Parameter " + name + " is not declared by any agent of model " + a.ID + "."}
		}
	}
	return nil
}

// paramsState is the initial session state holding p (nil when empty).
func paramsState(p *agentcore.Params) map[string]any {
	if p.Len() == 0 {
		return nil
	}
	return map[string]any{agentcore.ParamsStateKey: agentcore.ParamsToState(p)}
}

// maskedSession is sess as REST shows it: stored parameters with hidden
// values masked. sess is not changed.
func maskedSession(sess *sessions.Session) *sessions.Session {
	v, ok := sess.State[agentcore.ParamsStateKey]
	if !ok {
		return sess
	}
	c := *sess
	c.State = maps.Clone(sess.State)
	c.State[agentcore.ParamsStateKey] = agentcore.MaskParamsState(v)
	return &c
}

// chatParams are a /v1 turn's parameters: metadata "param.<name>" entries
// and the token's.
func (s *Server) chatParams(ctx context.Context, a *app, md map[string]string) (*agentcore.Params, error) {
	caller, err := metadataParams(md)
	if err != nil {
		return nil, err
	}
	return s.conversationParams(ctx, a, "metadata."+metadataParamPrefix, caller)
}

// sessionState is the initial state of a native session: the client's
// state plus the conversation's parameters (body "parameters" and the
// token's).
func (s *Server) sessionState(ctx context.Context, a *app, state, raw map[string]any) (map[string]any, error) {
	caller, err := bodyParams(raw)
	if err != nil {
		return nil, err
	}
	p, err := s.conversationParams(ctx, a, "parameters.", caller)
	if err != nil || p.Len() == 0 {
		return state, err
	}
	out := maps.Clone(state)
	if out == nil {
		out = map[string]any{}
	}
	out[agentcore.ParamsStateKey] = agentcore.ParamsToState(p)
	return out, nil
}
