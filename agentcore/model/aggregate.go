package model

import (
	"strings"

	"google.golang.org/genai"
)

// Aggregator folds the partial responses of one streamed turn into the single
// final response. Consecutive text parts (and consecutive thought parts) are
// joined; every other part is kept in order. Empty text parts are dropped.
// The zero value is ready to use.
//
// The text of the run of parts being joined is collected in a builder and
// put into the part by Final: joining by concatenation copied the whole
// text so far (and the part) at every delta, quadratic in the answer's
// length.
type Aggregator struct {
	parts []*genai.Part
	// room holds the final response, its content, the first of its parts
	// and the first text part copied, made with the first part (or by
	// Final, when there is none): one allocation where they took four.
	room *aggregated
	last *Response
	// run holds the joined text of parts[len(parts)-1] while that is a
	// text part other text may join (its Text is stale until Final).
	run    strings.Builder
	inText bool
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
			if a.inText && p.Thought == a.parts[len(a.parts)-1].Thought {
				a.run.WriteString(p.Text)
				if len(p.ThoughtSignature) > 0 {
					a.parts[len(a.parts)-1].ThoughtSignature = p.ThoughtSignature
				}
				continue
			}
			a.closeRun()
			cp := a.copyPart(p)
			a.addPart(cp)
			if cp.Text != "" {
				a.inText = true
				a.run.WriteString(cp.Text)
			}
			continue
		}
		a.closeRun()
		a.addPart(p)
	}
}

// aggregated is an Aggregator's room (see Aggregator.room).
type aggregated struct {
	r     Response
	c     genai.Content
	ptrs  [1]*genai.Part
	part  genai.Part
	taken bool // part holds a copy
}

// ensureRoom returns a.room, made if need be.
func (a *Aggregator) ensureRoom() *aggregated {
	if a.room == nil {
		a.room = new(aggregated)
	}
	return a.room
}

// copyPart returns a copy of p, the first one in a's room.
func (a *Aggregator) copyPart(p *genai.Part) *genai.Part {
	r := a.ensureRoom()
	if r.taken {
		cp := *p
		return &cp
	}
	r.part, r.taken = *p, true
	return &r.part
}

// addPart appends p to the parts, the first one in a's room.
func (a *Aggregator) addPart(p *genai.Part) {
	if a.parts == nil {
		a.parts = a.ensureRoom().ptrs[:0]
	}
	a.parts = append(a.parts, p)
}

// closeRun puts the joined text into its part.
func (a *Aggregator) closeRun() {
	if !a.inText {
		return
	}
	a.parts[len(a.parts)-1].Text = a.run.String()
	a.run.Reset()
	a.inText = false
}

// Final returns the aggregated non-partial response. finish and usage come
// from the caller (providers learn them at the end of the stream).
func (a *Aggregator) Final(finish genai.FinishReason, usage *genai.GenerateContentResponseUsageMetadata) *Response {
	room := a.ensureRoom()
	out := &room.r
	*out = Response{FinishReason: finish, UsageMetadata: usage, TurnComplete: true}
	if a.last != nil {
		out.ModelVersion = a.last.ModelVersion
	}
	a.closeRun()
	if len(a.parts) > 0 {
		room.c = genai.Content{Role: genai.RoleModel, Parts: a.parts}
		out.Content = &room.c
	}
	return out
}
