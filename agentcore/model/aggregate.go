package model

import "google.golang.org/genai"

// Aggregator folds the partial responses of one streamed turn into the single
// final response. Consecutive text parts (and consecutive thought parts) are
// joined; every other part is kept in order. Empty text parts are dropped.
// The zero value is ready to use.
type Aggregator struct {
	parts []*genai.Part
	last  *Response
}

// Add folds one partial response in.
func (a *Aggregator) Add(r *Response) {
	if r == nil {
		return
	}
	a.last = r
	if r.Content == nil {
		return
	}
	for _, p := range r.Content.Parts {
		if p == nil {
			continue
		}
		if p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && p.FileData == nil &&
			p.ExecutableCode == nil && p.CodeExecutionResult == nil {
			if p.Text == "" && len(p.ThoughtSignature) == 0 {
				continue
			}
			if n := len(a.parts); n > 0 {
				prev := a.parts[n-1]
				if prev.FunctionCall == nil && prev.Text != "" && prev.Thought == p.Thought && prev.InlineData == nil &&
					prev.FileData == nil && prev.ExecutableCode == nil && prev.CodeExecutionResult == nil {
					merged := *prev
					merged.Text += p.Text
					if len(p.ThoughtSignature) > 0 {
						merged.ThoughtSignature = p.ThoughtSignature
					}
					a.parts[n-1] = &merged
					continue
				}
			}
			cp := *p
			a.parts = append(a.parts, &cp)
			continue
		}
		a.parts = append(a.parts, p)
	}
}

// Final returns the aggregated non-partial response. finish and usage come
// from the caller (providers learn them at the end of the stream).
func (a *Aggregator) Final(finish genai.FinishReason, usage *genai.GenerateContentResponseUsageMetadata) *Response {
	out := &Response{FinishReason: finish, UsageMetadata: usage, TurnComplete: true}
	if a.last != nil {
		out.ModelVersion = a.last.ModelVersion
	}
	if len(a.parts) > 0 {
		out.Content = &genai.Content{Role: genai.RoleModel, Parts: a.parts}
	}
	return out
}
