package agentcore

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentgate/agentgate/sessions"
)

var (
	placeholderRE = regexp.MustCompile(`\{+[^{}]*\}+`)
	identRE       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// MissingStateError reports a {key} placeholder whose key is not in state.
type MissingStateError struct{ Key string }

func (e *MissingStateError) Error() string {
	return fmt.Sprintf("instruction references state key %q, which is not set (use {%s?} to make it optional)", e.Key, e.Key)
}

// InjectState replaces {placeholders} in an instruction template:
// {key} with the state value (an error when missing), {key?} with the value
// or "", {app:key}, {user:key}, {temp:key} from their scopes, and
// {artifact.name} (or {artifact.name?}) with the artifact's content. Bodies
// that are not state names, such as {"a": 1}, {1, 2} or { }, stay as written.
func InjectState(ctx context.Context, cc *CallbackContext, template string) (string, error) {
	if !strings.Contains(template, "{") {
		return template, nil // nothing to replace: skip the regexp
	}
	var firstErr error
	out := placeholderRE.ReplaceAllStringFunc(template, func(m string) string {
		if firstErr != nil {
			return m
		}
		name := strings.TrimSpace(strings.Trim(m, "{}"))
		optional := strings.HasSuffix(name, "?")
		name = strings.TrimSuffix(name, "?")
		if a, ok := strings.CutPrefix(name, "artifact."); ok {
			if a == "" {
				return m
			}
			part, err := cc.LoadArtifact(ctx, a)
			if err != nil {
				if optional {
					return ""
				}
				firstErr = fmt.Errorf("instruction references artifact %q: %w", a, err)
				return m
			}
			if part.Text != "" {
				return part.Text
			}
			b, _ := json.Marshal(part)
			return string(b)
		}
		if !isStateName(name) {
			return m
		}
		v, ok := cc.State(name)
		if !ok {
			if optional {
				return ""
			}
			firstErr = &MissingStateError{Key: name}
			return m
		}
		return formatValue(v)
	})
	if firstErr != nil {
		return "", firstErr
	}
	return out, nil
}

func isStateName(s string) bool {
	for _, p := range []string{sessions.PrefixApp, sessions.PrefixUser, sessions.PrefixTemp} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return identRE.MatchString(rest)
		}
	}
	return identRE.MatchString(s)
}

// formatValue renders a state value in an instruction: strings as is,
// everything else as JSON.
func formatValue(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
