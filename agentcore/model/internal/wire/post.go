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
