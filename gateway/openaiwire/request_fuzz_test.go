package openaiwire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzDecodeRequest decodes any body as a chat completion request: no
// panic; a body encoding/json refuses is refused with a 400 *Error; a
// decoded request survives a round trip through its own JSON unchanged;
// and Validate either converts it or refuses it with a 400 *Error.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range chatBodies {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		var ref ChatCompletionRequest
		refErr := json.Unmarshal(body, &ref)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("DecodeRequest error %v, encoding/json error %v", err, refErr)
		}
		if err != nil {
			if e, ok := AsError(err); !ok || e.Status != http.StatusBadRequest {
				t.Fatalf("error %v is not a 400 *Error", err)
			}
			return
		}
		once, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("marshal the decoded request: %v", err)
		}
		again, err := DecodeRequest(once)
		if err != nil {
			t.Fatalf("the request's own JSON does not decode: %v\n%s", err, once)
		}
		twice, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip changed the request:\n%s\n%s", once, twice)
		}
		if _, err := req.Validate(); err != nil {
			if e, ok := AsError(err); !ok || e.Status != http.StatusBadRequest {
				t.Fatalf("Validate error %v is not a 400 *Error", err)
			}
		}
	})
}

// FuzzUnquote decodes any value as a JSON string: what unquote gives is
// what encoding/json gives, error or not, with and without the scan that
// a custom UnmarshalJSON runs inside of.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"hi"`, ` "spaced" `, `"é and 日本"`, `"tab\there"`, `"quote \" inside"`, `"\u00e9\ud83d\ude00"`,
		"\"raw\x01control\"", "\"bad \xff utf8\"", `"unterminated`, `"a"b"`, `""`, `5`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want string
		err := unquote(b, &got)
		wantErr := json.Unmarshal(b, &want)
		if (err != nil) != (wantErr != nil) || got != want {
			t.Fatalf("unquote(%q) = %q, %v; encoding/json: %q, %v", b, got, err, want, wantErr)
		}
		var inContent Content
		if json.Unmarshal(append(append([]byte(`{"content":`), b...), '}'), &struct {
			Content *Content `json:"content"`
		}{&inContent}) == nil && wantErr == nil && inContent.Text != want {
			t.Fatalf("content %q decodes to %q, want %q", b, inContent.Text, want)
		}
	})
}
