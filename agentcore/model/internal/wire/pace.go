package wire

import (
	"io"

	"github.com/agentgate/agentgate/agentcore/model"
)

// PacedBody returns body calling p.Waiting before each of its reads (each
// one may block on the network); body itself when p is nil.
func PacedBody(body io.ReadCloser, p model.Pacer) io.ReadCloser {
	if p == nil || body == nil {
		return body
	}
	return &pacedBody{ReadCloser: body, p: p}
}

type pacedBody struct {
	io.ReadCloser
	p model.Pacer
}

func (b *pacedBody) Read(p []byte) (int, error) {
	b.p.Waiting()
	return b.ReadCloser.Read(p)
}
