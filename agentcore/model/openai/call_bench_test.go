package openai

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// BenchmarkCall is one whole model call over a real HTTP server on the
// loopback: the request built, encoded and sent, the answer read and
// decoded (the server's own work included, on the same process):
//
//	go test -run '^$' -bench Call -benchmem ./agentcore/model/openai/
func BenchmarkCall(b *testing.B) {
	const stream = "data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}` + "\n\n" +
		"data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, stream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(benchCompletion)
	}))
	defer srv.Close()
	p, err := New(Config{Name: "bench", BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: -1, HTTPClient: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	llm := p.Model("m")
	req := &model.Request{
		Config:   &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Answer.", genai.RoleUser)},
		Contents: []*genai.Content{genai.NewContentFromText("Hello, how are you?", genai.RoleUser)},
	}
	for _, streamed := range []bool{false, true} {
		name := "nonstream"
		if streamed {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, err := range llm.GenerateContent(context.Background(), req, streamed) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
