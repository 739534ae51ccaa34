package gemini

import (
	"encoding/json"
	"math"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// TestEncodeMatchesEncodingJSON: encode writes every request byte for byte
// as json.Marshal writes its body (the contents themselves are
// jsonenc.AppendContent's, tested there), and fails where json.Marshal
// fails.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	reqs := oracleRequests(t)
	reqs["history"] = &model.Request{Contents: benchHistory(3), Config: &genai.GenerateContentConfig{
		SystemInstruction: &genai.Content{Parts: []*genai.Part{{Text: "<b>é\u2028"}, nil}}}}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			w, err := buildRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			got, err := w.encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encode:\n%s\njson.Marshal:\n%s", got, want)
			}
		})
	}
	for name, w := range map[string]*wireRequest{
		"empty":                  {},
		"only a system prompt":   {SystemInstruction: &genai.Content{}},
		"no generation config":   {Contents: []*genai.Content{nil, {Role: "user"}}, CachedContent: "c"},
		"a NaN in the settings":  {GenerationConfig: &wireGenerationConfig{Temperature: ptr(float32(math.NaN()))}},
		"a NaN in the arguments": {Contents: []*genai.Content{{Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Args: map[string]any{"x": math.NaN()}}}}}}},
	} {
		want, werr := json.Marshal(w)
		got, err := w.encode()
		if (err == nil) != (werr == nil) || string(got) != string(want) {
			t.Errorf("%s: encode = %s, %v; json.Marshal: %s, %v", name, got, err, want, werr)
		}
	}
}
