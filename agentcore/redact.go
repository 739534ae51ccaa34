package agentcore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Redaction keeps hidden parameter values in the process. Whatever an
// agent sends out (a model request, the message to a remote A2A agent,
// the arguments of a tool that calls a server) goes through the agent's
// Redactor first, which copies it with every hidden value the agent's
// model may not see replaced by "[hidden:<name>]".

// maxRedactPasses bounds the passes over one string: a replacement can
// form a hidden value again with its neighbours ("]x" next to a
// placeholder's end), so the text is redacted again until none is left.
const maxRedactPasses = 4

// hiddenValue is one value to redact and the parameter holding it.
type hiddenValue struct{ value, name string }

// Redactor removes hidden parameter values from what leaves the process,
// in every part type and at every depth. Its methods return copies and
// never change their argument. A nil *Redactor hides nothing and returns
// its arguments as they are. A Redactor is immutable and safe for
// concurrent use.
//
// Strings (text, code, code output, display names, function arguments and
// responses, keys included) have each value replaced wherever it occurs.
// URIs are also checked percent-decoded, and data: URIs decoded. Inline
// data of a textual MIME type (see textual) is redacted as UTF-8 text;
// binary data holding a value's bytes cannot be edited safely and is
// removed: its part becomes a text note naming the parameter. Call ids,
// function names, MIME types and thought signatures are not changed.
type Redactor struct {
	values []hiddenValue // longest first
	r      *strings.Replacer
	exact  map[string]string // value -> its placeholder
	// safe replaces a whole string that cannot be redacted piece by
	// piece: "[hidden]", or "" when that holds a hidden value.
	safe string
}

// newRedactor returns a redactor of values, or nil when there are none.
func newRedactor(values []hiddenValue) *Redactor {
	if len(values) == 0 {
		return nil
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(values, func(i, j int) bool {
		if len(values[i].value) != len(values[j].value) {
			return len(values[i].value) > len(values[j].value)
		}
		return values[i].value < values[j].value
	})
	r := &Redactor{values: values, exact: make(map[string]string, len(values)), safe: "[hidden]"}
	if _, ok := r.find(r.safe); ok {
		r.safe = ""
	}
	args := make([]string, 0, 2*len(values))
	for _, v := range values {
		ph := "[hidden:" + v.name + "]"
		if _, ok := r.find(ph); ok {
			ph = r.safe
		}
		args = append(args, v.value, ph)
		r.exact[v.value] = ph
	}
	r.r = strings.NewReplacer(args...)
	return r
}

// Redactor returns the redactor for everything the current agent sends
// out of the process: its model requests, the message to a remote agent,
// the arguments its tools send to servers. It hides every hidden value of
// the conversation but those the agent's model is allowed to see. Nil
// (hiding nothing) when there is nothing to hide.
func (inv *Invocation) Redactor() *Redactor {
	if inv == nil || inv.sh.pstate == nil || inv.sh.pstate.hidesNothing() {
		return nil
	}
	return inv.sh.pstate.redactor(inv.agent)
}

// Redactor is the redactor of the agent that called the tool (see
// Invocation.Redactor); nil for a nil context.
func (tc *ToolContext) Redactor() *Redactor {
	if tc == nil {
		return nil
	}
	return tc.inv.Redactor()
}

// find returns the first hidden value s holds.
func (r *Redactor) find(s string) (hiddenValue, bool) {
	for _, v := range r.values {
		if strings.Contains(s, v.value) {
			return v, true
		}
	}
	return hiddenValue{}, false
}

// Text returns s with every hidden value replaced by its placeholder.
func (r *Redactor) Text(s string) string {
	if r == nil || s == "" {
		return s
	}
	out := r.r.Replace(s)
	// An unchanged string held no value; a changed one is checked again,
	// since a replacement can form a value with its neighbours.
	for i := 1; out != s; i++ {
		if _, ok := r.find(out); !ok {
			return out
		}
		if i == maxRedactPasses {
			return r.safe
		}
		s, out = out, r.r.Replace(out)
	}
	return out
}

// Value returns v with hidden values replaced in every string (map keys
// included), at any depth, and every number equal to a hidden value
// replaced by its placeholder. Values of other types are read as their
// JSON form.
func (r *Redactor) Value(v any) any {
	if r == nil {
		return v
	}
	switch t := v.(type) {
	case string:
		return r.Text(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[r.Text(k)] = r.Value(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = r.Value(e)
		}
		return out
	case bool, nil:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	if ph, ok := r.exact[string(b)]; ok {
		return ph
	}
	if len(b) > 0 && (b[0] == '{' || b[0] == '[' || b[0] == '"') {
		// A typed value (a struct a tool returned): redact its JSON form.
		var back any
		if json.Unmarshal(b, &back) == nil {
			return r.Value(back)
		}
	}
	return v
}

// Object is Value for a JSON object (function arguments, a response).
func (r *Redactor) Object(m map[string]any) map[string]any {
	if r == nil || m == nil {
		return m
	}
	out, _ := r.Value(m).(map[string]any)
	return out
}

// Content returns a redacted copy of c (nil parts are dropped).
func (r *Redactor) Content(c *genai.Content) *genai.Content {
	if r == nil || c == nil {
		return c
	}
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, 0, len(c.Parts))}
	for _, p := range c.Parts {
		if p != nil {
			out.Parts = append(out.Parts, r.Part(p))
		}
	}
	return out
}

// Part returns a redacted copy of p: every part type, see Redactor.
func (r *Redactor) Part(p *genai.Part) *genai.Part {
	if r == nil || p == nil {
		return p
	}
	np := *p
	np.Text = r.Text(p.Text)
	if b := p.InlineData; b != nil {
		data, note := r.blob(b.MIMEType, b.Data)
		if note != "" {
			return &genai.Part{Text: note, Thought: p.Thought}
		}
		np.InlineData = &genai.Blob{Data: data, MIMEType: b.MIMEType, DisplayName: r.Text(b.DisplayName)}
	}
	if f := p.FileData; f != nil {
		uri, note := r.uri(f.MIMEType, f.FileURI)
		if note != "" {
			return &genai.Part{Text: note, Thought: p.Thought}
		}
		np.FileData = &genai.FileData{FileURI: uri, MIMEType: f.MIMEType, DisplayName: r.Text(f.DisplayName)}
	}
	if fc := p.FunctionCall; fc != nil {
		c := *fc
		c.Args = r.Object(fc.Args)
		c.PartialArgs = nil
		for _, a := range fc.PartialArgs {
			if a != nil {
				ca := *a
				ca.StringValue, ca.JsonPath, ca.NULLValue = r.Text(a.StringValue), r.Text(a.JsonPath), r.Text(a.NULLValue)
				c.PartialArgs = append(c.PartialArgs, &ca)
			}
		}
		np.FunctionCall = &c
	}
	if fr := p.FunctionResponse; fr != nil {
		np.FunctionResponse = r.functionResponse(fr)
	}
	if ec := p.ExecutableCode; ec != nil {
		c := *ec
		c.Code = r.Text(ec.Code)
		np.ExecutableCode = &c
	}
	if cr := p.CodeExecutionResult; cr != nil {
		c := *cr
		c.Output = r.Text(cr.Output)
		np.CodeExecutionResult = &c
	}
	if tc := p.ToolCall; tc != nil {
		c := *tc
		c.Args = r.Object(tc.Args)
		np.ToolCall = &c
	}
	if tr := p.ToolResponse; tr != nil {
		c := *tr
		c.Response = r.Object(tr.Response)
		np.ToolResponse = &c
	}
	if at := p.AudioTranscription; at != nil {
		c := *at
		c.Text, c.SpeakerLabel, c.LanguageCode = r.Text(at.Text), r.Text(at.SpeakerLabel), r.Text(at.LanguageCode)
		c.Words = nil
		for _, w := range at.Words {
			if w != nil {
				cw := *w
				cw.Word, cw.StartOffset, cw.EndOffset = r.Text(w.Word), r.Text(w.StartOffset), r.Text(w.EndOffset)
				c.Words = append(c.Words, &cw)
			}
		}
		np.AudioTranscription = &c
	}
	if sm := p.SpeechMetadata; sm != nil {
		np.SpeechMetadata = &genai.SpeechMetadata{Speaker: r.Text(sm.Speaker), Style: r.Text(sm.Style)}
	}
	np.PartMetadata = r.Object(p.PartMetadata)
	return &np
}

// functionResponse redacts a function response; its attachments that
// cannot be redacted are left out.
func (r *Redactor) functionResponse(fr *genai.FunctionResponse) *genai.FunctionResponse {
	c := *fr
	c.Response = r.Object(fr.Response)
	c.Parts = nil
	for _, p := range fr.Parts {
		if p == nil {
			continue
		}
		q := *p
		if b := p.InlineData; b != nil {
			data, note := r.blob(b.MIMEType, b.Data)
			if note != "" {
				continue
			}
			q.InlineData = &genai.FunctionResponseBlob{Data: data, MIMEType: b.MIMEType, DisplayName: r.Text(b.DisplayName)}
		}
		if f := p.FileData; f != nil {
			uri, note := r.uri(f.MIMEType, f.FileURI)
			if note != "" {
				continue
			}
			q.FileData = &genai.FunctionResponseFileData{FileURI: uri, MIMEType: f.MIMEType, DisplayName: r.Text(f.DisplayName)}
		}
		c.Parts = append(c.Parts, &q)
	}
	return &c
}

// blob redacts inline data: textual data as UTF-8 text; binary data that
// holds a value is removed, and note says so.
func (r *Redactor) blob(mime string, data []byte) (out []byte, note string) {
	var found hiddenValue
	ok := false
	for _, v := range r.values {
		if bytes.Contains(data, []byte(v.value)) {
			found, ok = v, true
			break
		}
	}
	if !ok {
		return data, ""
	}
	if textual(mime) {
		return []byte(r.Text(string(data))), ""
	}
	return nil, r.removed(mime, "data", found)
}

// removed is the note that replaces a part whose content could not be
// redacted.
func (r *Redactor) removed(mime, what string, v hiddenValue) string {
	if mime == "" {
		mime = "untyped"
	}
	return r.Text(fmt.Sprintf("[%s %s removed: it held %s]", mime, what, r.exact[v.value]))
}

// uri redacts a URI: data: URIs by their decoded content, others as text,
// then, when a percent-decoded form still holds a value, component by
// component (path, query keys and values, fragment, user info). A URI that
// still holds one is removed, and note says so.
func (r *Redactor) uri(mime, s string) (out, note string) {
	if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
		return r.dataURI(mime, s)
	}
	out = r.Text(s)
	if _, ok := r.findDecoded(out); !ok {
		return out, ""
	}
	if u, err := url.Parse(out); err == nil && u.Opaque == "" {
		u.Path, u.RawPath = r.Text(u.Path), ""
		u.Fragment, u.RawFragment = r.Text(u.Fragment), ""
		u.RawQuery = r.query(u.RawQuery)
		if u.User != nil {
			if pw, ok := u.User.Password(); ok {
				u.User = url.UserPassword(r.Text(u.User.Username()), r.Text(pw))
			} else {
				u.User = url.User(r.Text(u.User.Username()))
			}
		}
		out = u.String()
		if _, ok := r.findDecoded(out); !ok {
			return out, ""
		}
	}
	v, _ := r.findDecoded(out)
	return "", r.removed(mime, "file", v)
}

// findDecoded finds a hidden value in s as it is or percent-decoded (with
// and without '+' read as a space).
func (r *Redactor) findDecoded(s string) (hiddenValue, bool) {
	if v, ok := r.find(s); ok {
		return v, true
	}
	if !strings.ContainsAny(s, "%+") {
		return hiddenValue{}, false
	}
	if v, ok := r.find(percentDecode(s, false)); ok {
		return v, true
	}
	return r.find(percentDecode(s, true))
}

// query redacts each key and value of a raw query in its decoded form;
// pairs that hold no value keep their encoding.
func (r *Redactor) query(raw string) string {
	if raw == "" {
		return raw
	}
	pairs := strings.Split(raw, "&")
	for i, kv := range pairs {
		k, v, hasValue := strings.Cut(kv, "=")
		if dk := percentDecode(k, true); r.Text(dk) != dk {
			k = url.QueryEscape(r.Text(dk))
		}
		if dv := percentDecode(v, true); r.Text(dv) != dv {
			v = url.QueryEscape(r.Text(dv))
		}
		pairs[i] = k
		if hasValue {
			pairs[i] += "=" + v
		}
	}
	return strings.Join(pairs, "&")
}

// dataURI redacts a data: URI by its decoded content (base64 or
// percent-encoded), re-encoded the same way.
func (r *Redactor) dataURI(mime, s string) (out, note string) {
	meta, payload, ok := strings.Cut(s[len("data:"):], ",")
	if !ok {
		out = r.Text(s)
		if v, found := r.findDecoded(out); found {
			return "", r.removed(mime, "file", v)
		}
		return out, ""
	}
	kind, isBase64 := strings.CutSuffix(meta, ";base64")
	if t, _, _ := strings.Cut(kind, ";"); strings.TrimSpace(t) != "" {
		mime = strings.TrimSpace(t)
	}
	var data []byte
	if isBase64 {
		var err error
		if data, err = decodeBase64(payload); err != nil {
			// Not base64 anyone could read: judged as text.
			isBase64, data = false, []byte(payload)
		}
	} else {
		data = []byte(percentDecode(payload, false))
	}
	red, note := r.blob(mime, data)
	if note != "" {
		return "", note
	}
	if _, found := r.findDecoded(s); !found && bytes.Equal(red, data) {
		return s, ""
	}
	enc := url.PathEscape(string(red))
	if isBase64 {
		enc = base64.StdEncoding.EncodeToString(red)
	}
	out = "data:" + r.Text(meta) + "," + enc
	if v, found := r.findDecoded(out); found {
		return "", r.removed(mime, "file", v)
	}
	return out, ""
}

// decodeBase64 reads standard or URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawURLEncoding.DecodeString(s)
}

// percentDecode decodes every valid %XX escape of s (and '+' as a space
// when plus is set), leaving invalid ones as they are, as lenient servers
// do.
func percentDecode(s string, plus bool) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		case c == '+' && plus:
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// textual reports whether inline data of this MIME type is text that can
// be redacted as UTF-8: text/*, JSON, XML, YAML (and their +suffix
// types), JavaScript, form data, CSV, SQL, GraphQL, TOML, shell scripts,
// NDJSON and e-mail messages. Any other type is binary.
func textual(mime string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(mime), ";")
	mt = strings.TrimSpace(mt)
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") || strings.HasSuffix(mt, "+yaml") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml", "application/toml",
		"application/javascript", "application/ecmascript", "application/x-www-form-urlencoded",
		"application/csv", "application/sql", "application/graphql", "application/x-sh",
		"application/x-ndjson", "application/jsonl", "message/rfc822":
		return true
	}
	return false
}

// redactRequest returns req with every hidden value the current agent may
// not see replaced (see Redactor): in the system instruction and every
// content, so values a tool or a sub-agent echoed never reach the model.
// req itself is not changed.
func (inv *Invocation) redactRequest(req *model.Request) *model.Request {
	if req == nil || inv.sh.pstate.hidesNothing() {
		return req // nothing to redact (inv.Redactor() is nil)
	}
	r := inv.Redactor()
	if r == nil {
		return req
	}
	out := *req
	if req.Config != nil {
		cfg := *req.Config
		cfg.SystemInstruction = r.Content(cfg.SystemInstruction)
		out.Config = &cfg
	}
	out.Contents = make([]*genai.Content, len(req.Contents))
	for i, c := range req.Contents {
		out.Contents[i] = r.Content(c)
	}
	return &out
}
