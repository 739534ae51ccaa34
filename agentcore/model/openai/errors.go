package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentgate/agentgate/agentcore/model"
)

// errStreamCut reports a stream that ended cleanly but before the upstream
// said the turn was finished.
var errStreamCut = errors.New("the stream ended before a finish reason")

// failure turns what went wrong into the error to yield: ctx's own error
// when the caller gave up, else a *model.Error free of credentials.
func (c *call) failure(ctx context.Context, err error, resp *http.Response, started bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	e := classify(err, resp, started)
	e.Provider, e.Model = c.p.name, c.id
	e.Message = c.p.keys.Redact(e.Message)
	if e.Err != nil {
		e.Err = c.p.keys.Scrub(e.Err)
	}
	return e
}

// classify maps an error from openai-go (and the raw response, when there
// was one) to a model.Error without Provider and Model.
func classify(err error, resp *http.Response, started bool) *model.Error {
	var apiErr *oai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		e := model.HTTPError(apiErr.StatusCode, h)
		e.Message = apiErr.Message
		if e.Message == "" {
			e.Message = http.StatusText(apiErr.StatusCode)
		}
		if apiErr.Code == "insufficient_quota" {
			e.Code, e.Retryable = "quota_exceeded", false
		}
		return e
	case resp != nil && resp.StatusCode >= 400:
		// An error body openai-go could not decode (an HTML page from a proxy).
		e := model.HTTPError(resp.StatusCode, resp.Header)
		e.Message = http.StatusText(resp.StatusCode)
		return e
	case errors.As(err, &streamErr):
		return &model.Error{Code: "upstream_error", Retryable: true, Message: streamErrorMessage(streamErr)}
	case errors.Is(err, context.DeadlineExceeded):
		return &model.Error{Code: "timeout", Retryable: true, Message: "the upstream did not finish within the timeout", Err: err}
	case started:
		return &model.Error{Code: "stream_cut", Retryable: true, Message: "the stream broke off: " + err.Error(), Err: err}
	case resp != nil:
		return &model.Error{Code: "upstream_error", Retryable: true, Message: "unreadable response: " + err.Error(), Err: err}
	}
	return &model.Error{Code: "network", Retryable: true, Message: err.Error(), Err: err}
}

// streamErrorMessage extracts the message of an in-band error event.
func streamErrorMessage(se *ssestream.StreamError) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(se.Event.Data, &body) == nil && body.Error.Message != "" {
		return "error event in the stream: " + body.Error.Message
	}
	return "error event in the stream"
}
