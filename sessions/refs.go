package sessions

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Ref is what a reference key stands for: a place in a session.
type Ref struct {
	// SessionID is the session referred to.
	SessionID string `json:"s"`
	// InvocationID is the invocation in it (empty: the session itself).
	InvocationID string `json:"i,omitempty"`
	// CallID is a function call of that invocation, for a reference to
	// one call (empty otherwise).
	CallID string `json:"c,omitempty"`
}

// Refs is an index of short-lived references from keys a client holds (a
// tool_call_id it was shown, say) to places in sessions. Keys are scoped to
// an app and a user: a user reads and deletes only the refs put under its
// own name. Every ref expires after the TTL it was put with; a ttl of zero
// or less means the store's own session TTL (never, for a store that keeps
// sessions forever). A ref does not keep its session alive, nor does the
// session's deletion remove it. Implementations are safe for concurrent
// use.
type Refs interface {
	// PutRefs stores refs (key -> ref) in one step (for Redis: one round
	// trip), each replacing the ref its key had.
	PutRefs(ctx context.Context, app, user string, refs map[string]Ref, ttl time.Duration) error
	// GetRef returns the ref of key, or an error wrapping ErrNotFound.
	GetRef(ctx context.Context, app, user, key string) (Ref, error)
	// DeleteRefs removes the refs of keys in one step; a missing key is no
	// error.
	DeleteRefs(ctx context.Context, app, user string, keys ...string) error
}

// ValidateRefs checks the arguments of a Refs method: the app and user,
// and that no key is empty. Implementations call it first.
func ValidateRefs(app, user string, keys ...string) error {
	if err := ValidateKeys(app, user); err != nil {
		return err
	}
	for _, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: empty ref key", ErrInvalid)
		}
	}
	return nil
}

// UnlistedPrefix starts the ids of unlisted sessions: sessions a Service's
// user keeps for its own bookkeeping (the gateway's paused stateless turns,
// found again through Refs), which List never returns. A store keeps no
// listing entry for them; they are read, written, expired and deleted like
// any other session. A session under an unlisted one is unlisted too.
const UnlistedPrefix = "~"

// Unlisted reports whether id names an unlisted session (see
// UnlistedPrefix).
func Unlisted(id string) bool { return strings.HasPrefix(id, UnlistedPrefix) }
