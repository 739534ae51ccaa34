package openai

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// streamState assembles one streamed turn: text goes out as partial
// responses and into the aggregator; tool-call fragments are assembled by
// index; finish reason and usage are kept for the final response.
type streamState struct {
	agg     model.Aggregator
	calls   toolCalls
	finish  string
	usage   *genai.GenerateContentResponseUsageMetadata
	version string
	// produced reports whether anything came from upstream yet.
	produced bool
	// transient: the consumer copies what it keeps of a partial response
	// (model.CopiedPartials), so every delta's is reused, made once.
	transient bool
	reused    *partialResponse
}

// add folds one chunk in and returns the partial response to yield, if the
// chunk carried text.
func (s *streamState) add(c *wireCompletion) *model.Response {
	s.produced = true
	if c.Model != "" {
		s.version = c.Model
	}
	if c.Usage != nil {
		u := usage(c.Usage)
		s.usage = &u
	}
	var p *partialResponse
	for i := range c.Choices {
		ch := &c.Choices[i] // in place: a choice is two messages and more
		if ch.Index != 0 {
			continue // we ask for one choice
		}
		// Reasoning text (vLLM, DeepSeek, Ollama, ...) becomes thought parts.
		if t := ch.Delta.reasoning(); t != "" {
			p = s.text(p, t, true)
		}
		if t := ch.Delta.text(); t != "" {
			p = s.text(p, t, false)
		}
		for i := range ch.Delta.ToolCalls {
			s.calls.add(&ch.Delta.ToolCalls[i])
		}
		if ch.FinishReason != "" {
			s.finish = ch.FinishReason
		}
	}
	if p == nil {
		return nil
	}
	p.r = model.Response{Content: &p.m.c, Partial: true, ModelVersion: s.version, Transient: s.transient}
	s.agg.Add(&p.r)
	return &p.r
}

// partialResponse is a streamed delta's response and its content, in one
// allocation.
type partialResponse struct {
	r model.Response
	m modelContent
}

// text appends a text part to p's content and returns p, which the first
// call (p nil) makes: the stream's one transient response, cleared, when
// its consumer copies what it keeps (the aggregator copies a text part),
// else a new one.
func (s *streamState) text(p *partialResponse, t string, thought bool) *partialResponse {
	switch {
	case p != nil:
	case !s.transient:
		p = new(partialResponse)
	case s.reused == nil:
		s.reused = new(partialResponse)
		p = s.reused
	default:
		p = s.reused
		*p = partialResponse{}
	}
	p.m.add(t, thought)
	return p
}

// modelContent is a model's content with room for one part, allocated
// with its response: a streamed delta (text or reasoning) is one part, and
// so is most of the time the text of a whole answer.
type modelContent struct {
	c     genai.Content
	parts [1]*genai.Part
	first genai.Part
}

// add appends a text part to m, the first one in m's own room (zero until
// then, as m is made: its fields are set one by one).
func (m *modelContent) add(t string, thought bool) {
	if m.c.Parts == nil {
		m.first.Text, m.first.Thought = t, thought
		m.parts[0] = &m.first
		m.c.Role, m.c.Parts = genai.RoleModel, m.parts[:]
		return
	}
	m.c.Parts = append(m.c.Parts, &genai.Part{Text: t, Thought: thought})
}

// final returns the one aggregated response of the turn.
func (s *streamState) final() *model.Response {
	calls, bad := s.calls.parts()
	if len(calls) > 0 {
		s.agg.Add(&model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: calls}})
	}
	r := s.agg.Final(finishReason(s.finish), s.usage)
	// The model of the stream's last chunk that named one (Final's own is
	// the last response added's, a partial's from before the end).
	r.ModelVersion = s.version
	markProblems(r, s.finish, bad)
	return r
}

// completion is a non-streamed answer's response, its content and its
// usage, in one allocation.
type completion struct {
	r model.Response
	m modelContent
	u genai.GenerateContentResponseUsageMetadata
}

// completionResponse maps a non-streamed completion.
func completionResponse(c *wireCompletion) (*model.Response, error) {
	if len(c.Choices) == 0 {
		return nil, fmt.Errorf("the completion has no choices")
	}
	ch := &c.Choices[0]
	finish := ch.FinishReason
	if finish == "" {
		finish = "stop" // some servers leave it out of complete answers
	}
	out := new(completion) // zero: its fields are set one by one
	r := &out.r
	r.FinishReason, r.TurnComplete, r.ModelVersion = finishReason(finish), true, c.Model
	if c.Usage != nil {
		out.u = usage(c.Usage)
		r.UsageMetadata = &out.u
	}
	// The parts as the stream's aggregator would leave them: reasoning,
	// text (neither empty), then the calls.
	m := &ch.Message
	if t := m.reasoning(); t != "" {
		out.m.add(t, true)
	}
	if t := m.text(); t != "" {
		out.m.add(t, false)
	}
	if out.m.c.Parts != nil {
		r.Content = &out.m.c
	}
	var bad []string
	if len(m.ToolCalls) > 0 { // most answers are text alone
		bad = addCalls(r, &out.m.c, m.ToolCalls)
	}
	markProblems(r, finish, bad)
	return r, nil
}

// addCalls adds a non-streamed answer's calls to its content, r's, and
// returns the names of those whose arguments are not a JSON object (left
// out; see toolCalls.parts).
func addCalls(r *model.Response, content *genai.Content, list []wireToolCall) (bad []string) {
	var calls toolCalls
	for _, tc := range list {
		calls.put(tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	fcs, bad := calls.parts()
	switch {
	case content.Parts != nil:
		content.Parts = append(content.Parts, fcs...)
	case len(fcs) > 0:
		*content = genai.Content{Role: genai.RoleModel, Parts: fcs}
		r.Content = content
	}
	return bad
}

// finishReason maps chat-completions finish reasons to Gemini's.
func finishReason(s string) genai.FinishReason {
	switch s {
	case "stop", "tool_calls", "function_call":
		return genai.FinishReasonStop
	case "length":
		return genai.FinishReasonMaxTokens
	case "content_filter":
		return genai.FinishReasonSafety
	case "":
		return genai.FinishReasonUnspecified
	}
	return genai.FinishReasonOther
}

// markProblems sets ErrorCode/ErrorMessage for a turn the model could not
// finish normally: filtered content or tool calls with broken arguments.
func markProblems(r *model.Response, finish string, badCalls []string) {
	switch {
	case len(badCalls) > 0:
		r.FinishReason = genai.FinishReasonMalformedFunctionCall
		r.ErrorCode = string(genai.FinishReasonMalformedFunctionCall)
		r.ErrorMessage = "the arguments of " + strings.Join(badCalls, ", ") + " are not a JSON object"
	case finish == "content_filter":
		r.ErrorCode = string(genai.FinishReasonSafety)
		r.ErrorMessage = "the upstream content filter stopped the answer"
	}
}

// usage maps token counts. CandidatesTokenCount is completion_tokens as
// reported, reasoning tokens included; ThoughtsTokenCount repeats the
// reasoning share.
func usage(u *wireUsage) genai.GenerateContentResponseUsageMetadata {
	return genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount:        int32(u.PromptTokens),
		CandidatesTokenCount:    int32(u.CompletionTokens),
		CachedContentTokenCount: int32(u.PromptTokensDetails.CachedTokens),
		ThoughtsTokenCount:      int32(u.CompletionTokensDetails.ReasoningTokens),
		TotalTokenCount:         int32(u.TotalTokens),
	}
}

// toolCalls assembles tool calls from fragments.
type toolCalls struct {
	list    []*toolCall
	byIndex map[int64]*toolCall
}

type toolCall struct {
	id, name string
	args     strings.Builder
}

// add folds one streamed fragment in. Fragments belong to the call with the
// same index; a fragment that arrives without an index continues the last
// call. Servers that reuse an index for a new call (a new id, or a new name
// after complete arguments) start a new call.
func (t *toolCalls) add(d *wireToolCall) {
	var c *toolCall
	if d.Index != nil {
		c = t.byIndex[*d.Index]
	} else if n := len(t.list); n > 0 {
		c = t.list[n-1]
	}
	if c != nil && startsNewCall(c, d.ID, d.Function.Name) {
		c = nil
	}
	if c == nil {
		c = &toolCall{}
		t.list = append(t.list, c)
	}
	if d.Index != nil {
		if t.byIndex == nil {
			t.byIndex = map[int64]*toolCall{}
		}
		t.byIndex[*d.Index] = c
	}
	if d.ID != "" {
		c.id = d.ID
	}
	if d.Function.Name != "" {
		c.name = d.Function.Name
	}
	c.args.WriteString(d.Function.Arguments)
}

func startsNewCall(c *toolCall, id, name string) bool {
	if id != "" && c.id != "" && id != c.id {
		return true
	}
	return name != "" && c.name != "" && c.args.Len() > 0 && json.Valid([]byte(c.args.String()))
}

// put records one complete call.
func (t *toolCalls) put(id, name, args string) {
	c := &toolCall{id: id, name: name}
	c.args.WriteString(args)
	t.list = append(t.list, c)
}

// parts returns the assembled calls as function-call parts, upstream ids
// kept and missing ones generated, and the names of calls whose arguments
// are not a JSON object (those are left out).
func (t *toolCalls) parts() (parts []*genai.Part, bad []string) {
	for _, c := range t.list {
		args := map[string]any{}
		if raw := strings.TrimSpace(c.args.String()); raw != "" {
			if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
				bad = append(bad, c.name)
				continue
			}
		}
		id := c.id
		if id == "" {
			id = newCallID()
		}
		parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: c.name, Args: args}})
	}
	return parts, bad
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newCallID returns "call_" and 32 random characters of [A-Za-z0-9].
func newCallID() string {
	const n = 32
	out := make([]byte, 0, len("call_")+n)
	out = append(out, "call_"...)
	buf := make([]byte, 64)
	for len(out) < cap(out) {
		_, _ = rand.Read(buf)
		for _, b := range buf {
			// 248 = 4*62: rejecting larger bytes keeps the draw uniform.
			if b < 248 && len(out) < cap(out) {
				out = append(out, idAlphabet[int(b)%len(idAlphabet)])
			}
		}
	}
	return string(out)
}
