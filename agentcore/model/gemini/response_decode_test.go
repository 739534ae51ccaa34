package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/internal/jsondec"
)

// stdChunk is decodeChunk as it was before the hand decoder: encoding/json
// alone, the reference the fast path is held to.
func stdChunk(data []byte) (*wireResponse, error) {
	w := new(wireResponse)
	if err := json.Unmarshal(data, w); err != nil {
		return nil, err
	}
	return w, nil
}

// fastChunks are chunks as Gemini sends them, which the hand decoder must
// take without encoding/json's help.
var fastChunks = []string{
	`{"candidates":[{"content":{"parts":[{"text":"Hello there."}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"abc"}`,
	`{"candidates":[{"content":{"role":"model","parts":[{"text":"tok3 "}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":412,"candidatesTokenCount":58,"totalTokenCount":470,"promptTokensDetails":[{"modality":"TEXT","tokenCount":412}]},"modelVersion":"gemini-2.5-flash","responseId":"x1QnaPPjN9qPgLUP"}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"forecast","args":{"city":"Paris","days":3,"opts":{"units":"metric","hours":[6,12.5,null,-1e-3,true,false,[],{}]},"ok":true}}}],"role":"model"},"finishReason":"STOP","index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"gem-9","name":"now","args":{}},"thoughtSignature":"c2lnAAE="}],"role":"model"},"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"**Planning** the answer\n\n","thought":true},{"text":"Sure.","thoughtSignature":""}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":30,"thoughtsTokenCount":21,"trafficType":"ON_DEMAND"}}`,
	`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":412,"candidatesTokenCount":58,"totalTokenCount":480,"cachedContentTokenCount":256,"thoughtsTokenCount":10,"toolUsePromptTokenCount":3,` +
		`"promptTokensDetails":[{"modality":"TEXT","tokenCount":400},{"modality":"IMAGE","tokenCount":12}],"cacheTokensDetails":[{"modality":"TEXT","tokenCount":256}],"candidatesTokensDetails":[{"modality":"TEXT","tokenCount":58}],"toolUsePromptTokensDetails":[]},"modelVersion":"gemini-2.5-pro"}`,
	`{"candidates":[{"content":{"parts":[{"text":"Once upon"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}]}`,
	`{"candidates":[{"finishReason":"SAFETY","index":0,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"To be"}],"role":"model"},"finishReason":"RECITATION","citationMetadata":{"citationSources":[{"startIndex":0,"endIndex":5,"uri":"https://example.com","license":"mit"}]}}]}`,
	`{"candidates":[{"content":{},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(default_api.f(x=))","index":0}]}`,
	`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","blockReasonMessage":"no"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`,
	`{"candidates":[{"content":{"parts":[{"text":"VAT is 19%."}],"role":"model"},"finishReason":"STOP","groundingMetadata":{"webSearchQueries":["eu vat 2025"],"groundingChunks":[{"web":{"uri":"https://example.com","title":"example.com"}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"A"}],"role":"model"},"finishReason":"STOP","index":0},{"content":{"parts":[{"text":"B"}],"role":"user"},"finishReason":"STOP","index":1}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"x","futurePart":{"a":1}}],"role":"model"},"futureField":[1,2],"finishReason":"STOP"}],"createTime":"2025-01-01T00:00:00Z","futureTop":{"b":null}}`,
	`{"candidates":[{"content":{"parts":[{"text":"\u00fc\u2028\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t <&> caf\u00e9 日本語 😀"}],"role":"model"}}]}`,
	`{"candidates":[],"candidates2":[]}`,
	`{"candidates":[{"content":{"parts":[]}}]}`,
	`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
	`{"usageMetadata":{"promptTokenCount":2147483647,"totalTokenCount":-2147483648}}`,
	`{}`,
	" \r\n\t{ \"candidates\" : [ { \"content\" : { \"parts\" : [ { \"text\" : \"w\" } ] } } ] } \n",
	`{"te\u0078t":1,"candidates":[{"content":{"parts":[{"te\u0078t":"escaped key"}]}}]}`,
	// Keys encoding/json matches case-insensitively (jsondec.Field).
	`{"Candidates":[{"content":{"parts":[{"text":"x"}]}}]}`,
	`{"candidates":[{"CONTENT":{"parts":[{"TEXT":"x"}]},"finishreason":"STOP"}],"modelversion":"m"}`,
	`{"candidates":[{"content":{"parts":[{"teſt":"long s","text":"x"}]}}],"usageMetadata":{"promptTo\u212aenCount":1}}`,
	// Strings encoding/json repairs (jsondec.String).
	`{"candidates":[{"content":{"parts":[{"text":"lone \ud800 and \udc00 and \ud800\u0041 end \ud800"}]}}]}`,
	"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"bad \xff\xfe utf8 \xed\xa0\x80 \xc3 ok\"}]}}],\"modelVersion\":\"\xf0\x9f\x98\"}",
	"{\"x\xff\":1,\"candidates\":[]}",
}

// slowChunks are left to encoding/json, and must come out the same.
var slowChunks = []string{
	// Members the hand decoder does not read.
	`{"candidates":[{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}],"role":"model"},"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"Let me compute.","thought":true},{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}}],"role":"model"}}]}`,
	`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"LOW"}]}}`,
	`{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"13s"}]}}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":1},"willContinue":true}}]}}]}`,
	// Repeated members, nulls, values of other types.
	`{"modelVersion":"a","modelVersion":"b"}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"}]}}],"candidates":[{"finishReason":"STOP"}]}`,
	`{"candidates":null,"usageMetadata":null,"promptFeedback":null,"error":null,"modelVersion":null}`,
	`{"candidates":[null,{"content":null}]}`,
	`{"candidates":[{"content":{"parts":[null,{"text":null,"thought":null,"functionCall":null}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":null}}]}}]}`,
	`{"modelVersion":7,"candidates":{"a":1}}`,
	`{"usageMetadata":{"promptTokenCount":"3","totalTokenCount":5.0,"candidatesTokenCount":1e2,"thoughtsTokenCount":2147483648,"cachedContentTokenCount":-2147483649}}`,
	`{"candidates":[{"content":{"parts":[{"thought":1,"thoughtSignature":"not base64!"}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":[1,2]}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"big":1e400,"dup":1,"dup":2}}}]}}]}`,
	`{"error":{"code":1e3,"message":["x"]}}`,
	`{"error":"plain"}`,
	// Not an object, malformed, too deep.
	`[]`, `"x"`, `null`, `true`, `12`, `[{"candidates":[]}]`,
	``, ` `, `{`, `}`, `{"modelVersion":"m"`, `{"modelVersion":"m",}`, `{"candidates":[1,]}`, `{"modelVersion" "m"}`, `{modelVersion:"m"}`,
	`{"modelVersion":"m"} {}`, `{"modelVersion":"m"}x`, "{\"modelVersion\":\"m\"}\x00", `{"a":tru}`, `{"a":nul}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`,
	`{"a":1e}`, `{"a":.5}`, `{"a":+1}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"tab\there\"}", `{"a":"unterminated}`,
	`{"a":[}`, `{"a":{]}`, `{"a" : }`, `data: {"modelVersion":"m"}`, `<html>ok</html>`, `{"error":}`,
	`{"candidates":[{"content":{"parts":[{"text":"x"},]}}]}`, `{"candidates":[{"content":{"parts":[{"text":"x"}}]}}]}`,
	`{"x":` + strings.Repeat(`[`, jsondec.MaxDepth) + strings.Repeat(`]`, jsondec.MaxDepth) + `,"modelVersion":"deep"}`,
	`{"x":` + strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001) + `}`,
}

// checkChunk holds decodeChunk to encoding/json on data: the same error
// text, or the same result; and whatever the fast path alone takes, it
// decodes as encoding/json does. It reports whether the fast path took
// data.
func checkChunk(t *testing.T, data []byte) bool {
	t.Helper()
	want, wantErr := stdChunk(data)
	var d chunkDecoder
	fast, took := d.decode(data)
	if took {
		if wantErr != nil {
			t.Fatalf("%q: the fast path took what encoding/json refuses: %v", data, wantErr)
		}
		if diff := cmp.Diff(want, fast); diff != "" {
			t.Fatalf("%q: fast path (-encoding/json +hand):\n%s", data, diff)
		}
	}
	got, gotErr := decodeChunk(data)
	if wantErr != nil {
		if gotErr == nil || gotErr.Error() != "decoding the answer: "+wantErr.Error() {
			t.Fatalf("%q: error %v, encoding/json: %v", data, gotErr, wantErr)
		}
		return took
	}
	if want.Error != nil {
		if _, ok := gotErr.(*apiError); !ok || cmp.Diff(streamError(want.Error), gotErr, cmp.AllowUnexported(apiError{})) != "" {
			t.Fatalf("%q: error %#v, encoding/json: %#v", data, gotErr, streamError(want.Error))
		}
		return took
	}
	if gotErr != nil {
		t.Fatalf("%q: %v", data, gotErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%q: decoded (-encoding/json +decodeChunk):\n%s", data, diff)
	}
	return took
}

func TestDecodeChunkMatchesEncodingJSON(t *testing.T) {
	for _, body := range fastChunks {
		if !checkChunk(t, []byte(body)) {
			t.Errorf("%s: left to encoding/json, want it decoded by hand", body)
		}
	}
	for _, body := range slowChunks {
		if checkChunk(t, []byte(body)) {
			t.Errorf("%q: decoded by hand, want it left to encoding/json", body)
		}
	}
}

// TestDecodeChunkReusesState: a stream's decoder keeps its scratch buffer
// and its last model version across chunks without letting one chunk's
// strings change under the next.
func TestDecodeChunkReusesState(t *testing.T) {
	var d chunkDecoder
	var got []*wireResponse
	for _, body := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"caf\u00e9 one"}]}}],"modelVersion":"v\u0031"}`,
		`{"candidates":[{"content":{"parts":[{"text":"tw\u00f6"},{"functionCall":{"name":"f","args":{"k\u00e9y":"v\u00e4l"}}}]}}],"modelVersion":"v1"}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]}}],"modelVersion":"v2"}`,
	} {
		w, err := d.chunk([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, w)
	}
	if s := got[0].Candidates[0].Content.Parts[0].Text; s != "café one" {
		t.Errorf("first text = %q after two more chunks", s)
	}
	if s := got[1].Candidates[0].Content.Parts[1].FunctionCall.Args["kéy"]; s != "väl" {
		t.Errorf("args = %v", got[1].Candidates[0].Content.Parts[1].FunctionCall.Args)
	}
	if v := [3]string{got[0].ModelVersion, got[1].ModelVersion, got[2].ModelVersion}; v != [3]string{"v1", "v1", "v2"} {
		t.Errorf("model versions = %q", v)
	}
}

// FuzzDecodeChunkMatchesEncodingJSON: on any input, decodeChunk and its
// fast path agree with encoding/json (checkChunk).
func FuzzDecodeChunkMatchesEncodingJSON(f *testing.F) {
	for _, body := range fastChunks {
		f.Add([]byte(body))
	}
	for _, body := range slowChunks {
		if len(body) < 1000 {
			f.Add([]byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, data) })
}
