package agentcore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/sessions"
)

// The benchmarks run whole user turns through a Runner over the in-memory
// session store, with the scripted model (zero latency, no streaming) and
// the runner's default clock and UUID ids. Each turn uses a fresh session,
// deleted afterwards (the delete is part of the measured loop) so the
// store does not grow with b.N.

func benchModel(b *testing.B, rules ...scripted.Rule) *scripted.Model {
	b.Helper()
	m, err := scripted.New("bench", scripted.Config{Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func benchTurns(b *testing.B, root agentcore.Agent, text string, wantEvents int) {
	svc := sessions.NewMemoryService(sessions.MemoryConfig{})
	r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "bench", Agent: root, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	msg := userText(text)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "s" + strconv.Itoa(i)
		n := 0
		for _, err := range r.Run(ctx, agentcore.RunRequest{UserID: "u", SessionID: id, NewMessage: msg}).Events() {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != wantEvents {
			b.Fatalf("a turn yielded %d events, want %d", n, wantEvents)
		}
		if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: "bench", UserID: "u", SessionID: id}); err != nil {
			b.Fatal(err)
		}
	}
}

// One model call answering with text: 1 event.
func BenchmarkTextTurn(b *testing.B) {
	m := benchModel(b, scripted.Rule{Agent: "helper", Reply: "Hello there! How can I help you today?"})
	benchTurns(b, mustLlm(b, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: "Be helpful, {user:name?}."}), "hello", 1)
}

// The coordinator transfers to a specialist, which answers: 2 model calls,
// 3 events.
func BenchmarkTransfer(b *testing.B) {
	m := benchModel(b,
		scripted.Rule{Agent: "coordinator", Call: &scripted.Call{Name: agentcore.TransferToolName, Args: map[string]any{"agent_name": "greeter"}}},
		scripted.Rule{Agent: "greeter", Reply: "Hello there! Welcome."},
	)
	greeter := mustLlm(b, agentcore.LlmConfig{Name: "greeter", Model: m, Description: "Greets the user warmly."})
	exec := mustLlm(b, agentcore.LlmConfig{Name: "task_executor", Model: m, Description: "Executes user tasks."})
	root := mustLlm(b, agentcore.LlmConfig{Name: "coordinator", Model: m, Instruction: "Route each request.",
		SubAgents: []agentcore.Agent{greeter, exec}})
	benchTurns(b, root, "hello", 3)
}

// The analyst calls a summarizer as a tool (its own sub-conversation) and
// answers with the result: 3 model calls, 3 events in the parent.
func BenchmarkAgentToolCall(b *testing.B) {
	m := benchModel(b,
		scripted.Rule{Agent: "analyst", AfterTool: "summarizer", Reply: "The summary: {response.text}"},
		scripted.Rule{Agent: "analyst", Call: &scripted.Call{Name: "summarizer", Args: map[string]any{"request": "{last}"}}},
		scripted.Rule{Agent: "summarizer", Reply: "- point one\n- point two\n- point three"},
	)
	summarizer := mustLlm(b, agentcore.LlmConfig{Name: "summarizer", Model: m, Description: "Summarizes text."})
	root := mustLlm(b, agentcore.LlmConfig{Name: "analyst", Model: m, Tools: []agentcore.Tool{agentTool(b, summarizer)}})
	benchTurns(b, root, "please summarize this long text", 3)
}

// Eight children answering concurrently on their own branches: 8 model
// calls, 8 events.
func BenchmarkParallel8(b *testing.B) {
	m := benchModel(b, scripted.Rule{Reply: "My part of the answer."})
	var subs []agentcore.Agent
	for i := range 8 {
		subs = append(subs, mustLlm(b, agentcore.LlmConfig{Name: fmt.Sprintf("worker%d", i), Model: m}))
	}
	benchTurns(b, mustParallel(b, "fan", subs...), "go", 8)
}
