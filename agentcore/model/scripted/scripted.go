// Package scripted is a deterministic, offline model whose behaviour is
// given as rules in config. It powers the default demo tree and tests: it can
// reply with text (chunked when streaming), call functions (a transfer, an
// agent tool, a client tool) and react to function results.
package scripted

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// Rule is one scripted behaviour. A rule matches when every condition it
// sets holds; the first matching rule answers.
type Rule struct {
	// Agent is the calling agent's name.
	Agent string `yaml:"agent" json:"agent,omitempty"`
	// Match is a case-insensitive regular expression on the latest user
	// text (context messages about other agents are skipped).
	Match string `yaml:"match" json:"match,omitempty"`
	// WhenTool requires a function with this name to be offered.
	WhenTool string `yaml:"when_tool" json:"when_tool,omitempty"`
	// AfterTool requires the last content to be a response of this
	// function. Rules without it never match right after a function
	// response, so a scripted turn cannot loop.
	AfterTool string `yaml:"after_tool" json:"after_tool,omitempty"`

	// Reply is the text to answer with. Placeholders: {last} is the latest
	// user text, {response} the last function response as JSON,
	// {response.KEY} one of its fields.
	Reply string `yaml:"reply" json:"reply,omitempty"`
	// Call makes a function call instead of (or after) the text.
	Call *Call `yaml:"call" json:"call,omitempty"`
	// Finish overrides the finish reason (e.g. MAX_TOKENS).
	Finish string `yaml:"finish" json:"finish,omitempty"`
}

// Call is a scripted function call. String argument values take the same
// placeholders as Rule.Reply.
type Call struct {
	Name string         `yaml:"name" json:"name"`
	Args map[string]any `yaml:"args" json:"args,omitempty"`
}

// Config configures the scripted model.
type Config struct {
	Rules []Rule `yaml:"rules" json:"rules,omitempty"`
	// Default answers when no rule matches (default: an explanation).
	Default string `yaml:"default" json:"default,omitempty"`
	// ChunkSize is the number of characters per streamed delta (default 8).
	ChunkSize int `yaml:"chunk_size" json:"chunk_size,omitempty"`
	// ChunkDelay pauses between streamed deltas (default none).
	ChunkDelay time.Duration `yaml:"chunk_delay" json:"chunk_delay,omitempty"`
	// NewCallID generates function-call ids (default: "call_" and 32 random
	// hex digits); tests set a deterministic one.
	NewCallID func() string `yaml:"-" json:"-"`
}

// Model is a scripted model under one id. It is safe for concurrent use.
type Model struct {
	id    string
	cfg   Config
	match []*regexp.Regexp
}

func randomCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

var _ model.LLM = (*Model)(nil)

// New validates cfg (regular expressions compile) and returns a model.
func New(id string, cfg Config) (*Model, error) {
	m := &Model{id: id, cfg: cfg, match: make([]*regexp.Regexp, len(cfg.Rules))}
	if m.cfg.NewCallID == nil {
		m.cfg.NewCallID = randomCallID
	}
	for i, r := range cfg.Rules {
		if r.Reply == "" && r.Call == nil {
			return nil, fmt.Errorf("rules[%d]: needs a reply or a call", i)
		}
		if r.Call != nil && r.Call.Name == "" {
			return nil, fmt.Errorf("rules[%d].call.name: required", i)
		}
		if r.Match != "" {
			re, err := regexp.Compile("(?i)" + r.Match)
			if err != nil {
				return nil, fmt.Errorf("rules[%d].match: %v", i, err)
			}
			m.match[i] = re
		}
	}
	if m.cfg.ChunkSize <= 0 {
		m.cfg.ChunkSize = 8
	}
	if m.cfg.Default == "" {
		m.cfg.Default = "This is agentgate's scripted demo model; no rule matched \"{last}\"."
	}
	return m, nil
}

// Name implements model.LLM.
func (m *Model) Name() string { return m.id }

// GenerateContent implements model.LLM.
func (m *Model) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		view := inspect(req)
		rule := m.pick(req, view)
		text, call, finish := m.cfg.Default, (*Call)(nil), genai.FinishReasonStop
		if rule != nil {
			text, call = rule.Reply, rule.Call
			if rule.Finish != "" {
				finish = genai.FinishReason(rule.Finish)
			}
		}
		text = expand(text, view)
		var parts []*genai.Part
		if stream && text != "" {
			for _, chunk := range chunks(text, m.cfg.ChunkSize) {
				if m.cfg.ChunkDelay > 0 {
					t := time.NewTimer(m.cfg.ChunkDelay)
					select {
					case <-ctx.Done():
						t.Stop()
						yield(nil, ctx.Err())
						return
					case <-t.C:
					}
				}
				r := &model.Response{Partial: true, ModelVersion: m.id, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: chunk}}}}
				if !yield(r, nil) {
					return
				}
			}
		}
		if text != "" {
			parts = append(parts, &genai.Part{Text: text})
		}
		if call != nil {
			args := map[string]any{}
			for k, v := range call.Args {
				args[k] = expandValue(v, view)
			}
			parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: m.cfg.NewCallID(), Name: call.Name, Args: args}})
		}
		completion := int32(len(text)/4 + 1)
		if call != nil {
			completion += 8
		}
		prompt := int32(view.promptChars/4 + 1)
		yield(&model.Response{
			ModelVersion: m.id, TurnComplete: true, FinishReason: finish,
			Content:       &genai.Content{Role: genai.RoleModel, Parts: parts},
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: completion, TotalTokenCount: prompt + completion},
		}, nil)
	}
}

// view is what rules look at in a request.
type view struct {
	lastUser     string
	lastResponse *genai.FunctionResponse
	offered      map[string]bool
	promptChars  int
}

func inspect(req *model.Request) view {
	v := view{offered: map[string]bool{}}
	for _, d := range req.FunctionDeclarations() {
		v.offered[d.Name] = true
	}
	if req.Config != nil && req.Config.SystemInstruction != nil {
		for _, p := range req.Config.SystemInstruction.Parts {
			v.promptChars += len(p.Text)
		}
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			v.promptChars += len(p.Text)
		}
	}
	n := len(req.Contents)
	if n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			if p.FunctionResponse != nil {
				v.lastResponse = p.FunctionResponse
			}
		}
	}
	for i := n - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role != genai.RoleUser {
			continue
		}
		var b strings.Builder
		for _, p := range c.Parts {
			if p.FunctionResponse == nil && !p.Thought {
				b.WriteString(p.Text)
			}
		}
		if s := b.String(); s != "" && !strings.HasPrefix(s, "For context:") {
			v.lastUser = s
			break
		}
	}
	return v
}

func (m *Model) pick(req *model.Request, v view) *Rule {
	for i := range m.cfg.Rules {
		r := &m.cfg.Rules[i]
		if r.Agent != "" && r.Agent != req.Agent {
			continue
		}
		if r.AfterTool != "" {
			if v.lastResponse == nil || v.lastResponse.Name != r.AfterTool {
				continue
			}
		} else if v.lastResponse != nil {
			continue
		}
		if r.WhenTool != "" && !v.offered[r.WhenTool] {
			continue
		}
		if m.match[i] != nil && !m.match[i].MatchString(v.lastUser) {
			continue
		}
		return r
	}
	return nil
}

var placeholderRE = regexp.MustCompile(`\{(last|response(?:\.[A-Za-z0-9_]+)?)\}`)

func expand(s string, v view) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		switch {
		case name == "last":
			return v.lastUser
		case name == "response":
			if v.lastResponse == nil {
				return ""
			}
			b, _ := json.Marshal(v.lastResponse.Response)
			return string(b)
		default:
			if v.lastResponse == nil {
				return ""
			}
			val := v.lastResponse.Response[strings.TrimPrefix(name, "response.")]
			if s, ok := val.(string); ok {
				return s
			}
			if val == nil {
				return ""
			}
			b, _ := json.Marshal(val)
			return string(b)
		}
	})
}

func expandValue(x any, v view) any {
	switch t := x.(type) {
	case string:
		return expand(t, v)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = expandValue(e, v)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = expandValue(e, v)
		}
		return out
	}
	return x
}

// chunks splits s into pieces of n characters (never inside a rune).
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
