package gemini

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// wireResponse is a GenerateContentResponse (a whole answer, or one chunk
// of a stream), decoded straight into the genai types the runtime keeps,
// with only the members the provider reads: the first candidate's
// content, finish reason and message, the usage, the prompt feedback and
// the model version (grounding, citation and safety details are skipped).
// Error is set on an error event inside a stream.
type wireResponse struct {
	Candidates     []wireCandidate                              `json:"candidates"`
	PromptFeedback *genai.GenerateContentResponsePromptFeedback `json:"promptFeedback"`
	UsageMetadata  *genai.GenerateContentResponseUsageMetadata  `json:"usageMetadata"`
	ModelVersion   string                                       `json:"modelVersion"`
	Error          *wireError                                   `json:"error"`
}

// wireCandidate is a candidate of a wireResponse.
type wireCandidate struct {
	Content       *genai.Content     `json:"content"`
	FinishReason  genai.FinishReason `json:"finishReason"`
	FinishMessage string             `json:"finishMessage"`
}

// decodeChunk decodes one answer or stream chunk; an error event is an
// *apiError.
func decodeChunk(data []byte) (*wireResponse, error) {
	var d chunkDecoder
	return d.chunk(data)
}

// chunk decodes one answer or stream chunk, by hand when it can
// (response_decode.go), else with encoding/json; an error event is an
// *apiError.
func (d *chunkDecoder) chunk(data []byte) (*wireResponse, error) {
	w, ok := d.decode(data)
	if !ok {
		if err := json.Unmarshal(data, w); err != nil {
			return nil, fmt.Errorf("decoding the answer: %w", err)
		}
	}
	if w.Error != nil {
		return nil, streamError(w.Error)
	}
	return w, nil
}

// readResponse reads, closes and decodes a non-streamed answer.
func readResponse(resp *http.Response) (*wireResponse, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return decodeChunk(data)
}

// generatedIDPrefix marks function-call ids made here (and by ADK) for calls
// Gemini sent without one.
const generatedIDPrefix = "adk-"

// streamState folds the chunks of one turn: text parts go out as partial
// responses; every part goes into the aggregator; the finish reason, usage
// and prompt feedback of the last chunks are kept for the final response.
type streamState struct {
	agg           model.Aggregator
	finish        genai.FinishReason
	finishMessage string
	blocked       *genai.GenerateContentResponsePromptFeedback
	usage         *genai.GenerateContentResponseUsageMetadata
	version       string
	// produced reports whether any chunk arrived.
	produced bool
}

// add folds one chunk in and returns the partial response to yield when the
// chunk carried text.
func (s *streamState) add(resp *wireResponse) *model.Response {
	if resp == nil {
		return nil
	}
	s.produced = true
	if resp.ModelVersion != "" {
		s.version = resp.ModelVersion
	}
	if resp.UsageMetadata != nil {
		s.usage = resp.UsageMetadata // cumulative: the last one counts
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		s.blocked = pf
	}
	if len(resp.Candidates) == 0 {
		return nil
	}
	cand := &resp.Candidates[0]
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		s.finish, s.finishMessage = cand.FinishReason, cand.FinishMessage
	}
	if cand.Content == nil {
		return nil
	}
	if r := textDelta(cand.Content, s.version); r != nil {
		// The usual chunk: the partial is what the aggregator is given.
		s.agg.Add(r)
		return r
	}
	var all, texts []*genai.Part
	for _, p := range cand.Content.Parts {
		if p == nil {
			continue
		}
		if p.FunctionCall != nil && p.FunctionCall.ID == "" {
			pc, fc := *p, *p.FunctionCall
			fc.ID, pc.FunctionCall = generatedIDPrefix+uuid.NewString(), &fc
			p = &pc
		}
		all = append(all, p)
		if isText(p) {
			texts = append(texts, p)
		}
	}
	s.agg.Add(&model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: all}, ModelVersion: s.version})
	if len(texts) == 0 {
		return nil
	}
	return &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: texts}, Partial: true, ModelVersion: s.version}
}

// textDelta returns the partial response of a content whose parts are all
// text (or thought) deltas, made of the content itself, or nil if it has
// other parts, or none.
func textDelta(c *genai.Content, version string) *model.Response {
	if len(c.Parts) == 0 {
		return nil
	}
	for _, p := range c.Parts {
		if p == nil || !isText(p) {
			return nil
		}
	}
	if c.Role != genai.RoleModel {
		c = &genai.Content{Role: genai.RoleModel, Parts: c.Parts}
	}
	return &model.Response{Content: c, Partial: true, ModelVersion: version}
}

// isText reports whether p is a text (or thought) delta and nothing else.
func isText(p *genai.Part) bool {
	return p.Text != "" && p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil &&
		p.FileData == nil && p.ExecutableCode == nil && p.CodeExecutionResult == nil
}

// finished reports whether the upstream ended the turn: a finish reason,
// or a prompt it refused to answer.
func (s *streamState) finished() bool { return s.finish != "" || s.blocked != nil }

// final returns the one aggregated response of the turn. A turn that ended
// for another reason than STOP or MAX_TOKENS (SAFETY, RECITATION,
// MALFORMED_FUNCTION_CALL, a blocked prompt, ...) carries it as ErrorCode.
func (s *streamState) final() *model.Response {
	r := s.agg.Final(s.finish, s.usage)
	if r.ModelVersion == "" {
		r.ModelVersion = s.version
	}
	switch {
	case s.blocked != nil && s.finish == "":
		r.ErrorCode, r.ErrorMessage = string(s.blocked.BlockReason), s.blocked.BlockReasonMessage
		if r.ErrorMessage == "" {
			r.ErrorMessage = "the prompt was blocked"
		}
	case s.finish != genai.FinishReasonStop && s.finish != genai.FinishReasonMaxTokens && s.finish != "":
		r.ErrorCode, r.ErrorMessage = string(s.finish), s.finishMessage
	}
	return r
}
