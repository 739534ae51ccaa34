package gemini

import (
	"encoding/base64"
	"reflect"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/internal/jsondec"
)

// A decoder for the chunks Gemini sends, in one pass over the bytes and
// without reflection, for the members the provider reads: text and thought
// parts, function calls and their arguments, the finish reason and
// message, the usage, the prompt feedback's block reason, the model
// version and an error event's code, message and status.
//
// It is a fast path, not a second JSON decoder: it gives up (ok false) on
// anything it does not know, and decodeChunk then leaves the document to
// encoding/json, which stays the reference. So what it accepts decodes
// exactly as encoding/json decodes it (response_decode_test.go checks that,
// and fuzzes it), and what it gives up on costs one pass more:
//
//   - a member of a genai type that it does not decode (inline data,
//     executable code, a function response, safety ratings, an error's
//     details, ...); unknown keys are skipped, as encoding/json skips them,
//     and keys are matched as encoding/json matches them (jsondec.Field);
//   - a repeated member, a null, a value of another type than its field's,
//     an integer that is not an int32;
//   - malformed JSON (encoding/json then gives its own error).
//
// It reads with internal/jsondec, which checks the syntax and unescapes
// strings (invalid UTF-8 and lone surrogates replaced) as encoding/json
// does.

// chunkDecoder is the fast path's state over one document. last is the
// previous chunk's model version, reused instead of an equal new string.
type chunkDecoder struct {
	jsondec.Decoder
	last string
	// blk is the current chunk's block; freeContent and freePart are its
	// content and part until the first candidate and part take them.
	blk         *chunkBlock
	freeContent *genai.Content
	freePart    *genai.Part
}

// chunkBlock holds what a chunk of one candidate with one part is made of,
// in one allocation instead of five (a streamed text delta's chunk). The
// parts share the block's lifetime: the partial response that holds the
// content keeps it all.
type chunkBlock struct {
	w       wireResponse
	cands   [1]wireCandidate
	content genai.Content
	parts   [1]*genai.Part
	part    genai.Part
}

// decode decodes data into a new wireResponse and reports whether it
// could; when it could not, the response is zero again, for encoding/json
// to decode into.
func (d *chunkDecoder) decode(data []byte) (*wireResponse, bool) {
	d.Reset(data)
	d.blk = new(chunkBlock)
	d.freeContent, d.freePart = &d.blk.content, &d.blk.part
	w := &d.blk.w
	if !d.response(w) || !d.End() {
		*w = wireResponse{}
		return w, false
	}
	if w.ModelVersion != "" {
		d.last = w.ModelVersion
	}
	return w, true
}

// The JSON names of the structs decoded into, as encoding/json matches
// keys against them: a key that is none of them is skipped.
var (
	responseFields      = jsonNames(reflect.TypeFor[wireResponse]())
	candidateFields     = jsonNames(reflect.TypeFor[wireCandidate]())
	contentFields       = jsonNames(reflect.TypeFor[genai.Content]())
	partFields          = jsonNames(reflect.TypeFor[genai.Part]())
	functionCallFields  = jsonNames(reflect.TypeFor[genai.FunctionCall]())
	usageFields         = jsonNames(reflect.TypeFor[genai.GenerateContentResponseUsageMetadata]())
	modalityCountFields = jsonNames(reflect.TypeFor[genai.ModalityTokenCount]())
	feedbackFields      = jsonNames(reflect.TypeFor[genai.GenerateContentResponsePromptFeedback]())
	errorFields         = jsonNames(reflect.TypeFor[wireError]())
)

// jsonNames returns the names encoding/json gives t's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() || f.Anonymous {
			panic("gemini: jsonNames does not handle " + t.String() + "." + f.Name)
		}
		name := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			name = tag
			for i := 0; i < len(tag); i++ {
				if tag[i] == ',' {
					name = tag[:i]
					break
				}
			}
		}
		if name == "-" {
			continue
		}
		names = append(names, name)
	}
	return names
}

func (d *chunkDecoder) response(w *wireResponse) bool {
	return d.object(responseFields, func(key string) bool {
		switch key {
		case "candidates":
			w.Candidates = d.blk.cands[:0]
			return d.array(func() bool {
				w.Candidates = append(w.Candidates, wireCandidate{})
				return d.candidate(&w.Candidates[len(w.Candidates)-1])
			}) && nonNil(&w.Candidates)
		case "promptFeedback":
			w.PromptFeedback = new(genai.GenerateContentResponsePromptFeedback)
			return d.feedback(w.PromptFeedback)
		case "usageMetadata":
			w.UsageMetadata = new(genai.GenerateContentResponseUsageMetadata)
			return d.usage(w.UsageMetadata)
		case "modelVersion":
			s, ok := d.stringValue()
			if ok {
				if string(s) == d.last {
					w.ModelVersion = d.last
				} else {
					w.ModelVersion = string(s)
				}
			}
			return ok
		case "error":
			w.Error = new(wireError)
			return d.errorEvent(w.Error)
		}
		return false
	})
}

func (d *chunkDecoder) candidate(c *wireCandidate) bool {
	return d.object(candidateFields, func(key string) bool {
		switch key {
		case "content":
			c.Content, d.freeContent = d.freeContent, nil
			if c.Content == nil {
				c.Content = new(genai.Content)
			}
			return d.content(c.Content)
		case "finishReason":
			s, ok := d.stringValue()
			c.FinishReason = finishReason(s)
			return ok
		case "finishMessage":
			return d.stringInto(&c.FinishMessage)
		}
		return false
	})
}

// finishReason returns s as a FinishReason, without allocating for the
// usual ones.
func finishReason(s []byte) genai.FinishReason {
	switch string(s) {
	case "":
		return ""
	case string(genai.FinishReasonStop):
		return genai.FinishReasonStop
	case string(genai.FinishReasonMaxTokens):
		return genai.FinishReasonMaxTokens
	}
	return genai.FinishReason(s)
}

func (d *chunkDecoder) content(c *genai.Content) bool {
	return d.object(contentFields, func(key string) bool {
		switch key {
		case "parts":
			if c == &d.blk.content {
				c.Parts = d.blk.parts[:0]
			}
			return d.array(func() bool {
				p := d.freePart
				if d.freePart = nil; p == nil {
					p = new(genai.Part)
				}
				c.Parts = append(c.Parts, p)
				return d.part(p)
			}) && nonNil(&c.Parts)
		case "role":
			s, ok := d.stringValue()
			switch string(s) {
			case genai.RoleModel:
				c.Role = genai.RoleModel
			case genai.RoleUser:
				c.Role = genai.RoleUser
			default:
				c.Role = string(s)
			}
			return ok
		}
		return false
	})
}

func (d *chunkDecoder) part(p *genai.Part) bool {
	return d.object(partFields, func(key string) bool {
		switch key {
		case "text":
			return d.stringInto(&p.Text)
		case "thought":
			return d.boolInto(&p.Thought)
		case "thoughtSignature":
			s, ok := d.stringValue()
			if !ok {
				return false
			}
			// encoding/json's way with a []byte.
			b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
			n, err := base64.StdEncoding.Decode(b, s)
			p.ThoughtSignature = b[:n]
			return err == nil
		case "functionCall":
			p.FunctionCall = new(genai.FunctionCall)
			return d.functionCall(p.FunctionCall)
		}
		return false
	})
}

func (d *chunkDecoder) functionCall(fc *genai.FunctionCall) bool {
	return d.object(functionCallFields, func(key string) bool {
		switch key {
		case "id":
			return d.stringInto(&fc.ID)
		case "name":
			return d.stringInto(&fc.Name)
		case "args":
			fc.Args, _ = d.Any().(map[string]any)
			return !d.Bad && fc.Args != nil
		}
		return false
	})
}

func (d *chunkDecoder) usage(u *genai.GenerateContentResponseUsageMetadata) bool {
	return d.object(usageFields, func(key string) bool {
		switch key {
		case "promptTokenCount":
			return d.int32Into(&u.PromptTokenCount)
		case "candidatesTokenCount":
			return d.int32Into(&u.CandidatesTokenCount)
		case "totalTokenCount":
			return d.int32Into(&u.TotalTokenCount)
		case "thoughtsTokenCount":
			return d.int32Into(&u.ThoughtsTokenCount)
		case "cachedContentTokenCount":
			return d.int32Into(&u.CachedContentTokenCount)
		case "toolUsePromptTokenCount":
			return d.int32Into(&u.ToolUsePromptTokenCount)
		case "promptTokensDetails":
			return d.modalityCounts(&u.PromptTokensDetails)
		case "candidatesTokensDetails":
			return d.modalityCounts(&u.CandidatesTokensDetails)
		case "cacheTokensDetails":
			return d.modalityCounts(&u.CacheTokensDetails)
		case "toolUsePromptTokensDetails":
			return d.modalityCounts(&u.ToolUsePromptTokensDetails)
		case "trafficType":
			s, ok := d.stringValue()
			u.TrafficType = genai.TrafficType(s)
			return ok
		}
		return false
	})
}

func (d *chunkDecoder) modalityCounts(out *[]*genai.ModalityTokenCount) bool {
	return d.array(func() bool {
		m := new(genai.ModalityTokenCount)
		*out = append(*out, m)
		return d.object(modalityCountFields, func(key string) bool {
			switch key {
			case "modality":
				s, ok := d.stringValue()
				if string(s) == string(genai.MediaModalityText) {
					m.Modality = genai.MediaModalityText
				} else {
					m.Modality = genai.MediaModality(s)
				}
				return ok
			case "tokenCount":
				return d.int32Into(&m.TokenCount)
			}
			return false
		})
	}) && nonNil(out)
}

func (d *chunkDecoder) feedback(f *genai.GenerateContentResponsePromptFeedback) bool {
	return d.object(feedbackFields, func(key string) bool {
		switch key {
		case "blockReason":
			s, ok := d.stringValue()
			f.BlockReason = genai.BlockedReason(s)
			return ok
		case "blockReasonMessage":
			return d.stringInto(&f.BlockReasonMessage)
		}
		return false
	})
}

func (d *chunkDecoder) errorEvent(e *wireError) bool {
	return d.object(errorFields, func(key string) bool {
		switch key {
		case "code":
			var n int32
			ok := d.int32Into(&n)
			e.Code = int(n)
			return ok
		case "message":
			return d.stringInto(&e.Message)
		case "status":
			return d.stringInto(&e.Status)
		}
		return false
	})
}

// nonNil makes an empty slice non-nil, as encoding/json leaves a [] (the
// elements' callbacks append to it).
func nonNil[T any](s *[]T) bool {
	if *s == nil {
		*s = []T{}
	}
	return true
}

// object reads the object that is the next value into a struct whose
// JSON names are fields: member is called with each key that matches one
// of them (as encoding/json matches), to read its value, and returns
// whether it could. Other keys are skipped; a member given twice is given
// up on.
func (d *chunkDecoder) object(fields []string, member func(key string) bool) bool {
	if !d.Open('{') {
		d.Fail()
		return false
	}
	var seen uint64
	for first := true; d.More('}', first); first = false {
		switch i := jsondec.Field(d.Member(), fields); {
		case i < 0:
			d.Skip()
		case i >= 64 || seen&(1<<i) != 0 || !member(fields[i]):
			d.Fail()
		default:
			seen |= 1 << i
		}
	}
	return !d.Bad
}

// array reads the array that is the next value, calling elem for each
// element.
func (d *chunkDecoder) array(elem func() bool) bool {
	if !d.Open('[') {
		d.Fail()
		return false
	}
	for first := true; d.More(']', first); first = false {
		if !elem() {
			d.Fail()
		}
	}
	return !d.Bad
}

// int32Into reads an integer that fits an int32 into v.
func (d *chunkDecoder) int32Into(v *int32) bool {
	if c := d.Peek(); c != '-' && (c < '0' || c > '9') {
		return false
	}
	n, ok := jsondec.ParseInt(d.Number())
	if !ok || n != int64(int32(n)) {
		return false
	}
	*v = int32(n)
	return true
}

func (d *chunkDecoder) boolInto(v *bool) bool {
	b, ok := d.Bool()
	*v = b
	return ok && !d.Bad
}

// stringInto reads a string into v.
func (d *chunkDecoder) stringInto(v *string) bool {
	s, ok := d.stringValue()
	if ok {
		*v = string(s)
	}
	return ok
}

// stringValue reads a string and returns it unescaped (valid until the
// next string; a non-nil empty slice for "").
func (d *chunkDecoder) stringValue() ([]byte, bool) {
	if d.Peek() != '"' {
		return nil, false
	}
	return d.String()
}
