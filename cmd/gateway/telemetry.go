package main

import (
	"net/http"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/config"
	"github.com/agentgate/agentgate/telemetry"
)

// newTelemetry starts tracing from the telemetry section and the standard
// variables: OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_SERVICE_NAME fill in
// otlp_endpoint and service_name when the file leaves them empty. Nil (and
// no cost anywhere) when nothing is to be traced.
func newTelemetry(c config.Telemetry, env func(string) string) (*telemetry.Telemetry, error) {
	cfg := telemetry.Config{Endpoint: firstNonEmpty(c.OTLPEndpoint, env("OTEL_EXPORTER_OTLP_ENDPOINT")),
		ServiceName: firstNonEmpty(c.ServiceName, env("OTEL_SERVICE_NAME")), ServiceVersion: version,
		SampleRatio: c.SampleRatio, CaptureContent: c.CaptureContent, KeepSpans: c.KeepSpans}
	if !cfg.Enabled() {
		return nil, nil
	}
	return telemetry.New(cfg)
}

// upstreamClients makes the HTTP clients of everything the gateway calls
// out to. Without telemetry each component keeps its own default client;
// with it, each gets a client that sends the trace context (traceparent)
// on, over the transport it would have used.
type upstreamClients struct{ tel *telemetry.Telemetry }

// provider is the client of a model provider: model.NewTransport's pooled
// transport.
func (u upstreamClients) provider() *http.Client {
	if u.tel == nil {
		return nil
	}
	return u.tel.Client(model.NewTransport())
}

// tool is the client of HTTP and OpenAPI tools, MCP servers and remote A2A
// agents: the default transport.
func (u upstreamClients) tool() *http.Client {
	if u.tel == nil {
		return nil
	}
	return u.tel.Client(http.DefaultTransport)
}
