package wire

import (
	"io"

	"github.com/agentgate/agentgate/agentcore/model"
)

// PacedBody returns body, an answer's from Post, calling p.Waiting before
// each of its reads (each one may block on the network); body unchanged
// when p is nil. The pacer is kept in the attempt's own wrapper of the
// body (attemptBody), not in a wrapper of its own: a stream's allocation
// fewer.
func PacedBody(body io.ReadCloser, p model.Pacer) io.ReadCloser {
	if p != nil && body != nil {
		body.(*attemptBody).pace = p
	}
	return body
}
