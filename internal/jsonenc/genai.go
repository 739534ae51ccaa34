package jsonenc

import (
	"encoding/base64"
	"encoding/json"

	"google.golang.org/genai"
)

// AppendContents writes contents as json.Marshal writes a
// []*genai.Content (AppendContent for each).
func AppendContents(b []byte, contents []*genai.Content) ([]byte, error) {
	return appendArray(b, contents, AppendContent)
}

// AppendContent writes c as json.Marshal writes a *genai.Content. What a
// conversation is mostly made of is written without reflection: text and
// thought parts, thought signatures, function calls and responses with
// their arguments (AppendAny); a part that holds anything else (inline
// data, code, a function response's own parts, ...) goes through
// json.Marshal.
func AppendContent(b []byte, c *genai.Content) ([]byte, error) {
	if c == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	if len(c.Parts) > 0 {
		b = append(b, `"parts":`...)
		var err error
		if b, err = appendArray(b, c.Parts, appendPart); err != nil {
			return nil, err
		}
	}
	if c.Role != "" {
		b = append(comma(b), `"role":`...)
		b = AppendString(b, c.Role)
	}
	return append(b, '}'), nil
}

// appendArray writes items as a JSON array, each with f.
func appendArray[T any](b []byte, items []T, f func([]byte, T) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	for i, v := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = f(b, v); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// comma appends the ',' before an object's member unless it is the first.
func comma(b []byte) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	return b
}

// appendPart writes p as json.Marshal writes a *genai.Part: by hand when
// it holds only what handPart allows, else through json.Marshal.
func appendPart(b []byte, p *genai.Part) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	if !handPart(p) {
		j, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		return append(b, j...), nil
	}
	b = append(b, '{')
	var err error
	if fc := p.FunctionCall; fc != nil {
		b = append(b, `"functionCall":{`...)
		if fc.ID != "" {
			b = append(b, `"id":`...)
			b = AppendString(b, fc.ID)
		}
		if len(fc.Args) > 0 {
			b = append(comma(b), `"args":`...)
			if b, err = appendMap(b, fc.Args); err != nil {
				return nil, err
			}
		}
		if fc.Name != "" {
			b = append(comma(b), `"name":`...)
			b = AppendString(b, fc.Name)
		}
		b = append(b, '}')
	}
	if fr := p.FunctionResponse; fr != nil {
		b = append(comma(b), `"functionResponse":{`...)
		if fr.ID != "" {
			b = append(b, `"id":`...)
			b = AppendString(b, fr.ID)
		}
		if fr.Name != "" {
			b = append(comma(b), `"name":`...)
			b = AppendString(b, fr.Name)
		}
		if len(fr.Response) > 0 {
			b = append(comma(b), `"response":`...)
			if b, err = appendMap(b, fr.Response); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if p.Text != "" {
		b = append(comma(b), `"text":`...)
		b = AppendString(b, p.Text)
	}
	if p.Thought {
		b = append(comma(b), `"thought":true`...)
	}
	if len(p.ThoughtSignature) > 0 {
		b = append(comma(b), `"thoughtSignature":"`...)
		b = base64.StdEncoding.AppendEncode(b, p.ThoughtSignature)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// handPart reports whether p sets no field but text, thought, its
// signature, and a function call or response without the members only
// Vertex AI or streamed calls use. A field genai adds is caught by
// TestAppendContentKnowsEveryField.
func handPart(p *genai.Part) bool {
	if fc := p.FunctionCall; fc != nil && (len(fc.PartialArgs) > 0 || fc.WillContinue != nil) {
		return false
	}
	if fr := p.FunctionResponse; fr != nil && (fr.WillContinue != nil || fr.Scheduling != "" || len(fr.Parts) > 0) {
		return false
	}
	return p.MediaResolution == nil && p.CodeExecutionResult == nil && p.ExecutableCode == nil && p.FileData == nil &&
		p.InlineData == nil && p.VideoMetadata == nil && p.ToolCall == nil && p.ToolResponse == nil &&
		len(p.PartMetadata) == 0 && p.AudioTranscription == nil && p.MediaProcessing == "" && p.SpeechMetadata == nil
}
