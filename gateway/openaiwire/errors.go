package openaiwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error types as OpenAI names them in the error envelope.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypePermission     = "permission_error"
	TypeRateLimit      = "requests"
	TypeServer         = "server_error"
)

// Error is an error as the OpenAI surface reports it: an HTTP status and the
// four fields of OpenAI's error object. It marshals to the envelope
// {"error": {"message", "type", "param", "code"}} with all four keys present;
// an empty Param or Code becomes null, as OpenAI sends them.
//
// Message is shown to clients as is: build it from request data and fixed
// text, never from an internal error's Error().
type Error struct {
	// Status is the HTTP status to answer with.
	Status int
	// Message is the human-readable description.
	Message string
	// Type is the error class (TypeInvalidRequest, TypeServer, ...).
	Type string
	// Param is the path of the offending request field, like
	// "messages[3].tool_call_id", or "" when no single field is to blame.
	Param string
	// Code is a short machine-readable reason, or "".
	Code string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("openai %d %s", e.Status, e.Type)
	if e.Code != "" {
		s += "/" + e.Code
	}
	if e.Param != "" {
		s += " (" + e.Param + ")"
	}
	return s + ": " + e.Message
}

// ErrorObject is the inner error object of the envelope, as it goes on the wire.
// Param and Code are nil when empty.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Envelope is the body of an error response and of an in-stream error frame.
type Envelope struct {
	Error ErrorObject `json:"error"`
}

// Envelope returns e's wire form.
func (e *Error) Envelope() Envelope {
	return Envelope{Error: ErrorObject{Message: e.Message, Type: e.Type, Param: nullable(e.Param), Code: nullable(e.Code)}}
}

// MarshalJSON writes the envelope {"error": {...}}.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(e.Envelope())
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AsError finds an *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// InvalidRequest is a 400 invalid_request_error blaming param ("" for none).
func InvalidRequest(param, message string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Param: param, Message: message}
}

// ModelNotFound is OpenAI's 404 for an unknown model id.
func ModelNotFound(model string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeInvalidRequest, Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
}

// InvalidAPIKey is a 401 for a missing or rejected bearer token.
func InvalidAPIKey(message string) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: TypeInvalidRequest, Code: "invalid_api_key", Message: message}
}

// PermissionDenied is a 403: the caller is known but may not do this.
func PermissionDenied(message string) *Error {
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: "permission_denied", Message: message}
}

// SessionBusy is a 409: another run holds the session. SDKs retry 409s with
// backoff, which is what a busy session wants.
func SessionBusy(message string) *Error {
	return &Error{Status: http.StatusConflict, Type: TypeInvalidRequest, Code: "session_busy", Message: message}
}

// RequestTooLarge is a 413 for a body above limit bytes.
func RequestTooLarge(limit int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Type: TypeInvalidRequest, Code: "request_too_large",
		Message: fmt.Sprintf("The request body exceeds the limit of %d bytes.", limit)}
}

// RateLimited is a 429; the caller adds Retry-After.
func RateLimited(message string) *Error {
	return &Error{Status: http.StatusTooManyRequests, Type: TypeRateLimit, Code: "rate_limit_exceeded", Message: message}
}

// InternalError is a 500 for a failure of our own.
func InternalError(message string) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: TypeServer, Code: "internal_error", Message: message}
}

// UpstreamError is a 502: a model provider or remote agent failed or answered
// with something unusable.
func UpstreamError(message string) *Error {
	return &Error{Status: http.StatusBadGateway, Type: TypeServer, Code: "upstream_error", Message: message}
}

// Unavailable is a 503: we or the upstream are overloaded, starting or
// shutting down.
func Unavailable(message string) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Type: TypeServer, Code: "service_unavailable", Message: message}
}

// UpstreamTimeout is a 504: an upstream call did not answer in time.
func UpstreamTimeout(message string) *Error {
	return &Error{Status: http.StatusGatewayTimeout, Type: TypeServer, Code: "upstream_timeout", Message: message}
}
