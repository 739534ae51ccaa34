// Package wire holds what the providers that speak their upstream's HTTP
// API themselves (openai, gemini) share: an SSE reader and per-request
// header copies.
package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// SSEReader frames a text/event-stream body into events, reusing its
// buffers (openai-go's ssestream decoder allocated per event). The rules
// are those of that decoder, as the HTML standard describes them:
//
//   - lines end with "\n", "\r\n" or "\r";
//   - an empty line ends an event, if it had a data line;
//   - "data" lines are joined with "\n"; "event" names the event; other
//     fields and comments (lines starting with ':') are ignored; one space
//     after the ':' is dropped;
//   - the body ending inside an event (a data line not yet followed by an
//     empty line) is an error wrapping io.ErrUnexpectedEOF, except when that
//     data is "[DONE]" (OpenAI's last event): nothing of the answer is lost
//     then.
type SSEReader struct {
	r bufio.Reader
	// data is the current event's data, event its name.
	data  []byte
	event string
	// long collects a line longer than the reader's buffer.
	long []byte
	// skipLF is set after a line that ended with '\r': a '\n' right after
	// it belongs to that line end.
	skipLF bool
}

// maxEvent bounds a line and an event's data, as openai-go's decoder did
// (its bufio.Scanner's limit).
const maxEvent = 32 << 20

// doneData is OpenAI's last event.
var doneData = []byte("[DONE]")

var errEventTooLong = fmt.Errorf("a server-sent event longer than %d MiB", maxEvent>>20)

// NewSSEReader returns a reader of the events of r.
func NewSSEReader(r io.Reader) *SSEReader {
	s := new(SSEReader)
	s.Init(r)
	return s
}

// Init makes s a reader of the events of r, as NewSSEReader's is: an
// SSEReader held by value in its user's struct, its bufio.Reader in it, is
// not two allocations of a stream's own. s must not be copied after.
func (s *SSEReader) Init(r io.Reader) {
	// 1 KiB holds a chunk's line (a few hundred bytes); longer lines go to
	// s.long. The upstream connection under it reads 1 KiB at a time too
	// (model.NewTransport), so a larger buffer here would only cost every
	// open stream memory.
	if _, ok := r.(*bufio.Reader); ok {
		// bufio.NewReaderSize would return r itself, which s must not
		// copy: a reader over it (no body the providers read is one).
		r = struct{ io.Reader }{r}
	}
	// One allocation is the room of an event's data and of a line that
	// spans two reads, lineRoom bytes each: three allocations where each
	// grew on its own. Longer ones grow apart, as before.
	room := make([]byte, 2*lineRoom)
	*s = SSEReader{r: *bufio.NewReaderSize(r, 1<<10), data: room[:0:lineRoom], long: room[lineRoom:lineRoom]}
}

// lineRoom is the room SSEReader.Init makes for an event's data and for a
// line that spans two reads: a chat-completions chunk's line is about 200
// bytes from vLLM or Ollama, 300 from OpenAI.
const lineRoom = 384

// Next returns the next event's data, valid until the next call; io.EOF
// at the end of the body.
func (s *SSEReader) Next() ([]byte, error) {
	s.data, s.event = s.data[:0], ""
	hasData := false
	for {
		line, err := s.line()
		if err == io.EOF && line == nil {
			if hasData && !bytes.HasPrefix(s.data, doneData) {
				return nil, fmt.Errorf("the stream ended inside an event: %w", io.ErrUnexpectedEOF)
			}
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		if len(line) == 0 {
			if hasData {
				return s.data, nil
			}
			s.event = ""
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "data":
			if hasData {
				s.data = append(s.data, '\n')
			}
			if len(s.data)+len(value) > maxEvent {
				return nil, errEventTooLong
			}
			s.data = append(s.data, value...)
			hasData = true
		case "event":
			s.event = string(value)
		}
	}
}

// line returns the next line without its end, valid until the next read.
// At the end of the body it returns the last line if it had no line end
// (with a nil error), then nil and io.EOF.
func (s *SSEReader) line() ([]byte, error) {
	if s.skipLF {
		s.skipLF = false
		if b, err := s.r.Peek(1); err == nil && b[0] == '\n' {
			_, _ = s.r.Discard(1)
		}
	}
	s.long = s.long[:0]
	for {
		buf, err := s.peek()
		if i := lineEnd(buf); i >= 0 {
			n := i + 1
			switch {
			case buf[i] == '\n':
			case i+1 < len(buf):
				if buf[i+1] == '\n' {
					n++
				}
			default:
				s.skipLF = true // the '\n' of a "\r\n" may not be here yet
			}
			_, _ = s.r.Discard(n)
			if len(s.long) > 0 {
				s.long = append(s.long, buf[:i]...)
				return s.long, nil
			}
			return buf[:i], nil
		}
		if len(s.long)+len(buf) > maxEvent {
			return nil, errEventTooLong
		}
		s.long = append(s.long, buf...)
		_, _ = s.r.Discard(len(buf))
		if err != nil {
			if len(s.long) > 0 {
				return s.long, nil
			}
			return nil, err
		}
	}
}

// Buffered reports how many bytes of the body are read and not yet
// returned: more than none means Next may return without reading.
func (s *SSEReader) Buffered() int { return s.r.Buffered() }

// Event returns the name of the event Next returned last ("" for none).
func (s *SSEReader) Event() string { return s.event }

// peek returns what is buffered, reading when nothing is; the error only
// with an empty buffer.
func (s *SSEReader) peek() ([]byte, error) {
	if s.r.Buffered() == 0 {
		if _, err := s.r.Peek(1); err != nil {
			return nil, err
		}
	}
	return s.r.Peek(s.r.Buffered())
}

// lineEnd returns the offset of the first '\n' or '\r' in b, -1 if none.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	lim := b
	if i >= 0 {
		lim = b[:i]
	}
	if j := bytes.IndexByte(lim, '\r'); j >= 0 {
		return j
	}
	return i
}
