package agentcore_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
)

// transientLLM streams texts as one partial response rewritten for each
// delta (model.Response.Transient), when its consumer copies partials
// (model.CopiedPartials), and then the whole text.
type transientLLM struct {
	texts  []string
	copied bool
}

func (l *transientLLM) Name() string { return "transient" }

func (l *transientLLM) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		l.copied = model.CopiedPartials(ctx)
		var part genai.Part
		content := genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{&part}}
		r := model.Response{Content: &content, Partial: true, Transient: l.copied}
		for _, t := range l.texts {
			part = genai.Part{Text: t}
			if !yield(&r, nil) {
				return
			}
		}
		part = genai.Part{Text: "rewritten after the stream"}
		content.Role = "rewritten"
		yield(textResp(strings.Join(l.texts, "")), nil)
	}
}

// A streamed call's partial events keep their own copy of a transient
// partial response's content, with random ids (the content in the
// event's allocation) and with given ones.
func TestTransientPartialsCopied(t *testing.T) {
	for _, random := range []bool{true, false} {
		llm := &transientLLM{texts: []string{"Hel", "lo ", "world"}}
		opts := []harnessOpt{}
		if random {
			opts = append(opts, func(c *agentcore.RunnerConfig) { c.NewID = nil })
		}
		h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "a", Model: llm}), opts...)
		evs := h.mustRun("s1", userText("hi"), agentcore.RunConfig{Streaming: true})
		if !llm.copied {
			t.Fatalf("random ids %v: the streamed call's context is not CopiedPartials", random)
		}
		var got []string
		for _, ev := range evs {
			if ev.Partial {
				if ev.Content.Role != genai.RoleModel || len(ev.Content.Parts) != 1 {
					t.Fatalf("random ids %v: partial content %+v", random, ev.Content)
				}
				got = append(got, ev.Content.Parts[0].Text)
			}
		}
		if diff := cmp.Diff(llm.texts, got); diff != "" {
			t.Errorf("random ids %v: partial texts (-want +got):\n%s", random, diff)
		}
	}
}
