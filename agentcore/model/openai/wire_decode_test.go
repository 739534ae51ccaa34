package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// stdDecode is the decoder wire_decode.go replaced, kept as the oracle:
// encoding/json with its *json.UnmarshalTypeError ignored.
func stdDecode(data []byte, c *wireCompletion) error {
	err := json.Unmarshal(data, c)
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

// decodeCorpus: bodies as OpenAI, vLLM, Ollama, DeepSeek, llama.cpp and
// proxies send them, and the odd ones the leniency rules are about.
var decodeCorpus = []string{
	// OpenAI, non-streamed and streamed.
	`{"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14",
	  "choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I assist you today?","refusal":null,"annotations":[]},
	  "logprobs":null,"finish_reason":"stop"}],
	  "usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,
	  "prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},
	  "completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
	  "service_tier":"default","system_fingerprint":"fp_a1102cf978"}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
	// Tool calls: whole, and fragments with and without index.
	`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
	  {"id":"call_1","type":"function","function":{"name":"transfer_to_agent","arguments":"{\"agent_name\":\"billing\"}"}},
	  {"type":"function","function":{"name":"exit_loop","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"lookup_invoice","arguments":""}}]},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"INV-7\"}"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"n\":1}"}},{"index":0,"id":"c2","function":{"name":"f","arguments":"{\"n\":2}"}}]}}]}`,
	// vLLM and DeepSeek reasoning, Ollama and OpenRouter reasoning.
	`{"id":"chatcmpl-2","object":"chat.completion.chunk","created":2,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"The user "},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"cmpl-3","object":"chat.completion","created":3,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Easy.","content":"ok","tool_calls":[]},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":9,"total_tokens":20,"completion_tokens":11,"prompt_tokens_details":null},"prompt_logprobs":null,"kv_transfer_params":null}`,
	`{"id":"chatcmpl-4","object":"chat.completion.chunk","created":4,"model":"qwen3:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Hmm."},"finish_reason":null}]}`,
	`{"choices":[{"delta":{"reasoning":{"effort":"low"},"content":"Hi","extra":[1,2]}}]}`,
	// Fields of unexpected types, nulls, repeated keys.
	`{"model":7,"choices":{"index":0},"usage":"none"}`,
	`{"model":null,"choices":null,"usage":null,"error":null}`,
	`{"choices":[{"index":"0","message":[],"delta":"x","finish_reason":5}]}`,
	`{"choices":[{"index":1.5},{"index":-0},{"index":1e2},{"index":9223372036854775807},{"index":9223372036854775808},{"index":-9223372036854775808},{"index":-9223372036854775809}]}`,
	`{"choices":[{"message":{"content":[{"type":"text","text":"dropped"}],"refusal":true,"tool_calls":{"id":"x"}}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":"1","id":2,"function":"f"},{"index":null,"function":null},{"index":true,"function":{"name":[],"arguments":{}}}]}}]}`,
	`{"usage":{"prompt_tokens":"3","completion_tokens":2,"total_tokens":5.0,"prompt_tokens_details":[],"completion_tokens_details":{"reasoning_tokens":null}}}`,
	`{"usage":null,"usage":{"prompt_tokens":1},"usage":{"total_tokens":2}}`,
	`{"usage":{"prompt_tokens":1},"usage":null}`,
	`{"usage":{"prompt_tokens":1},"usage":7}`,
	`{"model":"a","model":"b","choices":[{"delta":{"content":"x"}},{"index":1}],"choices":[{"finish_reason":"stop"}]}`,
	`{"choices":[{"index":0},{"index":1}],"choices":[],"choices":[{"delta":{"content":"y"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":3}]}}],"choices":[{"delta":{"tool_calls":[{"id":"z"}]}}]}`,
	// In-band errors.
	`{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`,
	`{"error": "plain" , "choices":[]}`,
	`{"error":null}`,
	`{"error":[1, {"a" : 2}],"error":false}`,
	// Case-insensitive keys (encoding/json's folding), escaped keys.
	`{"MODEL":"m","Choices":[{"Delta":{"CONTENT":"up","Tool_Calls":[{"INDEX":2,"Function":{"NAME":"n"}}]}}],"USAGE":{"Prompt_Tokens":4}}`,
	`{"uſage":{"prompt_tokens":1},"\u006dodel":"esc","choices":[{"fınısh_reason":"stop"}],"\u212aey":1}`,
	`{"choices":[{"delta":{"re\u0061soning":"r","\ud800":"lone"}}]}`,
	// Unicode and escapes.
	`{"model":"m","choices":[{"delta":{"content":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t \u0000 日本語 😀"}}]}`,
	`{"choices":[{"delta":{"content":"lone \ud800 and \udc00 and \ud800\u0041 and \ud800\ud800 and \ud83d\ude00 end \ud800"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"bad \xff\xfe utf8 \xed\xa0\x80 \xc3 \xe6\x97 ok\"}}]}",
	"{\"model\":\"\xf0\x9f\x98\x80\",\"choices\":[{\"delta\":{\"content\":\"\\u00e9\xc3\"}}]}",
	// Unknown members of every shape, deep nesting, white space.
	`{"x":{"a":[1,2,{"b":[true,false,null,-1.5e+10,"s\u00e9"]}],"c":{}},"y":[],"z":"","w":0,"choices":[{"logprobs":{"content":[{"token":"a","bytes":[97],"top_logprobs":[]}]},"delta":{"content":"k"}}]}`,
	" \t\r\n{ \"model\" : \"m\" , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"w\" } } ] } \n",
	`[]`, `"x"`, `null`, `true`, `12`, `{}`, `[{"model":"m"}]`,
	// Malformed.
	``, ` `, `{`, `}`, `{"model":"m"`, `{"model":"m",}`, `{"choices":[1,]}`, `{"model" "m"}`, `{model:"m"}`,
	`{"model":"m"} {}`, `{"model":"m"}x`, "{\"model\":\"m\"}\x00", `{"a":tru}`, `{"a":nul}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`,
	`{"a":1e}`, `{"a":.5}`, `{"a":+1}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"tab\there\"}", `{"a":"unterminated}`,
	`{"a":[}`, `{"a":{]}`, `{"a" : }`, `data: {"model":"m"}`, `<html>ok</html>`, `{"error":}`, `{"choices":[{"delta":{"content":"x"},}]}`,
	strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000),
	strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001),
	`{"x":` + strings.Repeat(`{"a":`, 9998) + `1` + strings.Repeat(`}`, 9998) + `}`,
	`{"x":` + strings.Repeat(`{"a":`, 9999) + `1` + strings.Repeat(`}`, 9999) + `}`,
}

// checkDecode decodes data with both decoders into copies of start and
// reports any difference: in the error (its text too) or, without one, in
// what was decoded.
func checkDecode(t *testing.T, data []byte, start func() wireCompletion) {
	t.Helper()
	want, got := start(), start()
	wantErr := stdDecode(data, &want)
	gotErr := decodeBody(data, &got)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("%q: error %v, encoding/json: %v", data, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%q: decoded (-encoding/json +new):\n%s", data, diff)
	}
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	fresh := func() wireCompletion { return wireCompletion{} }
	for _, body := range decodeCorpus {
		checkDecode(t, []byte(body), fresh)
	}
}

// TestDecodeIntoUsed: decoding into what an earlier document left (the
// stream's reused chunk, or fields set before) merges as encoding/json does.
func TestDecodeIntoUsed(t *testing.T) {
	idx := int64(9)
	used := func() wireCompletion {
		c := wireCompletion{Model: "old", Usage: &wireUsage{PromptTokens: 3}, Error: json.RawMessage(`"old"`)}
		c.Choices = make([]wireChoice, 2, 4)
		c.Choices[1].Delta = wireMessage{Content: "stale", ToolCalls: []wireToolCall{{Index: &idx, ID: "old"}}}
		c.Choices = c.Choices[:1]
		return c
	}
	for _, body := range decodeCorpus {
		checkDecode(t, []byte(body), used)
	}
}

// TestDecodeModelReused: the stream's previous model name is reused, not
// allocated again.
func TestDecodeModelReused(t *testing.T) {
	data := []byte(`{"model":"gpt-test-0125","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":"stop"}]}`)
	var c wireCompletion
	var d decoder
	allocs := testing.AllocsPerRun(100, func() {
		c = wireCompletion{Choices: c.Choices[:0]}
		if err := d.decode(data, &c); err != nil {
			t.Fatal(err)
		}
	})
	// The content string only: the model name and "stop" are not allocated.
	if allocs != 1 {
		t.Errorf("%v allocations per chunk, want 1", allocs)
	}
}

func FuzzDecode(f *testing.F) {
	for _, body := range decodeCorpus {
		if len(body) < 1000 {
			f.Add([]byte(body))
		}
	}
	fresh := func() wireCompletion { return wireCompletion{} }
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data, fresh)
	})
}

// checkStreamDecode decodes docs one after the other with one stream's
// decoder, as chunkStream does (each into a cleared completion, after a
// head kept from the ones before), and each alone with encoding/json, and
// reports any difference.
func checkStreamDecode(t *testing.T, docs ...[]byte) {
	t.Helper()
	var d decoder
	d.stream = true
	var got wireCompletion
	for _, data := range docs {
		var want wireCompletion
		wantErr := stdDecode(data, &want)
		choices := got.Choices[:cap(got.Choices)]
		clear(choices)
		got = wireCompletion{Choices: choices[:0]}
		gotErr := d.decode(data, &got)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("%q after %q: error %v, encoding/json: %v", data, docs, gotErr, wantErr)
		}
		if wantErr != nil {
			continue
		}
		if len(want.Choices) == 0 && len(got.Choices) == 0 && (want.Choices == nil) != (got.Choices == nil) {
			got.Choices = want.Choices // a reused array of none
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q after %q: decoded (-encoding/json +new):\n%s", data, docs, diff)
		}
	}
}

// streamCorpus: chunks whose starts match a chunk before's in part, in
// whole, or up to a value that goes on.
var streamCorpus = []string{
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"b"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[],"usage":{"prompt_tokens":1}}`,
	`{"id":"c","object":"chat.completion.chunk","created":170,"model":"m","choices":[{"delta":{"content":"c"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"n","choices":[{"delta":{"content":"d"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","model":7,"choices":[]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m",}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"delta":{"content":"e"}}]} x`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","usage":null,"choices":[]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","MODEL":"u","Choices":[]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","error":{"message":"x"}}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m"}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"choices":[{"delta":{"content":"f"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"delta":{"content":"g"}}],"model":"z"}`,
	` {"id":"c", "model":"m", "choices":[]}`,
	` {"id":"c", "model":"m", "choices":[{"delta":{"content":"h"}}]}`,
	`{"choices":[{"delta":{"content":"i"}}]}`,
	// Text deltas around a string that ends like the ones before, or
	// not, or is no string.
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"j\"}}]}"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"\u00e9\ud800ÿ"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"k"},"finish_reason":"stop"}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":null}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"\x"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"l"}}]}]`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"m","content":"n"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content": "o" }}],"choices":[{"index":1}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"p","refusal":"q"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"r"}},{"index":1,"delta":{"content":"s"}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"t"}}],"usage":null}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"u"}}],"model":"m"}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"v"},"message":{"content":null}}]}`,
	`{"id":"c","object":"chat.completion.chunk","created":17,"model":"m","choices":[{"index":0,"delta":{"content":"v"},"message":{"content":"w"}}]}`,
}

func TestStreamDecodeMatchesEncodingJSON(t *testing.T) {
	for _, a := range streamCorpus {
		for _, b := range streamCorpus {
			checkStreamDecode(t, []byte(a), []byte(b), []byte(a))
			checkStreamDecode(t, []byte(a), []byte(a), []byte(b), []byte(a))
		}
	}
}

// TestStreamDecodeHead: a stream's decoder keeps a chunk's start up to
// choices, and decodes a chunk that starts the same from there.
func TestStreamDecodeHead(t *testing.T) {
	var d decoder
	d.stream = true
	var c wireCompletion
	if err := d.decode([]byte(streamCorpus[0]), &c); err != nil {
		t.Fatal(err)
	}
	const head = `{"id":"c","object":"chat.completion.chunk","created":17,"model":"m",`
	if got := d.headBuf[:d.headLen]; string(got) != head {
		t.Fatalf("head %q, want %q", got, head)
	}
	c = wireCompletion{}
	d.Reset([]byte(streamCorpus[1]))
	d.completion(&c)
	if d.End(); d.Bad || c.Model != "m" || len(c.Choices) != 1 || c.Choices[0].Delta.Content != "b" {
		t.Fatalf("decoded %+v (bad %v)", c, d.Bad)
	}
}

// TestStreamDecodeText: a stream's decoder keeps the bytes around a text
// delta's string, and decodes a chunk that has them around another string
// with that string alone; a chunk that ends otherwise is decoded in whole,
// as every chunk of its stream after it.
func TestStreamDecodeText(t *testing.T) {
	var d decoder
	d.stream = true
	var c wireCompletion
	clearC := func() { // as chunkStream.next does
		choices := c.Choices[:cap(c.Choices)]
		clear(choices)
		c = wireCompletion{Choices: choices[:0]}
	}
	for _, doc := range streamCorpus[:2] {
		clearC()
		if err := d.decode([]byte(doc), &c); err != nil {
			t.Fatal(err)
		}
	}
	if mid, end := d.textBuf[:d.textMid], d.textBuf[d.textMid:d.textLen]; string(mid) != `"choices":[{"index":0,"delta":{"content":` ||
		string(end) != `}}]}` {
		t.Fatalf("kept %q and %q around the text", mid, end)
	}
	for _, tc := range []struct {
		doc  string
		text bool // decoded by textDelta
		want string
	}{
		{streamCorpus[0], true, "a"},
		{streamCorpus[17], true, `j"}}]}`},
		{streamCorpus[20], false, ""}, // null: no string
		{streamCorpus[19], false, "k"},
		{streamCorpus[1], false, "b"}, // after another end: in whole
	} {
		clearC()
		d.Reset([]byte(tc.doc))
		if got := d.textDelta(&c); got != tc.text {
			t.Fatalf("%s: textDelta %v, want %v", tc.doc, got, tc.text)
		}
		clearC()
		if err := d.decode([]byte(tc.doc), &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Delta.Content != tc.want {
			t.Fatalf("%s: decoded %+v, %v", tc.doc, c, err)
		}
	}
	if !d.textOff {
		t.Fatal("a chunk that ended otherwise left the text kept in use")
	}
}

func FuzzStreamDecode(f *testing.F) {
	for _, a := range streamCorpus {
		for _, b := range streamCorpus[:4] {
			f.Add([]byte(a), []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkStreamDecode(t, a, b, a)
		checkStreamDecode(t, a, a, b, a)
	})
}

// A body is read whole whatever its Content-Length says: right, too
// small, too large or unknown, and in reads of any size.
func TestReadCompletionAnyLength(t *testing.T) {
	body := `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("ab", 700) + `"}}]}`
	for _, n := range []int64{int64(len(body)), 10, int64(len(body)) + 100, -1, 0} {
		for _, r := range []io.Reader{strings.NewReader(body), iotest.OneByteReader(strings.NewReader(body)), iotest.DataErrReader(strings.NewReader(body))} {
			var c wireCompletion
			if err := readCompletion(&http.Response{ContentLength: n, Body: io.NopCloser(r)}, &c, ""); err != nil {
				t.Fatalf("length %d: %v", n, err)
			}
			if got := c.Choices[0].Message.Content; got != strings.Repeat("ab", 700) {
				t.Errorf("length %d: content of %d bytes", n, len(got))
			}
		}
	}
	if err := readCompletion(&http.Response{ContentLength: 50, Body: io.NopCloser(iotest.ErrReader(io.ErrUnexpectedEOF))}, new(wireCompletion), ""); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error = %v", err)
	}
}

// closeCount is a body that counts its Close calls.
type closeCount struct {
	io.Reader
	closes int
}

func (c *closeCount) Close() error { c.closes++; return nil }

// readCompletion closes the body once, whether the answer decodes, is
// malformed or fails to be read.
func TestReadCompletionCloses(t *testing.T) {
	for name, r := range map[string]io.Reader{
		"answer":     strings.NewReader(`{"model":"m","choices":[]}`),
		"malformed":  strings.NewReader(`{"model":`),
		"read error": iotest.ErrReader(io.ErrUnexpectedEOF),
	} {
		body := &closeCount{Reader: r}
		err := readCompletion(&http.Response{ContentLength: -1, Body: body}, new(wireCompletion), "")
		if (err != nil) != (name != "answer") {
			t.Errorf("%s: err = %v", name, err)
		}
		if body.closes != 1 {
			t.Errorf("%s: %d closes, want 1", name, body.closes)
		}
	}
}

// TestDecodeRoomMatches: a decoder given room (readCompletion's, a
// stream's) decodes what one without it decodes, the first choice and the
// usage in the room.
func TestDecodeRoomMatches(t *testing.T) {
	for _, body := range decodeCorpus {
		var want, got wireCompletion
		wantErr := decodeBody([]byte(body), &want)
		var d decoder
		d.giveRoom()
		room := d.roomUsage
		if err := d.decode([]byte(body), &got); (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, without room %v", body, err, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q: decoded (-without room +with):\n%s", body, diff)
		}
		if got.Usage != nil && got.Usage != room {
			t.Errorf("%q: the usage is not in the room", body)
		}
	}
}

// A text answer with usage decodes, with room, in two allocations: its
// text's and the room of its choice and usage.
func TestDecodeRoomAllocations(t *testing.T) {
	body := []byte(`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}}`)
	n := testing.AllocsPerRun(100, func() {
		var d decoder
		d.giveRoom()
		var c wireCompletion
		if err := d.decode(body, &c); err != nil || c.Choices[0].Message.Content != "Hello there" || c.Usage.TotalTokens != 20 {
			t.Fatalf("%+v, %v", c, err)
		}
	})
	// (The model name "m", one byte, is not allocated.)
	if n != 2 {
		t.Errorf("%v allocations, want 2", n)
	}
}
