package agentcore

import (
	"context"
	"log/slog"
	"slices"
	"sync"
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
// the attributes ctx carries now. An attribute with a key ctx already
// carries replaces it (a sub-conversation's session_id replaces its
// parent's).
//
// The context is one allocation: it keeps its own attributes and what ctx
// carried (a snapshot of a set, or the context it derives from), and the
// two are joined only when a record is logged, which is rare beside the
// contexts made (one per turn and per agent).
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	l := &logCtx{}
	l.init(ctx, attrs...)
	return l
}

// init makes l what WithLogAttrs(ctx, attrs...) returns, in place: a
// context that lives in a larger allocation (see turn.begin).
func (l *logCtx) init(ctx context.Context, attrs ...slog.Attr) {
	l.Context = ctx
	switch v := ctx.Value(logAttrsKey{}).(type) {
	case *logCtx:
		l.up = v
		if v == ctx {
			// ctx answers no key but the one l answers itself (and
			// its Done, Err and Deadline are its parent's): l's
			// lookups go to that parent at once, one step shorter.
			l.Context = v.Context
		}
	case *LogAttrSet:
		l.base = v.Attrs()
	}
	if len(attrs) <= len(l.inline) {
		l.own = append(l.inline[:0], attrs...)
	} else {
		l.own = slices.Clone(attrs)
	}
}

// logCtx is a context made by WithLogAttrs.
type logCtx struct {
	context.Context
	// The attributes the parent carried: up's when it was a logCtx, else
	// base (a set's as they were, which only grows beyond them).
	up     *logCtx
	base   []slog.Attr
	own    []slog.Attr // in inline when they fit
	inline [2]slog.Attr
}

// Value implements context.Context.
func (l *logCtx) Value(key any) any {
	if key == (logAttrsKey{}) {
		return l
	}
	return l.Context.Value(key)
}

// attrs returns the context's attributes, the parent's first, in a new
// slice.
func (l *logCtx) attrs() []slog.Attr {
	parent := l.base
	if l.up != nil {
		parent = l.up.attrs()
	}
	return merged(parent, l.own)
}

// merged returns old with attrs added, replacing those of the same keys,
// in a new slice.
func merged(old, attrs []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, 0, len(old)+len(attrs))
	for _, a := range old {
		if !hasKey(attrs, a.Key) {
			out = append(out, a)
		}
	}
	return append(out, attrs...)
}

// LogAttrSet holds log attributes that grow while a context lives: a
// request's middleware makes one (WithLogAttrSet) and its handler adds the
// model, the session and the invocation as it learns them, without a new
// context (and request) each time. Records logged with the context carry
// what the set holds when they are logged; a context derived with
// WithLogAttrs carries what the set held then, plus its own. Safe for
// concurrent use.
type LogAttrSet struct {
	mu sync.Mutex
	// attrs grows in place: what Attrs handed out is never modified, as
	// an append writes beyond its length and a replacement makes a new
	// slice. It starts in first, so that a request's few attributes take
	// no allocation of their own.
	attrs []slog.Attr
	first [6]slog.Attr
}

// WithLogAttrSet returns a context whose log records carry the attributes
// ctx carries now and those later added to the returned set.
func WithLogAttrSet(ctx context.Context) (context.Context, *LogAttrSet) {
	c := &setCtx{Context: ctx}
	c.set.attrs = append(c.set.first[:0], LogAttrs(ctx)...)
	return c, &c.set
}

// setCtx is a context made by WithLogAttrSet: the context and its set in
// one allocation.
type setCtx struct {
	context.Context
	set LogAttrSet
}

// Value implements context.Context.
func (c *setCtx) Value(key any) any {
	if key == (logAttrsKey{}) {
		return &c.set
	}
	return c.Context.Value(key)
}

// LogAttrSetOf returns the set ctx's log attributes come from, if they come
// from one (and not from a later WithLogAttrs).
func LogAttrSetOf(ctx context.Context) (*LogAttrSet, bool) {
	set, ok := ctx.Value(logAttrsKey{}).(*LogAttrSet)
	return set, ok
}

// Add adds attrs, replacing attributes of the same keys.
func (s *LogAttrSet) Add(attrs ...slog.Attr) {
	s.mu.Lock()
	for _, a := range attrs {
		if hasKey(s.attrs, a.Key) {
			s.attrs = merged(s.attrs, attrs)
			s.mu.Unlock()
			return
		}
	}
	s.attrs = append(s.attrs, attrs...)
	s.mu.Unlock()
}

// Attrs returns the attributes held now, oldest first. The slice is
// shared: callers must not modify it.
func (s *LogAttrSet) Attrs() []slog.Attr {
	s.mu.Lock()
	attrs := s.attrs
	s.mu.Unlock()
	return attrs[:len(attrs):len(attrs)] // an append by the caller copies
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
// may be shared: callers must not modify it.
func LogAttrs(ctx context.Context) []slog.Attr {
	switch v := ctx.Value(logAttrsKey{}).(type) {
	case *logCtx:
		return v.attrs()
	case *LogAttrSet:
		return v.Attrs()
	}
	return nil
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
