package providertest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// Tree runs one streamed turn ("Why is INV-7 so high?") of a real agent
// tree whose agents all use llm: the coordinator, with billing as its
// sub-agent; billing, with the summarizer agent as a tool. Each agent's
// instruction is "You are <name>.", so the fake upstream tells the callers
// apart by the system prompt. It must answer, streamed or whole as asked
// (the summarizer, called as a tool, asks for whole answers):
//
//   - coordinator: transfer_to_agent with agent_name "billing";
//   - billing: a call of summarizer with request "Summarize INV-7";
//   - summarizer: "INV-7: 3 lines, " then "42.50 EUR.";
//   - billing, given the summarizer's result: "It is high because " then
//     "of 3 lines.";
//
// each time with a usage of 10 prompt and 12 total tokens. llm's provider
// sends to up. Tree checks the transfer, what the agents said, the usage
// summed over the four calls and that up got four requests (coordinator,
// billing, summarizer, billing); the caller checks what they carried.
func Tree(t *testing.T, up *Upstream, llm model.LLM) {
	t.Helper()
	agent := func(cfg agentcore.LlmConfig) *agentcore.LlmAgent {
		cfg.Model, cfg.Instruction = llm, "You are "+cfg.Name+"."
		a, err := agentcore.NewLlmAgent(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	summarizer := agent(agentcore.LlmConfig{Name: "summarizer", Description: "Summarizes invoices."})
	tool, err := agentcore.NewAgentTool(summarizer, agentcore.AgentToolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	billing := agent(agentcore.LlmConfig{Name: "billing", Description: "Explains invoices.", Tools: []agentcore.Tool{tool}})
	root := agent(agentcore.LlmConfig{Name: "coordinator", Description: "Routes requests.", SubAgents: []agentcore.Agent{billing}})
	runner, err := agentcore.NewRunner(agentcore.RunnerConfig{
		AppName: "app", Agent: root, Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}), AutoCreateSession: true,
	})
	if err != nil {
		t.Fatal(err)
	}

	run := runner.Run(context.Background(), agentcore.RunRequest{
		UserID: "u1", SessionID: "s1", NewMessage: genai.NewContentFromText("Why is INV-7 so high?", genai.RoleUser),
		Config: agentcore.RunConfig{Streaming: true},
	})
	var said, transfers []string
	for ev, err := range run.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Actions.TransferToAgent != "" {
			transfers = append(transfers, ev.Author+"->"+ev.Actions.TransferToAgent)
		}
		if !ev.Partial && ev.Content != nil {
			for _, part := range ev.Content.Parts {
				if part.Text != "" {
					said = append(said, ev.Author+": "+part.Text)
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"coordinator->billing"}, transfers); diff != "" {
		t.Errorf("transfers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"billing: It is high because of 3 lines."}, said); diff != "" {
		t.Errorf("what the agents said (-want +got):\n%s", diff)
	}
	if got := run.Usage(); got == nil || got.TotalTokenCount != 4*12 || got.PromptTokenCount != 4*10 {
		t.Errorf("usage over the tree = %+v, want 4 calls of 10 prompt and 12 total tokens", got)
	}
	if n := len(up.Requests()); n != 4 {
		t.Fatalf("upstream got %d requests, want 4 (coordinator, billing, summarizer, billing)", n)
	}
}
