package telemetry

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Recent keeps the last finished spans in process, a bounded ring, for
// ADK's debug routes (adk-web's Traces tab). It is an sdktrace span
// processor; safe for concurrent use.
type Recent struct {
	mu    sync.Mutex
	spans []DebugSpan // ring: next is where the next span goes
	next  int
	full  bool
}

var _ sdktrace.SpanProcessor = (*Recent)(nil)

func newRecent(n int) *Recent { return &Recent{spans: make([]DebugSpan, n)} }

// DebugSpan is a finished span in the shape ADK's API server serves on
// /debug/trace/session/{id}: ids in hex, times in nanoseconds since the
// epoch. Besides agentgate's attributes it carries the names adk-web reads
// (gcp.vertex.agent.invocation_id, gcp.vertex.agent.event_id,
// gcp.vertex.agent.session_id).
type DebugSpan struct {
	Name         string         `json:"name"`
	SpanID       string         `json:"span_id"`
	TraceID      string         `json:"trace_id"`
	StartTime    int64          `json:"start_time"`
	EndTime      int64          `json:"end_time"`
	Attributes   map[string]any `json:"attributes"`
	ParentSpanID *string        `json:"parent_span_id"`
}

// adk-web's names for agentgate's attributes.
var adkAliases = map[string]string{
	keyInvocation:   "gcp.vertex.agent.invocation_id",
	keyEventID:      "gcp.vertex.agent.event_id",
	keyConversation: "gcp.vertex.agent.session_id",
}

// OnStart implements sdktrace.SpanProcessor.
func (r *Recent) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: the span is kept (sampled spans
// only), the oldest dropped when the ring is full.
func (r *Recent) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	attrs := make(map[string]any, len(s.Attributes())+len(adkAliases))
	for _, kv := range s.Attributes() {
		k := string(kv.Key)
		v := value(kv.Value)
		attrs[k] = v
		if alias, ok := adkAliases[k]; ok {
			attrs[alias] = v
		}
	}
	d := DebugSpan{Name: s.Name(), SpanID: s.SpanContext().SpanID().String(), TraceID: s.SpanContext().TraceID().String(),
		StartTime: s.StartTime().UnixNano(), EndTime: s.EndTime().UnixNano(), Attributes: attrs}
	if p := s.Parent(); p.IsValid() {
		id := p.SpanID().String()
		d.ParentSpanID = &id
	}
	r.mu.Lock()
	r.spans[r.next] = d
	r.next++
	if r.next == len(r.spans) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Shutdown implements sdktrace.SpanProcessor.
func (r *Recent) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (r *Recent) ForceFlush(context.Context) error { return nil }

// all returns the kept spans, oldest first. Called with mu held.
func (r *Recent) all() []DebugSpan {
	if !r.full {
		return r.spans[:r.next]
	}
	return append(r.spans[r.next:len(r.spans):len(r.spans)], r.spans[:r.next]...)
}

// Session returns the kept spans of every trace in which a span belongs to
// the session (its sub-conversations' spans are in the same traces), oldest
// first; empty, never nil, when there are none.
func (r *Recent) Session(sessionID string) []DebugSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	spans := r.all()
	traces := map[string]bool{}
	for _, s := range spans {
		if s.Attributes[keyConversation] == sessionID {
			traces[s.TraceID] = true
		}
	}
	out := []DebugSpan{}
	for _, s := range spans {
		if traces[s.TraceID] {
			out = append(out, s)
		}
	}
	return out
}

// Event returns the attributes of the model call span whose answer is the
// event eventID, with its trace_id and span_id, as ADK's /debug/trace/{id}
// serves them.
func (r *Recent) Event(eventID string) (map[string]any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	spans := r.all()
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		if s.Attributes[keyEventID] != eventID {
			continue
		}
		out := make(map[string]any, len(s.Attributes)+2)
		for k, v := range s.Attributes {
			out[k] = v
		}
		out["trace_id"], out["span_id"] = s.TraceID, s.SpanID
		return out, true
	}
	return nil, false
}

// value is an attribute value as JSON would show it.
func value(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return v.AsBool()
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		return v.AsFloat64()
	case attribute.STRING:
		return v.AsString()
	case attribute.BOOLSLICE:
		return v.AsBoolSlice()
	case attribute.INT64SLICE:
		return v.AsInt64Slice()
	case attribute.FLOAT64SLICE:
		return v.AsFloat64Slice()
	case attribute.STRINGSLICE:
		return v.AsStringSlice()
	}
	return v.Emit()
}
