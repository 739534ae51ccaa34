package gemini

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

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
func (c *call) failure(ctx context.Context, err error, last *lastResponse, started bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	e := classify(err, last, started)
	e.Provider, e.Model = c.p.name, c.id
	e.Message = c.p.keys.Redact(e.Message)
	if e.Err != nil {
		e.Err = c.p.keys.Scrub(e.Err)
	}
	return e
}

// classify maps an error from genai to a model.Error without Provider and
// Model. last holds the status and headers of the failed HTTP answer, when
// there was one (genai's APIError keeps neither the headers nor, for
// errors inside a stream, a reliable status).
func classify(err error, last *lastResponse, started bool) *model.Error {
	var apiErr genai.APIError
	status, header := last.get()
	switch {
	case errors.As(err, &apiErr):
		// The HTTP status wins; an error event inside a 200 stream has only
		// the code in its body.
		if status == 0 {
			status = apiErr.Code
		}
		if status == 0 {
			status = http.StatusInternalServerError
		}
		e := model.HTTPError(status, header)
		e.Message = apiErr.Message
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		if e.RetryAfter == 0 {
			e.RetryAfter = retryInfo(apiErr.Details)
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

// lastResponse holds the status and headers of the last non-2xx answer of
// one attempt.
type lastResponse struct {
	mu     sync.Mutex
	status int
	header http.Header
}

func (l *lastResponse) get() (int, http.Header) {
	if l == nil {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status, l.header
}

type lastResponseKey struct{}

// withRecorder returns a context under which the provider's transport
// records failed answers into the returned lastResponse.
func withRecorder(ctx context.Context) (context.Context, *lastResponse) {
	l := &lastResponse{}
	return context.WithValue(ctx, lastResponseKey{}, l), l
}

// recorder is the provider's HTTP transport: it passes requests on and
// notes the status and headers of non-2xx answers for classify.
type recorder struct{ next http.RoundTripper }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil && resp.StatusCode >= 300 {
		if l, ok := req.Context().Value(lastResponseKey{}).(*lastResponse); ok {
			l.mu.Lock()
			l.status, l.header = resp.StatusCode, resp.Header.Clone()
			l.mu.Unlock()
		}
	}
	return resp, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// wrapped transport.
func (r *recorder) CloseIdleConnections() {
	if c, ok := r.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
