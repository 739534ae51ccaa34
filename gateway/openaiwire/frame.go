package openaiwire

import (
	"encoding/json"
	"strconv"

	"github.com/agentgate/agentgate/internal/jsonenc"
)

// AppendChunkFrame appends c as one server-sent event, "data: <json>\n\n",
// to dst. The JSON is byte for byte what json.Marshal writes for c (the
// tests hold it to that), written without reflection: a streamed answer
// sends one chunk per delta.
func AppendChunkFrame(dst []byte, c *ChatCompletionChunk) ([]byte, error) {
	dst = append(dst, "data: "...)
	logprobs := false
	for i := range c.Choices {
		logprobs = logprobs || c.Choices[i].Logprobs != nil
	}
	var err error
	if dst, err = appendJSON(dst, c, logprobs, func(b []byte) []byte { return appendChunk(b, c) }); err != nil {
		return dst, err
	}
	return append(dst, "\n\n"...), nil
}

// appendJSON appends v through write, or through json.Marshal when v holds
// raw JSON (Logprobs, which the Encoder never sets: json.Marshal validates
// and compacts it).
func appendJSON(dst []byte, v any, raw bool, write func([]byte) []byte) ([]byte, error) {
	if !raw {
		return write(dst), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendHead writes the members every chunk and completion starts with,
// up to the opening bracket of choices.
func appendHead(b []byte, id, object string, created int64, model string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":`...)
	b = appendString(b, object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, model)
	return append(b, `,"choices":[`...)
}

// appendChunk writes c as ChatCompletionChunk.MarshalJSON does; choices'
// Logprobs must be nil.
func appendChunk(b []byte, c *ChatCompletionChunk) []byte {
	b = appendHead(b, c.ID, orDefault(c.Object, ObjectChunk), c.Created, c.Model)
	b = appendChunkChoices(b, c)
	b = appendExtension(b, &c.Agentgate)
	return append(b, '}')
}

// appendChunkChoices writes what of c is between its head (appendHead)
// and its extension: the choices, from the first one on, and the usage.
func appendChunkChoices(b []byte, c *ChatCompletionChunk) []byte {
	for i := range c.Choices {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendChunkChoice(b, &c.Choices[i])
	}
	b = append(b, ']')
	if c.Usage != nil {
		b = append(b, `,"usage":`...)
		b = appendUsage(b, c.Usage)
	}
	return b
}

// ChunkFramer is AppendChunkFrame for the chunks of one response. They all
// repeat its id, object, created time and model, and most repeat the
// agentgate extension of the chunk before: those members are encoded
// once, kept, and copied into each frame while they stay the same (a
// streamed answer is a chunk per delta). The frames are byte for byte
// AppendChunkFrame's. The zero value is ready to use, by one goroutine at
// a time.
type ChunkFramer struct {
	// kept is the head (appendHead) of id, object, created and model, up
	// to head, then the extension member of ext.
	kept              []byte
	head              int
	id, object, model string
	created           int64
	ext               Extension
}

// Append appends c as one server-sent event, "data: <json>\n\n", to dst.
func (f *ChunkFramer) Append(dst []byte, c *ChatCompletionChunk) ([]byte, error) {
	for i := range c.Choices {
		if c.Choices[i].Logprobs != nil {
			return AppendChunkFrame(dst, c)
		}
	}
	object := orDefault(c.Object, ObjectChunk)
	if f.kept == nil || c.ID != f.id || object != f.object || c.Created != f.created || c.Model != f.model || c.Agentgate != f.ext {
		// Room for the members as they are, their names and numbers: one
		// allocation, unless their strings need escapes.
		n := len(c.ID) + len(object) + len(c.Model) + len(c.Agentgate.Author) + len(c.Agentgate.InvocationID) +
			len(c.Agentgate.TransferToAgent) + 128
		if cap(f.kept) < n {
			f.kept = make([]byte, 0, n)
		}
		f.kept = appendHead(f.kept[:0], c.ID, object, c.Created, c.Model)
		f.head = len(f.kept)
		f.kept = appendExtension(f.kept, &c.Agentgate)
		f.id, f.object, f.created, f.model, f.ext = c.ID, object, c.Created, c.Model, c.Agentgate
	}
	dst = append(dst, "data: "...)
	dst = append(dst, f.kept[:f.head]...)
	dst = appendChunkChoices(dst, c)
	dst = append(dst, f.kept[f.head:]...)
	return append(dst, "}\n\n"...), nil
}

// AppendCompletion appends c as JSON to dst: byte for byte what
// json.Marshal writes for it, without reflection.
func AppendCompletion(dst []byte, c *ChatCompletion) ([]byte, error) {
	logprobs := false
	for i := range c.Choices {
		logprobs = logprobs || c.Choices[i].Logprobs != nil
	}
	return appendJSON(dst, c, logprobs, func(b []byte) []byte { return appendCompletion(b, c) })
}

// appendCompletion writes c as ChatCompletion.MarshalJSON does; choices'
// Logprobs must be nil.
func appendCompletion(b []byte, c *ChatCompletion) []byte {
	b = appendHead(b, c.ID, orDefault(c.Object, ObjectCompletion), c.Created, c.Model)
	for i := range c.Choices {
		if i > 0 {
			b = append(b, ',')
		}
		ch := &c.Choices[i]
		b = appendChoice(b, ch.Index, &ch.Message, ch.FinishReason)
	}
	return appendCompletionEnd(b, &c.Usage, &c.Agentgate)
}

// appendChoice writes a completion's choice of index, message and finish
// reason, its Logprobs nil.
func appendChoice(b []byte, index int, m *Message, finish FinishReason) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"message":{"role":`...)
	b = appendString(b, m.Role)
	b = append(b, `,"content":`...)
	b = appendStringOrNull(b, m.Content)
	b = append(b, `,"refusal":`...)
	b = appendStringOrNull(b, m.Refusal)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for j := range m.ToolCalls {
			if j > 0 {
				b = append(b, ',')
			}
			tc := &m.ToolCalls[j]
			b = append(b, `{"id":`...)
			b = appendString(b, tc.ID)
			b = append(b, `,"type":`...)
			b = appendString(b, tc.Type)
			b = append(b, `,"function":{"name":`...)
			b = appendString(b, tc.Function.Name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, tc.Function.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = appendString(b, string(finish))
	return append(b, '}')
}

// appendCompletionEnd writes what of a completion follows its choices:
// the end of their array, the usage and the extension.
func appendCompletionEnd(b []byte, u *Usage, e *Extension) []byte {
	b = append(b, `],"usage":`...)
	b = appendUsage(b, u)
	b = appendExtension(b, e)
	return append(b, '}')
}

func appendStringOrNull(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendExtension writes ,"agentgate":{...}.
func appendExtension(b []byte, e *Extension) []byte {
	b = append(b, `,"agentgate":{"author":`...)
	b = appendString(b, e.Author)
	b = append(b, `,"invocation_id":`...)
	b = appendString(b, e.InvocationID)
	if e.TransferToAgent != "" {
		b = append(b, `,"transfer_to_agent":`...)
		b = appendString(b, e.TransferToAgent)
	}
	return append(b, '}')
}

func appendChunkChoice(b []byte, ch *ChunkChoice) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(ch.Index), 10)
	b = append(b, `,"delta":{`...)
	sep := false
	field := func(name string) {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, name...)
	}
	d := &ch.Delta
	if d.Role != "" {
		field(`"role":`)
		b = appendString(b, d.Role)
	}
	if d.Content != nil {
		field(`"content":`)
		b = appendString(b, *d.Content)
	}
	if len(d.ToolCalls) > 0 {
		field(`"tool_calls":[`)
		for i := range d.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendToolCallDelta(b, &d.ToolCalls[i])
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if ch.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, string(*ch.FinishReason))
	}
	return append(b, '}')
}

func appendToolCallDelta(b []byte, t *ToolCallDelta) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(t.Index), 10)
	if t.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, t.ID)
	}
	if t.Type != "" {
		b = append(b, `,"type":`...)
		b = appendString(b, t.Type)
	}
	b = append(b, `,"function":{`...)
	if t.Function.Name != "" {
		b = append(b, `"name":`...)
		b = appendString(b, t.Function.Name)
		b = append(b, ',')
	}
	b = append(b, `"arguments":`...)
	b = appendString(b, t.Function.Arguments)
	return append(b, "}}"...)
}

func appendUsage(b []byte, u *Usage) []byte {
	// One loop over the members rather than an append each: a
	// non-streamed answer runs this once, and fetches less code.
	for _, m := range [...]struct {
		name string
		v    int64
	}{
		{`{"prompt_tokens":`, u.PromptTokens},
		{`,"completion_tokens":`, u.CompletionTokens},
		{`,"total_tokens":`, u.TotalTokens},
		{`,"prompt_tokens_details":{"cached_tokens":`, u.PromptTokensDetails.CachedTokens},
		{`,"audio_tokens":`, u.PromptTokensDetails.AudioTokens},
		{`},"completion_tokens_details":{"reasoning_tokens":`, u.CompletionTokensDetails.ReasoningTokens},
		{`,"audio_tokens":`, u.CompletionTokensDetails.AudioTokens},
		{`,"accepted_prediction_tokens":`, u.CompletionTokensDetails.AcceptedPredictionTokens},
		{`,"rejected_prediction_tokens":`, u.CompletionTokensDetails.RejectedPredictionTokens},
	} {
		b = append(b, m.name...)
		b = strconv.AppendInt(b, m.v, 10)
	}
	return append(b, "}}"...)
}

// appendString writes s as a JSON string exactly as encoding/json does
// (see jsonenc.AppendString).
func appendString(b []byte, s string) []byte { return jsonenc.AppendString(b, s) }
