package gateway

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/sessions"
)

// tracer is the runtime's Tracer: nil (no spans, no cost) without
// telemetry.
func (s *Server) tracer() agentcore.Tracer {
	if s.cfg.Telemetry == nil {
		return nil
	}
	return s.cfg.Telemetry
}

// debugTrace serves ADK's older debug routes, /debug/trace/{event_id} and
// /debug/trace/session/{session_id} (no app in the path).
func (s *Server) debugTrace(c *gin.Context) {
	s.serveTrace(c, strings.Split(strings.Trim(c.Param("rest"), "/"), "/"))
}

// serveTrace answers adk-web's Traces tab from the spans kept in process:
// rest is ["session", id] (every span of the session's traces, [] when
// none) or [event id] (the model call span that made the event, 404 when
// unknown). Without telemetry or kept spans, sessions have no spans.
// With authentication on, only the caller's own sessions are served.
func (s *Server) serveTrace(c *gin.Context, rest []string) {
	kept := s.cfg.Telemetry != nil && s.cfg.Telemetry.Recent() != nil
	switch {
	case len(rest) == 2 && rest[0] == "session":
		sid, err := url.PathUnescape(rest[1])
		if err != nil || !kept || !s.ownsSession(c, sid) {
			c.JSON(http.StatusOK, []any{})
			return
		}
		c.JSON(http.StatusOK, s.cfg.Telemetry.Recent().Session(sid))
	case len(rest) == 1 && rest[0] != "":
		if kept {
			if attrs, ok := s.cfg.Telemetry.Recent().Event(rest[0]); ok {
				sid, _ := attrs["gen_ai.conversation.id"].(string)
				if s.ownsSession(c, sid) {
					c.JSON(http.StatusOK, attrs)
					return
				}
			}
		}
		writeNativeError(c, notFound("Trace not found"))
	default:
		writeNativeError(c, notFound("Not Found"))
	}
}

// ownsSession reports whether the caller may read the session's spans:
// always without authentication; with it, when the session (or, for a
// sub-conversation, its top-level session) is the caller's in an app the
// token may use.
func (s *Server) ownsSession(c *gin.Context, sid string) bool {
	p := principalOf(c.Request.Context())
	if p == nil {
		return true
	}
	top, _, _ := strings.Cut(sid, "/")
	for _, a := range s.catalog().Apps {
		if !p.CanUse(a.ID) {
			continue
		}
		_, err := s.cfg.Sessions.Get(c.Request.Context(), sessions.GetRequest{AppName: a.ID, UserID: p.User, SessionID: top})
		if err == nil {
			return true
		}
		if !errors.Is(err, sessions.ErrNotFound) {
			return false
		}
	}
	return false
}
