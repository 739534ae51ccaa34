package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// outputSchemaName is the response_format json_schema name we send.
const outputSchemaName = "output"

// buildParams maps a runtime request onto a chat-completions request body.
// It is pure: no I/O, and req is not modified.
func buildParams(modelID string, req *model.Request) (oai.ChatCompletionNewParams, error) {
	p := oai.ChatCompletionNewParams{Model: modelID}
	cfg := req.Config
	if cfg == nil {
		cfg = &genai.GenerateContentConfig{}
	}
	if sys := joinText(cfg.SystemInstruction, "\n\n"); sys != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(sys))
	}
	msgs, err := messages(req.Contents)
	if err != nil {
		return p, err
	}
	p.Messages = append(p.Messages, msgs...)

	if p.Tools, err = tools(cfg.Tools); err != nil {
		return p, err
	}
	p.ToolChoice = toolChoice(cfg.ToolConfig)
	if p.ResponseFormat, err = responseFormat(cfg); err != nil {
		return p, err
	}
	generationSettings(&p, cfg)
	return p, nil
}

// generationSettings copies the sampling knobs that chat completions know.
func generationSettings(p *oai.ChatCompletionNewParams, cfg *genai.GenerateContentConfig) {
	if cfg.Temperature != nil {
		p.Temperature = oai.Float(widen(*cfg.Temperature))
	}
	if cfg.TopP != nil {
		p.TopP = oai.Float(widen(*cfg.TopP))
	}
	if cfg.PresencePenalty != nil {
		p.PresencePenalty = oai.Float(widen(*cfg.PresencePenalty))
	}
	if cfg.FrequencyPenalty != nil {
		p.FrequencyPenalty = oai.Float(widen(*cfg.FrequencyPenalty))
	}
	if cfg.MaxOutputTokens > 0 {
		p.MaxCompletionTokens = oai.Int(int64(cfg.MaxOutputTokens))
	}
	if cfg.Seed != nil {
		p.Seed = oai.Int(int64(*cfg.Seed))
	}
	if len(cfg.StopSequences) > 0 {
		p.Stop.OfStringArray = cfg.StopSequences
	}
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
	var texts []string
	for _, p := range c.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, sep)
}

// messages maps the conversation. Function calls keep their ids; a call
// without one gets a stable synthetic id that its response (matched by
// name, in order) reuses, so the pairing chat completions needs holds.
func messages(contents []*genai.Content) ([]oai.ChatCompletionMessageParamUnion, error) {
	var out []oai.ChatCompletionMessageParamUnion
	pending := map[string][]string{} // function name -> synthetic ids awaiting a response
	synthetic := 0
	for _, c := range contents {
		if c == nil {
			continue
		}
		if c.Role == genai.RoleModel {
			if m, ok := assistantMessage(c, pending, &synthetic); ok {
				out = append(out, m)
			}
			continue
		}
		var parts []oai.ChatCompletionContentPartUnionParam
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
				parts = append(parts, oai.TextContentPart(p.Text))
			case p.InlineData != nil:
				part, err := inlinePart(p.InlineData)
				if err != nil {
					return nil, err
				}
				parts = append(parts, part)
			case p.FileData != nil:
				if !strings.HasPrefix(p.FileData.MIMEType, "image/") {
					return nil, fmt.Errorf("file part %q (%s): only images can be sent by URL", p.FileData.FileURI, p.FileData.MIMEType)
				}
				parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: p.FileData.FileURI}))
			}
		}
		switch {
		case len(parts) == 1 && parts[0].OfText != nil:
			out = append(out, oai.UserMessage(parts[0].OfText.Text))
		case len(parts) > 0:
			out = append(out, oai.UserMessage(parts))
		}
	}
	return out, nil
}

// assistantMessage maps a model turn: its text and its function calls.
func assistantMessage(c *genai.Content, pending map[string][]string, synthetic *int) (oai.ChatCompletionMessageParamUnion, bool) {
	var a oai.ChatCompletionAssistantMessageParam
	if text := joinText(c, ""); text != "" {
		a.Content.OfString = oai.String(text)
	}
	for _, p := range c.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			*synthetic++
			id = fmt.Sprintf("call_%d", *synthetic)
			pending[fc.Name] = append(pending[fc.Name], id)
		}
		args, _ := json.Marshal(argsOrEmpty(fc.Args))
		a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
				ID:       id,
				Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: fc.Name, Arguments: string(args)},
			},
		})
	}
	if a.Content.OfString.Valid() || len(a.ToolCalls) > 0 {
		return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, true
	}
	return oai.ChatCompletionMessageParamUnion{}, false
}

func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// toolMessage maps a function response to a role "tool" message whose
// content is the JSON of the response map.
func toolMessage(fr *genai.FunctionResponse, pending map[string][]string) (oai.ChatCompletionMessageParamUnion, error) {
	id := fr.ID
	if id == "" {
		if ids := pending[fr.Name]; len(ids) > 0 {
			id, pending[fr.Name] = ids[0], ids[1:]
		}
	}
	if id == "" {
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("function response %q has no id and matches no earlier call", fr.Name)
	}
	body, err := json.Marshal(argsOrEmpty(fr.Response))
	if err != nil {
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("function response %q: %w", fr.Name, err)
	}
	return oai.ToolMessage(string(body), id), nil
}

// inlinePart maps inline bytes: images and audio as such, anything else
// (PDFs, for example) as a file part.
func inlinePart(b *genai.Blob) (oai.ChatCompletionContentPartUnionParam, error) {
	data := base64.StdEncoding.EncodeToString(b.Data)
	mime := b.MIMEType
	switch {
	case strings.HasPrefix(mime, "image/"):
		return oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: "data:" + mime + ";base64," + data}), nil
	case mime == "audio/wav" || mime == "audio/x-wav" || mime == "audio/wave":
		return oai.InputAudioContentPart(oai.ChatCompletionContentPartInputAudioInputAudioParam{Data: data, Format: "wav"}), nil
	case mime == "audio/mpeg" || mime == "audio/mp3":
		return oai.InputAudioContentPart(oai.ChatCompletionContentPartInputAudioInputAudioParam{Data: data, Format: "mp3"}), nil
	case mime != "":
		f := oai.ChatCompletionContentPartFileFileParam{FileData: oai.String("data:" + mime + ";base64," + data)}
		if b.DisplayName != "" {
			f.Filename = oai.String(b.DisplayName)
		}
		return oai.FileContentPart(f), nil
	}
	return oai.ChatCompletionContentPartUnionParam{}, fmt.Errorf("inline data without a MIME type")
}

// tools maps function declarations. Provider built-ins (Google Search, code
// execution, ...) have no chat-completions equivalent and are refused
// rather than silently dropped.
func tools(in []*genai.Tool) ([]oai.ChatCompletionToolUnionParam, error) {
	var out []oai.ChatCompletionToolUnionParam
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
			def := shared.FunctionDefinitionParam{Name: fd.Name, Parameters: params}
			if fd.Description != "" {
				def.Description = oai.String(fd.Description)
			}
			out = append(out, oai.ChatCompletionFunctionTool(def))
		}
	}
	return out, nil
}

// builtinTools names what t offers besides function declarations (Google
// Search, code execution, URL context, ...), as genai's JSON keys.
func builtinTools(t *genai.Tool) []string {
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
func parameters(fd *genai.FunctionDeclaration) (shared.FunctionParameters, error) {
	switch {
	case fd.ParametersJsonSchema != nil:
		return toObject(fd.ParametersJsonSchema)
	case fd.Parameters != nil:
		return jsonSchema(fd.Parameters), nil
	}
	return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
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
// allowed_tools list when several are named).
func toolChoice(tc *genai.ToolConfig) oai.ChatCompletionToolChoiceOptionUnionParam {
	var out oai.ChatCompletionToolChoiceOptionUnionParam
	if tc == nil || tc.FunctionCallingConfig == nil {
		return out
	}
	fcc := tc.FunctionCallingConfig
	names := fcc.AllowedFunctionNames
	switch fcc.Mode {
	case genai.FunctionCallingConfigModeNone:
		out.OfAuto = oai.String("none")
	case genai.FunctionCallingConfigModeAny:
		switch len(names) {
		case 0:
			out.OfAuto = oai.String("required")
		case 1:
			out = oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: names[0]})
		default:
			out = allowedTools("required", names)
		}
	case genai.FunctionCallingConfigModeAuto, genai.FunctionCallingConfigModeValidated:
		if len(names) > 0 {
			out = allowedTools("auto", names)
		} else {
			out.OfAuto = oai.String("auto")
		}
	}
	return out
}

func allowedTools(mode string, names []string) oai.ChatCompletionToolChoiceOptionUnionParam {
	list := make([]map[string]any, len(names))
	for i, n := range names {
		list[i] = map[string]any{"type": "function", "function": map[string]any{"name": n}}
	}
	return oai.ToolChoiceOptionAllowedTools(oai.ChatCompletionAllowedToolsParam{
		Mode:  oai.ChatCompletionAllowedToolsMode(mode),
		Tools: list,
	})
}

// responseFormat maps an output schema: application/json with a schema ->
// json_schema (name "output", strict false); application/json alone ->
// json_object.
func responseFormat(cfg *genai.GenerateContentConfig) (oai.ChatCompletionNewParamsResponseFormatUnion, error) {
	var out oai.ChatCompletionNewParamsResponseFormatUnion
	if cfg.ResponseMIMEType != "application/json" {
		return out, nil
	}
	var schema map[string]any
	switch {
	case cfg.ResponseJsonSchema != nil:
		s, err := toObject(cfg.ResponseJsonSchema)
		if err != nil {
			return out, fmt.Errorf("response schema: %w", err)
		}
		schema = s
	case cfg.ResponseSchema != nil:
		schema = jsonSchema(cfg.ResponseSchema)
	default:
		out.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		return out, nil
	}
	out.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name:   outputSchemaName,
			Strict: oai.Bool(false),
			Schema: schema,
		},
	}
	return out, nil
}
