package gateway_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/telemetry"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes the protobuf
// export requests the SDK's exporter posts to /v1/traces.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	raw   []string // every span as protojson, for leak checks
	paths []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paths = append(o.paths, r.URL.Path)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				o.spans = append(o.spans, s)
				b, _ := protojson.Marshal(s)
				o.raw = append(o.raw, string(b))
			}
		}
	}
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

func attrString(s *tracepb.Span, key string) string { return attr(s, key).GetStringValue() }

// TestTracesOfATree runs a transfer and an agent-tool turn (root transfers
// to desk; desk calls the agent profile as a tool; profile calls echo_user,
// which returns the hidden, token-bound user id) through the gateway with
// tracing on, the spans exported over OTLP/HTTP to a receiver, and checks
// the span tree, names, attributes and parent links, the trace context each
// upstream request carried, and that no span holds the hidden value (nor,
// since it is that value, the user id), content capture on.
func TestTracesOfATree(t *testing.T) {
	const secret = "u-LEAKCHECK-4711"
	const incomingTrace, incomingSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	recv := &otlpReceiver{}
	recvSrv := httptest.NewServer(recv)
	t.Cleanup(recvSrv.Close)
	tel, err := telemetry.New(telemetry.Config{Endpoint: recvSrv.URL, ServiceName: "agentgate-test", CaptureContent: true, KeepSpans: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })

	up := &upstreamRecorder{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	set, factories := leakTree(upSrv.URL, tel.Client(nil))
	set.Models[0].RouteNextTurn = "root"
	var tl toolLog
	f := serveSet(t, set, factories, &tl, withJWT(t), func(c *gateway.Config) { c.Telemetry = tel })
	tok := token(t, secret, map[string]any{"models": []string{"leak"}})

	// Turn 1, not streamed, continues the caller's trace; turn 2 streams.
	for i, stream := range []bool{false, true} {
		body, _ := json.Marshal(map[string]any{"model": "leak", "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "who am I?"}}})
		hdrs := []string{"X-Session-Id", "traced-1"}
		if i == 0 {
			hdrs = append(hdrs, "traceparent", "00-"+incomingTrace+"-"+incomingSpan+"-01")
		}
		status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, string(body), hdrs...)
		if status != http.StatusOK {
			t.Fatalf("stream=%v: %d %s", stream, status, b)
		}
	}
	if err := tel.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	recv.mu.Lock()
	spans, raw := recv.spans, recv.raw
	for _, p := range recv.paths {
		if p != "/v1/traces" {
			t.Errorf("export posted to %s", p)
		}
	}
	recv.mu.Unlock()
	for _, r := range raw {
		if strings.Contains(r, secret) {
			t.Errorf("a span holds the hidden value: %s", r)
		}
	}
	byTrace := map[string][]*tracepb.Span{}
	var traces []string
	for _, s := range spans {
		id := hex.EncodeToString(s.TraceId)
		if byTrace[id] == nil {
			traces = append(traces, id)
		}
		byTrace[id] = append(byTrace[id], s)
	}
	if len(traces) != 2 || byTrace[incomingTrace] == nil {
		t.Fatalf("traces %v, want the incoming %s and one more", traces, incomingTrace)
	}

	for _, traceID := range traces {
		tr := byTrace[traceID]
		// The tree, as "name" lines indented by depth, children in start
		// order.
		children := map[string][]*tracepb.Span{}
		ids := map[string]*tracepb.Span{}
		for _, s := range tr {
			ids[hex.EncodeToString(s.SpanId)] = s
		}
		var roots []*tracepb.Span
		for _, s := range tr {
			p := hex.EncodeToString(s.ParentSpanId)
			if ids[p] == nil {
				roots = append(roots, s)
				if traceID == incomingTrace && p != incomingSpan {
					t.Errorf("root span %s has parent %q, want the incoming %s", s.Name, p, incomingSpan)
				}
				continue
			}
			children[p] = append(children[p], s)
		}
		var lines []string
		var walk func(s *tracepb.Span, depth int)
		walk = func(s *tracepb.Span, depth int) {
			lines = append(lines, strings.Repeat("  ", depth)+s.Name)
			kids := children[hex.EncodeToString(s.SpanId)]
			slices.SortFunc(kids, func(a, b *tracepb.Span) int { return int(int64(a.StartTimeUnixNano) - int64(b.StartTimeUnixNano)) })
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
		for _, r := range roots {
			walk(r, 0)
		}
		want := []string{
			"invoke_agent root",
			"  chat root-m",
			"  execute_tool transfer_to_agent",
			"  invoke_agent desk",
			"    chat desk-m",
			"    execute_tool profile",
			"      invoke_agent profile",
			"        chat profile-m",
			"        execute_tool echo_user",
			"        chat profile-m",
			"    chat desk-m",
		}
		if !slices.Equal(lines, want) {
			t.Errorf("trace %s tree:\n%s\nwant:\n%s", traceID, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}

		for _, s := range tr {
			op := attrString(s, "gen_ai.operation.name")
			if conv := attrString(s, "gen_ai.conversation.id"); conv != "traced-1" && conv != "traced-1/profile" {
				t.Errorf("%s: gen_ai.conversation.id %q", s.Name, conv)
			}
			if !strings.HasPrefix(attrString(s, "agentgate.invocation.id"), "e-") {
				t.Errorf("%s: agentgate.invocation.id %q", s.Name, attrString(s, "agentgate.invocation.id"))
			}
			if attr(s, "user.id") != nil {
				t.Errorf("%s: user.id is set, but the user id is a hidden value", s.Name)
			}
			switch {
			case strings.HasPrefix(s.Name, "invoke_agent "):
				if op != "invoke_agent" || attrString(s, "gen_ai.agent.name") != strings.TrimPrefix(s.Name, "invoke_agent ") {
					t.Errorf("%s: operation %q agent %q", s.Name, op, attrString(s, "gen_ai.agent.name"))
				}
			case strings.HasPrefix(s.Name, "chat "):
				finish := attr(s, "gen_ai.response.finish_reasons").GetArrayValue().GetValues()
				if op != "chat" || attrString(s, "gen_ai.provider.name") != "openai" ||
					attrString(s, "gen_ai.request.model") != strings.TrimPrefix(s.Name, "chat ") ||
					attr(s, "gen_ai.usage.input_tokens").GetIntValue() != 5 || attr(s, "gen_ai.usage.output_tokens").GetIntValue() != 5 ||
					len(finish) != 1 || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("%s: attributes %v", s.Name, s.Attributes)
				}
				if !strings.Contains(attrString(s, "gen_ai.input.messages"), `"role":"user"`) {
					t.Errorf("%s: input messages %s", s.Name, attrString(s, "gen_ai.input.messages"))
				}
			case strings.HasPrefix(s.Name, "execute_tool "):
				name := strings.TrimPrefix(s.Name, "execute_tool ")
				if op != "execute_tool" || attrString(s, "gen_ai.tool.name") != name || attrString(s, "gen_ai.tool.call.id") != "call_"+name {
					t.Errorf("%s: attributes %v", s.Name, s.Attributes)
				}
			}
			if s.Name == "execute_tool echo_user" && !strings.Contains(attrString(s, "gen_ai.tool.call.result"), "[hidden:userId]") {
				t.Errorf("echo_user's result %q is not redacted as in model requests", attrString(s, "gen_ai.tool.call.result"))
			}
			if s.Name == "invoke_agent root" {
				if len(s.Events) != 1 || s.Events[0].Name != "agentgate.transfer" ||
					attrString(&tracepb.Span{Attributes: s.Events[0].Attributes}, "agentgate.transfer.from") != "root" ||
					attrString(&tracepb.Span{Attributes: s.Events[0].Attributes}, "agentgate.transfer.to") != "desk" {
					t.Errorf("root's events %v", s.Events)
				}
			}
		}
	}

	// Each upstream request carried the trace context of its chat span.
	chatSpans := map[string]*tracepb.Span{}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat ") {
			chatSpans[hex.EncodeToString(s.TraceId)+"-"+hex.EncodeToString(s.SpanId)] = s
		}
	}
	tp := regexp.MustCompile(`(?m)^Traceparent: 00-([0-9a-f]{32})-([0-9a-f]{16})-01\r?$`)
	model := regexp.MustCompile(`"model":"([^"]+)"`)
	up.mu.Lock()
	bodies := append([]string(nil), up.bodies...)
	up.mu.Unlock()
	if len(bodies) != 10 {
		t.Fatalf("%d upstream requests, want 10", len(bodies))
	}
	for i, b := range bodies {
		m := tp.FindStringSubmatch(b)
		if m == nil {
			t.Errorf("upstream request %d has no traceparent", i)
			continue
		}
		s := chatSpans[m[1]+"-"+m[2]]
		if s == nil || (i < 5 && m[1] != incomingTrace) {
			t.Errorf("upstream request %d: traceparent %s-%s is no chat span of the turn", i, m[1], m[2])
			continue
		}
		if got := model.FindStringSubmatch(b); got == nil || "chat "+got[1] != s.Name {
			t.Errorf("upstream request %d (%v) carried the span of %s", i, got, s.Name)
		}
	}

	// adk-web's Traces tab reads the same spans from the process.
	status, _, b := call(t, f, http.MethodGet, "/dev/apps/leak/debug/trace/session/traced-1", tok, "")
	var served []telemetry.DebugSpan
	if err := json.Unmarshal(b, &served); status != http.StatusOK || err != nil || len(served) != len(spans) {
		t.Fatalf("debug trace: %d %d spans (want %d) %v", status, len(served), len(spans), err)
	}
	for _, s := range served {
		if s.Attributes["gcp.vertex.agent.invocation_id"] == nil || (strings.HasPrefix(s.Name, "invoke_agent") && s.Attributes["gen_ai.conversation.id"] == nil) {
			t.Errorf("served span %s lacks what adk-web reads: %v", s.Name, s.Attributes)
		}
	}
	if strings.Contains(string(b), secret) {
		t.Error("the debug route serves the hidden value")
	}
	// Another user's token sees none of them.
	status, _, b = call(t, f, http.MethodGet, "/dev/apps/leak/debug/trace/session/traced-1", token(t, "someone-else", map[string]any{"models": []string{"leak"}}), "")
	if status != http.StatusOK || strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("another user's read: %d %s", status, b)
	}
}

// TestDebugTraceRoutes: ADK's debug routes answer from the spans kept in
// process: a session's spans (with adk-web's attribute names), a model
// call's by the id of the event it made, 404 for an unknown event; without
// telemetry, a session has no spans ([], as before). Function-call events
// are not marked turnComplete; the final answer is.
func TestDebugTraceRoutes(t *testing.T) {
	tel, err := telemetry.New(telemetry.Config{KeepSpans: 50})
	if err != nil {
		t.Fatal(err)
	}
	f := newNativeFixture(t, nil, func(c *gateway.Config) { c.Telemetry = tel })
	f.createSession("desk", "dbg")
	_, events := f.mustRunSSE(runBody("dbg", "hello", `"streaming":true`))
	var callEv, finalEv string
	for _, ev := range events {
		content, _ := ev["content"].(map[string]any)
		parts, _ := content["parts"].([]any)
		for _, p := range parts {
			if _, ok := p.(map[string]any)["functionCall"]; ok {
				callEv = ev["id"].(string)
				if ev["turnComplete"] != nil {
					t.Errorf("function-call event marked turnComplete: %v", ev)
				}
			}
		}
		if ev["partial"] != true && ev["author"] == "greeter" {
			finalEv = ev["id"].(string)
			if ev["turnComplete"] != true {
				t.Errorf("final event not turnComplete: %v", ev)
			}
		}
	}
	if callEv == "" || finalEv == "" {
		t.Fatalf("events %v", events)
	}

	var spans []telemetry.DebugSpan
	b := f.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/debug/trace/session/dbg", "")
	if err := json.Unmarshal(b, &spans); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
		if s.EndTime < s.StartTime || s.StartTime == 0 || len(s.TraceID) != 32 || len(s.SpanID) != 16 {
			t.Errorf("span %+v", s)
		}
	}
	slices.Sort(names)
	want := []string{"chat coord", "chat greeter", "execute_tool transfer_to_agent", "invoke_agent coordinator", "invoke_agent greeter"}
	if !slices.Equal(names, want) {
		t.Errorf("spans %v, want %v", names, want)
	}
	// The older path without the app serves the same.
	if b2 := f.mustDo(http.StatusOK, http.MethodGet, "/debug/trace/session/dbg", ""); string(b2) != string(b) {
		t.Errorf("/debug/trace/session: %s", b2)
	}
	for _, ev := range []string{callEv, finalEv} {
		var attrs map[string]any
		if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/debug/trace/"+ev, ""), &attrs); err != nil {
			t.Fatal(err)
		}
		if attrs["gcp.vertex.agent.event_id"] != ev || attrs["gen_ai.operation.name"] != "chat" || attrs["span_id"] == nil {
			t.Errorf("event %s: %v", ev, attrs)
		}
	}
	f.mustDo(http.StatusNotFound, http.MethodGet, "/dev/apps/desk/debug/trace/no-such-event", "")
	f.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/debug/trace/session/no-such-session", "")

	off := newNativeFixture(t, nil)
	off.createSession("desk", "dbg")
	off.mustRunSSE(runBody("dbg", "hello", ""))
	if b := off.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/debug/trace/session/dbg", ""); strings.TrimSpace(string(b)) != "[]" {
		t.Errorf("without telemetry: %s", b)
	}
}

// TestBuildGraphImage: adk-web's agent-graph tab gets the tree as DOT, from
// the root or from a node path; unknown apps and nodes are 404.
func TestBuildGraphImage(t *testing.T) {
	f := newNativeFixture(t, nil)
	var got map[string]any
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/build_graph_image?dark_mode=false", ""), &got); err != nil {
		t.Fatal(err)
	}
	dot, _ := got["dotSrc"].(string)
	for _, want := range []string{`digraph "coordinator" {`, `"coordinator" -> "greeter";`, `"coordinator" -> "billing";`,
		`"coordinator" -> "tool:summarizer" [style=dashed];`, `bgcolor="#F8FAFC"`} {
		if !strings.Contains(dot, want) {
			t.Errorf("dot lacks %s:\n%s", want, dot)
		}
	}
	if root, _ := got[""].(map[string]any); root["dotSrc"] != dot {
		t.Errorf("the root path's graph: %v", got[""])
	}
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/build_graph_image?dark_mode=true&node=coordinator/greeter", ""), &got); err != nil {
		t.Fatal(err)
	}
	if dot, _ := got["dotSrc"].(string); !strings.HasPrefix(dot, `digraph "greeter" {`) || !strings.Contains(dot, `bgcolor="#0F172A"`) || strings.Contains(dot, "billing") {
		t.Errorf("greeter's graph:\n%s", dot)
	}
	f.mustDo(http.StatusNotFound, http.MethodGet, "/dev/apps/desk/build_graph_image?node=nobody", "")
	f.mustDo(http.StatusNotFound, http.MethodGet, "/dev/apps/nope/build_graph_image", "")
}
