package scripted_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
)

func text(role, s string) *genai.Content {
	return &genai.Content{Role: role, Parts: []*genai.Part{{Text: s}}}
}

func response(name string, resp map[string]any) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: name, Response: resp}}}}
}

func offering(names ...string) *genai.GenerateContentConfig {
	t := &genai.Tool{}
	for _, n := range names {
		t.FunctionDeclarations = append(t.FunctionDeclarations, &genai.FunctionDeclaration{Name: n})
	}
	return &genai.GenerateContentConfig{Tools: []*genai.Tool{t}}
}

// generate runs one call and returns the partial texts and the final
// response.
func generate(t *testing.T, m *scripted.Model, req *model.Request, stream bool) ([]string, *model.Response) {
	t.Helper()
	var partials []string
	var final *model.Response
	for r, err := range m.GenerateContent(context.Background(), req, stream) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Partial {
			partials = append(partials, r.Content.Parts[0].Text)
			continue
		}
		if final != nil {
			t.Fatal("two final responses")
		}
		final = r
	}
	if final == nil {
		t.Fatal("no final response")
	}
	return partials, final
}

// describe renders a final response's parts: text, or "call name {args}".
func describe(r *model.Response) []string {
	var out []string
	for _, p := range r.Content.Parts {
		if p.FunctionCall != nil {
			if p.FunctionCall.ID == "" {
				out = append(out, "call without id")
			}
			out = append(out, "call "+p.FunctionCall.Name+" "+jsonish(p.FunctionCall.Args))
			continue
		}
		out = append(out, p.Text)
	}
	return out
}

func jsonish(m map[string]any) string {
	var keys []string
	for k, v := range m {
		keys = append(keys, k+"="+v.(string))
	}
	return strings.Join(keys, ",")
}

func TestRules(t *testing.T) {
	m, err := scripted.New("demo", scripted.Config{Default: "no rule for {last}", Rules: []scripted.Rule{
		{Agent: "analyst", AfterTool: "summarizer", Reply: "Summary: {response.text} / {response}"},
		{Agent: "analyst", Match: "summari[sz]e", Call: &scripted.Call{Name: "summarizer", Args: map[string]any{"request": "{last}"}}},
		{Agent: "coordinator", WhenTool: "transfer_to_agent", Match: "^hello", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "greeter"}}},
		{Agent: "coordinator", Match: "long", Reply: "cut", Finish: "MAX_TOKENS"},
		{Reply: "Anyone: {last}"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		req        *model.Request
		want       []string
		wantFinish genai.FinishReason
	}{
		{"agent and match", &model.Request{Agent: "analyst", Contents: []*genai.Content{text("user", "Please SUMMARISE this")}},
			[]string{"call summarizer request=Please SUMMARISE this"}, genai.FinishReasonStop},
		{"after a function response", &model.Request{Agent: "analyst", Contents: []*genai.Content{
			text("user", "summarize"), response("summarizer", map[string]any{"text": "short"}),
		}}, []string{`Summary: short / {"text":"short"}`}, genai.FinishReasonStop},
		{"when the tool is offered", &model.Request{Agent: "coordinator", Config: offering("transfer_to_agent"),
			Contents: []*genai.Content{text("user", "hello there")}}, []string{"call transfer_to_agent agent_name=greeter"}, genai.FinishReasonStop},
		{"not when the tool is missing", &model.Request{Agent: "coordinator", Contents: []*genai.Content{text("user", "hello there")}},
			[]string{"Anyone: hello there"}, genai.FinishReasonStop},
		{"context messages are not the user's text", &model.Request{Agent: "coordinator", Config: offering("transfer_to_agent"), Contents: []*genai.Content{
			text("user", "hello again"), text("user", "For context:\n[other] said: long story"),
		}}, []string{"call transfer_to_agent agent_name=greeter"}, genai.FinishReasonStop},
		{"finish override", &model.Request{Agent: "coordinator", Contents: []*genai.Content{text("user", "a long one")}},
			[]string{"cut"}, genai.FinishReasonMaxTokens},
		{"no rule after an unexpected response", &model.Request{Agent: "coordinator", Contents: []*genai.Content{
			text("user", "x"), response("other", nil),
		}}, []string{"no rule for x"}, genai.FinishReasonStop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, final := generate(t, m, tc.req, false)
			if diff := cmp.Diff(tc.want, describe(final)); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
			if final.FinishReason != tc.wantFinish || !final.TurnComplete || final.ModelVersion != "demo" {
				t.Errorf("finish %q turnComplete %v version %q", final.FinishReason, final.TurnComplete, final.ModelVersion)
			}
			if u := final.UsageMetadata; u == nil || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount || u.TotalTokenCount == 0 {
				t.Errorf("usage %+v", u)
			}
		})
	}
}

// Streaming yields deltas of ChunkSize characters (never splitting a rune),
// then one final response with the whole text.
func TestStreamingChunks(t *testing.T) {
	m, err := scripted.New("demo", scripted.Config{ChunkSize: 3, Rules: []scripted.Rule{{Reply: "héllo wörld"}}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*genai.Content{text("user", "hi")}}
	partials, final := generate(t, m, req, true)
	if diff := cmp.Diff([]string{"hél", "lo ", "wör", "ld"}, partials); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"héllo wörld"}, describe(final)); diff != "" {
		t.Errorf("final (-want +got):\n%s", diff)
	}
	partials, _ = generate(t, m, req, false)
	if len(partials) != 0 {
		t.Errorf("non-streaming call yielded deltas %q", partials)
	}
}

func TestCancelledContext(t *testing.T) {
	m, err := scripted.New("demo", scripted.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for r, err := range m.GenerateContent(ctx, &model.Request{}, true) {
		if err != context.Canceled || r != nil {
			t.Errorf("got %v, %v; want only context.Canceled", r, err)
		}
	}
}

func TestNewRejectsBadRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule scripted.Rule
		want string
	}{
		{"nothing to say", scripted.Rule{Agent: "a"}, "rules[0]: needs a reply or a call"},
		{"call without name", scripted.Rule{Call: &scripted.Call{}}, "rules[0].call.name: required"},
		{"bad regexp", scripted.Rule{Match: "(", Reply: "x"}, "rules[0].match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scripted.New("demo", scripted.Config{Rules: []scripted.Rule{tc.rule}})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
