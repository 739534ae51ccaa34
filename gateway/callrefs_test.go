package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agentgate/agentgate/sessions"
)

// pauseStateless sends a stateless turn that pauses on the client tool
// get_weather, and returns the messages to resume it with (the tool's
// result last) and the tool_call_id the client was shown.
func pauseStateless(t *testing.T, f *fixture) (msgs []openai.ChatCompletionMessageParamUnion, tools []openai.ChatCompletionToolUnionParam, callID string) {
	t.Helper()
	tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
	})}
	msgs = []openai.ChatCompletionMessageParamUnion{userMsg("what is the weather?")}
	c := f.client()
	comp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	choice := comp.Choices[0]
	if len(choice.Message.ToolCalls) != 1 {
		t.Fatalf("paused turn showed calls %+v, want one", choice.Message.ToolCalls)
	}
	call := choice.Message.ToolCalls[0]
	return append(msgs, choice.Message.ToParam(), openai.ToolMessage(`{"forecast":"sunny"}`, call.ID)), tools, call.ID
}

// A stateless turn that pauses keeps its history in an unlisted session,
// found through a ref from the tool_call_id (no index session); once the
// resumed turn finishes, the ref and the session are gone.
func TestStatelessPauseLayout(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	msgs, tools, callID := pauseStateless(t, f)

	ref, err := f.store.GetRef(ctx, "desk", "anonymous", "call:"+callID)
	if err != nil {
		t.Fatalf("no ref for the paused call: %v", err)
	}
	if !strings.HasPrefix(ref.SessionID, "~tmp-") || !strings.HasPrefix(ref.InvocationID, "e-") {
		t.Errorf("ref %+v, want the unlisted session and the paused invocation", ref)
	}
	paused, err := f.store.Get(ctx, sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: ref.SessionID})
	if err != nil {
		t.Fatalf("the paused turn's session: %v", err)
	}
	if n := len(paused.Events); n < 2 {
		t.Errorf("the paused turn's session holds %d events, want the user's message and the call", n)
	}
	if _, err := f.store.Get(ctx, sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: "~call-" + callID}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("an index session was written for the call: %v", err)
	}
	list, err := f.store.List(ctx, sessions.ListRequest{AppName: "desk", UserID: "anonymous"})
	if err != nil || len(list.Sessions) != 0 {
		t.Errorf("listing after a stateless pause: %d sessions, %v; want none", len(list.Sessions), err)
	}

	c := f.client()
	comp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "desk", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != "Client says: sunny" {
		t.Errorf("resumed answer %q", got)
	}
	if _, err := f.store.GetRef(ctx, "desk", "anonymous", "call:"+callID); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("ref of the answered call: err = %v, want ErrNotFound", err)
	}
	if _, err := f.store.Get(ctx, sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: ref.SessionID}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("the finished turn's session: err = %v, want ErrNotFound", err)
	}
}

// A call indexed the way earlier versions did (a "~call-<id>" session)
// still resumes its turn, and its index session goes once answered.
func TestLegacyCallIndexSessionResumes(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	msgs, tools, callID := pauseStateless(t, f)
	ref, err := f.store.GetRef(ctx, "desk", "anonymous", "call:"+callID)
	if err != nil {
		t.Fatal(err)
	}
	// What an earlier version left in the store instead of the ref.
	if err := f.store.DeleteRefs(ctx, "desk", "anonymous", "call:"+callID); err != nil {
		t.Fatal(err)
	}
	legacy := sessions.CreateRequest{AppName: "desk", UserID: "anonymous", SessionID: "~call-" + callID,
		State: map[string]any{"session_id": ref.SessionID, "call_id": ref.CallID}}
	if _, err := f.store.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}

	c := f.client()
	comp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "desk", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("resume through a legacy index session: %v", err)
	}
	if got := comp.Choices[0].Message.Content; got != "Client says: sunny" {
		t.Errorf("resumed answer %q", got)
	}
	for _, id := range []string{legacy.SessionID, ref.SessionID} {
		if _, err := f.store.Get(ctx, sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: id}); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("session %s after the resumed turn: err = %v, want ErrNotFound", id, err)
		}
	}
}
