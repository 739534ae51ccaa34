// Package telemetry plugs OpenTelemetry tracing into agentgate: it
// implements agentcore.Tracer with spans that follow the OpenTelemetry GenAI
// semantic conventions (invoke_agent, chat, execute_tool), exports them over
// OTLP/HTTP, keeps the most recent ones in process for ADK's debug routes,
// and carries W3C trace context in from requests and out to upstreams.
//
// It is the only package that imports the OpenTelemetry SDK. It reads no
// environment: the caller resolves OTEL_* variables into Config.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentgate/agentgate/agentcore"
)

// Config configures tracing. A zero field means its default.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL (http://collector:4318): spans go
	// to <Endpoint>/v1/traces. Empty: no export.
	Endpoint string
	// ServiceName is the service.name resource attribute (default
	// "agentgate").
	ServiceName string
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// SampleRatio is the share of new traces recorded, in (0, 1] (default
	// 1). A request carrying a sampled traceparent is always recorded.
	SampleRatio float64
	// CaptureContent records messages, tool arguments and results on the
	// spans (hidden parameter values redacted as in model requests).
	CaptureContent bool
	// KeepSpans is how many recent spans are kept in process for the
	// debug routes (Recent); 0 keeps none.
	KeepSpans int
	// Exporter replaces the OTLP exporter (tests).
	Exporter sdktrace.SpanExporter
}

// Enabled reports whether cfg traces anything at all.
func (cfg Config) Enabled() bool {
	return cfg.Endpoint != "" || cfg.KeepSpans > 0 || cfg.Exporter != nil
}

// Telemetry is agentgate's tracing. It is safe for concurrent use; Shutdown
// flushes and stops it.
type Telemetry struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	recent  *Recent
	capture bool
}

var _ agentcore.Tracer = (*Telemetry)(nil)

// New validates cfg and starts tracing.
func New(cfg Config) (*Telemetry, error) {
	if cfg.SampleRatio < 0 || cfg.SampleRatio > 1 {
		return nil, fmt.Errorf("telemetry: sample_ratio must be in (0, 1], not %v", cfg.SampleRatio)
	}
	if cfg.SampleRatio == 0 {
		cfg.SampleRatio = 1
	}
	if cfg.KeepSpans < 0 {
		return nil, errors.New("telemetry: keep_spans must not be negative")
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = "agentgate"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.ServiceName)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	}
	exp := cfg.Exporter
	if exp == nil && cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("telemetry: otlp_endpoint %q is not an absolute http(s) URL", cfg.Endpoint)
		}
		exp, err = otlptracehttp.New(context.Background(),
			otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.Endpoint, "/")+"/v1/traces"))
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp exporter: %w", err)
		}
	}
	if exp != nil {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	t := &Telemetry{capture: cfg.CaptureContent,
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
	if cfg.KeepSpans > 0 {
		t.recent = newRecent(cfg.KeepSpans)
		opts = append(opts, sdktrace.WithSpanProcessor(t.recent))
	}
	t.tp = sdktrace.NewTracerProvider(opts...)
	t.tracer = t.tp.Tracer("github.com/agentgate/agentgate")
	return t, nil
}

// Shutdown exports what is buffered and stops the exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// ForceFlush exports what is buffered.
func (t *Telemetry) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Recent is the in-process store of recent spans, nil when none are kept.
func (t *Telemetry) Recent() *Recent { return t.recent }

// Extract returns ctx carrying the trace context of an incoming request's
// headers (W3C traceparent, tracestate, baggage), so its spans continue the
// caller's trace.
func (t *Telemetry) Extract(ctx context.Context, h http.Header) context.Context {
	return t.prop.Extract(ctx, propagation.HeaderCarrier(h))
}

// Transport returns base (http.DefaultTransport when nil) sending the
// trace context of each request's context on in its headers.
func (t *Telemetry) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &propagating{base: base, prop: t.prop}
}

// propagating is an http.RoundTripper that injects trace context.
type propagating struct {
	base http.RoundTripper
	prop propagation.TextMapPropagator
}

// RoundTrip implements http.RoundTripper. The request is cloned before its
// headers change, as RoundTrippers must not modify their request.
func (p *propagating) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return p.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	p.prop.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return p.base.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// wrapped transport.
func (p *propagating) CloseIdleConnections() {
	if c, ok := p.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Client returns an HTTP client whose requests carry the trace context,
// over base (a new default transport when nil).
func (t *Telemetry) Client(base http.RoundTripper) *http.Client {
	return &http.Client{Transport: t.Transport(base)}
}

// TracerProvider is the SDK provider the spans come from (tests, and code
// that wants spans of its own in the same traces).
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }
