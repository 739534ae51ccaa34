package openaiwire_test

import (
	"context"
	"encoding/json"
	"iter"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/gateway/openaiwire"
	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
	"github.com/agentgate/agentgate/sessions"
)

// scriptLLM answers each agent's calls from its own script, every answer
// costing 10 input and 4 output tokens.
type scriptLLM struct {
	mu     sync.Mutex
	script map[string][]*genai.Content
	calls  int
}

func (m *scriptLLM) Name() string { return "script" }

func (m *scriptLLM) GenerateContent(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.mu.Lock()
		m.calls++
		next := m.script[req.Agent][0]
		m.script[req.Agent] = m.script[req.Agent][1:]
		m.mu.Unlock()
		yield(&model.Response{Content: next, TurnComplete: true, FinishReason: genai.FinishReasonStop,
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 4, TotalTokenCount: 14}}, nil)
	}
}

func modelSays(parts ...*genai.Part) *genai.Content {
	return &genai.Content{Role: genai.RoleModel, Parts: parts}
}

// A real turn of a tree: the coordinator calls an agent as a tool, then
// transfers to a specialist that answers. The response's usage is the sum
// of all four model calls, the agent tool's included, and the agent tool
// adds no output item: its answer is the coordinator's tool result.
func TestResponsesEncoderOnARealTurn(t *testing.T) {
	llm := &scriptLLM{script: map[string][]*genai.Content{
		"coordinator": {
			modelSays(&genai.Part{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "summarizer", Args: map[string]any{"request": "sum up"}}}),
			modelSays(genai.NewPartFromText("Passing you on."), &genai.Part{FunctionCall: &genai.FunctionCall{ID: "c2", Name: "transfer_to_agent", Args: map[string]any{"agent_name": "greeter"}}}),
		},
		"summarizer": {modelSays(genai.NewPartFromText("a summary nobody sees"))},
		"greeter":    {modelSays(genai.NewPartFromText("Hello from the greeter."))},
	}}
	newAgent := func(cfg agentcore.LlmConfig) *agentcore.LlmAgent {
		cfg.Model = llm
		a, err := agentcore.NewLlmAgent(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tool, err := agentcore.NewAgentTool(newAgent(agentcore.LlmConfig{Name: "summarizer", Description: "sums up"}), agentcore.AgentToolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	root := newAgent(agentcore.LlmConfig{Name: "coordinator", Tools: []agentcore.Tool{tool},
		SubAgents: []agentcore.Agent{newAgent(agentcore.LlmConfig{Name: "greeter", Description: "greets"})}})
	runner, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: root,
		Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}

	req, err := openaiwire.DecodeResponsesRequest([]byte(`{"model":"support-desk","input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := req.Validate(nil)
	if err != nil {
		t.Fatal(err)
	}
	enc := openaiwire.NewResponsesEncoder(req.NewResponse(openaiwire.NewResponseID(), 1), openaiwire.ResponsesEncoderConfig{})
	enc.SetSession("s1")
	run := runner.Run(context.Background(), agentcore.RunRequest{UserID: "u", SessionID: "s1", NewMessage: conv.New[0],
		Config: agentcore.RunConfig{Streaming: true}})
	var body []byte
	write := func(evs []openaiwire.ResponseEvent) {
		for i := range evs {
			if body, err = openaiwire.AppendResponseEventFrame(body, &evs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(enc.Start())
	for ev, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		write(enc.Event(ev))
	}
	write(enc.Finish(run.Usage()))
	if err := responsescheck.Stream(body); err != nil {
		t.Errorf("stream: %v\n%s", err, body)
	}

	resp := enc.Response()
	if llm.calls != 4 {
		t.Fatalf("%d model calls, want 4", llm.calls)
	}
	want := openaiwire.ResponseUsage{InputTokens: 40, OutputTokens: 16, TotalTokens: 56}
	if resp.Usage == nil || *resp.Usage != want {
		t.Errorf("usage %+v, want %+v (four calls of 10+4)", resp.Usage, want)
	}
	var texts, authors []string
	for _, it := range resp.Output {
		for _, c := range it.Content {
			texts = append(texts, c.Text)
		}
		authors = append(authors, it.Agentgate.Author+"<"+it.Agentgate.TransferredFrom)
	}
	if got, _ := json.Marshal([]any{texts, authors}); string(got) != `[["Passing you on.","Hello from the greeter."],["coordinator\u003c","greeter\u003ccoordinator"]]` {
		t.Errorf("output texts and authors: %s", got)
	}
	ext := resp.Agentgate
	if ext.InvocationID != run.InvocationID() || ext.SessionID == nil || *ext.SessionID != "s1" ||
		len(ext.Transfers) != 1 || ext.Transfers[0] != (openaiwire.Transfer{From: "coordinator", To: "greeter"}) {
		t.Errorf("agentgate extension %+v, invocation %s", ext, run.InvocationID())
	}
	raw, _ := json.Marshal(resp)
	if err := responsescheck.Response(raw); err != nil {
		t.Errorf("response: %v", err)
	}
}
