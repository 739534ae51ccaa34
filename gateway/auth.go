package gateway

// Authentication and ownership. With Config.Auth set (auth.mode: jwt),
// every route but the public paths needs a bearer token; the verified
// Principal rides in the request context. It decides whose sessions a
// request reaches (the token's user, on both surfaces), which models it may
// use (models_claim), and the trusted conversation parameters (see
// params.go).

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/auth"
)

// DefaultPublicPaths need no token unless Config.PublicPaths says
// otherwise.
var DefaultPublicPaths = []string{"/healthz", "/readyz", "/metrics"}

// Authenticator verifies the Authorization header of a request
// (*auth.Verifier implements it).
type Authenticator interface {
	Authenticate(header string) (*auth.Principal, error)
	// BoundParameters lists the parameter names tokens bind: callers may
	// never supply them.
	BoundParameters() []string
}

var _ Authenticator = (*auth.Verifier)(nil)

type principalKey struct{}

// principalOf is the verified caller of a request; nil without
// authentication (auth.mode: none).
func principalOf(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(principalKey{}).(*auth.Principal)
	return p
}

// isPublic reports a path that needs no token: listed exactly, or under an
// entry ending in "/*".
func (s *Server) isPublic(path string) bool {
	paths := s.cfg.PublicPaths
	if paths == nil {
		paths = DefaultPublicPaths
	}
	for _, p := range paths {
		if prefix, ok := strings.CutSuffix(p, "/*"); ok {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// authenticate is the middleware that requires a valid bearer token. A
// refusal is logged with its reason (never the token) and answered 401 in
// the surface's format.
func (s *Server) authenticate(c *gin.Context) {
	if s.admit(c) {
		c.Next()
	}
}

// admit reports whether the request may go on, with its principal on the
// context; if not, it has answered and aborted. (Out of authenticate's
// frame, see requestID.)
//
//go:noinline
func (s *Server) admit(c *gin.Context) bool {
	if s.cfg.Auth == nil || s.isPublic(c.Request.URL.Path) {
		return true
	}
	p, err := s.cfg.Auth.Authenticate(c.GetHeader("Authorization"))
	if err != nil {
		reason := "invalid"
		var ae *auth.Error
		if errors.As(err, &ae) {
			reason = string(ae.Reason)
		}
		s.log.WarnContext(c.Request.Context(), "authentication failed", "reason", reason, "err", err)
		writeError(c, classify(err))
		c.Abort()
		return false
	}
	c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), principalKey{}, p))
	return true
}

// writeError answers in the format of the surface the request is on.
func writeError(c *gin.Context, e *apiError) {
	if isOpenAIPath(c.Request.URL.Path) {
		writeOpenAIError(c, e)
	} else {
		writeNativeError(c, e)
	}
}

// errNotOwner: a request named a user other than the token's.
var errNotOwner = errors.New("gateway: another user's sessions")

// ownUser maps the {user} a native request names to the user whose
// sessions it reaches: with a token, "me" or the token's own user, and
// anything else is errNotOwner (answered 404, as a session that does not
// exist); without one, the name as given.
func ownUser(ctx context.Context, user string) (string, error) {
	p := principalOf(ctx)
	if p == nil {
		return user, nil
	}
	if user == "me" || user == p.User {
		return p.User, nil
	}
	return "", errNotOwner
}

// modelDeniedError: the token's models claim does not list the model.
type modelDeniedError struct{ model string }

func (e *modelDeniedError) Error() string {
	return "gateway: model " + e.model + " not allowed for this token"
}

// canUse reports whether the request's token may use a model (always true
// without authentication).
func canUse(ctx context.Context, modelID string) bool {
	p := principalOf(ctx)
	return p == nil || p.CanUse(modelID)
}

// allowModel is nil when the request may use the model, else a
// *modelDeniedError (403).
func allowModel(ctx context.Context, modelID string) error {
	if canUse(ctx, modelID) {
		return nil
	}
	return &modelDeniedError{model: modelID}
}

// boundParameters are the names tokens bind, when authentication is on.
func (s *Server) boundParameters() []string {
	if s.cfg.Auth == nil {
		return nil
	}
	return slices.Clone(s.cfg.Auth.BoundParameters())
}

// unauthorizedHeader is sent with every 401.
const unauthorizedHeader = `Bearer error="invalid_token"`

func setUnauthorized(c *gin.Context, status int) {
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", unauthorizedHeader)
	}
}
