package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// What one model call costs inside the provider: the request built and
// sent, the answer read and decoded, against an HTTP client that answers
// from memory (no network, no latency). Run with
//
//	go test -run '^$' -bench . -benchmem ./agentcore/model/gemini/

// cannedGemini answers generateContent with complete and
// streamGenerateContent with stream.
type cannedGemini struct {
	complete, stream []byte
}

func (t *cannedGemini) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	out, ct := t.complete, "application/json"
	if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
		out, ct = t.stream, "text/event-stream"
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out)),
		Request: r}, nil
}

// benchUsage is the usage metadata of every canned answer.
const benchUsage = `"usageMetadata":{"promptTokenCount":412,"candidatesTokenCount":58,"totalTokenCount":470,"promptTokensDetails":[{"modality":"TEXT","tokenCount":412}]}`

// cannedAnswer is a canned answer whose stream is one chunk per part (the
// last with the finish reason and usage) and whose whole answer has every
// part.
func cannedAnswer(parts []string) *cannedGemini {
	const head = `{"candidates":[{"content":{"role":"model","parts":[`
	var s bytes.Buffer
	for i, p := range parts {
		tail := `]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"x1QnaPPjN9qPgLUP"}`
		if i == len(parts)-1 {
			tail = `]},"finishReason":"STOP","index":0}],` + benchUsage + `,"modelVersion":"gemini-2.5-flash","responseId":"x1QnaPPjN9qPgLUP"}`
		}
		s.WriteString("data: " + head + p + tail + "\r\n\r\n")
	}
	complete := head + strings.Join(parts, ",") + `]},"finishReason":"STOP","index":0}],` + benchUsage +
		`,"modelVersion":"gemini-2.5-flash","responseId":"x1QnaPPjN9qPgLUP"}`
	return &cannedGemini{complete: []byte(complete), stream: s.Bytes()}
}

// benchTreeRequest is testdata/tree_request.json: a coordinator's turn with
// its roster, transfer_to_agent and a tool, six contents.
func benchTreeRequest(b *testing.B) *model.Request {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "tree_request.json"))
	if err != nil {
		b.Fatal(err)
	}
	var in struct {
		Contents []*genai.Content             `json:"contents"`
		Config   *genai.GenerateContentConfig `json:"config"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		b.Fatal(err)
	}
	return &model.Request{Contents: in.Contents, Config: in.Config}
}

// benchHistory is rounds past exchanges, four contents each: a user
// question, the model's function call, its response and the model's reply.
func benchHistory(rounds int) []*genai.Content {
	out := make([]*genai.Content, 0, 4*rounds+1)
	for i := range rounds {
		city := "city " + strconv.Itoa(i)
		id := "call_" + strconv.Itoa(i)
		out = append(out,
			genai.NewContentFromText("What is the weather in "+city+"?", genai.RoleUser),
			&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: id, Name: "get_weather", Args: map[string]any{"city": city}}}}},
			&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "get_weather",
				Response: map[string]any{"temperature": 21, "sky": "clear", "wind": map[string]any{"speed": 12.5, "direction": "NW"}}}}}},
			genai.NewContentFromText("It is 21 degrees and clear in "+city+", with a light north-west wind.", genai.RoleModel))
	}
	return out
}

func BenchmarkCall(b *testing.B) {
	tree := benchTreeRequest(b)
	long := &model.Request{Config: tree.Config, Contents: append(benchHistory(25), genai.NewContentFromText("And tomorrow?", genai.RoleUser))}
	transfer := cannedAnswer([]string{`{"functionCall":{"name":"transfer_to_agent","args":{"agent_name":"billing"}}}`})
	deltas := make([]string, 20)
	for i := range deltas {
		deltas[i] = `{"text":"tok` + strconv.Itoa(i) + ` "}`
	}
	text := cannedAnswer(deltas)
	for _, bc := range []struct {
		name   string
		req    *model.Request
		answer *cannedGemini
	}{
		// A coordinator's transfer: six contents, answered by one call.
		{"transfer", tree, transfer},
		// A long session: 101 contents (25 rounds with a tool call each),
		// answered with 20 text deltas.
		{"history100", long, text},
	} {
		for _, stream := range []bool{false, true} {
			name := bc.name + "/nonstream"
			if stream {
				name = bc.name + "/stream"
			}
			b.Run(name, func(b *testing.B) {
				p, err := New(Config{Name: "bench", APIKey: "bench-key", BaseURL: "http://gemini.invalid/", MaxRetries: -1,
					HTTPClient: &http.Client{Transport: bc.answer}})
				if err != nil {
					b.Fatal(err)
				}
				llm := p.Model("gemini-2.5-flash")
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					var final *model.Response
					for r, err := range llm.GenerateContent(ctx, bc.req, stream) {
						if err != nil {
							b.Fatal(err)
						}
						final = r
					}
					if final == nil || final.Partial || final.FinishReason != genai.FinishReasonStop {
						b.Fatalf("final response = %+v", final)
					}
				}
			})
		}
	}
}
