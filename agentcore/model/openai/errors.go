package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

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

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// apiError is an answer with a status of 400 or more, with what its body
// said in OpenAI's error envelope ({"error": {"message", "type", "code"}}),
// when it was one.
type apiError struct {
	status  int
	header  http.Header
	message string
	code    string
}

func (e *apiError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("upstream answered %d", e.status)
	}
	return fmt.Sprintf("upstream answered %d: %s", e.status, e.message)
}

// readAPIError reads and closes an error answer's body. The envelope's
// code may be a string or a number (some compatible servers send the
// status); a body that is no envelope (an HTML page from a proxy) leaves
// message and code empty.
func readAPIError(resp *http.Response) *apiError {
	defer resp.Body.Close()
	e := &apiError{status: resp.StatusCode, header: resp.Header}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Error *struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &env) == nil && env.Error != nil {
		e.message = env.Error.Message
		_ = json.Unmarshal(env.Error.Code, &e.code)
	}
	return e
}

// classify maps an error of an attempt or of reading its answer (and the
// raw response, when there was one) to a model.Error without Provider and
// Model.
func classify(err error, resp *http.Response, started bool) *model.Error {
	var apiErr *apiError
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		e := model.HTTPError(apiErr.status, apiErr.header)
		e.Message = apiErr.message
		if e.Message == "" {
			e.Message = http.StatusText(apiErr.status)
		}
		if apiErr.code == "insufficient_quota" {
			e.Code, e.Retryable = "quota_exceeded", false
		}
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
