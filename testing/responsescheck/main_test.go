package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentgate/agentgate/gateway/openaiwire"
)

// valid returns a response that was answered at once, and its stream,
// encoded by the gateway's own encoder.
func valid(t *testing.T) (response, stream string) {
	t.Helper()
	req, err := openaiwire.DecodeResponsesRequest([]byte(`{"model":"m","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := req.Validate(nil); err != nil {
		t.Fatal(err)
	}
	enc := openaiwire.NewResponsesEncoder(req.NewResponse("resp_1", 1), openaiwire.ResponsesEncoderConfig{})
	var body []byte
	for _, end := range []func() []openaiwire.ResponseEvent{enc.Start, func() []openaiwire.ResponseEvent { return enc.Finish(nil) }} {
		evs := end()
		for i := range evs {
			if body, err = openaiwire.AppendResponseEventFrame(body, &evs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	raw, err := json.Marshal(enc.Response())
	if err != nil {
		t.Fatal(err)
	}
	return string(raw), string(body)
}

// The command passes what the checks pass and fails what they fail, as
// its flags say which check.
func TestRun(t *testing.T) {
	const created = `{"type":"response.created","sequence_number":0,"response":{}}`
	response, stream := valid(t)
	tests := []struct {
		name string
		args []string
		body string
		want int
		says string
	}{
		{"a response", nil, response, 0, ""},
		{"a stream", []string{"-stream"}, stream, 0, ""},
		{"a stream is not a response", nil, stream, 1, ""},
		{"not a response", nil, `{"object":"response"}`, 1, "id"},
		{"not JSON", nil, `{`, 1, ""},
		{"a stream cut short", []string{"-stream"}, "event: response.created\ndata: " + created + "\n\n", 1, "ended without"},
		{"a replay numbered from its cursor", []string{"-stream", "-after", "4", "-partial"},
			"data: {\"type\":\"response.output_text.delta\",\"sequence_number\":9,\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"x\"}\n\n", 1, "sequence_number"},
		{"no events", []string{"-stream", "-partial"}, "", 1, "no events"},
		{"a bad flag", []string{"-nope"}, "", 2, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			if got := run(tt.args, strings.NewReader(tt.body), &stderr); got != tt.want || !strings.Contains(stderr.String(), tt.says) {
				t.Errorf("exit %d, want %d; said %q, want it to mention %q", got, tt.want, stderr.String(), tt.says)
			}
		})
	}
}
