package openai

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/ssestream"
)

// The decoders old (encoding/json, openai-go's SSE decoder: kept in the
// tests as the oracle) and new, on what a turn reads:
//
//	go test -run '^$' -bench 'Decode|ReadStream' -benchmem ./agentcore/model/openai/

var (
	benchChunk      = []byte(`{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" tokens"},"logprobs":null,"finish_reason":null}]}`)
	benchCompletion = []byte(`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"The invoice INV-7 is higher than usual because the annual plan renewed this month; the \"renewal\" line shows it.",` +
		`"refusal":null,"tool_calls":[{"id":"call_Q2w3","type":"function","function":{"name":"lookup_invoice","arguments":"{\"invoice_id\":\"INV-7\"}"}}],"annotations":[]},` +
		`"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":412,"completion_tokens":58,"total_tokens":470,` +
		`"prompt_tokens_details":{"cached_tokens":256,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,` +
		`"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_a1102cf978"}`)
)

// decoders are the old decoder and the new one: reused as chunkStream
// reuses it, or new per document as readCompletion uses it.
func decoders(reused bool) []struct {
	name   string
	decode func([]byte, *wireCompletion) error
} {
	decs := []struct {
		name   string
		decode func([]byte, *wireCompletion) error
	}{{"old", stdDecode}, {"new", decodeBody}}
	if reused {
		decs[1].decode = new(decoder).decode
	}
	return decs
}

// BenchmarkDecodeChunk: one streamed delta, decoded into the reused chunk
// as chunkStream does.
func BenchmarkDecodeChunk(b *testing.B) {
	for _, dec := range decoders(true) {
		b.Run(dec.name, func(b *testing.B) {
			var c wireCompletion
			b.ReportAllocs()
			for b.Loop() {
				choices := c.Choices[:cap(c.Choices)]
				clear(choices)
				c = wireCompletion{Choices: choices[:0]}
				if err := dec.decode(benchChunk, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeCompletion: a non-streamed answer with a tool call and
// usage details.
func BenchmarkDecodeCompletion(b *testing.B) {
	for _, dec := range decoders(false) {
		b.Run(dec.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var c wireCompletion
				if err := dec.decode(benchCompletion, &c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadStream: a 20-delta stream (role chunk, deltas, finish,
// usage, [DONE]) framed and decoded; per stream.
func BenchmarkReadStream(b *testing.B) {
	var body bytes.Buffer
	frame := func(s string) { body.WriteString("data: " + s + "\n\n") }
	frame(chunk(`{"role":"assistant","content":""}`, ""))
	for range 20 {
		frame(chunk(`{"content":" tokens"}`, ""))
	}
	frame(chunk(`{}`, "stop"))
	frame(strings.ReplaceAll(usageChunk, "\n", ""))
	body.WriteString("data: [DONE]\n\n")
	resp := func() *http.Response {
		return &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body.Bytes()))}
	}
	b.Run("old", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dec := ssestream.NewDecoder(resp())
			var c wireCompletion
			n := 0
			for dec.Next() {
				if bytes.HasPrefix(dec.Event().Data, doneData) {
					break
				}
				choices := c.Choices[:cap(c.Choices)]
				clear(choices)
				c = wireCompletion{Choices: choices[:0]}
				if err := stdDecode(dec.Event().Data, &c); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != 23 {
				b.Fatalf("%d chunks", n)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s chunkStream
			s.init(resp(), "")
			n := 0
			for s.next() {
				n++
			}
			if s.err != nil || n != 23 {
				b.Fatalf("%d chunks, %v", n, s.err)
			}
		}
	})
}
