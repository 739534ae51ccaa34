package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"google.golang.org/genai"
)

// runAgentRequest is the body of POST /run and /run_sse: ADK's
// RunAgentRequest plus streamSubAgents. Keys are read in camelCase or
// snake_case; unknown keys are ignored.
type runAgentRequest struct {
	AppName    string          `json:"appName"`
	UserID     string          `json:"userId"`
	SessionID  string          `json:"sessionId"`
	NewMessage json.RawMessage `json:"newMessage"`
	Streaming  bool            `json:"streaming"`
	StateDelta map[string]any  `json:"stateDelta"`
	// FunctionCallEventID marks a reply to a long-running call (ADK sends
	// artifact-carrying events unsplit then).
	FunctionCallEventID string `json:"functionCallEventId"`
	// InvocationID names the paused invocation the request resumes.
	InvocationID   string         `json:"invocationId"`
	CustomMetadata map[string]any `json:"customMetadata"`
	// StreamSubAgents also streams the events of agents called as tools.
	StreamSubAgents bool `json:"streamSubAgents"`
	// OnDisconnect is cancel or continue: what becomes of a /run_sse run
	// whose client goes away (default: the model's on_disconnect).
	OnDisconnect string `json:"onDisconnect"`
	// MultitaskStrategy is reject, enqueue or interrupt: what the run does
	// when the session has a run going (default: the model's multitask).
	MultitaskStrategy string `json:"multitaskStrategy"`
}

// createSessionRequest is the body of POST .../sessions.
type createSessionRequest struct {
	SessionID string            `json:"sessionId"`
	State     map[string]any    `json:"state"`
	Events    []json.RawMessage `json:"events"`
	// Parameters are caller-supplied conversation parameters.
	Parameters map[string]any `json:"parameters"`
}

// patchSessionRequest is the body of PATCH .../sessions/{id}.
type patchSessionRequest struct {
	StateDelta map[string]any `json:"stateDelta"`
}

// readBody reads the whole (size-limited) request body. Its buffer grows
// with the bytes that arrived, never ahead of them: Content-Length is the
// client's word, so it caps the buffer but does not size it before the
// bytes are there. A body of known length that fits firstBodyBuffer is read
// into one slice of exactly that length (net/http's server delivers exactly
// Content-Length bytes, fewer is an error); a longer one doubles its buffer,
// up to Content-Length, each time it is full. io.ReadAll, used when the
// length is unknown, would start at 512 bytes and grow.
func (s *Server) readBody(c *gin.Context) ([]byte, error) { return s.appendBody(nil, c) }

// appendBody is readBody reading a body of known length into buf's
// capacity (growing it when short): a buffer from bodyBufs.
func (s *Server) appendBody(buf []byte, c *gin.Context) ([]byte, error) {
	r := c.Request
	if r.Body == nil {
		return nil, nil
	}
	if n := r.ContentLength; n > 0 && n <= s.cfg.MaxBodyBytes {
		return readKnownLength(buf[:0], r.Body, n)
	}
	return io.ReadAll(r.Body)
}

// bodyBufs holds the buffers request bodies are read into (by appendBody)
// by a handler that keeps nothing of its body once decoded, a *[]byte
// each: the chat completions handler, whose decoder copies what it keeps.
var bodyBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest buffer bodyBufs keeps: a rare long
// conversation's is not held on to for the short ones.
const maxPooledBody = 64 << 10

// firstBodyBuffer is the largest buffer a body gets before its bytes
// arrive.
const firstBodyBuffer = 16 << 10

// readKnownLength reads exactly n bytes from r into buf (empty), or when it
// has no capacity into a buffer that starts at min(n, firstBodyBuffer);
// the buffer doubles, capped at n, each time it is full. r is the body as
// the request holds it: an io.Reader would be a conversion, which looks
// the body's type up in the runtime's table of interface implementations.
func readKnownLength(buf []byte, r io.ReadCloser, n int64) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(n, firstBodyBuffer))
	}
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), n-int64(cap(buf)))))
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if err == io.EOF {
				if int64(len(buf)) == n {
					break
				}
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// isEmptyJSON reports a body that holds no value: nothing, or null.
func isEmptyJSON(body []byte) bool {
	b := bytes.TrimSpace(body)
	return len(b) == 0 || string(b) == "null"
}

// decodeCamel decodes a JSON object into v, whose fields are tagged in
// camelCase, accepting each key in snake_case too (camelCase wins when a
// body has both). Unknown keys are ignored.
func decodeCamel(body []byte, v any) error {
	if isEmptyJSON(body) {
		return nil
	}
	obj, err := decodeObject(body, "The request body")
	if err != nil {
		return err
	}
	b, _ := json.Marshal(camelKeys(obj))
	if err := json.Unmarshal(b, v); err != nil {
		return jsonError(err)
	}
	return nil
}

// decodeObject decodes a JSON object, keeping its values raw. what names
// the value in the error.
func decodeObject(body []byte, what string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, badRequest("", "The request body is not valid JSON.")
		}
		return nil, badRequest("", what+" must be a JSON object.")
	}
	if obj == nil {
		return nil, badRequest("", what+" must be a JSON object.")
	}
	return obj, nil
}

// jsonError words a decoding failure for the client.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return badRequest(te.Field, "Field "+te.Field+" has the wrong type: "+te.Value+" is not allowed there.")
	}
	return badRequest("", "The request body is not valid JSON for this route.")
}

// camelKeys returns obj with its snake_case keys in camelCase; a key given
// in both forms keeps the camelCase value.
func camelKeys(obj map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		ck := camelKey(k)
		if _, dup := obj[ck]; dup && ck != k {
			continue
		}
		out[ck] = v
	}
	return out
}

// camelKey turns snake_case into camelCase ("new_message" -> "newMessage").
func camelKey(k string) string {
	if !strings.Contains(strings.Trim(k, "_"), "_") {
		return k
	}
	parts := strings.Split(k, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p != "" {
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

// contentObjects are the Part fields whose own keys may come in snake_case;
// the values inside args and response are the caller's data and are left
// alone.
var contentObjects = []string{"functionCall", "functionResponse", "inlineData", "fileData", "executableCode",
	"codeExecutionResult", "videoMetadata"}

// decodeContent reads a genai Content in camelCase or snake_case (the
// forms Python clients send). Inline data may be base64 in the standard
// or the URL-safe alphabet.
func decodeContent(raw json.RawMessage) (*genai.Content, error) {
	if isEmptyJSON(raw) {
		return nil, nil
	}
	obj, err := decodeObject(raw, "newMessage")
	if err != nil {
		return nil, badRequest("newMessage", "newMessage must be a Content object: {\"role\": \"user\", \"parts\": [...]}.")
	}
	obj = camelKeys(obj)
	if ps, ok := obj["parts"]; ok && !isEmptyJSON(ps) {
		var parts []map[string]json.RawMessage
		if err := json.Unmarshal(ps, &parts); err != nil {
			return nil, badRequest("newMessage.parts", "newMessage.parts must be an array of Part objects.")
		}
		for i, p := range parts {
			p = camelKeys(p)
			for _, name := range contentObjects {
				if inner, ok := p[name]; ok && !isEmptyJSON(inner) {
					var m map[string]json.RawMessage
					if err := json.Unmarshal(inner, &m); err != nil {
						return nil, badRequest("newMessage.parts", "newMessage.parts["+strconv.Itoa(i)+"]."+name+" must be an object.")
					}
					m = camelKeys(m)
					if name == "inlineData" {
						m["data"] = stdBase64(m["data"])
					}
					p[name], _ = json.Marshal(m)
				}
			}
			parts[i] = p
		}
		obj["parts"], _ = json.Marshal(parts)
	}
	b, _ := json.Marshal(obj)
	var c genai.Content
	if err := json.Unmarshal(b, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, badRequest("newMessage", "newMessage."+te.Field+" has the wrong type.")
		}
		return nil, badRequest("newMessage", "newMessage is not a valid Content object.")
	}
	return &c, nil
}

// stdBase64 rewrites a URL-safe or unpadded base64 JSON string into the
// standard padded alphabet Go's decoder expects; anything else is returned
// unchanged.
func stdBase64(raw json.RawMessage) json.RawMessage {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return raw
	}
	s = strings.NewReplacer("-", "+", "_", "/").Replace(strings.TrimRight(s, "="))
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return raw
	}
	out, _ := json.Marshal(base64.StdEncoding.EncodeToString(b))
	return out
}

// checkReservedKeys rejects state keys starting with "~": the gateway keeps
// its own values there (parameters).
func checkReservedKeys(field string, state map[string]any) error {
	for k := range state {
		if strings.HasPrefix(k, "~") {
			return badRequest(field, "State key "+k+" is reserved: keys starting with '~' belong to the gateway.")
		}
	}
	return nil
}
