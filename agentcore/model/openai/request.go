package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/internal/jsonenc"
)

// outputSchemaName is the response_format json_schema name we send.
const outputSchemaName = "output"

// chatRequest is the body of POST /chat/completions. It is ours (as is
// every wire type we send; see STYLE.md), written as encoding/json writes
// it (see encode): building openai-go's param unions and encoding them by
// reflection was a sixth of a non-streamed turn's CPU.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          any             `json:"tool_choice,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	MaxCompletionTokens int64           `json:"max_completion_tokens,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Stop                []string        `json:"stop,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Verbosity           string          `json:"verbosity,omitempty"`
	ServiceTier         string          `json:"service_tier,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    messageContent `json:"content,omitzero"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// messageContent is a message's content: a string (Text), or the parts of
// a user message that is more than one text (Parts, then Text is empty);
// none when both are empty. It is a struct, not an interface value: a
// string put in one is an allocation of its own, for every message of
// every request. (Its JSON for encoding/json, which encode is tested
// against, is in request_encode_test.go.)
type messageContent struct {
	Text  string
	Parts []contentPart
}

// IsZero reports whether there is no content (the member is left out).
func (c messageContent) IsZero() bool { return c.Text == "" && c.Parts == nil }

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type contentPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ImageURL   *imageURL   `json:"image_url,omitempty"`
	InputAudio *inputAudio `json:"input_audio,omitempty"`
	File       *filePart   `json:"file,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type inputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type filePart struct {
	FileData string `json:"file_data"`
	Filename string `json:"filename,omitempty"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
}

// namedToolChoice forces one function.
type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// allowedToolsChoice limits the model to some functions.
type allowedToolsChoice struct {
	Type         string `json:"type"`
	AllowedTools struct {
		Mode  string            `json:"mode"`
		Tools []namedToolChoice `json:"tools"`
	} `json:"allowed_tools"`
}

type responseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *jsonSchemaFormat `json:"json_schema,omitempty"`
}

type jsonSchemaFormat struct {
	Name   string         `json:"name"`
	Strict bool           `json:"strict"`
	Schema map[string]any `json:"schema"`
}

// buildParams maps a runtime request onto a chat-completions request body,
// p (which the caller may keep on its stack: encode keeps no part of it).
// It is pure: no I/O, and req is not modified.
func buildParams(p *chatRequest, modelID string, req *model.Request) (err error) {
	*p, err = newParams(nil, modelID, req)
	return err
}

// newParams is buildParams' body, returned: its messages in room's array
// when they fit (a caller's, on its stack: a value stored through a
// pointer would move it to the heap), else in a new one.
func newParams(room []chatMessage, modelID string, req *model.Request) (chatRequest, error) {
	msgs := room[:0]
	if n := len(req.Contents) + 1; cap(msgs) < n {
		msgs = make([]chatMessage, 0, n)
	}
	p := chatRequest{Model: modelID, Messages: msgs}
	cfg := req.Config
	if cfg == nil {
		cfg = &genai.GenerateContentConfig{}
	}
	if sys := joinText(cfg.SystemInstruction, "\n\n"); sys != "" {
		p.Messages = append(p.Messages, chatMessage{Role: "system", Content: messageContent{Text: sys}})
	}
	var err error
	if p.Messages, err = messages(p.Messages, req.Contents); err != nil {
		return chatRequest{}, err
	}

	if p.Tools, err = tools(cfg.Tools); err != nil {
		return chatRequest{}, err
	}
	p.ToolChoice = toolChoice(cfg.ToolConfig)
	if p.ResponseFormat, err = responseFormatOf(cfg, &req.Options); err != nil {
		return chatRequest{}, err
	}
	generationSettings(&p, cfg)
	o := &req.Options
	if len(p.Tools) > 0 { // OpenAI refuses parallel_tool_calls without tools
		p.ParallelToolCalls = o.ParallelToolCalls
	}
	p.ReasoningEffort, p.Verbosity, p.ServiceTier = o.ReasoningEffort, o.Verbosity, o.ServiceTier
	return p, nil
}

// detail is an image part's detail: low or high from its media
// resolution, else "" (the upstream's auto).
func detail(p *genai.Part) string {
	if p.MediaResolution == nil {
		return ""
	}
	switch p.MediaResolution.Level {
	case genai.PartMediaResolutionLevelMediaResolutionLow:
		return "low"
	case genai.PartMediaResolutionLevelMediaResolutionHigh:
		return "high"
	}
	return ""
}

// encode returns the JSON body: exactly what encoding/json writes for p
// with HTML escaping off (the upstream reads JSON, and prompts keep their
// bytes; the tests hold it to that), written by hand. Encoding the
// request by reflection was a few percent of a turn's CPU. Values of an
// open shape (schemas, tool_choice, response_format) and the sampling
// floats still go through encoding/json, which only a turn that has them
// pays.
func (p *chatRequest) encode() ([]byte, error) {
	b := make([]byte, 0, p.sizeHint())
	b = append(b, `{"model":`...)
	b = str(b, p.Model)
	b = append(b, `,"messages":`...)
	if p.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = p.Messages[i].append(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if len(p.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range p.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = str(b, t.Type)
			b = append(b, `,"function":{"name":`...)
			b = str(b, t.Function.Name)
			if t.Function.Description != "" {
				b = append(b, `,"description":`...)
				b = str(b, t.Function.Description)
			}
			b = append(b, `,"parameters":`...)
			var err error
			if b, err = appendValue(b, t.Function.Parameters); err != nil {
				return nil, err
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if p.ToolChoice != nil || p.ResponseFormat != nil || p.Temperature != nil || p.TopP != nil ||
		p.PresencePenalty != nil || p.FrequencyPenalty != nil {
		var err error
		if b, err = p.appendOpen(b); err != nil {
			return nil, err
		}
	}
	if p.MaxCompletionTokens != 0 || p.Seed != nil || len(p.Stop) > 0 {
		b = p.appendLimits(b)
	}
	if p.Stream {
		b = append(b, `,"stream":true`...)
	}
	if p.StreamOptions != nil {
		b = append(b, `,"stream_options":{"include_usage":`...)
		b = strconv.AppendBool(b, p.StreamOptions.IncludeUsage)
		b = append(b, '}')
	}
	if p.ParallelToolCalls != nil || p.ReasoningEffort != "" || p.Verbosity != "" || p.ServiceTier != "" {
		b = p.appendOptions(b)
	}
	return append(b, '}'), nil
}

// appendLimits appends max_completion_tokens, seed and stop, those set:
// apart from encode, as appendOpen, so that a request without them runs
// none of their code.
func (p *chatRequest) appendLimits(b []byte) []byte {
	if p.MaxCompletionTokens != 0 {
		b = append(b, `,"max_completion_tokens":`...)
		b = strconv.AppendInt(b, p.MaxCompletionTokens, 10)
	}
	if p.Seed != nil {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, *p.Seed, 10)
	}
	if len(p.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range p.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, s)
		}
		b = append(b, ']')
	}
	return b
}

// appendOptions appends parallel_tool_calls, reasoning_effort, verbosity
// and service_tier, those set (see appendLimits).
func (p *chatRequest) appendOptions(b []byte) []byte {
	if p.ParallelToolCalls != nil {
		b = append(b, `,"parallel_tool_calls":`...)
		b = strconv.AppendBool(b, *p.ParallelToolCalls)
	}
	b = strMember(b, `,"reasoning_effort":`, p.ReasoningEffort)
	b = strMember(b, `,"verbosity":`, p.Verbosity)
	return strMember(b, `,"service_tier":`, p.ServiceTier)
}

// appendOpen appends tool_choice, response_format and the sampling
// floats, those set, through encoding/json. Each is given to it as a copy
// of its value, not as the pointer or interface p holds: what p points
// to stays p's (a caller's messages on its stack stay there).
func (p *chatRequest) appendOpen(b []byte) ([]byte, error) {
	var err error
	if p.ToolChoice != nil {
		b = append(b, `,"tool_choice":`...)
		switch tc := p.ToolChoice.(type) {
		case string:
			b, err = appendValue(b, tc)
		case namedToolChoice:
			b, err = appendValue(b, tc)
		case allowedToolsChoice:
			b, err = appendValue(b, tc)
		default: // toolChoice makes none
			err = fmt.Errorf("tool_choice of type %s", reflect.TypeOf(tc))
		}
		if err != nil {
			return nil, err
		}
	}
	if p.ResponseFormat != nil {
		b = append(b, `,"response_format":`...)
		if b, err = appendValue(b, *p.ResponseFormat); err != nil {
			return nil, err
		}
	}
	for _, f := range [...]struct {
		key string
		v   *float64
	}{
		{`,"temperature":`, p.Temperature},
		{`,"top_p":`, p.TopP},
		{`,"presence_penalty":`, p.PresencePenalty},
		{`,"frequency_penalty":`, p.FrequencyPenalty},
	} {
		if f.v != nil {
			b = append(b, f.key...)
			if b, err = appendValue(b, *f.v); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// strMember appends the member key (`,"name":`) with the string v, unless
// v is empty (omitempty).
func strMember(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return str(append(b, key...), v)
}

// sizeHint is about the length of p's JSON, so that encode allocates once
// most of the time.
func (p *chatRequest) sizeHint() int {
	n := 64 + len(p.Model)
	if p.Stream {
		n += 64
	}
	for i := range p.Messages {
		m := &p.Messages[i]
		n += 48 + len(m.ToolCallID)
		n += len(m.Content.Text) + len(m.Content.Text)/8
		for _, cp := range m.Content.Parts {
			n += 64 + len(cp.Text)
			if cp.ImageURL != nil {
				n += len(cp.ImageURL.URL)
			}
			if cp.InputAudio != nil {
				n += len(cp.InputAudio.Data)
			}
			if cp.File != nil {
				n += len(cp.File.FileData)
			}
		}
		for _, tc := range m.ToolCalls {
			n += 80 + len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)*9/8
		}
	}
	return n + 256*len(p.Tools)
}

// append appends m's JSON.
func (m *chatMessage) append(b []byte) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = str(b, m.Role)
	switch c := &m.Content; {
	case c.Parts != nil:
		b = append(b, `,"content":`...)
		b = appendParts(b, c.Parts)
	case c.Text != "":
		b = append(b, `,"content":`...)
		b = str(b, c.Text)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = str(b, tc.ID)
			b = append(b, `,"type":`...)
			b = str(b, tc.Type)
			b = append(b, `,"function":{"name":`...)
			b = str(b, tc.Function.Name)
			b = append(b, `,"arguments":`...)
			b = str(b, tc.Function.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = str(b, m.ToolCallID)
	}
	return append(b, '}'), nil
}

// appendParts appends array content.
func appendParts(b []byte, parts []contentPart) []byte {
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = str(b, p.Type)
		if p.Text != "" {
			b = append(b, `,"text":`...)
			b = str(b, p.Text)
		}
		if u := p.ImageURL; u != nil {
			b = append(b, `,"image_url":{"url":`...)
			b = str(b, u.URL)
			if u.Detail != "" {
				b = append(b, `,"detail":`...)
				b = str(b, u.Detail)
			}
			b = append(b, '}')
		}
		if a := p.InputAudio; a != nil {
			b = append(b, `,"input_audio":{"data":`...)
			b = str(b, a.Data)
			b = append(b, `,"format":`...)
			b = str(b, a.Format)
			b = append(b, '}')
		}
		if f := p.File; f != nil {
			b = append(b, `,"file":{"file_data":`...)
			b = str(b, f.FileData)
			if f.Filename != "" {
				b = append(b, `,"filename":`...)
				b = str(b, f.Filename)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// str appends s as a JSON string, HTML characters not escaped.
func str(b []byte, s string) []byte { return jsonenc.AppendStringNoHTML(b, s) }

// appendValue appends v as encoding/json writes it with HTML escaping off.
func appendValue(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// generationSettings copies the sampling knobs that chat completions know.
func generationSettings(p *chatRequest, cfg *genai.GenerateContentConfig) {
	if cfg.Temperature == nil && cfg.TopP == nil && cfg.PresencePenalty == nil && cfg.FrequencyPenalty == nil &&
		cfg.MaxOutputTokens <= 0 && cfg.Seed == nil && cfg.StopSequences == nil {
		return // most requests: the test inlined in newParams
	}
	setGeneration(p, cfg)
}

// setGeneration is generationSettings of a config that sets any knob.
func setGeneration(p *chatRequest, cfg *genai.GenerateContentConfig) {
	widened := func(f *float32) *float64 {
		if f == nil {
			return nil
		}
		v := widen(*f)
		return &v
	}
	p.Temperature = widened(cfg.Temperature)
	p.TopP = widened(cfg.TopP)
	p.PresencePenalty = widened(cfg.PresencePenalty)
	p.FrequencyPenalty = widened(cfg.FrequencyPenalty)
	if cfg.MaxOutputTokens > 0 {
		p.MaxCompletionTokens = int64(cfg.MaxOutputTokens)
	}
	if cfg.Seed != nil {
		seed := int64(*cfg.Seed)
		p.Seed = &seed
	}
	p.Stop = cfg.StopSequences
}

// widen converts a float32 setting to the float64 a person would have
// written (0.7, not 0.699999988079071).
func widen(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}

// joinText joins the text parts of c (thoughts excluded) with sep.
func joinText(c *genai.Content, sep string) string {
	if c == nil {
		return ""
	}
	if len(c.Parts) == 1 { // the usual instruction: its text, without a slice to join
		if p := c.Parts[0]; p != nil && !p.Thought {
			return p.Text
		}
		return ""
	}
	var texts []string
	for _, p := range c.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, sep)
}

// messages appends the conversation's messages to out. Function calls
// keep their ids; a call without one gets a stable synthetic id that its
// response (matched by name, in order) reuses, so the pairing chat
// completions needs holds.
func messages(out []chatMessage, contents []*genai.Content) ([]chatMessage, error) {
	var pending map[string][]string // function name -> synthetic ids awaiting a response
	synthetic := 0
	for _, c := range contents {
		if c == nil {
			continue
		}
		if c.Role == genai.RoleModel {
			if m, ok := assistantMessage(c, &pending, &synthetic); ok {
				out = append(out, m)
			}
			continue
		}
		var parts userParts
		for _, p := range c.Parts {
			switch {
			case p == nil || p.Thought:
			case p.FunctionResponse != nil:
				m, err := toolMessage(p.FunctionResponse, pending)
				if err != nil {
					return nil, err
				}
				out = append(out, m)
			case p.Text != "":
				parts.add(contentPart{Type: "text", Text: p.Text})
			case p.InlineData != nil:
				part, err := inlinePart(p.InlineData)
				if err != nil {
					return nil, err
				}
				if part.ImageURL != nil {
					part.ImageURL.Detail = detail(p)
				}
				parts.add(part)
			case p.FileData != nil:
				if !strings.HasPrefix(p.FileData.MIMEType, "image/") {
					return nil, fmt.Errorf("file part %q (%s): only images can be sent by URL", p.FileData.FileURI, p.FileData.MIMEType)
				}
				parts.add(contentPart{Type: "image_url", ImageURL: &imageURL{URL: p.FileData.FileURI, Detail: detail(p)}})
			}
		}
		switch {
		case parts.n == 1 && parts.first.Type == "text":
			out = append(out, chatMessage{Role: "user", Content: messageContent{Text: parts.first.Text}})
		case parts.n > 0:
			out = append(out, chatMessage{Role: "user", Content: messageContent{Parts: parts.list()}})
		}
	}
	return out, nil
}

// userParts are a user content's parts, the first one held until a second
// comes: a content of one text part, the usual one, is sent as a string,
// and needs no slice.
type userParts struct {
	n     int
	first contentPart
	all   []contentPart // from the second part on, every part
}

func (u *userParts) add(p contentPart) {
	switch u.n++; u.n {
	case 1:
		u.first = p
	case 2:
		u.all = append(make([]contentPart, 0, 2), u.first, p)
	default:
		u.all = append(u.all, p)
	}
}

// list returns the parts, n > 0.
func (u *userParts) list() []contentPart {
	if u.n == 1 {
		return []contentPart{u.first}
	}
	return u.all
}

// assistantMessage maps a model turn: its text and its function calls.
// pending is made when the first call without an id needs it.
func assistantMessage(c *genai.Content, pending *map[string][]string, synthetic *int) (chatMessage, bool) {
	m := chatMessage{Role: "assistant"}
	m.Content.Text = joinText(c, "")
	for _, p := range c.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			*synthetic++
			id = "call_" + strconv.Itoa(*synthetic)
			if *pending == nil {
				*pending = map[string][]string{}
			}
			(*pending)[fc.Name] = append((*pending)[fc.Name], id)
		}
		args, _ := json.Marshal(argsOrEmpty(fc.Args))
		m.ToolCalls = append(m.ToolCalls, chatToolCall{
			ID: id, Type: "function", Function: functionCall{Name: fc.Name, Arguments: string(args)},
		})
	}
	return m, !m.Content.IsZero() || len(m.ToolCalls) > 0
}

func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// toolMessage maps a function response to a role "tool" message whose
// content is the JSON of the response map.
func toolMessage(fr *genai.FunctionResponse, pending map[string][]string) (chatMessage, error) {
	id := fr.ID
	if id == "" {
		if ids := pending[fr.Name]; len(ids) > 0 {
			id, pending[fr.Name] = ids[0], ids[1:]
		}
	}
	if id == "" {
		return chatMessage{}, fmt.Errorf("function response %q has no id and matches no earlier call", fr.Name)
	}
	body, err := json.Marshal(argsOrEmpty(fr.Response))
	if err != nil {
		return chatMessage{}, fmt.Errorf("function response %q: %w", fr.Name, err)
	}
	return chatMessage{Role: "tool", Content: messageContent{Text: string(body)}, ToolCallID: id}, nil
}

// inlinePart maps inline bytes: images and audio as such, anything else
// (PDFs, for example) as a file part.
func inlinePart(b *genai.Blob) (contentPart, error) {
	data := base64.StdEncoding.EncodeToString(b.Data)
	mime := b.MIMEType
	switch {
	case strings.HasPrefix(mime, "image/"):
		return contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + mime + ";base64," + data}}, nil
	case mime == "audio/wav" || mime == "audio/x-wav" || mime == "audio/wave":
		return contentPart{Type: "input_audio", InputAudio: &inputAudio{Data: data, Format: "wav"}}, nil
	case mime == "audio/mpeg" || mime == "audio/mp3":
		return contentPart{Type: "input_audio", InputAudio: &inputAudio{Data: data, Format: "mp3"}}, nil
	case mime != "":
		return contentPart{Type: "file", File: &filePart{FileData: "data:" + mime + ";base64," + data, Filename: b.DisplayName}}, nil
	}
	return contentPart{}, fmt.Errorf("inline data without a MIME type")
}

// tools maps function declarations. Provider built-ins (Google Search, code
// execution, ...) have no chat-completions equivalent and are refused
// rather than silently dropped.
func tools(in []*genai.Tool) ([]chatTool, error) {
	if len(in) == 0 {
		return nil, nil // most requests: the test inlined in buildParams
	}
	return functionTools(in)
}

// functionTools is tools of one tool or more.
func functionTools(in []*genai.Tool) ([]chatTool, error) {
	var out []chatTool
	for _, t := range in {
		if t == nil {
			continue
		}
		if builtins := builtinTools(t); len(builtins) > 0 {
			return nil, fmt.Errorf("built-in tool %s: OpenAI-compatible models take function tools only", strings.Join(builtins, ", "))
		}
		for _, fd := range t.FunctionDeclarations {
			if fd == nil {
				continue
			}
			params, err := parameters(fd)
			if err != nil {
				return nil, fmt.Errorf("function %q: %w", fd.Name, err)
			}
			out = append(out, chatTool{Type: "function", Function: functionDef{Name: fd.Name, Description: fd.Description, Parameters: params}})
		}
	}
	return out, nil
}

// builtinTools names what t offers besides function declarations (Google
// Search, code execution, URL context, ...), as genai's JSON keys.
func builtinTools(t *genai.Tool) []string {
	other := *t
	other.FunctionDeclarations = nil
	if reflect.ValueOf(other).IsZero() {
		return nil // the usual case, without encoding the tool
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return []string{"(unencodable tool)"}
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys)
	delete(keys, "functionDeclarations")
	return slices.Sorted(maps.Keys(keys))
}

// parameters returns the JSON Schema of a declaration's arguments:
// ParametersJsonSchema as given, else Parameters converted, else an empty
// object schema.
func parameters(fd *genai.FunctionDeclaration) (map[string]any, error) {
	switch {
	case fd.ParametersJsonSchema != nil:
		return toObject(fd.ParametersJsonSchema)
	case fd.Parameters != nil:
		return jsonSchema(fd.Parameters), nil
	}
	return map[string]any{"type": "object", "properties": map[string]any{}}, nil
}

// toObject turns any JSON-encodable schema value into a JSON object.
func toObject(v any) (map[string]any, error) {
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	return m, nil
}

// toolChoice maps the function-calling mode: AUTO -> "auto", NONE ->
// "none", ANY -> "required" (the one allowed function by name, or an
// allowed_tools list when several are named). nil leaves it out.
func toolChoice(tc *genai.ToolConfig) any {
	if tc == nil || tc.FunctionCallingConfig == nil {
		return nil // most requests: the test inlined in buildParams
	}
	return functionChoice(tc.FunctionCallingConfig)
}

// functionChoice is toolChoice of a function-calling config.
func functionChoice(fcc *genai.FunctionCallingConfig) any {
	names := fcc.AllowedFunctionNames
	switch fcc.Mode {
	case genai.FunctionCallingConfigModeNone:
		return "none"
	case genai.FunctionCallingConfigModeAny:
		switch len(names) {
		case 0:
			return "required"
		case 1:
			return namedTool(names[0])
		default:
			return allowedTools("required", names)
		}
	case genai.FunctionCallingConfigModeAuto, genai.FunctionCallingConfigModeValidated:
		if len(names) > 0 {
			return allowedTools("auto", names)
		}
		return "auto"
	}
	return nil
}

func namedTool(name string) namedToolChoice {
	c := namedToolChoice{Type: "function"}
	c.Function.Name = name
	return c
}

func allowedTools(mode string, names []string) allowedToolsChoice {
	c := allowedToolsChoice{Type: "allowed_tools"}
	c.AllowedTools.Mode = mode
	c.AllowedTools.Tools = make([]namedToolChoice, len(names))
	for i, n := range names {
		c.AllowedTools.Tools[i] = namedTool(n)
	}
	return c
}

// responseFormatOf maps an output schema: application/json with a schema
// -> json_schema (under the client's name and strictness from o, else name
// "output", strict false); application/json alone -> json_object.
func responseFormatOf(cfg *genai.GenerateContentConfig, o *model.Options) (*responseFormat, error) {
	if cfg.ResponseMIMEType != "application/json" {
		return nil, nil // most requests: the test inlined in buildParams
	}
	return jsonFormat(cfg, o)
}

// jsonFormat is responseFormatOf of a JSON answer.
func jsonFormat(cfg *genai.GenerateContentConfig, o *model.Options) (*responseFormat, error) {
	var schema map[string]any
	switch {
	case cfg.ResponseJsonSchema != nil:
		s, err := toObject(cfg.ResponseJsonSchema)
		if err != nil {
			return nil, fmt.Errorf("response schema: %w", err)
		}
		schema = s
	case cfg.ResponseSchema != nil:
		schema = jsonSchema(cfg.ResponseSchema)
	default:
		return &responseFormat{Type: "json_object"}, nil
	}
	f := &jsonSchemaFormat{Name: outputSchemaName, Schema: schema}
	if o.SchemaName != "" {
		f.Name = o.SchemaName
	}
	if o.SchemaStrict != nil {
		f.Strict = *o.SchemaStrict
	}
	return &responseFormat{Type: "json_schema", JSONSchema: f}, nil
}
