package main

import (
	"context"
	"testing"

	"github.com/agentgate/agentgate/config"
)

// TestNewTelemetryReadsTheStandardVariables: off with nothing set (no
// telemetry at all); on from OTEL_EXPORTER_OTLP_ENDPOINT alone; a bad
// endpoint from the environment is refused like one from the file.
func TestNewTelemetryReadsTheStandardVariables(t *testing.T) {
	none := func(string) string { return "" }
	if tel, err := newTelemetry(config.Telemetry{CaptureContent: true}, none); tel != nil || err != nil {
		t.Fatalf("nothing set: %v %v", tel, err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SERVICE_NAME": "svc"}
	tel, err := newTelemetry(config.Telemetry{}, func(k string) string { return env[k] })
	if err != nil || tel == nil {
		t.Fatalf("from the environment: %v %v", tel, err)
	}
	if (upstreamClients{tel: tel}).provider() == nil || (upstreamClients{}).tool() != nil {
		t.Error("upstream clients: a propagating client with telemetry, none without")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = tel.Shutdown(ctx)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "collector:4318"
	if _, err := newTelemetry(config.Telemetry{}, func(k string) string { return env[k] }); err == nil {
		t.Error("a bad endpoint from the environment was accepted")
	}
}
