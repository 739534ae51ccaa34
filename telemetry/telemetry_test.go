package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentgate/agentgate/telemetry"
)

// TestTransportSendsTraceContext: a request made inside a span carries its
// traceparent; one made outside any carries none; the caller's request is
// never modified.
func TestTransportSendsTraceContext(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	tel, err := telemetry.New(telemetry.Config{KeepSpans: 10})
	if err != nil {
		t.Fatal(err)
	}
	client := tel.Client(nil)

	incoming := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	ctx := tel.Extract(context.Background(), incoming)
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || !sc.IsRemote() {
		t.Fatalf("extracted %v", sc)
	}
	for _, c := range []context.Context{ctx, context.Background()} {
		req, _ := http.NewRequestWithContext(c, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(req.Header) != 0 {
			t.Errorf("the caller's request was modified: %v", req.Header)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" || got[1] != "" {
		t.Errorf("traceparents sent: %q", got)
	}
}

// TestConfig: bad values are refused with the key's name; nothing set is
// not enabled.
func TestConfig(t *testing.T) {
	if (telemetry.Config{SampleRatio: 0.5, CaptureContent: true}).Enabled() {
		t.Error("enabled without an endpoint or kept spans")
	}
	for _, cfg := range []telemetry.Config{{Endpoint: "collector:4318"}, {KeepSpans: 1, SampleRatio: 1.5}, {KeepSpans: -1}} {
		if _, err := telemetry.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "telemetry: ") {
			t.Errorf("%+v: err %v", cfg, err)
		}
	}
}

// TestRecentIsBounded: the ring keeps the newest spans only.
func TestRecentIsBounded(t *testing.T) {
	tel, err := telemetry.New(telemetry.Config{KeepSpans: 3})
	if err != nil {
		t.Fatal(err)
	}
	tr := tel.TracerProvider().Tracer("test")
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		_, s := tr.Start(context.Background(), name, trace.WithAttributes())
		s.SetAttributes(telemetry.Conversation("s1"))
		s.End()
	}
	var names []string
	for _, s := range tel.Recent().Session("s1") {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "c,d,e" {
		t.Errorf("kept %v", names)
	}
	if n := len(tel.Recent().Session("other")); n != 0 {
		t.Errorf("another session: %d spans", n)
	}
}
