package main

import (
	"regexp"
	"strings"
	"testing"
)

// traceparentRE matches the traceparent header of a recorded request.
var traceparentRE = regexp.MustCompile(`(?mi)^traceparent: (00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2})\r?$`)

// traceparentOf returns a recorded request's traceparent header and its
// trace and parent span ids; "" when it has none.
func traceparentOf(req string) (header string, ids [2]string) {
	m := traceparentRE.FindStringSubmatch(req)
	if m == nil {
		return "", ids
	}
	return m[1], [2]string{m[2], m[3]}
}

// recorded is a copy of the requests rc recorded.
func (rc *recorder) recorded() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.reqs...)
}

// debugSpan is a span as /debug/trace/session/{id} serves it.
type debugSpan struct {
	Name         string  `json:"name"`
	SpanID       string  `json:"span_id"`
	TraceID      string  `json:"trace_id"`
	ParentSpanID *string `json:"parent_span_id"`
}

// TestTraceparentOnEveryHop runs the gateway of startHops with tracing on
// (spans kept in process, read back from the debug route) and, one turn
// per hop, checks that the request that hop got carries a traceparent of
// the turn's trace whose parent is the span that made the call: the
// execute_tool span of an HTTP, OpenAPI or MCP tool, the invoke_agent span
// of a remote A2A agent reached by transfer or as an agent tool. Every
// other request of the turn to that server carries the turn's trace too.
// The MCP turn comes after others, so its session was opened by an
// earlier turn: the call must not carry that turn's context.
func TestTraceparentOnEveryHop(t *testing.T) {
	h := startHops(t, "telemetry: {keep_spans: 2000}\n")
	hops := []struct {
		name, text string
		rec        *recorder
		span       string
		isCall     func(req string) bool // the request the span made
	}{
		{"http get", "fetch it", h.tools, "execute_tool fetch_get", prefixed("GET /get")},
		{"http post", "post it", h.tools, "execute_tool fetch_post", prefixed("POST /post")},
		{"openapi", "openapi lookup", h.tools, "execute_tool api_lookup", prefixed("POST /api/users/")},
		{"mcp", "mcp please", h.mcp, "execute_tool rec_echo", containing(`"method":"tools/call"`)},
		{"a2a transfer", "transfer me", h.a2a, "invoke_agent remote_t", prefixed("POST /a2a/analyst")},
		{"a2a agent tool", "consult the analyst", h.a2a, "invoke_agent remote_a", prefixed("POST /a2a/analyst")},
	}
	for i, hop := range hops {
		t.Run(hop.name, func(t *testing.T) {
			hop.rec.reset()
			session := "hops-" + strings.ReplaceAll(hop.name, " ", "-")
			if status, body := chat(t, h.gw.base, session, hop.text); status != 200 {
				t.Fatalf("turn %d: %d %s", i, status, body)
			}
			traceID, caller := turnSpans(t, h.gw.base, session, hop.span)
			calls := 0
			for _, req := range hop.rec.recorded() {
				tp, ids := traceparentOf(req)
				if tp == "" || ids[0] != traceID {
					t.Errorf("traceparent %q, want trace %s:\n%s", tp, traceID, req)
					continue
				}
				if hop.isCall(req) {
					calls++
					if ids[1] != caller {
						t.Errorf("traceparent %s: parent %s, want %q's span %s:\n%s", tp, ids[1], hop.span, caller, req)
					}
				}
			}
			if calls == 0 {
				t.Errorf("no call recorded: %q", hop.rec.recorded())
			}
		})
	}
}

// turnSpans reads the spans of a session's one turn from the debug route
// (the turn's spans have ended once its answer came) and returns its trace
// id and the id of the one span named name.
func turnSpans(t *testing.T, base, session, name string) (traceID, spanID string) {
	t.Helper()
	var spans []debugSpan
	getJSON(t, base+"/debug/trace/session/"+session, &spans)
	roots := 0
	var named []string
	for _, s := range spans {
		switch {
		case traceID == "":
			traceID = s.TraceID
		case s.TraceID != traceID:
			t.Fatalf("the turn has two traces: %+v", spans)
		}
		if s.Name == name {
			named = append(named, s.SpanID)
		}
		if s.ParentSpanID == nil {
			roots++
		}
	}
	if roots != 1 || len(named) != 1 {
		t.Fatalf("%d root spans, %d named %q: %+v", roots, len(named), name, spans)
	}
	return traceID, named[0]
}

func prefixed(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}

func containing(p string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, p) }
}
