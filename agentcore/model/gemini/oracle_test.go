package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/internal/providertest"
	"github.com/agentgate/agentgate/agentcore/model/internal/wire"
)

// genai's client is the oracle of the wire: what it sends for a request
// and how it decodes an answer is what the provider must send and decode.

// oracleClient returns a genai client configured as the provider used to
// configure it, pointed at up.
func oracleClient(t *testing.T, up *providertest.Upstream) *genai.Client {
	t.Helper()
	timeout := DefaultTimeout
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: testKey, Backend: genai.BackendGeminiAPI, HTTPClient: up.Client,
		HTTPOptions: genai.HTTPOptions{BaseURL: up.Server.URL, Timeout: &timeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// oracleConfig is cfg as the provider handed it to genai: a copy (genai
// writes into it), with automatic continuation off.
func oracleConfig(cfg *genai.GenerateContentConfig) *genai.GenerateContentConfig {
	var out genai.GenerateContentConfig
	if cfg != nil {
		out = *cfg
	}
	if out.SystemInstruction != nil {
		si := *out.SystemInstruction
		out.SystemInstruction = &si
	}
	off := false
	out.AutomaticContinuation = &off
	return &out
}

func ptr[T any](v T) *T { return &v }

// oracleRequests are requests covering what the runtime sends: tools,
// function calls and responses, system instructions, generation settings,
// safety, inline data, output schemas.
func oracleRequests(t *testing.T) map[string]*model.Request {
	user := func(parts ...*genai.Part) *genai.Content { return &genai.Content{Role: genai.RoleUser, Parts: parts} }
	modelSays := func(parts ...*genai.Part) *genai.Content { return &genai.Content{Role: genai.RoleModel, Parts: parts} }
	hello := []*genai.Content{genai.NewContentFromText("Hello", genai.RoleUser)}
	schema := &genai.Schema{
		Type: genai.TypeObject, Required: []string{"city"}, PropertyOrdering: []string{"city", "days"},
		Properties: map[string]*genai.Schema{
			"city": {Type: genai.TypeString, Description: "The city.", Enum: []string{"Paris", "Berlin"}},
			"days": {Type: genai.TypeInteger, Minimum: ptr(1.0), Maximum: ptr(14.0), Nullable: ptr(true)},
			"tags": {Type: genai.TypeArray, Items: &genai.Schema{Type: genai.TypeString}, MaxItems: ptr[int64](5)},
		},
	}
	return map[string]*model.Request{
		"tree turn":     providertest.LoadRequest(t, "tree_request"),
		"builtin tools": providertest.LoadRequest(t, "builtin_tools_request"),
		"no config":     {Contents: hello},
		"empty config":  {Contents: hello, Config: &genai.GenerateContentConfig{}},
		"system instruction with a role": {Contents: hello, Config: &genai.GenerateContentConfig{
			SystemInstruction: &genai.Content{Role: "system", Parts: []*genai.Part{{Text: "Be brief."}}}}},
		"generation settings": {Contents: hello, Config: &genai.GenerateContentConfig{
			Temperature: ptr[float32](0.2), TopP: ptr[float32](0.95), TopK: ptr[float32](40), CandidateCount: 1, MaxOutputTokens: 1024,
			StopSequences: []string{"END", "\n\n"}, ResponseLogprobs: true, Logprobs: ptr[int32](3),
			PresencePenalty: ptr[float32](0.5), FrequencyPenalty: ptr[float32](-0.25), Seed: ptr[int32](42),
			ResponseModalities: []string{"TEXT"}, MediaResolution: genai.MediaResolutionLow,
			ThinkingConfig:             &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: ptr[int32](0), ThinkingLevel: genai.ThinkingLevelLow},
			Labels:                     map[string]string{"team": "billing"},
			CachedContent:              "abc123",
			ServiceTier:                genai.ServiceTier("flex"),
			EnableEnhancedCivicAnswers: ptr(true),
			SpeechConfig:               &genai.SpeechConfig{VoiceConfig: &genai.VoiceConfig{PrebuiltVoiceConfig: &genai.PrebuiltVoiceConfig{VoiceName: "Kore"}}, LanguageCode: "de-DE"},
		}},
		"a full cached content name": {Contents: hello, Config: &genai.GenerateContentConfig{CachedContent: "cachedContents/abc123"}},
		"safety settings": {Contents: hello, Config: &genai.GenerateContentConfig{SafetySettings: []*genai.SafetySetting{
			{Category: genai.HarmCategoryHarassment, Threshold: genai.HarmBlockThresholdBlockOnlyHigh},
			{Category: genai.HarmCategoryDangerousContent, Threshold: genai.HarmBlockThresholdOff},
		}}},
		"json schema output": {Contents: hello, Config: &genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseSchema: schema}},
		"json schema output as JSON Schema": {Contents: hello, Config: &genai.GenerateContentConfig{ResponseMIMEType: "application/json",
			ResponseJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": 0}}, "additionalProperties": false}}},
		"tools and tool config": {Contents: hello, Config: &genai.GenerateContentConfig{
			Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
				{Name: "forecast", Description: "Weather forecast.", Parameters: schema, Response: &genai.Schema{Type: genai.TypeString}},
				{Name: "lookup_invoice", ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"invoice_id": map[string]any{"type": "string"}}}},
				{Name: "now", Behavior: genai.BehaviorNonBlocking},
			}}, {GoogleSearch: &genai.GoogleSearch{}}, {CodeExecution: &genai.ToolCodeExecution{}}},
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"forecast"}}},
		}},
		"every part kind": {Contents: []*genai.Content{
			user(&genai.Part{Text: "Look:"}, &genai.Part{InlineData: &genai.Blob{MIMEType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff, 0x00, 0x10}}},
				&genai.Part{FileData: &genai.FileData{MIMEType: "video/mp4", FileURI: "https://generativelanguage.googleapis.com/v1beta/files/abc"},
					VideoMetadata: &genai.VideoMetadata{FPS: ptr(2.0)}}),
			modelSays(&genai.Part{Text: "Thinking it over.", Thought: true, ThoughtSignature: []byte("sig\x00\x01")},
				&genai.Part{ExecutableCode: &genai.ExecutableCode{Language: genai.LanguagePython, Code: "print(240*0.19)"}},
				&genai.Part{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.OutcomeOK, Output: "45.6"}},
				&genai.Part{FunctionCall: &genai.FunctionCall{ID: "gem-1", Name: "forecast", Args: map[string]any{"city": "Paris", "days": 3, "tags": []any{"a", nil, 1.5}}}},
				&genai.Part{FunctionCall: &genai.FunctionCall{ID: "adk-1f2e", Name: "now"}}),
			user(&genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "gem-1", Name: "forecast", Response: map[string]any{
				"output": map[string]any{"temp": 21.5, "big": 1 << 40, "list": []any{true, "x", map[string]any{}}}, "empty": ""}}},
				&genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "adk-1f2e", Name: "now", Response: map[string]any{"error": "unavailable"}}}),
			nil,
			modelSays(nil, &genai.Part{Text: "ünïcödé <html> & \u2028 \"quoted\""}),
		}},
	}
}

// TestRequestOracle: for every request, the body, path and query the
// provider sends are what genai's client sends (JSON compared as values),
// streamed and not.
func TestRequestOracle(t *testing.T) {
	for name, req := range oracleRequests(t) {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					if stream {
						sse(w, okChunk)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, okChunk)
				})
				ctx := context.Background()
				gc := oracleClient(t, up)
				if stream {
					for _, err := range gc.Models.GenerateContentStream(ctx, "gemini-test", outgoing(req.Contents), oracleConfig(req.Config)) {
						if err != nil {
							t.Fatal(err)
						}
					}
				} else if _, err := gc.Models.GenerateContent(ctx, "gemini-test", outgoing(req.Contents), oracleConfig(req.Config)); err != nil {
					t.Fatal(err)
				}
				if res := providertest.Run(t, ctx, provider(t, up, Config{}).Model("gemini-test"), req, stream); res.Err != nil {
					t.Fatal(res.Err)
				}
				reqs := up.Requests()
				if len(reqs) != 2 {
					t.Fatalf("upstream got %d requests, want 2", len(reqs))
				}
				want, got := reqs[0], reqs[1]
				if got.Method != want.Method || got.Path != want.Path || got.Query != want.Query {
					t.Errorf("request = %s %s?%s, genai sent %s %s?%s", got.Method, got.Path, got.Query, want.Method, want.Path, want.Query)
				}
				for _, h := range []string{"Content-Type", "X-Goog-Api-Key", "X-Server-Timeout"} {
					if got.Header.Get(h) != want.Header.Get(h) {
						t.Errorf("%s = %q, genai sent %q", h, got.Header.Get(h), want.Header.Get(h))
					}
				}
				if diff := cmp.Diff(jsonValue(t, want.Body), jsonValue(t, got.Body)); diff != "" {
					t.Errorf("body (-genai +provider):\n%s", diff)
				}
			})
		}
	}
}

// TestRequestOracleRefusals: settings only Vertex AI takes are refused
// before anything is sent, by genai and by the provider alike.
func TestRequestOracleRefusals(t *testing.T) {
	hello := []*genai.Content{genai.NewContentFromText("Hello", genai.RoleUser)}
	for name, req := range map[string]*model.Request{
		"routing config":      {Contents: hello, Config: &genai.GenerateContentConfig{RoutingConfig: &genai.GenerationConfigRoutingConfig{}}},
		"audio timestamp":     {Contents: hello, Config: &genai.GenerateContentConfig{AudioTimestamp: true}},
		"safety method":       {Contents: hello, Config: &genai.GenerateContentConfig{SafetySettings: []*genai.SafetySetting{{Category: genai.HarmCategoryHarassment, Method: genai.HarmBlockMethodSeverity}}}},
		"retrieval tool":      {Contents: hello, Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{Retrieval: &genai.Retrieval{}}}}},
		"search exclusions":   {Contents: hello, Config: &genai.GenerateContentConfig{Tools: []*genai.Tool{{GoogleSearch: &genai.GoogleSearch{ExcludeDomains: []string{"example.com"}}}}}},
		"image person policy": {Contents: hello, Config: &genai.GenerateContentConfig{ImageConfig: &genai.ImageConfig{PersonGeneration: "ALLOW_ALL"}}},
		"streamed call arguments": {Contents: hello, Config: &genai.GenerateContentConfig{ToolConfig: &genai.ToolConfig{
			FunctionCallingConfig: &genai.FunctionCallingConfig{StreamFunctionCallArguments: ptr(true)}}}},
		"a call that will continue": {Contents: []*genai.Content{{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{Name: "f", WillContinue: ptr(true)}}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, okChunk) })
			_, gerr := oracleClient(t, up).Models.GenerateContent(context.Background(), "gemini-test", outgoing(req.Contents), oracleConfig(req.Config))
			res := providertest.Run(t, context.Background(), provider(t, up, Config{}).Model("gemini-test"), req, true)
			me, ok := model.AsError(res.Err)
			if gerr == nil || !ok || me.Code != "unsupported" || !strings.Contains(me.Message, "Vertex AI") {
				t.Errorf("genai: %v; provider: %v; want both to refuse, the provider with code unsupported", gerr, res.Err)
			}
			if n := len(up.Requests()); n != 0 {
				t.Errorf("upstream got %d requests", n)
			}
		})
	}
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// chunkView is what the provider reads of a response chunk.
type chunkView struct {
	Content        *genai.Content
	FinishReason   genai.FinishReason
	Usage          *genai.GenerateContentResponseUsageMetadata
	PromptFeedback *genai.GenerateContentResponsePromptFeedback
	ModelVersion   string
}

func viewOfGenai(r *genai.GenerateContentResponse) chunkView {
	v := chunkView{Usage: r.UsageMetadata, PromptFeedback: r.PromptFeedback, ModelVersion: r.ModelVersion}
	if len(r.Candidates) > 0 && r.Candidates[0] != nil {
		v.Content, v.FinishReason = r.Candidates[0].Content, r.Candidates[0].FinishReason
	}
	return v
}

func viewOfWire(r *wireResponse) chunkView {
	v := chunkView{Usage: r.UsageMetadata, PromptFeedback: r.PromptFeedback, ModelVersion: r.ModelVersion}
	if len(r.Candidates) > 0 {
		v.Content, v.FinishReason = r.Candidates[0].Content, r.Candidates[0].FinishReason
	}
	return v
}

// oracleResponses are answers (or stream chunks) as Gemini sends them.
var oracleResponses = map[string]string{
	"text":                           `{"candidates":[{"content":{"parts":[{"text":"Hello there."}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"abc"}`,
	"function call with nested args": `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"forecast","args":{"city":"Paris","days":3,"opts":{"units":"metric","hours":[6,12.5,null]},"ok":true}}}],"role":"model"},"finishReason":"STOP","index":0}]}`,
	"function call with an id and a thought signature": `{"candidates":[{"content":{"parts":[{"functionCall":{"id":"gem-9","name":"now","args":{}},"thoughtSignature":"c2lnAAE="}],"role":"model"},"finishReason":"STOP"}]}`,
	"thoughts, code and its result":                    `{"candidates":[{"content":{"parts":[{"text":"Let me compute.","thought":true},{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}}],"role":"model"}}]}`,
	"inline image":                                     `{"candidates":[{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}],"role":"model"},"finishReason":"STOP"}]}`,
	"usage in full": `{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":412,"candidatesTokenCount":58,"totalTokenCount":480,"cachedContentTokenCount":256,"thoughtsTokenCount":10,"toolUsePromptTokenCount":3,` +
		`"promptTokensDetails":[{"modality":"TEXT","tokenCount":400},{"modality":"IMAGE","tokenCount":12}],"cacheTokensDetails":[{"modality":"TEXT","tokenCount":256}],"candidatesTokensDetails":[{"modality":"TEXT","tokenCount":58}]},"modelVersion":"gemini-2.5-pro"}`,
	"max tokens":                `{"candidates":[{"content":{"parts":[{"text":"Once upon"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}]}`,
	"safety with ratings":       `{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}]}`,
	"recitation with citations": `{"candidates":[{"content":{"parts":[{"text":"To be"}],"role":"model"},"finishReason":"RECITATION","citationMetadata":{"citationSources":[{"startIndex":0,"endIndex":5,"uri":"https://example.com","license":"mit"}]}}]}`,
	"malformed function call":   `{"candidates":[{"content":{},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(default_api.f(x=))","index":0}]}`,
	"blocked prompt":            `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","blockReasonMessage":"no","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"LOW"}]},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`,
	"grounding metadata":        `{"candidates":[{"content":{"parts":[{"text":"VAT is 19%."}],"role":"model"},"finishReason":"STOP","groundingMetadata":{"webSearchQueries":["eu vat 2025"],"groundingChunks":[{"web":{"uri":"https://example.com","title":"example.com"}}],"groundingSupports":[{"segment":{"endIndex":11,"text":"VAT is 19%."},"groundingChunkIndices":[0],"confidenceScores":[0.9]}]}}]}`,
	"usage only":                `{"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":3}}`,
	"two candidates":            `{"candidates":[{"content":{"parts":[{"text":"A"}],"role":"model"},"finishReason":"STOP","index":0},{"content":{"parts":[{"text":"B"}],"role":"model"},"finishReason":"STOP","index":1}]}`,
	"unknown members":           `{"candidates":[{"content":{"parts":[{"text":"x","futurePart":{"a":1}}],"role":"model"},"futureField":[1,2],"finishReason":"STOP"}],"createTime":"2025-01-01T00:00:00Z","futureTop":{"b":null}}`,
	"escapes":                   `{"candidates":[{"content":{"parts":[{"text":"\u00fc\u2028\ud83d\ude00 \"q\" \\ \n\t<&>"}],"role":"model"}}]}`,
	"empty":                     `{}`,
}

// TestResponseOracle: every answer decodes as genai's client decodes it,
// whole (generateContent) and as stream chunks (streamGenerateContent).
func TestResponseOracle(t *testing.T) {
	for name, body := range oracleResponses {
		t.Run(name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ":streamGenerateContent") {
					sse(w, body, body)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, body)
			})
			gc := oracleClient(t, up)
			ctx := context.Background()
			wantWhole, err := gc.Models.GenerateContent(ctx, "gemini-test", nil, oracleConfig(nil))
			if err != nil {
				t.Fatal(err)
			}
			gotWhole, err := decodeChunk([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(viewOfGenai(wantWhole), viewOfWire(gotWhole)); diff != "" {
				t.Errorf("whole answer (-genai +provider):\n%s", diff)
			}

			var want, got []chunkView
			for r, err := range gc.Models.GenerateContentStream(ctx, "gemini-test", nil, oracleConfig(nil)) {
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, viewOfGenai(r))
			}
			var buf bytes.Buffer
			sse(recorderWriter{&buf}, body, body)
			s := wire.NewSSEReader(&buf)
			for {
				data, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				w, err := decodeChunk(data)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, viewOfWire(w))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stream chunks (-genai +provider):\n%s", diff)
			}
		})
	}
}

// TestFinishMessageKept: genai drops a candidate's finishMessage on the
// Gemini API (its converter knows no such member); the provider keeps it
// as the final response's ErrorMessage.
func TestFinishMessageKept(t *testing.T) {
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, oracleResponses["malformed function call"])
	})
	res := providertest.Run(t, context.Background(), provider(t, up, Config{}).Model("gemini-test"), &model.Request{}, true)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if f := res.Final; f.ErrorCode != "MALFORMED_FUNCTION_CALL" || f.ErrorMessage != "Malformed function call: print(default_api.f(x=))" {
		t.Errorf("final = %q / %q", f.ErrorCode, f.ErrorMessage)
	}
}

// recorderWriter is an http.ResponseWriter that writes into a buffer, for
// sse to frame a stream without a server.
type recorderWriter struct{ b *bytes.Buffer }

func (r recorderWriter) Header() http.Header         { return http.Header{} }
func (r recorderWriter) Write(p []byte) (int, error) { return r.b.Write(p) }
func (r recorderWriter) WriteHeader(int)             {}
func (r recorderWriter) Flush()                      {}

// TestErrorOracle: error answers and error events read as genai reads
// them: the same code, message and details.
func TestErrorOracle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"400 envelope", 400, errorBody(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")},
		{"429 with RetryInfo", 429, errorBody(429, "Quota exceeded.", "RESOURCE_EXHAUSTED", retryInfo13s,
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{"quotaId": "q"}}})},
		{"503", 503, errorBody(503, "The model is overloaded.", "UNAVAILABLE")},
		{"502 HTML page", 502, "<html>Bad Gateway</html>"},
		{"500 empty body", 500, ""},
		{"500 JSON without an error member", 500, `{"oops":true}`},
		{"error event in a stream", 200, errorBody(503, "The model is overloaded.", "UNAVAILABLE")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 200 {
					sse(w, tc.body)
					return
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			var gerr error
			for _, err := range oracleClient(t, up).Models.GenerateContentStream(context.Background(), "gemini-test", nil, oracleConfig(nil)) {
				if err != nil {
					gerr = err
					break
				}
			}
			var want genai.APIError
			if !errors.As(gerr, &want) {
				t.Fatalf("genai: %v, want an APIError", gerr)
			}
			p := provider(t, up, Config{})
			resp, err := http.Post(up.Server.URL+"/v1beta/models/gemini-test:streamGenerateContent?alt=sse", "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			var got *apiError
			if resp.StatusCode >= 300 {
				got = readAPIError(resp)
			} else {
				defer resp.Body.Close()
				data, err := wire.NewSSEReader(resp.Body).Next()
				if err != nil {
					t.Fatal(err)
				}
				_, err = decodeChunk(data)
				if !errors.As(err, &got) {
					t.Fatalf("decodeChunk = %v, want an *apiError", err)
				}
			}
			type view struct {
				Code    int
				Message string
				Details []map[string]any
			}
			if diff := cmp.Diff(view{want.Code, want.Message, want.Details}, view{got.status, got.message, got.details}); diff != "" {
				t.Errorf("error (-genai +provider):\n%s", diff)
			}
			// And through the provider: a model.Error with that status.
			res := providertest.Run(t, context.Background(), p.Model("gemini-test"), &model.Request{}, true)
			if me, ok := model.AsError(res.Err); !ok || me.Status != want.Code {
				t.Errorf("provider error = %v, want status %d", res.Err, want.Code)
			}
		})
	}
}

// FuzzDecodeChunk: the decoder never panics, and whatever both it and
// genai's types decode, they decode alike. It fails where genai does not
// only when the error member is malformed (genai's type has none).
func FuzzDecodeChunk(f *testing.F) {
	for _, body := range oracleResponses {
		f.Add([]byte(body))
	}
	f.Add([]byte(errorBody(500, "x", "INTERNAL")))
	f.Add([]byte(`{"candidates":[null,{"content":null}],"usageMetadata":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeChunk(data)
		var want genai.GenerateContentResponse
		werr := func() (err error) {
			// genai's UnmarshalJSON panics on a JSON null; its client never
			// calls it on one.
			defer func() {
				if recover() != nil {
					err = errors.New("genai panicked")
				}
			}()
			return json.Unmarshal(data, &want)
		}()
		var hasError struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(data, &hasError)
		errorMember := len(hasError.Error) > 0 && string(hasError.Error) != "null"
		switch {
		case err == nil && werr == nil:
			if diff := cmp.Diff(viewOfGenai(&want), viewOfWire(got)); diff != "" {
				t.Errorf("(-genai +provider):\n%s", diff)
			}
		case err != nil && werr == nil && !errorMember:
			t.Errorf("decodeChunk failed where genai did not: %v", err)
		}
	})
}

// TestServerTimeout: the upstream is told the soonest deadline of the
// provider's timeout and the caller's context, as genai tells it.
func TestServerTimeout(t *testing.T) {
	up := providertest.NewUpstream(t, func(w http.ResponseWriter, r *http.Request) { sse(w, okChunk) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, err := range oracleClient(t, up).Models.GenerateContentStream(ctx, "gemini-test", nil, oracleConfig(nil)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if res := providertest.Run(t, ctx, provider(t, up, Config{}).Model("gemini-test"), &model.Request{}, true); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := providertest.Run(t, context.Background(), provider(t, up, Config{Timeout: 90 * time.Second}).Model("gemini-test"), &model.Request{}, true); res.Err != nil {
		t.Fatal(res.Err)
	}
	var got []string
	for _, r := range up.Requests() {
		got = append(got, r.Header.Get("X-Server-Timeout"))
	}
	if diff := cmp.Diff([]string{"30", "30", "90"}, got); diff != "" {
		t.Errorf("x-server-timeout of genai, the provider under a 30s context, the provider with a 90s timeout (-want +got):\n%s", diff)
	}
}
