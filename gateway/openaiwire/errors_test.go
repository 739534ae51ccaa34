package openaiwire

import (
	"fmt"
	"testing"
)

func TestErrorEnvelope(t *testing.T) {
	tests := []struct {
		name   string
		err    *Error
		status int
		want   string
	}{
		{"invalid request with param", InvalidRequest("messages[3].tool_call_id", "Unknown tool_call_id."), 400,
			`{"error":{"message":"Unknown tool_call_id.","type":"invalid_request_error","param":"messages[3].tool_call_id","code":null}}`},
		{"invalid request without param", InvalidRequest("", "bad"), 400,
			`{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`},
		{"model not found", ModelNotFound("team/x"), 404,
			`{"error":{"message":"The model ` + "`team/x`" + ` does not exist or you do not have access to it.",
				"type":"invalid_request_error","param":"model","code":"model_not_found"}}`},
		{"invalid api key", InvalidAPIKey("Incorrect API key provided."), 401,
			`{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{"permission", PermissionDenied("no"), 403,
			`{"error":{"message":"no","type":"permission_error","param":null,"code":"permission_denied"}}`},
		{"session busy", SessionBusy("busy"), 409,
			`{"error":{"message":"busy","type":"invalid_request_error","param":null,"code":"session_busy"}}`},
		{"too large", RequestTooLarge(4194304), 413,
			`{"error":{"message":"The request body exceeds the limit of 4194304 bytes.","type":"invalid_request_error","param":null,"code":"request_too_large"}}`},
		{"rate limited", RateLimited("slow down"), 429,
			`{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{"internal", InternalError("oops"), 500,
			`{"error":{"message":"oops","type":"server_error","param":null,"code":"internal_error"}}`},
		{"upstream", UpstreamError("upstream failed"), 502,
			`{"error":{"message":"upstream failed","type":"server_error","param":null,"code":"upstream_error"}}`},
		{"unavailable", Unavailable("shutting down"), 503,
			`{"error":{"message":"shutting down","type":"server_error","param":null,"code":"service_unavailable"}}`},
		{"upstream timeout", UpstreamTimeout("too slow"), 504,
			`{"error":{"message":"too slow","type":"server_error","param":null,"code":"upstream_timeout"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Status != tt.status {
				t.Errorf("status = %d, want %d", tt.err.Status, tt.status)
			}
			assertJSON(t, tt.want, tt.err)
		})
	}
}

func TestErrorFrameAndAsError(t *testing.T) {
	got := string(ErrorFrame(UpstreamError("model failed")))
	want := "data: {\"error\":{\"message\":\"model failed\",\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n"
	if got != want {
		t.Errorf("ErrorFrame = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("handling: %w", InvalidRequest("n", "no"))
	e, ok := AsError(wrapped)
	if !ok || e.Param != "n" {
		t.Errorf("AsError(%v) = %v, %v", wrapped, e, ok)
	}
	if want := "openai 400 invalid_request_error (n): no"; e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if _, ok := AsError(fmt.Errorf("plain")); ok {
		t.Error("AsError found an *Error in a plain error")
	}
}
