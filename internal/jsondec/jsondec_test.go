package jsondec

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzSkip checks the syntax of any document as encoding/json does.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"]}`, ` [ ] `, `{}`, `0`, `-0.0E-0`,
		`01`, `1.`, `.5`, `1e`, `"\x"`, `"\u12g4"`, "\"\x01\"", `[1,]`, `{"a" 1}`, `{"a":1,}`, `nul`, `[] []`, ``,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		d.Reset(data)
		d.Skip()
		if got, want := d.End(), json.Valid(data); got != want {
			t.Fatalf("Skip of %q: well-formed %v, encoding/json %v", data, got, want)
		}
	})
}

// FuzzString unescapes any string as encoding/json does, invalid UTF-8
// and lone surrogates replaced alike.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"hi"`, `"é and 日本"`, `"tab\there"`, `"quote \" inside \\ \/"`, `"\u00e9\ud83d\ude00"`,
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, "\"raw\x01control\"", "\"bad \xff utf8 \xed\xa0\x80\"", `"unterminated`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != '"' {
			return
		}
		stringAsJSON(t, data)
	})
}

// stringAsJSON checks that String reads the whole of data (a JSON string,
// or not) as encoding/json does.
func stringAsJSON(t *testing.T, data []byte) {
	t.Helper()
	var d Decoder
	d.Reset(data)
	b, ok := d.String()
	ok = ok && d.End()
	var want string
	err := json.Unmarshal(data, &want)
	if ok != (err == nil) || (ok && string(b) != want) {
		t.Fatalf("String(%q) = %q, %v; encoding/json %q, %v", data, b, ok, want, err)
	}
}

// FuzzParseInt parses any number as strconv.ParseInt does.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "7", "-12", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "99999999999999999999", "1.0", "1e2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseInt([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		if !json.Valid([]byte(s)) || strings.ContainsAny(s, "+_") {
			return // not a JSON number
		}
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("ParseInt(%q) = %d, %v; strconv: %d, %v", s, got, ok, want, err)
		}
	})
}

// FuzzField matches any key to a field as encoding/json does.
func FuzzField(f *testing.F) {
	for _, s := range []string{"model", "Model", "MODEL", "ſtream", "\u212aey", "key", "stream_options", "streamoptions", "x", "", "finishreason", "FINISHREASON", "finishReaſon"} {
		f.Add(s)
	}
	names := []string{"model", "stream", "key", "stream_options", "finishReason"}
	f.Fuzz(func(t *testing.T, key string) {
		var v struct {
			Model         *int `json:"model"`
			Stream        *int `json:"stream"`
			Key           *int `json:"key"`
			StreamOptions *int `json:"stream_options"`
			FinishReason  *int `json:"finishReason"`
		}
		k, _ := json.Marshal(key)
		if err := json.Unmarshal([]byte(`{`+string(k)+`:1}`), &v); err != nil {
			t.Fatal(err)
		}
		want := -1
		for i, p := range []*int{v.Model, v.Stream, v.Key, v.StreamOptions, v.FinishReason} {
			if p != nil {
				want = i
			}
		}
		var d Decoder
		d.Reset(k)
		b, _ := d.String()
		if got := Field(b, names); got != want {
			t.Fatalf("Field(%q) = %d, encoding/json chose %d", key, got, want)
		}
	})
}

// FuzzAny reads any document into an any as encoding/json does.
func FuzzAny(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"],"b":{}}`, `[]`, `"\ud800"`, `1e999`, `{"a":1,"a":[2]}`,
		`{"A":1,"a":2}`, `[1,]`, `nul`, `{"k\u00e9y":"v"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		d.Reset(data)
		got := d.Any()
		ok := d.End()
		var want any
		err := json.Unmarshal(data, &want)
		if ok != (err == nil) || (ok && !reflect.DeepEqual(got, want)) {
			t.Fatalf("Any(%q) = %#v, %v; encoding/json %#v, %v", data, got, ok, want, err)
		}
	})
}

// TestStringEveryOffset reads strings whose quote, escape, control
// character or non-ASCII byte falls at every offset of the eight-byte
// words RawString scans, and at either side of a word's end, as
// encoding/json reads them.
func TestStringEveryOffset(t *testing.T) {
	for _, mid := range []string{``, `\"`, `\\`, `\n`, `\u00e9`, "\x01", "\x1f", "é", "日本", "\xff", "\xed\xa0\x80", "\x7f", " ", "~"} {
		for pre := range 20 {
			for post := range 10 {
				stringAsJSON(t, []byte(`"`+strings.Repeat("a", pre)+mid+strings.Repeat("b", post)+`"`))
			}
		}
	}
	// Unterminated, however long.
	for n := range 20 {
		var d Decoder
		d.Reset([]byte(`"` + strings.Repeat("a", n)))
		if _, ok := d.String(); ok {
			t.Fatalf("an unterminated string of %d bytes read", n)
		}
	}
}

// BenchmarkSkipChunk checks one streamed chat completion chunk, most of
// whose bytes are in strings.
func BenchmarkSkipChunk(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"pass",` +
		`"choices":[{"index":0,"delta":{"content":"tok12 "},"finish_reason":null}]}`)
	for b.Loop() {
		var d Decoder
		d.Reset(data)
		d.Skip()
		if !d.End() {
			b.Fatal("malformed")
		}
	}
}
