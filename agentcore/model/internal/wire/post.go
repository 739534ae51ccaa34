package wire

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
)

// ParseURL parses an absolute request URL once, for Post, as
// http.NewRequest would parse it for every request: its host's empty port
// (a trailing ":") removed.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if strings.LastIndex(u.Host, ":") > strings.LastIndex(u.Host, "]") {
		u.Host = strings.TrimSuffix(u.Host, ":")
	}
	return u, nil
}

// Post sends body to u (from ParseURL) once, under a timeout of its own
// that bounds the whole attempt, the reading of the answer included:
// closing the response's body ends it. Any answer is returned, whatever
// its status; the caller reads and closes its body. u and header are sent
// as they are, not copied: the caller must not change them while the
// request runs (http.Client only reads a request's URL, and its headers
// unless it has a cookie jar; see http.RoundTripper), so a provider's
// requests share the URL it parsed once.
//
// The request is the one http.NewRequestWithContext makes (a body of known
// length that can be read again, Host from the URL), made without parsing
// the URL and with its body and answer's wrapper in one allocation (see
// attempt).
// Its Host is left empty where NewRequest sets the URL's host: the same
// bytes on the wire (the URL's host is sent when Host is empty), and no
// copy of the URL by http.Client.
func Post(ctx context.Context, client *http.Client, u *url.URL, header http.Header, body []byte, timeout time.Duration) (*http.Response, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	a := new(attempt)
	a.resp.cancel = cancel
	a.body.Reset(body)
	req := http.Request{
		Method:        http.MethodPost,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(&a.body), // what net/http knows as a body in memory
		ContentLength: int64(len(body)),
		GetBody: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		},
	}
	if len(body) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	// The request with its context, in the attempt: WithContext's copy
	// is made on the stack, and copied there.
	a.req = *req.WithContext(actx)
	resp, err := client.Do(&a.req)
	if err != nil {
		cancel()
		return nil, err
	}
	a.resp.ReadCloser = resp.Body
	resp.Body = &a.resp
	return resp, nil
}

// attempt is what Post allocates for a request: the request, its body's
// reader and the answer's wrapper.
type attempt struct {
	req  http.Request
	body bytes.Reader
	resp attemptBody
}

// attemptBody ends its attempt's timeout when closed, and calls its
// pacer's Waiting, once PacedBody gave it one, before each read.
type attemptBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	pace   model.Pacer
	rest   io.LimitedReader // what Finish reads
}

func (b *attemptBody) Read(p []byte) (int, error) {
	if b.pace != nil {
		b.pace.Waiting()
	}
	return b.ReadCloser.Read(p)
}

func (b *attemptBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// The most Finish reads, and waits for, past an answer's last event.
const (
	finishMax  = 4 << 10
	finishWait = 50 * time.Millisecond
)

// Finish closes the body of an answer whose last event has been read
// (OpenAI's "data: [DONE]"), after reading what is left of it: the
// chunked body's end, which the server sends with that event or just
// after it. Closed before its end, a body takes its connection with it
// (net/http reuses a connection only once the body was read to its
// end), and the next call dials a new one; read to its end, the
// connection goes back to the pool. The read is bounded, finishMax bytes
// and finishWait (then the attempt is ended, as a timeout would): an
// upstream that holds the body open after its last event costs that
// much, once, and its connection.
func Finish(body io.ReadCloser) error {
	b, ok := body.(*attemptBody)
	if !ok {
		return body.Close()
	}
	t := time.AfterFunc(finishWait, b.cancel)
	// Read past the pacer: nothing is left to pace. (io.CopyN, with the
	// limited reader it would allocate in the attempt.)
	b.rest = io.LimitedReader{R: b.ReadCloser, N: finishMax}
	_, _ = io.Copy(io.Discard, &b.rest)
	t.Stop()
	return b.Close()
}
