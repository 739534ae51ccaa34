package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
)

var (
	// errStreamCut reports a stream that ended before a finish reason.
	errStreamCut = errors.New("the stream ended before a finish reason")
	// errNoCandidates reports an answer with neither candidates nor a
	// block reason.
	errNoCandidates = errors.New("the response has no candidates")
)

// failure turns what went wrong into the error to return: ctx's own error
// when the caller gave up, else a *model.Error free of credentials.
func (c *call) failure(ctx context.Context, err error, started bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	e := classify(err, started)
	e.Provider, e.Model = c.p.name, c.id
	e.Message = c.p.keys.Redact(e.Message)
	if e.Err != nil {
		e.Err = c.p.keys.Scrub(e.Err)
	}
	return e
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// apiError is an error from the upstream: an answer with a status of 300
// or more (header is its headers), or an error event inside a stream
// (status is then the envelope's code, header nil). The fields are those
// of Google's error envelope, {"error": {"code", "message", "status",
// "details"}}.
type apiError struct {
	status  int
	header  http.Header
	message string
	details []map[string]any
}

func (e *apiError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("upstream answered %d", e.status)
	}
	return fmt.Sprintf("upstream answered %d: %s", e.status, e.message)
}

// wireError is Google's error envelope's "error" member.
type wireError struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details"`
}

// readAPIError reads and closes an error answer's body. A body that is no
// error envelope (an HTML page from a proxy, say) is the message itself,
// as genai took it.
func readAPIError(resp *http.Response) *apiError {
	defer resp.Body.Close()
	e := &apiError{status: resp.StatusCode, header: resp.Header}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error != nil {
		e.message, e.details = env.Error.Message, env.Error.Details
	} else {
		e.message = string(data)
	}
	return e
}

// streamError is the error of an error event inside a stream.
func streamError(w *wireError) *apiError {
	return &apiError{status: w.Code, message: w.Message, details: w.Details}
}

// classify maps an error of an attempt or of reading its answer to a
// model.Error without Provider and Model.
func classify(err error, started bool) *model.Error {
	var apiErr *apiError
	switch {
	case errors.As(err, &apiErr):
		status := apiErr.status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		e := model.HTTPError(status, apiErr.header)
		e.Message = apiErr.message
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		if e.RetryAfter == 0 {
			e.RetryAfter = retryInfo(apiErr.details)
		}
		return e
	case errors.Is(err, context.DeadlineExceeded):
		return &model.Error{Code: "timeout", Retryable: true, Message: "the upstream did not finish within the timeout", Err: err}
	case started:
		return &model.Error{Code: "stream_cut", Retryable: true, Message: "the stream broke off: " + err.Error(), Err: err}
	case isNetwork(err):
		return &model.Error{Code: "network", Retryable: true, Message: err.Error(), Err: err}
	}
	return &model.Error{Code: "upstream_error", Message: "unreadable response: " + err.Error(), Err: err}
}

func isNetwork(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// retryInfo reads google.rpc.RetryInfo ("retryDelay": "30s") from an
// error's details, Gemini's way of saying when to come back.
func retryInfo(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		if s, ok := d["retryDelay"].(string); ok {
			if v, err := time.ParseDuration(s); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}
