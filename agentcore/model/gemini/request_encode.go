package gemini

import (
	"bytes"
	"encoding/json"
	"sync"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/internal/jsonenc"
)

// encode writes w byte for byte as json.Marshal does
// (TestEncodeMatchesEncodingJSON). What grows with a session, the contents
// and the system instruction, is written by hand (jsonenc.AppendContent);
// the rest of the body (tools, settings) goes through encoding/json, into
// a buffer kept for the next call, and is copied after the contents: the
// body is one allocation.
func (w *wireRequest) encode() ([]byte, error) {
	rest := *w
	rest.Contents, rest.SystemInstruction = nil, nil
	te := tailEncoders.Get().(*tailEncoder)
	defer te.put()
	te.buf.Reset()
	if err := te.enc.Encode(&rest); err != nil {
		return nil, err
	}
	tail := bytes.TrimSuffix(te.buf.Bytes(), []byte("\n"))
	var err error
	b := make([]byte, 0, w.sizeHint()+len(tail))
	b = append(b, '{')
	if len(w.Contents) > 0 {
		b = append(b, `"contents":`...)
		if b, err = jsonenc.AppendContents(b, w.Contents); err != nil {
			return nil, err
		}
	}
	if w.SystemInstruction != nil {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"systemInstruction":`...)
		if b, err = jsonenc.AppendContent(b, w.SystemInstruction); err != nil {
			return nil, err
		}
	}
	switch {
	case len(tail) == 2: // {}
		return append(b, '}'), nil
	case len(b) > 1:
		b = append(b, ',')
	}
	return append(b, tail[1:]...), nil
}

// tailEncoder is a json.Encoder (which writes what json.Marshal returns,
// and a newline) and its buffer.
type tailEncoder struct {
	buf *bytes.Buffer
	enc *json.Encoder
}

var tailEncoders = sync.Pool{New: func() any {
	buf := new(bytes.Buffer)
	return &tailEncoder{buf: buf, enc: json.NewEncoder(buf)}
}}

// put returns te to the pool unless its buffer grew large (a request with
// many tools), which the pool would keep alive.
func (te *tailEncoder) put() {
	if te.buf.Cap() <= 64<<10 {
		tailEncoders.Put(te)
	}
}

// sizeHint is about the length of w's contents and system instruction in
// JSON, so that encode allocates once most of the time.
func (w *wireRequest) sizeHint() int {
	n := 64
	for _, c := range w.Contents {
		n += contentHint(c)
	}
	return n + contentHint(w.SystemInstruction)
}

func contentHint(c *genai.Content) int {
	if c == nil {
		return 8
	}
	n := 32
	for _, p := range c.Parts {
		n += 32
		if p != nil {
			n += len(p.Text) + len(p.Text)/8 + len(p.ThoughtSignature)*4/3
			if p.FunctionCall != nil || p.FunctionResponse != nil {
				n += 192
			}
		}
	}
	return n
}
