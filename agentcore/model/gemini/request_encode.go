package gemini

import (
	"encoding/base64"
	"encoding/json"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/internal/jsonenc"
)

// encode writes w byte for byte as json.Marshal does
// (TestEncodeMatchesEncodingJSON). What grows with a session, the contents
// and the system instruction, is written by hand: text and thought parts,
// thought signatures, function calls and responses with their arguments
// (jsonenc.AppendAny); a part that holds anything else (inline data, code,
// a function response's own parts, ...) goes through json.Marshal, and so
// does the rest of the body (tools, settings), once per call.
func (w *wireRequest) encode() ([]byte, error) {
	rest := *w
	rest.Contents, rest.SystemInstruction = nil, nil
	tail, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, w.sizeHint()+len(tail))
	b = append(b, '{')
	if len(w.Contents) > 0 {
		b = append(b, `"contents":[`...)
		for i, c := range w.Contents {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendContent(b, c); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if w.SystemInstruction != nil {
		b = comma(b)
		b = append(b, `"systemInstruction":`...)
		if b, err = appendContent(b, w.SystemInstruction); err != nil {
			return nil, err
		}
	}
	if len(tail) > 2 { // more than {}
		b = append(comma(b), tail[1:]...)
		return b, nil
	}
	return append(b, '}'), nil
}

// sizeHint is about the length of w's contents and system instruction in
// JSON, so that encode allocates once most of the time.
func (w *wireRequest) sizeHint() int {
	n := 64
	for _, c := range w.Contents {
		n += contentHint(c)
	}
	return n + contentHint(w.SystemInstruction)
}

func contentHint(c *genai.Content) int {
	if c == nil {
		return 8
	}
	n := 32
	for _, p := range c.Parts {
		n += 32
		if p != nil {
			n += len(p.Text) + len(p.Text)/8 + len(p.ThoughtSignature)*4/3
			if p.FunctionCall != nil || p.FunctionResponse != nil {
				n += 192
			}
		}
	}
	return n
}

// comma appends the ',' before an object's member unless it is the first.
func comma(b []byte) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	return b
}

// appendContent writes c as json.Marshal writes a *genai.Content.
func appendContent(b []byte, c *genai.Content) ([]byte, error) {
	if c == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	if len(c.Parts) > 0 {
		b = append(b, `"parts":[`...)
		for i, p := range c.Parts {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendPart(b, p); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if c.Role != "" {
		b = append(comma(b), `"role":`...)
		b = jsonenc.AppendString(b, c.Role)
	}
	return append(b, '}'), nil
}

// appendPart writes p as json.Marshal writes a *genai.Part: by hand when
// it holds only what handPart allows, else through json.Marshal.
func appendPart(b []byte, p *genai.Part) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	if !handPart(p) {
		return appendMarshalled(b, p)
	}
	b = append(b, '{')
	var err error
	if fc := p.FunctionCall; fc != nil {
		b = append(b, `"functionCall":{`...)
		if fc.ID != "" {
			b = append(b, `"id":`...)
			b = jsonenc.AppendString(b, fc.ID)
		}
		if len(fc.Args) > 0 {
			b = append(comma(b), `"args":`...)
			if b, err = jsonenc.AppendAny(b, fc.Args); err != nil {
				return nil, err
			}
		}
		if fc.Name != "" {
			b = append(comma(b), `"name":`...)
			b = jsonenc.AppendString(b, fc.Name)
		}
		b = append(b, '}')
	}
	if fr := p.FunctionResponse; fr != nil {
		b = append(comma(b), `"functionResponse":{`...)
		if fr.ID != "" {
			b = append(b, `"id":`...)
			b = jsonenc.AppendString(b, fr.ID)
		}
		if fr.Name != "" {
			b = append(comma(b), `"name":`...)
			b = jsonenc.AppendString(b, fr.Name)
		}
		if len(fr.Response) > 0 {
			b = append(comma(b), `"response":`...)
			if b, err = jsonenc.AppendAny(b, fr.Response); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if p.Text != "" {
		b = append(comma(b), `"text":`...)
		b = jsonenc.AppendString(b, p.Text)
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
// TestHandPartKnowsEveryField.
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

// appendMarshalled appends v's JSON through json.Marshal.
func appendMarshalled(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
