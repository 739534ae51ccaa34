package openaiwire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// ToContents converts request messages to the runtime's history.
//
// System and developer text is collected, in order, into system (messages
// joined by a blank line, text parts of one message by a newline); its
// position among the other messages is not kept. User messages become role
// "user" contents (empty text is dropped, and a user message left with no
// parts is skipped). Assistant messages become role "model" contents with one
// text part when there is text (a refusal counts as text) and one
// FunctionCall part per tool call, ID kept and Args parsed from the JSON
// string; an assistant message with neither is skipped. Tool messages become
// FunctionResponse parts of a role "user" content, consecutive tool messages
// sharing one content: ID is the tool_call_id, Name the name of the earlier
// assistant tool call with that id, and Response the content parsed when it
// is a JSON object, else {"result": <content>} (a tool message without
// content answers {"result": ""}).
//
// A tool message may answer a call that is not in msgs (the caller sent only
// the new messages of a stored conversation, or resumes a paused invocation
// by tool_call_id alone). Its FunctionResponse then has an empty Name; the
// caller resolves the id or rejects it with param "messages[i].tool_call_id".
//
// Errors are 400 *Errors naming the offending field. The returned contents
// share nothing with msgs except decoded JSON values.
func ToContents(msgs []ChatMessage) (system string, contents []*genai.Content, err error) {
	return toContents(msgs, 0)
}

// toContents is ToContents for msgs that begin at index first of the
// request's messages, which is how errors count them.
func toContents(msgs []ChatMessage, first int) (system string, contents []*genai.Content, err error) {
	if len(msgs) == 0 {
		return "", nil, nil // no history: a new conversation's first turn
	}
	if m := &msgs[0]; len(msgs) == 1 && m.Role == RoleUser && m.Content != nil && m.Content.Parts == nil && m.Content.Text != "" {
		// A turn's one new message of text (most turns'): the list of
		// its content made with it.
		return "", newUserText(m.Content.Text).list[:], nil
	}
	var systems []string
	callNames := map[string]string{}
	var toolTurn *genai.Content // the content consecutive tool messages join
	for i := range msgs {
		c, part, err := convertMessage(&msgs[i], &systems, callNames)
		if err != nil {
			return "", nil, within("messages["+strconv.Itoa(first+i)+"]", err)
		}
		if part == nil {
			toolTurn = nil
		}
		switch {
		case c != nil:
			contents = append(contents, c)
		case part != nil:
			if toolTurn == nil {
				toolTurn = &genai.Content{Role: genai.RoleUser}
				contents = append(contents, toolTurn)
			}
			toolTurn.Parts = append(toolTurn.Parts, part)
		}
	}
	return strings.Join(systems, "\n\n"), contents, nil
}

// convertMessage converts one message: a system or developer message's text
// is appended to systems, a tool message becomes a function response part,
// and any other message a content (nil when it has nothing to say). Errors
// name the offending field relative to the message, as ".content".
func convertMessage(m *ChatMessage, systems *[]string, callNames map[string]string) (*genai.Content, *genai.Part, *Error) {
	switch m.Role {
	case RoleSystem, RoleDeveloper:
		if m.Content == nil {
			return nil, nil, InvalidRequest(".content", fmt.Sprintf("Missing content in a %s message.", m.Role))
		}
		text, err := joinText(m.Content, PartText)
		if err != nil {
			return nil, nil, err
		}
		if text != "" {
			*systems = append(*systems, text)
		}
		return nil, nil, nil
	case RoleUser:
		c, err := userContent(m)
		return c, nil, err
	case RoleAssistant:
		c, err := assistantContent(m, callNames)
		return c, nil, err
	case RoleTool:
		part, err := toolResponse(m, callNames)
		return nil, part, err
	case "function":
		return nil, nil, InvalidRequest(".role",
			"The legacy 'function' role is not supported; answer tool calls with 'tool' messages.")
	}
	return nil, nil, InvalidRequest(".role", fmt.Sprintf("Invalid value: '%s'. Supported values are: "+
		"'system', 'assistant', 'user', 'tool', and 'developer'.", m.Role))
}

// within makes err, about a field inside the request element named by
// prefix, name that field from the top of the request: the converters
// below name fields relative to what they convert, so that the path is
// built only when something fails.
func within(prefix string, err *Error) *Error {
	err.Param = prefix + err.Param
	return err
}

// joinText returns the text of c: the string, or its parts joined by a
// newline. Only parts of the allowed types are accepted; refusal parts count
// as text.
func joinText(c *Content, allowed ...string) (string, *Error) {
	if c == nil {
		return "", nil
	}
	if c.Parts == nil {
		return c.Text, nil
	}
	return joinParts(c.Parts, ".content", allowed, func(p *ContentPart) (string, string) { return p.Type, p.Text }, func(p *ContentPart) string { return p.Refusal })
}

// joinParts returns the text of parts joined by a newline: text from
// typeText, refusal from refusal for refusal parts. Only parts of the
// allowed types are accepted; param names the parts in errors.
func joinParts[P any](parts []P, param string, allowed []string, typeText func(*P) (typ, text string), refusal func(*P) string) (string, *Error) {
	texts := make([]string, 0, len(parts))
	for j := range parts {
		typ, text := typeText(&parts[j])
		if !slices.Contains(allowed, typ) {
			return "", InvalidRequest(fmt.Sprintf("%s[%d].type", param, j), fmt.Sprintf(
				"Invalid value: '%s'. Supported values are: %s.", typ, quoteList(allowed)))
		}
		if typ == PartRefusal {
			text = refusal(&parts[j])
		}
		texts = append(texts, text)
	}
	return strings.Join(texts, "\n"), nil
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, v := range list {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

func userContent(m *ChatMessage) (*genai.Content, *Error) {
	if m.Content == nil {
		return nil, InvalidRequest(".content", "Missing content in a user message.")
	}
	if m.Content.Parts == nil {
		if m.Content.Text == "" {
			return nil, nil
		}
		return &newUserText(m.Content.Text).c, nil
	}
	var parts []*genai.Part
	for j, p := range m.Content.Parts {
		part, err := userPart(p)
		if err != nil {
			return nil, within(".content["+strconv.Itoa(j)+"]", err)
		}
		if part != nil {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return &genai.Content{Role: genai.RoleUser, Parts: parts}, nil
}

// userText is the content of a user message of one text, its list of one
// part and the part (as genai.NewPartFromText makes it), and a list of the
// content, in one allocation: most turns' input is one text message.
type userText struct {
	list  [1]*genai.Content
	c     genai.Content
	parts [1]*genai.Part
	p     genai.Part
}

func newUserText(text string) *userText {
	one := new(userText)
	one.p.Text = text
	one.parts[0] = &one.p
	one.c = genai.Content{Role: genai.RoleUser, Parts: one.parts[:]}
	one.list[0] = &one.c
	return one
}

// userPart converts one part of a user message; nil for empty text. Errors
// name the field relative to the part.
func userPart(p ContentPart) (*genai.Part, *Error) {
	switch p.Type {
	case PartText:
		if p.Text == "" {
			return nil, nil
		}
		return genai.NewPartFromText(p.Text), nil
	case PartImageURL:
		if p.ImageURL == nil {
			return imagePart("", "", ".image_url.url")
		}
		return imagePart(p.ImageURL.URL, p.ImageURL.Detail, ".image_url.url")
	case PartInputAudio:
		if p.InputAudio == nil || p.InputAudio.Data == "" {
			return nil, InvalidRequest(".input_audio.data", "Missing the audio data.")
		}
		mime, ok := audioMIME[p.InputAudio.Format]
		if !ok {
			return nil, InvalidRequest(".input_audio.format", fmt.Sprintf(
				"Unsupported audio format '%s'. Supported formats are: 'wav', 'mp3', 'flac', 'aac', 'opus'.", p.InputAudio.Format))
		}
		data, err := decodeBase64(p.InputAudio.Data)
		if err != nil {
			return nil, InvalidRequest(".input_audio.data", "The audio data is not valid base64.")
		}
		return genai.NewPartFromBytes(data, mime), nil
	case PartFile:
		if p.File == nil {
			return filePart("", ".file.file_data")
		}
		return filePart(p.File.FileData, ".file.file_data")
	}
	return nil, InvalidRequest(".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.",
		p.Type, quoteList([]string{PartText, PartImageURL, PartInputAudio, PartFile})))
}

// imagePart converts an image given by URL (http(s) or data:) and its
// detail (low, high; anything else is the provider's default) to a part;
// param names the URL's field in errors.
func imagePart(url, detail, param string) (*genai.Part, *Error) {
	if url == "" {
		return nil, InvalidRequest(param, "Missing the image URL.")
	}
	part, err := mediaPart(url, param)
	if err != nil {
		return nil, err
	}
	switch detail {
	case "low":
		part.MediaResolution = &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionLow}
	case "high":
		part.MediaResolution = &genai.PartMediaResolution{Level: genai.PartMediaResolutionLevelMediaResolutionHigh}
	}
	return part, nil
}

// filePart converts an inline file, a data: URL, to a part; param names
// the field in errors.
func filePart(data, param string) (*genai.Part, *Error) {
	if data == "" {
		return nil, InvalidRequest(param,
			"Only inline files are supported: send the file as a data: URL in 'file_data' (file ids and URLs are not supported).")
	}
	if !strings.HasPrefix(data, "data:") {
		return nil, InvalidRequest(param, "'file_data' must be a data: URL.")
	}
	return mediaPart(data, param)
}

var audioMIME = map[string]string{
	"wav": "audio/wav", "mp3": "audio/mpeg", "flac": "audio/flac", "aac": "audio/aac", "opus": "audio/ogg",
}

var imageMIME = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".heic": "image/heic", ".heif": "image/heif",
}

// mediaPart converts a data: URL to inline data and an http(s) URL (only
// images come by URL) to file data, its MIME type guessed from the path's
// extension: "image/jpeg" when the extension says nothing, since providers
// need some image type and most fetch and sniff the bytes anyway.
func mediaPart(raw, param string) (*genai.Part, *Error) {
	if rest, ok := strings.CutPrefix(raw, "data:"); ok {
		mime, data, err := parseDataURL(rest)
		if err != nil {
			return nil, InvalidRequest(param, "Invalid data URL: "+err.Error()+".")
		}
		return genai.NewPartFromBytes(data, mime), nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, InvalidRequest(param, "Expected an http(s) URL or a base64 data: URL.")
	}
	mime, ok := imageMIME[strings.ToLower(path.Ext(u.Path))]
	if !ok {
		mime = "image/jpeg"
	}
	return genai.NewPartFromURI(raw, mime), nil
}

// parseDataURL parses what follows "data:": [<media type>][;params][;base64],<data>.
func parseDataURL(s string) (mime string, data []byte, err error) {
	meta, payload, ok := strings.Cut(s, ",")
	if !ok {
		return "", nil, fmt.Errorf("missing ','")
	}
	isBase64 := false
	if m, ok := strings.CutSuffix(meta, ";base64"); ok {
		meta, isBase64 = m, true
	}
	mime, _, _ = strings.Cut(meta, ";")
	mime = strings.ToLower(strings.TrimSpace(mime))
	if mime == "" {
		return "", nil, fmt.Errorf("missing media type")
	}
	if isBase64 {
		data, err = decodeBase64(payload)
		if err != nil {
			return "", nil, fmt.Errorf("the data is not valid base64")
		}
		return mime, data, nil
	}
	text, err := url.PathUnescape(payload)
	if err != nil {
		return "", nil, fmt.Errorf("the data is not valid percent-encoding")
	}
	return mime, []byte(text), nil
}

// decodeBase64 accepts standard base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	return base64.RawStdEncoding.DecodeString(s)
}

func assistantContent(m *ChatMessage, callNames map[string]string) (*genai.Content, *Error) {
	text, err := joinText(m.Content, PartText, PartRefusal)
	if err != nil {
		return nil, err
	}
	if m.Content == nil && m.Refusal != nil {
		text = *m.Refusal
	}
	var parts []*genai.Part
	if text != "" {
		parts = append(parts, genai.NewPartFromText(text))
	}
	for k, tc := range m.ToolCalls {
		call, err := functionCall(tc)
		if err != nil {
			return nil, within(".tool_calls["+strconv.Itoa(k)+"]", err)
		}
		callNames[tc.ID] = tc.Function.Name
		parts = append(parts, &genai.Part{FunctionCall: call})
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return &genai.Content{Role: genai.RoleModel, Parts: parts}, nil
}

// functionCall converts one tool call of an assistant message. Errors name
// the field relative to the call.
func functionCall(tc ToolCall) (*genai.FunctionCall, *Error) {
	if tc.ID == "" {
		return nil, InvalidRequest(".id", "Missing the tool call id.")
	}
	if tc.Type != "" && tc.Type != "function" {
		return nil, InvalidRequest(".type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'.", tc.Type))
	}
	if tc.Function.Name == "" {
		return nil, InvalidRequest(".function.name", "Missing the function name.")
	}
	args, err := ParseArguments(tc.Function.Arguments)
	if err != nil {
		return nil, InvalidRequest(".function.arguments", "The function arguments must be a JSON object encoded as a string.")
	}
	return &genai.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: args}, nil
}

// ParseArguments decodes a tool call's arguments string. An empty or blank
// string is an empty object; anything but a JSON object is an error.
func ParseArguments(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, err
	}
	if args == nil { // "null"
		return nil, fmt.Errorf("arguments are null")
	}
	return args, nil
}

func toolResponse(m *ChatMessage, callNames map[string]string) (*genai.Part, *Error) {
	if m.ToolCallID == "" {
		return nil, InvalidRequest(".tool_call_id", "Missing 'tool_call_id' in a tool message.")
	}
	text, err := joinText(m.Content, PartText)
	if err != nil {
		return nil, err
	}
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{
		ID: m.ToolCallID, Name: callNames[m.ToolCallID], Response: ToolResult(text),
	}}, nil
}

// ToolResult is the function response for a tool message's content: the
// content itself when it is a JSON object, else {"result": content}.
func ToolResult(content string) map[string]any {
	if trimmed := strings.TrimSpace(content); strings.HasPrefix(trimmed, "{") {
		var obj map[string]any
		if json.Unmarshal([]byte(trimmed), &obj) == nil {
			return obj
		}
	}
	return map[string]any{"result": content}
}

// ToFunctionDeclarations converts the request's tools (already validated) to
// function declarations with ParametersJsonSchema; a tool without
// parameters gets {"type": "object", "properties": {}}. Names are the
// client's. The declarations share the parameter schemas with tools.
func ToFunctionDeclarations(tools []Tool) []*genai.FunctionDeclaration {
	var out []*genai.FunctionDeclaration
	for _, t := range tools {
		if t.Function == nil {
			continue
		}
		var params any = t.Function.Parameters
		if t.Function.Parameters == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		out = append(out, &genai.FunctionDeclaration{
			Name: t.Function.Name, Description: t.Function.Description, ParametersJsonSchema: params,
		})
	}
	return out
}

// ToToolConfig converts tool_choice: none -> NONE, auto -> AUTO, required
// -> ANY, a named function -> ANY allowing only that (client) name. A nil
// choice yields nil (the model's default, which is auto).
func ToToolConfig(tc *ToolChoice) *genai.ToolConfig {
	if tc == nil {
		return nil
	}
	fc := &genai.FunctionCallingConfig{}
	switch tc.Mode {
	case ToolChoiceNone:
		fc.Mode = genai.FunctionCallingConfigModeNone
	case ToolChoiceAuto:
		fc.Mode = genai.FunctionCallingConfigModeAuto
	case ToolChoiceRequired:
		fc.Mode = genai.FunctionCallingConfigModeAny
	case ToolChoiceFunction:
		fc.Mode = genai.FunctionCallingConfigModeAny
		fc.AllowedFunctionNames = []string{tc.Name}
	default:
		return nil
	}
	return &genai.ToolConfig{FunctionCallingConfig: fc}
}

// OutputSchema reads response_format. text (or none) -> (nil, false);
// json_object -> (nil, true); json_schema -> (its schema, true). A
// json_schema format without a schema object, or an unknown type, is a 400
// *Error naming the field. The schema is shared with rf.
func OutputSchema(rf *ResponseFormat) (schema map[string]any, jsonMode bool, err error) {
	if rf == nil {
		return nil, false, nil
	}
	switch rf.Type {
	case FormatText:
		return nil, false, nil
	case FormatJSONObject:
		return nil, true, nil
	case FormatJSONSchema:
		if rf.JSONSchema == nil {
			return nil, false, InvalidRequest("response_format.json_schema",
				"Missing 'json_schema' for response_format of type 'json_schema'.")
		}
		if rf.JSONSchema.Schema == nil {
			return nil, false, InvalidRequest("response_format.json_schema.schema",
				"Missing 'schema' in response_format.json_schema: a JSON Schema object is required.")
		}
		return rf.JSONSchema.Schema, true, nil
	}
	return nil, false, InvalidRequest("response_format.type", fmt.Sprintf(
		"Invalid value: '%s'. Supported values are: 'text', 'json_object', 'json_schema'.", rf.Type))
}

// SetsTurn reports whether the request sets any of what OutputSchema,
// GenerationSettings, ToToolConfig and ModelOptions map to a turn's
// settings. Most requests set none: their turns keep the agents' own
// settings, and a caller need not map them.
func (req *ChatCompletionRequest) SetsTurn() bool {
	return req.ResponseFormat != nil || req.ToolChoice != nil || req.ParallelToolCalls != nil || req.ReasoningEffort != "" ||
		req.Reasoning != nil || req.Verbosity != "" || req.ServiceTier != "" || req.Temperature != nil || req.TopP != nil ||
		req.MaxTokens != nil || req.MaxCompletionTokens != nil || len(req.Stop) > 0 || req.Seed != nil ||
		req.PresencePenalty != nil || req.FrequencyPenalty != nil
}

// ModelOptions are the request's settings for the model calls beyond
// genai's config: the json_schema's name and strict flag, parallel tool
// calls, reasoning effort (reasoning_effort, else reasoning.effort),
// verbosity and service tier.
func (req *ChatCompletionRequest) ModelOptions() model.Options {
	o := model.Options{ParallelToolCalls: req.ParallelToolCalls, ReasoningEffort: req.ReasoningEffort,
		Verbosity: req.Verbosity, ServiceTier: req.ServiceTier}
	if o.ReasoningEffort == "" && req.Reasoning != nil {
		o.ReasoningEffort = deref(req.Reasoning.Effort)
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type == FormatJSONSchema && rf.JSONSchema != nil {
		o.SchemaName, o.SchemaStrict = rf.JSONSchema.Name, rf.JSONSchema.Strict
	}
	return o
}

// GenerationSettings returns a copy of base (a new config when nil) with the
// request's sampling settings laid over it: temperature, top_p,
// max_completion_tokens (else max_tokens), stop, seed, presence_penalty and
// frequency_penalty. Fields the request leaves out keep base's values; base
// is not modified. Values beyond int32 are clamped (max tokens) or
// truncated (seed). With a nil base and none of these settings in the
// request it returns nil.
func GenerationSettings(req *ChatCompletionRequest, base *genai.GenerateContentConfig) *genai.GenerateContentConfig {
	return req.sampling().apply(base)
}

func (req *ChatCompletionRequest) sampling() sampling {
	maxTokens := req.MaxCompletionTokens
	if maxTokens == nil {
		maxTokens = req.MaxTokens
	}
	return sampling{temperature: req.Temperature, topP: req.TopP, presence: req.PresencePenalty,
		frequency: req.FrequencyPenalty, maxTokens: maxTokens, stop: req.Stop, seed: req.Seed}
}

// sampling holds the sampling settings of a request of either API.
type sampling struct {
	temperature, topP, presence, frequency *float64
	maxTokens, seed                        *int64
	stop                                   []string
}

func (s sampling) empty() bool {
	return s.temperature == nil && s.topP == nil && s.presence == nil && s.frequency == nil &&
		s.maxTokens == nil && len(s.stop) == 0 && s.seed == nil
}

// apply returns a copy of base (a new config when nil) with the settings
// laid over it; nil when base is nil and no setting is given.
func (s sampling) apply(base *genai.GenerateContentConfig) *genai.GenerateContentConfig {
	if base == nil && s.empty() {
		return nil
	}
	var cfg genai.GenerateContentConfig
	if base != nil {
		cfg = *base
	}
	cfg.Temperature = float32Or(s.temperature, cfg.Temperature)
	cfg.TopP = float32Or(s.topP, cfg.TopP)
	cfg.PresencePenalty = float32Or(s.presence, cfg.PresencePenalty)
	cfg.FrequencyPenalty = float32Or(s.frequency, cfg.FrequencyPenalty)
	if s.maxTokens != nil {
		cfg.MaxOutputTokens = int32(min(*s.maxTokens, math.MaxInt32))
	}
	if len(s.stop) > 0 {
		cfg.StopSequences = append([]string(nil), s.stop...)
	}
	if s.seed != nil {
		seed := int32(*s.seed)
		cfg.Seed = &seed
	}
	return &cfg
}

// check reports the first setting outside OpenAI's ranges as a 400 naming
// it; maxTokensParam names the max tokens field and minTokens is its least
// value.
func (s sampling) check(maxTokensParam string, minTokens int64) *Error {
	ranges := []struct {
		param    string
		v        *float64
		min, max float64
	}{
		{"temperature", s.temperature, 0, 2},
		{"top_p", s.topP, 0, 1},
		{"presence_penalty", s.presence, -2, 2},
		{"frequency_penalty", s.frequency, -2, 2},
	}
	for _, c := range ranges {
		if c.v != nil && (*c.v < c.min || *c.v > c.max) {
			return InvalidRequest(c.param, fmt.Sprintf("Invalid '%s': expected a value between %g and %g, got %g.",
				c.param, c.min, c.max, *c.v))
		}
	}
	if s.maxTokens != nil && *s.maxTokens < minTokens {
		return InvalidRequest(maxTokensParam, fmt.Sprintf("Invalid '%s': expected a value >= %d, got %d.", maxTokensParam, minTokens, *s.maxTokens))
	}
	return nil
}

func float32Or(v *float64, def *float32) *float32 {
	if v == nil {
		return def
	}
	f := float32(*v)
	return &f
}
