package agentcore_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
)

// coordinatorTree is the seed's coordinator/specialist example on the
// scripted model.
func coordinatorTree(t *testing.T) *agentcore.LlmAgent {
	t.Helper()
	m, err := scripted.New("demo-1", scripted.Config{ChunkSize: 6, NewCallID: counterIDs("call_"), Rules: []scripted.Rule{
		{Agent: "coordinator", Match: "hello|hi", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "greeter"}}},
		{Agent: "coordinator", Match: "task", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "task_executor"}}},
		{Agent: "greeter", Reply: "Hello there! Welcome."},
		{Agent: "task_executor", Reply: "Doing it: {last}"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	greeter := mustLlm(t, agentcore.LlmConfig{Name: "greeter", Model: m, Description: "Greets the user warmly.", Instruction: "Reply with a friendly greeting."})
	exec := mustLlm(t, agentcore.LlmConfig{Name: "task_executor", Model: m, Description: "Executes user tasks step by step.", Instruction: "Carry out the requested task."})
	return mustLlm(t, agentcore.LlmConfig{Name: "coordinator", Model: m, Description: "Routes each request to the right specialist.",
		Instruction: "Route each request to the best-suited specialist.", SubAgents: []agentcore.Agent{greeter, exec}})
}

func TestGoldenCoordinatorTransfer(t *testing.T) {
	h := newHarness(t, coordinatorTree(t))
	evs := h.mustRun("s1", userText("hello"), agentcore.RunConfig{Streaming: true})
	golden(t, "coordinator_transfer", evs)

	// The invocation id stays the same across the transfer.
	for _, e := range evs {
		if e.InvocationID != evs[0].InvocationID {
			t.Errorf("event %s has invocation %s, want %s", e.ID, e.InvocationID, evs[0].InvocationID)
		}
	}
	// Stored: the user message and every non-partial event, in order.
	stored := h.session("s1").Events
	want := []string{"user", "coordinator", "coordinator", "greeter"}
	if diff := cmp.Diff(want, authors(stored)); diff != "" {
		t.Errorf("stored authors (-want +got):\n%s", diff)
	}
}

func TestNextTurnRouting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		toRoot  bool
		wantLed string
	}{
		{"active agent keeps the conversation", false, "greeter"},
		{"route to root", true, "coordinator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, coordinatorTree(t), func(c *agentcore.RunnerConfig) { c.RouteToRoot = tc.toRoot })
			h.mustRun("s1", userText("hello"), agentcore.RunConfig{})
			evs := h.mustRun("s1", userText("how are you"), agentcore.RunConfig{})
			if len(evs) == 0 || evs[0].Author != tc.wantLed {
				t.Fatalf("second turn authors %v, want first %s", authors(evs), tc.wantLed)
			}
		})
	}
}

// analystTree is the seed's AgentTool example.
func analystTree(t *testing.T) *agentcore.LlmAgent {
	t.Helper()
	m, err := scripted.New("demo-1", scripted.Config{ChunkSize: 10, NewCallID: counterIDs("call_"), Rules: []scripted.Rule{
		{Agent: "analyst", AfterTool: "summarizer", Reply: "The summary: {response.text}"},
		{Agent: "analyst", Match: "summari[sz]e", Call: &scripted.Call{Name: "summarizer", Args: map[string]any{"request": "{last}"}}},
		{Agent: "summarizer", Reply: "- point one\n- point two\n- point three"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	summarizer := mustLlm(t, agentcore.LlmConfig{Name: "summarizer", Model: m, Description: "Summarizes any text it is given.",
		Instruction: "Summarize the request in three bullet points."})
	tool, err := agentcore.NewAgentTool(summarizer, agentcore.AgentToolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return mustLlm(t, agentcore.LlmConfig{Name: "analyst", Model: m, Instruction: "Use the summarizer tool when the user pastes long text.",
		Tools: []agentcore.Tool{tool}})
}

func TestGoldenAgentTool(t *testing.T) {
	h := newHarness(t, analystTree(t))
	evs := h.mustRun("s1", userText("please summarize this long text"), agentcore.RunConfig{Streaming: true})
	golden(t, "agent_tool", evs)

	// The parent's history holds the call and {"text": ...}; the child's
	// events live in the sub-conversation only.
	parent := h.session("s1")
	if diff := cmp.Diff([]string{"user", "analyst", "analyst", "analyst"}, authors(parent.Events)); diff != "" {
		t.Errorf("parent authors (-want +got):\n%s", diff)
	}
	resp := parent.Events[2].FunctionResponses()
	if len(resp) != 1 || resp[0].Response["text"] != "- point one\n- point two\n- point three" {
		t.Errorf("agent tool response = %+v", resp)
	}
	child := h.session("s1/summarizer")
	if diff := cmp.Diff([]string{"user", "summarizer"}, authors(child.Events)); diff != "" {
		t.Errorf("child authors (-want +got):\n%s", diff)
	}
	if got, want := child.Events[1].InvocationID, parent.Events[1].InvocationID+".sub.summarizer"; got != want {
		t.Errorf("child invocation id = %q, want %q", got, want)
	}
	if got := child.Events[0].Content.Parts[0].Text; got != "please summarize this long text" {
		t.Errorf("child request = %q", got)
	}
}

func TestAgentToolChildEventsObservable(t *testing.T) {
	h := newHarness(t, analystTree(t))
	evs := h.mustRun("s1", userText("summarize it"), agentcore.RunConfig{Streaming: true, StreamSubAgents: true})
	var childPartial, childFinal int
	for _, e := range evs {
		if e.Author == "summarizer" {
			if e.Partial {
				childPartial++
			} else {
				childFinal++
			}
		}
	}
	if childPartial == 0 || childFinal != 1 {
		t.Fatalf("child events streamed: %d partial, %d final; want >0 and 1 (authors %v)", childPartial, childFinal, authors(evs))
	}
	// They never enter the parent's history.
	for _, e := range h.session("s1").Events {
		if e.Author == "summarizer" {
			t.Errorf("child event %s stored in the parent session", e.ID)
		}
	}
	_ = genai.RoleUser
}
