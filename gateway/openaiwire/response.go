package openaiwire

import (
	"crypto/rand"
	"encoding/json"
	"github.com/agentgate/agentgate/internal/randbatch"

	"google.golang.org/genai"
)

// Object names OpenAI puts in the "object" field. The MarshalJSON methods
// of the response types fill them in when left empty.
const (
	ObjectCompletion = "chat.completion"
	ObjectChunk      = "chat.completion.chunk"
	ObjectModel      = "model"
	ObjectList       = "list"
)

// FinishReason says why the response ended.
type FinishReason string

// Finish reasons we send.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// Extension is agentgate's own object, sent as "agentgate" on every chunk
// and completion: the agent that produced it, the invocation (one per user
// turn, the same across transfers), and the agent control passes to where a
// transfer happens.
type Extension struct {
	Author          string `json:"author"`
	InvocationID    string `json:"invocation_id"`
	TransferToAgent string `json:"transfer_to_agent,omitempty"`
}

// ChatCompletion is the non-streaming response. Build it with an Encoder
// (Encoder.Completion) so it matches what the stream would have sent.
type ChatCompletion struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	Created   int64     `json:"created"`
	Model     string    `json:"model"`
	Choices   []Choice  `json:"choices"`
	Usage     Usage     `json:"usage"`
	Agentgate Extension `json:"agentgate"`
}

// Choice is the one choice of a ChatCompletion.
type Choice struct {
	Index   int     `json:"index"`
	Message Message `json:"message"`
	// Logprobs is always null: we have no log probabilities.
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason FinishReason    `json:"finish_reason"`
}

// Message is the assistant message of a Choice. Content is null when the
// answer is only tool calls; Refusal is always present and null.
type Message struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Usage counts tokens as OpenAI does; all keys are always present.
type Usage struct {
	PromptTokens            int64                   `json:"prompt_tokens"`
	CompletionTokens        int64                   `json:"completion_tokens"`
	TotalTokens             int64                   `json:"total_tokens"`
	PromptTokensDetails     PromptTokensDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails CompletionTokensDetails `json:"completion_tokens_details"`
}

// PromptTokensDetails breaks down Usage.PromptTokens.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
	AudioTokens  int64 `json:"audio_tokens"`
}

// CompletionTokensDetails breaks down Usage.CompletionTokens.
type CompletionTokensDetails struct {
	ReasoningTokens          int64 `json:"reasoning_tokens"`
	AudioTokens              int64 `json:"audio_tokens"`
	AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
}

// UsageFrom converts the runtime's usage record (nil counts as zero).
// prompt_tokens = prompt + tool-use prompt; completion_tokens is what the
// total adds beyond that, so it includes reasoning under both conventions
// the providers use (Gemini's candidates exclude thoughts and its total adds
// them; the OpenAI provider's candidates already include them). Without a
// usable total it is candidates + thoughts. total_tokens = prompt +
// completion, reasoning_tokens = thoughts, cached_tokens = cached content.
// Sums of records (model.AddUsage) convert the same way.
func UsageFrom(u *genai.GenerateContentResponseUsageMetadata) Usage {
	if u == nil {
		return Usage{}
	}
	prompt := int64(u.PromptTokenCount) + int64(u.ToolUsePromptTokenCount)
	completion := int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)
	if total := int64(u.TotalTokenCount); total > 0 && total >= prompt {
		completion = total - prompt
	}
	return Usage{
		PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion,
		PromptTokensDetails:     PromptTokensDetails{CachedTokens: int64(u.CachedContentTokenCount)},
		CompletionTokensDetails: CompletionTokensDetails{ReasoningTokens: int64(u.ThoughtsTokenCount)},
	}
}

// ChatCompletionChunk is one streamed chunk. Choices holds exactly one
// choice, except in the final usage chunk where it is empty and Usage is
// set; Usage is omitted everywhere else.
type ChatCompletionChunk struct {
	ID        string        `json:"id"`
	Object    string        `json:"object"`
	Created   int64         `json:"created"`
	Model     string        `json:"model"`
	Choices   []ChunkChoice `json:"choices"`
	Usage     *Usage        `json:"usage,omitempty"`
	Agentgate Extension     `json:"agentgate"`
}

// ChunkChoice is the choice of a chunk. FinishReason is null until the last
// choice chunk.
type ChunkChoice struct {
	Index int   `json:"index"`
	Delta Delta `json:"delta"`
	// Logprobs is always null.
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *FinishReason   `json:"finish_reason"`
}

// Delta is what a chunk adds to the message. Role is set only in the first
// delta of a response; text and tool calls never share a delta.
type Delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a fragment of a tool call. Index is on every fragment;
// ID, Type and Function.Name only on the first fragment of each call.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function FunctionCallDelta `json:"function"`
}

// FunctionCallDelta is the function of a ToolCallDelta; Arguments fragments
// concatenate to the JSON arguments.
type FunctionCallDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Model is an entry of GET /v1/models and the body of GET /v1/models/{id}.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

// MarshalJSON fills in the object name and writes choices as [] when nil.
func (c ChatCompletion) MarshalJSON() ([]byte, error) {
	type plain ChatCompletion
	c.Object = orDefault(c.Object, ObjectCompletion)
	if c.Choices == nil {
		c.Choices = []Choice{}
	}
	return json.Marshal(plain(c))
}

// MarshalJSON fills in the object name and writes choices as [] when nil.
func (c ChatCompletionChunk) MarshalJSON() ([]byte, error) {
	type plain ChatCompletionChunk
	c.Object = orDefault(c.Object, ObjectChunk)
	if c.Choices == nil {
		c.Choices = []ChunkChoice{}
	}
	return json.Marshal(plain(c))
}

// MarshalJSON fills in the object name.
func (m Model) MarshalJSON() ([]byte, error) {
	type plain Model
	m.Object = orDefault(m.Object, ObjectModel)
	return json.Marshal(plain(m))
}

// MarshalJSON fills in the object name and writes data as [] when nil.
func (l ModelList) MarshalJSON() ([]byte, error) {
	type plain ModelList
	l.Object = orDefault(l.Object, ObjectList)
	if l.Data == nil {
		l.Data = []Model{}
	}
	return json.Marshal(plain(l))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// appendRandomAlnum appends n random characters of [A-Za-z0-9] from
// crypto/rand to dst.
func appendRandomAlnum(dst []byte, n int) []byte {
	var buf [48]byte
	for want := len(dst) + n; len(dst) < want; {
		rand.Read(buf[:]) // never fails (crypto/rand panics instead)
		for _, b := range buf {
			// Reject the top of the byte range so every character is
			// equally likely (248 = 4*62).
			if b < 248 && len(dst) < want {
				dst = append(dst, alnum[b%62])
			}
		}
	}
	return dst
}

// randomID returns prefix and n random characters of [A-Za-z0-9], in one
// allocation (for the ids below, whose length fits the buffer).
func randomID(prefix string, n int) string {
	var buf [64]byte
	return string(appendRandomAlnum(append(buf[:0], prefix...), n))
}

// fillBatchedAlnum fills dst with random characters of [A-Za-z0-9], as
// appendRandomAlnum appends them, from randbatch's bytes: for the ids of
// chat completions, one a turn, where a read of crypto/rand each was most
// of what making the id cost. The characters are as random and as likely;
// only ids that name nothing a client must keep secret are made so (the
// gateway looks nothing up by a completion's id).
func fillBatchedAlnum(dst []byte) {
	var r [48]byte // room for 29 characters and the bytes rejected
	randbatch.Fill(r[:])
	for i, j := 0, 0; i < len(dst); j++ {
		if j == len(r) {
			randbatch.Fill(r[:])
			j = 0
		}
		if b := r[j]; b < 248 { // as appendRandomAlnum
			dst[i] = alnum[b%62]
			i++
		}
	}
}

// NewCompletionID returns a fresh response id: "chatcmpl-" and 29 random
// characters of [A-Za-z0-9], the length OpenAI uses.
func NewCompletionID() string {
	const prefix = "chatcmpl-"
	var id [len(prefix) + 29]byte
	copy(id[:], prefix)
	fillBatchedAlnum(id[len(prefix):])
	return string(id[:])
}

// NewToolCallID returns a fresh tool-call id: "call_" and 32 random
// characters of [A-Za-z0-9] (37 characters).
func NewToolCallID() string { return randomID("call_", 32) }

// ValidToolCallID reports whether id is safe to show to clients as a tool
// call id: 1 to 40 characters of [A-Za-z0-9_-].
func ValidToolCallID(id string) bool {
	return len(id) >= 1 && len(id) <= 40 && allOf(id, isWordByte)
}
