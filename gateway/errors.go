package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/auth"
	"github.com/agentgate/agentgate/gateway/openaiwire"
	"github.com/agentgate/agentgate/limits"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// apiError is an error decided for a client: the status and the words both
// surfaces show. It is built only by classify and the helpers below, so
// raw internal error text never reaches a client.
type apiError struct {
	status     int
	kind       string // OpenAI error type
	code       string
	param      string
	message    string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", code: "invalid_request", param: param, message: msg}
}

func notFound(msg string) *apiError {
	return &apiError{status: http.StatusNotFound, kind: "invalid_request_error", code: "not_found", message: msg}
}

// classify maps any error from the runtime, the stores or the providers to
// what the client is told. It is the one place statuses are decided.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if we, ok := openaiwire.AsError(err); ok {
		return &apiError{status: we.Status, kind: we.Type, code: we.Code, param: we.Param, message: we.Message}
	}
	var authErr *auth.Error
	if errors.As(err, &authErr) {
		msg := "Invalid bearer token."
		if authErr.Reason == auth.ReasonMissing {
			msg = "Missing bearer token: send the header Authorization: Bearer <token>."
		}
		return &apiError{status: http.StatusUnauthorized, kind: "invalid_request_error", code: "invalid_api_key", message: msg}
	}
	var exceeded *limits.ExceededError
	if errors.As(err, &exceeded) {
		return limitError(exceeded)
	}
	var denied *modelDeniedError
	if errors.As(err, &denied) {
		return &apiError{status: http.StatusForbidden, kind: "invalid_request_error", code: "model_not_allowed", param: "model",
			message: "Your token does not allow model " + denied.model + "."}
	}
	var pe *paramError
	if errors.As(err, &pe) {
		if pe.bound {
			return &apiError{status: http.StatusForbidden, kind: "invalid_request_error", code: "parameter_bound_by_token", param: pe.field, message: pe.message}
		}
		return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", code: pe.code, param: pe.field, message: pe.message}
	}
	var missingParam *agentcore.ParamError
	if errors.As(err, &missingParam) {
		return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", code: "missing_parameter",
			message: "The request cannot run: " + missingParam.Error() + "."}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, kind: "invalid_request_error", code: "request_too_large",
			message: "The request body exceeds the limit of " + strconv.FormatInt(mbe.Limit, 10) + " bytes."}
	}
	var uc *agentcore.UnknownCallError
	if errors.As(err, &uc) {
		return &apiError{status: http.StatusBadRequest, kind: "invalid_request_error", code: "unknown_tool_call", param: "messages",
			message: "No paused invocation is waiting for a result of tool call " + strconv.Quote(uc.ID) + "."}
	}
	var missing *agentcore.MissingStateError
	if errors.As(err, &missing) {
		return &apiError{status: http.StatusInternalServerError, kind: "server_error", code: "agent_error", message: missing.Error()}
	}
	if me, ok := model.AsError(err); ok {
		return modelError(me)
	}
	for _, m := range sentinels {
		if errors.Is(err, m.err) {
			e := m.api
			return &e
		}
	}
	return &apiError{status: http.StatusInternalServerError, kind: "server_error", code: "internal_error", message: "The gateway failed to process the request."}
}

// sentinels maps the sentinel errors callers branch on to what a client is
// told, first match wins.
var sentinels = func() []struct {
	err error
	api apiError
} {
	invalid := func(status int, code, msg string) apiError {
		return apiError{status: status, kind: "invalid_request_error", code: code, message: msg}
	}
	server := func(status int, code, msg string) apiError {
		return apiError{status: status, kind: "server_error", code: code, message: msg}
	}
	notFound := invalid(http.StatusNotFound, "session_not_found", "Session not found.")
	return []struct {
		err error
		api apiError
	}{
		{errNotOwner, notFound}, // another user's session is as good as missing
		{errRunCancelled, invalid(http.StatusConflict, "run_cancelled", "The run was cancelled.")},
		{runs.ErrShutdown, server(http.StatusServiceUnavailable, "shutting_down", "The server is shutting down; retry the request.")},
		{sessions.ErrNotFound, notFound},
		{sessions.ErrExists, invalid(http.StatusConflict, "session_exists", "Session already exists.")},
		{sessions.ErrConflict, invalid(http.StatusConflict, "session_busy", "The session is busy with another request; retry when it has finished.")},
		{sessions.ErrQueueFull, apiError{status: http.StatusTooManyRequests, kind: "rate_limit_error", code: "session_queue_full",
			message: "Too many turns wait for this session (sessions.max_queued); retry when fewer do.", retryAfter: time.Second}},
		{sessions.ErrInvalid, invalid(http.StatusBadRequest, "invalid_request", "Invalid session request.")},
		{artifact.ErrNotFound, invalid(http.StatusNotFound, "artifact_not_found", "Artifact not found.")},
		{sessions.ErrUnavailable, server(http.StatusServiceUnavailable, "session_store_unavailable", "The session store is unavailable; retry shortly.")},
		{errBodyTimeout, invalid(http.StatusRequestTimeout, "request_timeout", "The request body did not arrive in time.")},
		{context.DeadlineExceeded, server(http.StatusGatewayTimeout, "timeout", "The request timed out.")},
		{context.Canceled, invalid(499, "client_closed_request", "The client closed the request.")},
	}
}()

// modelError maps a provider failure: rate limits stay 429, timeouts 504,
// an unavailable upstream 503, anything else the upstream did wrong 502.
func modelError(me *model.Error) *apiError {
	e := &apiError{kind: "server_error", code: "upstream_error", retryAfter: me.RetryAfter,
		message: "The upstream model " + me.Provider + "/" + me.Model + " failed"}
	if me.Status != 0 {
		e.message += " with status " + strconv.Itoa(me.Status)
	}
	e.message += "."
	switch {
	case me.Status == http.StatusTooManyRequests || me.Code == "rate_limited":
		e.status, e.kind, e.code = http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded"
		e.message = "The upstream model " + me.Provider + "/" + me.Model + " is rate limited; retry later."
	case me.Code == "timeout" || me.Status == http.StatusGatewayTimeout || me.Status == http.StatusRequestTimeout:
		e.status, e.code = http.StatusGatewayTimeout, "upstream_timeout"
	case me.Status == http.StatusServiceUnavailable:
		e.status, e.code = http.StatusServiceUnavailable, "upstream_unavailable"
	default:
		e.status = http.StatusBadGateway
	}
	return e
}

// jsonContentType is the Content-Type of the JSON answers writeJSON
// writes. Shared and read only: net/http only reads a header's values,
// and a slice of its own per answer was an allocation.
var jsonContentType = []string{"application/json; charset=utf-8"}

// writeJSON answers 200 with body, JSON already encoded, and sends it at
// once: net/http would send an answer that fits its buffer only when the
// handler returned, after what the request does once it has answered (the
// run's end in the registry, the access log, the metrics), which the
// client then waited for. With its length set the answer is still one
// write, as net/http would have made it.
func writeJSON(c *gin.Context, body []byte) {
	h := c.Writer.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	c.Status(http.StatusOK)
	_, _ = c.Writer.Write(body)
	c.Writer.Flush()
}

// writeOpenAIError answers with OpenAI's error envelope.
func writeOpenAIError(c *gin.Context, e *apiError) {
	setUnauthorized(c, e.status)
	if e.retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(retrySeconds(e.retryAfter)))
	} else if e.status == http.StatusTooManyRequests {
		c.Header("Retry-After", "1")
	}
	c.JSON(e.status, toWire(e))
}

func toWire(e *apiError) *openaiwire.Error {
	return &openaiwire.Error{Status: e.status, Message: e.message, Type: e.kind, Param: e.param, Code: e.code}
}

// writeNativeError answers with ADK's {"error": "..."}.
func writeNativeError(c *gin.Context, e *apiError) {
	setUnauthorized(c, e.status)
	if e.retryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(retrySeconds(e.retryAfter)))
	}
	c.JSON(e.status, gin.H{"error": e.message})
}
