package openai

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/wire"
)

// readEvents reads every event of body with a wire.SSEReader; the error is nil
// at a clean end.
func readEvents(r io.Reader) ([]string, error) {
	s := wire.NewSSEReader(r)
	var out []string
	for {
		data, err := s.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, string(data))
	}
}

// readers gives body whole, a byte at a time, and in halves of reads, so
// that line ends fall across the reader's buffer fills.
func readers(body string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":    strings.NewReader(body),
		"one byte": iotest.OneByteReader(strings.NewReader(body)),
		"halves":   iotest.HalfReader(strings.NewReader(body)),
		// A *bufio.Reader the SSE reader reads over, not a copy of.
		"bufio": bufio.NewReaderSize(iotest.HalfReader(strings.NewReader(body)), 4<<10),
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 20000) // longer than the reader's buffer
	for _, tc := range []struct {
		name    string
		body    string
		want    []string
		wantCut bool
	}{
		{name: "events", body: "data: {\"a\":1}\n\ndata: [DONE]\n\n", want: []string{`{"a":1}`, "[DONE]"}},
		{name: "no space after the colon", body: "data:x\n\n", want: []string{"x"}},
		{name: "only one space dropped", body: "data:  x \n\n", want: []string{" x "}},
		{name: "multi-line data joined with \\n", body: "data: a\ndata: b\ndata:\n\n", want: []string{"a\nb\n"}},
		{name: "\\r\\n line ends", body: "data: a\r\n\r\ndata: b\r\n\r\n", want: []string{"a", "b"}},
		{name: "\\r line ends", body: "data: a\r\rdata: b\rdata: c\r\r", want: []string{"a", "b\nc"}},
		{name: "mixed line ends", body: "data: a\r\n\ndata: b\n\r\ndata: c\r\r\n", want: []string{"a", "b", "c"}},
		{name: "comments, other fields and empty events ignored", body: ": keepalive\n\nevent: chunk\nid: 7\nretry: 10\nfoo\n\n\n\ndata: a\n: note\n\n", want: []string{"a"}},
		{name: "a field name without colon", body: "data\n\n", want: []string{""}},
		{name: "a long line", body: "data: " + long + "\r\n\r\ndata: b\n\n", want: []string{long, "b"}},
		{name: "empty body", body: ""},
		{name: "end without a final empty line after [DONE]", body: "data: a\n\ndata: [DONE]\n", want: []string{"a"}},
		{name: "end without line end after [DONE]", body: "data: a\n\ndata: [DONE]", want: []string{"a"}},
		{name: "end after a comment", body: "data: a\n\n: bye", want: []string{"a"}},
		{name: "cut inside an event", body: "data: a\n\ndata: {\"choices\":[", want: []string{"a"}, wantCut: true},
		{name: "cut before the empty line", body: "data: a\n\ndata: {}\n", want: []string{"a"}, wantCut: true},
		{name: "cut after \\r", body: "data: a\r\rdata: b\r", want: []string{"a"}, wantCut: true},
	} {
		for rname, r := range readers(tc.body) {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got, err := readEvents(r)
				if tc.wantCut != errors.Is(err, io.ErrUnexpectedEOF) || (!tc.wantCut && err != nil) {
					t.Errorf("error %v, want cut=%v", err, tc.wantCut)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// oldEvents reads body with openai-go's decoder, the one wire.SSEReader
// replaced, its data without the final "\n" it kept.
func oldEvents(body []byte) ([]string, error) {
	dec := ssestream.NewDecoder(&http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))})
	var out []string
	for dec.Next() {
		out = append(out, strings.TrimSuffix(string(dec.Event().Data), "\n"))
	}
	return out, dec.Err()
}

// checkSSE compares wire.SSEReader with openai-go's decoder on a body with no
// lone '\r' (openai-go's decoder took only "\n" and "\r\n" as line ends):
// the same events, except that a body cut inside an event is an error
// where openai-go dropped the event.
func checkSSE(t *testing.T, body []byte) {
	t.Helper()
	want, wantErr := oldEvents(body)
	if wantErr != nil {
		return // a line over 32 MiB
	}
	for rname, r := range readers(string(body)) {
		got, err := readEvents(r)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%q (%s): %v", body, rname, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q (%s): events (-openai-go +new):\n%s", body, rname, diff)
		}
	}
}

var sseCorpus = []string{
	"data: {\"a\":1}\n\ndata: [DONE]\n\n",
	"data: a\r\ndata: b\r\n\r\n: c\r\nevent: e\r\n\r\n",
	"data:x\n\ndata\n\n\n\nid: 1\ndata: y\n",
	"data: a\n\ndata: [DONE]",
	": only a comment\n\n",
	"data: \xff\x00\n\n",
}

func TestSSEMatchesOpenAIGo(t *testing.T) {
	for _, body := range sseCorpus {
		checkSSE(t, []byte(body))
	}
}

func FuzzSSE(f *testing.F) {
	for _, body := range sseCorpus {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// A lone '\r' ends a line here and not in openai-go's decoder.
		body = bytes.ReplaceAll(body, []byte("\r"), []byte("\r\n"))
		body = bytes.ReplaceAll(body, []byte("\r\n\n"), []byte("\r\n"))
		checkSSE(t, body)
		// Any body: no panic, and the data of every event it gives.
		_, _ = readEvents(iotest.OneByteReader(bytes.NewReader(body)))
	})
}

// TestChunkStreamEnds: how streams end, through the provider.
func TestChunkStreamEnds(t *testing.T) {
	ok := "data: " + chunk(`{"content":"Hel"}`, "") + "\r\n\r\n" + "data: " + chunk(`{"content":"lo"}`, "stop") + "\r\n\r\n"
	for _, tc := range []struct {
		name string
		body string
		code string // "" for a complete answer
	}{
		{name: "\\r\\n line ends", body: ok + "data: [DONE]\r\n\r\n"},
		{name: "\\r line ends", body: strings.ReplaceAll(ok, "\r\n", "\r") + "data: [DONE]\r\r"},
		{name: "[DONE] without the empty line", body: ok + "data: [DONE]"},
		{name: "no [DONE] after the finish", body: ok},
		{name: "cut inside the usage chunk", body: ok + `data: {"choices":[],"usage":{"prompt_tok`, code: "stream_cut"},
		{name: "cut inside the first chunk", body: `data: {"choices":[{"delta":{"content":"Hel"}}]}`, code: "upstream_error"},
		{name: "error event", body: ok + `data: {"error":{"message":"overloaded"}}` + "\n\n", code: "upstream_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.body)
			})
			res := run(t, context.Background(), up.provider(t, Config{}).Model("gpt-test"), &model.Request{}, true)
			if tc.code == "" {
				if res.err != nil {
					t.Fatal(res.err)
				}
				if got := text(res.final); got != "Hello" {
					t.Errorf("text %q, want Hello", got)
				}
				return
			}
			me, ok := model.AsError(res.err)
			if !ok || me.Code != tc.code {
				t.Fatalf("err = %v, want a %s *model.Error", res.err, tc.code)
			}
		})
	}
}

// TestStreamErrorEvent: an error event ends the stream with a
// *ssestream.StreamError carrying the event, as openai-go's Stream did.
func TestStreamErrorEvent(t *testing.T) {
	body := "event: error\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n"
	var s chunkStream
	s.init(&http.Response{Body: io.NopCloser(strings.NewReader(body))}, "")
	defer s.close()
	if s.next() {
		t.Fatal("next = true on an error event")
	}
	se, ok := errors.AsType[*ssestream.StreamError](s.err)
	if !ok {
		t.Fatalf("err = %#v, want a *ssestream.StreamError", s.err)
	}
	want := &ssestream.StreamError{
		Message: `received error while streaming: {"message":"overloaded"}`,
		Event:   ssestream.Event{Type: "error", Data: []byte(`{"error":{"message":"overloaded"}}`)},
	}
	if diff := cmp.Diff(want, se); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if got := streamErrorMessage(se); got != "error event in the stream: overloaded" {
		t.Errorf("message %q", got)
	}
}
