package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentgate/agentgate/agentcore/model/internal/wire"
)

// The response side of chat completions, decoded by this package.
//
// A successful body is read here, into the few fields the provider uses:
// openai-go's decoding (used before the provider sent its requests itself) (reflection per field and chunk, and a metadata
// map for every object) was about half of the gateway's CPU on a streamed
// turn, and encoding/json's reflection still 15 %, so the structs are
// filled by a decoder of their own (wire_decode.go) and the stream is
// framed by wire.SSEReader. The json tags are the contract that
// decoder follows (it is tested against encoding/json with them). The
// structs are as lenient as openai-go's: a field of an unexpected type is
// left empty instead of failing the call (see decodeBody), and unknown
// fields are ignored.

// wireCompletion is a chat.completion (non-streamed) or a
// chat.completion.chunk (streamed; choices carry a delta instead of a
// message).
type wireCompletion struct {
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`
	// Error is set (possibly to JSON null) by an in-band error event of a
	// stream; openai-go ends such a stream with a *ssestream.StreamError.
	Error json.RawMessage `json:"error"`
}

type wireChoice struct {
	Index        int64       `json:"index"`
	Message      wireMessage `json:"message"`
	Delta        wireMessage `json:"delta"`
	FinishReason string      `json:"finish_reason"`
}

// wireMessage is a message or a delta. ReasoningContent and Reasoning are
// the extensions OpenAI-compatible servers use for reasoning text.
type wireMessage struct {
	Content          string         `json:"content"`
	Refusal          string         `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content"`
	Reasoning        string         `json:"reasoning"`
	ToolCalls        []wireToolCall `json:"tool_calls"`
}

// reasoning returns the first non-empty reasoning extension.
func (m *wireMessage) reasoning() string {
	if m.ReasoningContent != "" {
		return m.ReasoningContent
	}
	return m.Reasoning
}

// empty reports whether m has nothing set.
func (m *wireMessage) empty() bool {
	return m.Content == "" && m.Refusal == "" && m.ReasoningContent == "" && m.Reasoning == "" && m.ToolCalls == nil
}

// text returns the message's text: its content and its refusal (one of
// them, as a rule), joined only when both are set.
func (m *wireMessage) text() string {
	if m.Refusal == "" {
		return m.Content
	}
	return m.Content + m.Refusal
}

// wireToolCall is a complete call (in a message) or a fragment of one (in
// a delta; Index is nil when the server sent none).
type wireToolCall struct {
	Index    *int64 `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// decodeBody decodes one JSON document into c, with the decoder of
// wire_decode.go. A value of the wrong type (a number where a string
// belongs, an array of content parts, ...) leaves its field empty and is
// not an error, as with openai-go; malformed JSON is.
func decodeBody(data []byte, c *wireCompletion) error {
	var d decoder
	return d.decode(data, c)
}

// maxBody bounds what a Content-Length makes readCompletion allocate ahead.
const maxBody = 8 << 20

// readCompletion reads and decodes a non-streamed answer into c (which
// the caller may keep on its stack), closing the body once read, so that
// the connection goes back to the pool. The body is read into a buffer of
// answerBufs: what is decoded keeps no part of it (strings are copies,
// but for a model name that is asked, the model the call asked for: the
// string is reused, as most answers name it).
func readCompletion(resp *http.Response, c *wireCompletion, asked string) error {
	size := 512
	if n := resp.ContentLength; n > 0 && n < maxBody {
		size = int(n) + 1 // the read that sees the end needs room for a byte
	}
	buf := answerBufs.Get().(*[]byte)
	if cap(*buf) < size {
		*buf = make([]byte, 0, size)
	}
	body, err := readAll(resp.Body, (*buf)[:0])
	_ = resp.Body.Close()
	if cap(body) <= maxPooledAnswer {
		*buf = body[:0] // keep what it grew to
	}
	if err != nil {
		err = fmt.Errorf("error reading response body: %w", err)
	} else {
		var d decoder
		d.giveRoom()
		d.model = asked
		if err = d.decode(body, c); err != nil {
			err = fmt.Errorf("error parsing response json: %w", err)
		}
	}
	answerBufs.Put(buf)
	return err
}

// answerBufs holds the buffers readCompletion reads answers into, a
// *[]byte each.
var answerBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer is the largest buffer answerBufs keeps: a rare long
// answer is not held on to for the short ones.
const maxPooledAnswer = 64 << 10

// readAll appends what r holds to buf, as io.ReadAll does, but into buf's
// capacity first: sized by Content-Length, one allocation reads the body
// (bytes.Buffer.ReadFrom wants 512 bytes free for every read, and so
// allocates that much more).
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 512)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// chunkStream reads a streamed answer: wire.SSEReader frames the
// events and each event's data is decoded here, with the rules of
// openai-go's ssestream.Stream: "[DONE]" ends the stream, an event with an
// "error" member ends it with a *ssestream.StreamError. cur is valid until
// the next call of next.
type chunkStream struct {
	body io.ReadCloser
	sse  wire.SSEReader // set when body is
	dec  decoder
	cur  wireCompletion
	err  error
	// done is set once "[DONE]" was read.
	done bool
}

// init makes s the reader of resp's body (nothing to read without one),
// reusing asked, the model the call asked for, as the chunks' model name
// when they name it (see readCompletion).
// A method rather than a constructor: s stays in its caller's frame, its
// SSE reader and that reader's bufio.Reader in it.
func (s *chunkStream) init(resp *http.Response, asked string) {
	if resp == nil || resp.Body == nil {
		return
	}
	s.body = resp.Body
	s.sse.Init(resp.Body)
	s.dec.stream, s.dec.model = true, asked
	s.dec.giveRoom()
}

var doneData = []byte("[DONE]")

// next decodes the next chunk into s.cur; false at the end of the stream
// or on an error (see err).
func (s *chunkStream) next() bool {
	if s.err != nil || s.body == nil {
		return false
	}
	data, err := s.sse.Next()
	if err != nil {
		if err != io.EOF {
			s.err = err
		}
		return false
	}
	if bytes.HasPrefix(data, doneData) {
		s.done = true
		return false
	}
	// The choices' array is reused from chunk to chunk, cleared: the
	// decoder fills what it reuses without zeroing it.
	choices := s.cur.Choices[:cap(s.cur.Choices)]
	clear(choices)
	s.cur = wireCompletion{Choices: choices[:0]}
	if err := s.dec.decode(data, &s.cur); err != nil {
		s.err = err
		return false
	}
	if len(s.cur.Error) > 0 {
		ev := ssestream.Event{Type: s.sse.Event(), Data: bytes.Clone(data)}
		s.err = &ssestream.StreamError{Message: "received error while streaming: " + string(s.cur.Error), Event: ev}
		return false
	}
	return true
}

// close closes the body; after "[DONE]", read to its end first, so that
// the connection is reused (wire.Finish).
func (s *chunkStream) close() {
	switch {
	case s.body == nil:
	case s.done:
		_ = wire.Finish(s.body)
	default:
		_ = s.body.Close()
	}
}
