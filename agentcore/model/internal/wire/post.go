package wire

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// Post sends body to url once, under a timeout of its own that bounds the
// whole attempt, the reading of the answer included: closing the
// response's body ends it. Any answer is returned, whatever its status;
// the caller reads and closes its body.
func Post(ctx context.Context, client *http.Client, url string, header http.Header, body []byte, timeout time.Duration) (*http.Response, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &attemptBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// attemptBody ends its attempt's timeout when closed.
type attemptBody struct {
	io.ReadCloser
	cancel context.CancelFunc
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
	inner := body
	if p, ok := inner.(*pacedBody); ok {
		inner = p.ReadCloser // nothing is left to pace
	}
	b, ok := inner.(*attemptBody)
	if !ok {
		return body.Close()
	}
	t := time.AfterFunc(finishWait, b.cancel)
	_, _ = io.CopyN(io.Discard, b.ReadCloser, finishMax)
	t.Stop()
	return b.Close()
}
