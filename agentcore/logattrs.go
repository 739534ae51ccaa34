package agentcore

import (
	"context"
	"log/slog"
)

// Context-carried log attributes. The gateway attaches the request id, the
// virtual model and the session; the runtime adds the session, the
// invocation id and the agent as a turn goes down the tree. A logger whose
// handler comes from NewLogHandler writes them on every record logged with
// that context (InfoContext, WarnContext, ...), so a tool or provider that
// logs with its ctx needs to know none of them.
//
// Values must never be secrets: ids and names from config only.

type logAttrsKey struct{}

// WithLogAttrs returns a context whose log records carry attrs as well as
// the attributes ctx already carries. An attribute with a key ctx already
// carries replaces it (a sub-conversation's session_id replaces its
// parent's).
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	old, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	out := make([]slog.Attr, 0, len(old)+len(attrs))
	for _, a := range old {
		if !hasKey(attrs, a.Key) {
			out = append(out, a)
		}
	}
	out = append(out, attrs...)
	return context.WithValue(ctx, logAttrsKey{}, out)
}

func hasKey(attrs []slog.Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// LogAttrs returns the log attributes ctx carries, oldest first. The slice
// is shared: callers must not modify it.
func LogAttrs(ctx context.Context) []slog.Attr {
	attrs, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	return attrs
}

// NewLogHandler wraps h so that every record logged with a context carries
// the context's attributes (see WithLogAttrs). Wrapping a handler it
// returned again gives it back unchanged.
func NewLogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*logHandler); ok {
		return h
	}
	return &logHandler{next: h}
}

type logHandler struct{ next slog.Handler }

var _ slog.Handler = (*logHandler)(nil)

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs := LogAttrs(ctx); len(attrs) > 0 {
		r = r.Clone()
		r.AddAttrs(attrs...)
	}
	return h.next.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{next: h.next.WithAttrs(attrs)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: h.next.WithGroup(name)}
}
