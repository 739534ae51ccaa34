package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

func (f *fixture) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(f.srv.URL + "/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0)}, opts...)...)
}

func userMsg(s string) openai.ChatCompletionMessageParamUnion { return openai.UserMessage(s) }

// extension reads the agentgate extension of a chunk or completion.
func extension(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m struct {
		Agentgate map[string]any `json:"agentgate"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return m.Agentgate
}

func TestModels(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "agentgate" {
			t.Errorf("model %+v", m)
		}
	}
	if diff := cmp.Diff([]string{"desk", "fake", "team/flow"}, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	for _, path := range []string{"/v1/models/team/flow", "/v1/models/team%2Fflow"} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || m["id"] != "team/flow" {
			t.Errorf("GET %s = %d %v", path, resp.StatusCode, m)
		}
	}
	_, err = c.Models.Get(context.Background(), "nope")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
}

func TestChatNonStreamingTransfer(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	var raw *http.Response
	comp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "desk", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("hello")},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != "Hello from the greeter!" {
		t.Errorf("content = %q", got)
	}
	if comp.Choices[0].FinishReason != "stop" || comp.Object != "chat.completion" {
		t.Errorf("finish %q object %q", comp.Choices[0].FinishReason, comp.Object)
	}
	ext := extension(t, comp.RawJSON())
	if ext["author"] != "greeter" || ext["transfer_to_agent"] != "greeter" || !strings.HasPrefix(ext["invocation_id"].(string), "e-") {
		t.Errorf("agentgate extension = %v", ext)
	}
	if comp.Usage.TotalTokens == 0 || comp.Usage.PromptTokens == 0 {
		t.Errorf("usage not summed: %+v", comp.Usage)
	}
	if raw.Header.Get("X-Session-Id") != "" {
		t.Errorf("stateless turn sent X-Session-Id %q", raw.Header.Get("X-Session-Id"))
	}
	// Nothing is kept for a stateless turn.
	list, _ := f.store.List(context.Background(), sessions.ListRequest{AppName: "desk", UserID: "anonymous"})
	if len(list.Sessions) != 0 {
		t.Errorf("stateless turn stored %d sessions", len(list.Sessions))
	}
}

// Concurrent non-streamed answers, long and short, each get their own body
// (the encoding buffers are pooled; run with -race).
func TestConcurrentCompletionsKeepTheirBodies(t *testing.T) {
	echo := func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		yield(textFinal(last.Parts[0].Text), nil)
	}
	f := newFixture(t, echo)
	c := f.client()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 10 {
				want := fmt.Sprintf("turn %d.%d %s", i, j, strings.Repeat("x", (i*10+j)*97))
				comp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model: "fake", Messages: []openai.ChatCompletionMessageParamUnion{userMsg(want)}})
				if err != nil {
					t.Error(err)
					return
				}
				if got := comp.Choices[0].Message.Content; got != want {
					t.Errorf("answer %d.%d = %.40q..., want %.40q...", i, j, got, want)
				}
			}
		})
	}
	wg.Wait()
}

// verifyNoLeaks checks, after the test's fixture is closed, that no
// goroutine outlives the test (idle client connections aside).
func verifyNoLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"), goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	})
}

func TestChatStreamingAccumulator(t *testing.T) {
	verifyNoLeaks(t)
	f := newFixture(t, nil)
	c := f.client()
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "desk", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("hello")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	})
	var acc openai.ChatCompletionAccumulator
	var authors []string
	var transfers, roles, finishes int
	var deltas strings.Builder
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		ext := extension(t, ch.RawJSON())
		authors = append(authors, ext["author"].(string))
		if ext["transfer_to_agent"] == "greeter" {
			transfers++
		}
		for _, choice := range ch.Choices {
			if choice.Delta.Role != "" {
				roles++
			}
			if choice.FinishReason != "" {
				finishes++
			}
			deltas.WriteString(choice.Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if roles != 1 || finishes != 1 || transfers != 1 {
		t.Errorf("roles %d finishes %d transfers %d; want 1 each", roles, finishes, transfers)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from the greeter!" || deltas.String() != got {
		t.Errorf("accumulated %q, deltas %q", got, deltas.String())
	}
	if acc.Usage.TotalTokens == 0 {
		t.Error("no usage chunk")
	}
	if authors[0] != "coordinator" || authors[len(authors)-1] != "greeter" {
		t.Errorf("authors %v", authors)
	}
}

func TestChatStreamingHeadersAndFraming(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.post("/v1/chat/completions", `{"model":"desk","stream":true,"messages":[{"role":"user","content":"summarize this"}]}`)
	defer resp.Body.Close()
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if resp.Header.Get("Content-Encoding") != "" {
		t.Error("stream is compressed")
	}
	data, _ := sseFrames(t, resp.Body)
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last frame %q", data[len(data)-1])
	}
	var text strings.Builder
	for _, d := range data[:len(data)-1] {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	// The agent tool's text stays inside its result; the user sees the
	// coordinator's answer only.
	if got, want := text.String(), "Summary: short version of: summarize this"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestClientToolRoundTripStateless(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name: "get_weather", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}},
	})}
	msgs := []openai.ChatCompletionMessageParamUnion{userMsg("what is the weather?")}
	var raw *http.Response
	comp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk", Messages: msgs, Tools: tools}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	choice := comp.Choices[0]
	if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 {
		t.Fatalf("finish %q calls %+v", choice.FinishReason, choice.Message.ToolCalls)
	}
	if raw.Header.Get("X-Session-Id") != "" {
		t.Errorf("a stateless pause sent X-Session-Id %q", raw.Header.Get("X-Session-Id"))
	}
	call := choice.Message.ToolCalls[0]
	if call.Function.Name != "get_weather" || call.Function.Arguments != `{"location":"Paris"}` || len(call.ID) > 40 {
		t.Errorf("call %+v", call)
	}
	if !strings.Contains(comp.RawJSON(), `"content":null`) {
		t.Errorf("content must be null with tool calls: %s", comp.RawJSON())
	}
	// Send the result back with the whole history and no session header.
	msgs = append(msgs, choice.Message.ToParam(), openai.ToolMessage(`{"forecast":"sunny"}`, call.ID))
	comp, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != "Client says: sunny" {
		t.Errorf("resumed answer %q", got)
	}
	// The paused turn's bookkeeping is gone once it finished.
	list, _ := f.store.List(context.Background(), sessions.ListRequest{AppName: "desk", UserID: "anonymous"})
	if len(list.Sessions) != 0 {
		var ids []string
		for _, s := range list.Sessions {
			ids = append(ids, s.ID)
		}
		t.Errorf("left behind sessions %v", ids)
	}
	// The same tool_call_id cannot resume twice.
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk", Messages: msgs, Tools: tools})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "messages[2].tool_call_id" {
		t.Fatalf("second resume: %v", err)
	}
}

func TestClientActionOnSubAgentWithSession(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client(option.WithHeader("X-Session-Id", "sess-1"))
	var raw *http.Response
	comp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk",
		Messages: []openai.ChatCompletionMessageParamUnion{userMsg("I want a refund")}}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-Session-Id") != "sess-1" {
		t.Errorf("X-Session-Id = %q", raw.Header.Get("X-Session-Id"))
	}
	calls := comp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "billing__issue_refund" {
		t.Fatalf("tool calls %+v", calls)
	}
	// With a session only the new messages are needed.
	comp, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.ToolMessage(`{"status":"ok"}`, calls[0].ID)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != "Refund done: ok" {
		t.Errorf("answer %q", got)
	}
	ext := extension(t, comp.RawJSON())
	if ext["author"] != "billing" {
		t.Errorf("author %v", ext["author"])
	}
	// The history is stored and readable as a session.
	s, err := f.store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: "sess-1"})
	if err != nil {
		t.Fatal(err)
	}
	last := s.Events[len(s.Events)-1]
	if last.Author != "billing" || last.Text() != "Refund done: ok" {
		t.Errorf("last stored event %s %q", last.Author, last.Text())
	}
	// The tool response is stored under the name the model called.
	var found bool
	for _, ev := range s.Events {
		for _, r := range ev.FunctionResponses() {
			if r.ID == calls[0].ID {
				found = r.Name == "issue_refund"
			}
		}
	}
	if !found {
		t.Error("client response not stored as issue_refund")
	}
}

func TestSessionHistoryIsAuthoritative(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		yield(textFinal("answer"), nil)
	})
	c := f.client(option.WithHeader("X-Session-Id", "s-hist"))
	for _, text := range []string{"first", "second"} {
		// The client sends a bogus earlier history; with a session it is
		// ignored and only the messages after the last assistant count.
		_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "fake", User: param.NewOpt("alice"),
			Messages: []openai.ChatCompletionMessageParamUnion{userMsg("bogus"), openai.AssistantMessage("bogus reply"), userMsg(text)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.fakes["solo"].requests()
	var got []string
	for _, c := range reqs[1].Contents {
		got = append(got, string(c.Role)+":"+c.Parts[0].Text)
	}
	want := []string{"user:first", "model:answer", "user:second"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second turn contents (-want +got):\n%s", diff)
	}
	if _, err := f.store.Get(context.Background(), sessions.GetRequest{AppName: "fake", UserID: "alice", SessionID: "s-hist"}); err != nil {
		t.Errorf("session not stored under the request's user: %v", err)
	}
}

func TestStatelessHistorySentToModel(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.post("/v1/chat/completions", `{"model":"fake","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":"one"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"lookup","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"42"},{"role":"assistant","content":"it is 42"},
		{"role":"user","content":[{"type":"text","text":"two"}]}]}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	req := f.fakes["solo"].requests()[0]
	b, _ := json.Marshal(req.Contents)
	want := `[{"parts":[{"text":"one"}],"role":"user"},{"parts":[{"functionCall":{"id":"c1","name":"lookup"}}],"role":"model"},{"parts":[{"functionResponse":{"id":"c1","name":"lookup","response":{"result":"42"}}}],"role":"user"},{"parts":[{"text":"it is 42"}],"role":"model"},{"parts":[{"text":"two"}],"role":"user"}]`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestChatErrors(t *testing.T) {
	f := newFixture(t, nil, func(c *gateway.Config) { c.MaxBodyBytes = 2048 })
	for _, tc := range []struct {
		name, body  string
		status      int
		code, param string
		headers     []string
	}{
		{"bad json", `{"model":`, 400, "", "", nil},
		{"unknown model", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "model_not_found", "", nil},
		{"n > 1", `{"model":"desk","n":2,"messages":[{"role":"user","content":"x"}]}`, 400, "", "n", nil},
		{"tool message without id", `{"model":"desk","messages":[{"role":"tool","content":"x"}]}`, 400, "", "messages[0].tool_call_id", nil},
		{"no new input", `{"model":"desk","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}`, 400, "", "messages", nil},
		{"unknown tool call", `{"model":"desk","messages":[{"role":"tool","tool_call_id":"call_nope","content":"x"}]}`, 400, "unknown_tool_call", "messages[0].tool_call_id", nil},
		{"response_format on a workflow", `{"model":"team/flow","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"x"}]}`, 400, "", "response_format", nil},
		{"too large", `{"model":"desk","messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`, 413, "request_too_large", "", nil},
		{"reserved session id", `{"model":"desk","messages":[{"role":"user","content":"x"}]}`, 400, "", "X-Session-Id", []string{"X-Session-Id", "~tmp-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.post("/v1/chat/completions", tc.body, tc.headers...)
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			m := decode(t, resp.Body)
			e, ok := m["error"].(map[string]any)
			if !ok {
				t.Fatalf("no error envelope: %v", m)
			}
			for _, k := range []string{"message", "type", "param", "code"} {
				if _, ok := e[k]; !ok {
					t.Errorf("envelope lacks %q: %v", k, e)
				}
			}
			if tc.code != "" && e["code"] != tc.code {
				t.Errorf("code %v, want %s", e["code"], tc.code)
			}
			if tc.param != "" && e["param"] != tc.param {
				t.Errorf("param %v, want %s", e["param"], tc.param)
			}
		})
	}
}

func TestSessionBusy(t *testing.T) {
	f := newFixture(t, nil)
	locker := sessions.NewMemoryLocker()
	f2 := newFixture(t, nil, func(c *gateway.Config) { c.Locker = locker })
	_ = f
	release, err := locker.Acquire(context.Background(), "desk", "anonymous", "busy-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer release.Release()
	resp := f2.post("/v1/chat/completions", `{"model":"desk","messages":[{"role":"user","content":"x"}]}`, "X-Session-Id", "busy-1")
	defer resp.Body.Close()
	m := decode(t, resp.Body)
	if resp.StatusCode != 409 || m["error"].(map[string]any)["code"] != "session_busy" {
		t.Fatalf("status %d body %v", resp.StatusCode, m)
	}
}

func TestUpstreamErrorStatuses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        *model.Error
		status     int
		retryAfter string
	}{
		{"rate limited", &model.Error{Provider: "p", Model: "m", Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 3 * time.Second}, 429, "3"},
		{"unavailable", &model.Error{Provider: "p", Model: "m", Status: 503, Code: "upstream_error"}, 503, ""},
		{"server error", &model.Error{Provider: "p", Model: "m", Status: 500, Code: "upstream_error"}, 502, ""},
		{"bad key", &model.Error{Provider: "p", Model: "m", Status: 401, Code: "unauthorized"}, 502, ""},
		{"timeout", &model.Error{Provider: "p", Model: "m", Code: "timeout"}, 504, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
				yield(nil, tc.err)
			})
			for _, stream := range []bool{false, true} {
				body := `{"model":"fake","messages":[{"role":"user","content":"x"}],"stream":` + map[bool]string{true: "true", false: "false"}[stream] + `}`
				resp := f.post("/v1/chat/completions", body)
				m := decode(t, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Errorf("stream=%v: status %d, want %d (%v)", stream, resp.StatusCode, tc.status, m)
				}
				if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
					t.Errorf("stream=%v: Retry-After %q, want %q", stream, got, tc.retryAfter)
				}
			}
		})
	}
}

func TestErrorAfterStreamStarted(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		part := &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "Hel"}}}}
		if !yield(part, nil) {
			return
		}
		yield(nil, &model.Error{Provider: "p", Model: "m", Code: "stream_cut", Message: "the stream ended early"})
	})
	resp := f.post("/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	data, _ := sseFrames(t, resp.Body)
	if len(data) < 3 {
		t.Fatalf("frames %v", data)
	}
	if !strings.Contains(data[0], `"content":"Hel"`) {
		t.Errorf("first frame %s", data[0])
	}
	if !strings.HasPrefix(data[len(data)-2], `{"error":{`) || data[len(data)-1] != "[DONE]" {
		t.Errorf("tail frames %v", data[len(data)-2:])
	}
	for _, d := range data {
		if strings.Contains(d, `"finish_reason":"stop"`) {
			t.Errorf("fake finish_reason stop after an error: %s", d)
		}
	}
}

func TestKeepaliveDuringSilence(t *testing.T) {
	heard := make(chan struct{})
	f := newFixture(t, silentUntil(heard), func(c *gateway.Config) { c.KeepaliveInterval = 20 * time.Millisecond })
	resp := f.post("/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	defer resp.Body.Close()
	data := keptAliveData(t, resp.Body, heard)
	if !strings.Contains(strings.Join(data, "\n"), `"content":"late"`) || data[len(data)-1] != "[DONE]" {
		t.Errorf("frames %v", data)
	}
}

func TestClientDisconnectCancelsRun(t *testing.T) {
	verifyNoLeaks(t)
	cancelled := make(chan struct{})
	started := make(chan struct{})
	f := newFixture(t, partialThenWait(started, cancelled))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the model call was not cancelled when the client went away")
	}
	f.srv.CloseClientConnections()
}

func TestShutdownEndsStreams(t *testing.T) {
	started := make(chan struct{})
	f := newFixture(t, partialThenWait(started, nil))
	done := make(chan []string)
	go func() {
		resp := f.post("/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`)
		defer resp.Body.Close()
		data, _ := sseFrames(t, resp.Body)
		done <- data
	}()
	<-started
	f.shutdownNow()
	select {
	case data := <-done:
		if len(data) < 2 || !strings.Contains(data[len(data)-2], `"code":"shutting_down"`) || data[len(data)-1] != "[DONE]" {
			t.Errorf("frames %v", data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream not ended by Shutdown")
	}
}

func TestHealthAndReady(t *testing.T) {
	f := newFixture(t, nil)
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(f.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	resp, _ := http.Get(f.srv.URL + "/v1/nope")
	m := decode(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || m["error"] == nil {
		t.Errorf("unknown /v1 route: %d %v", resp.StatusCode, m)
	}
}

// A client action declared on an agent called as a tool surfaces as
// <agent>__<action>; its result resumes the child, then the parent.
func TestClientActionInsideAgentTool(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	msgs := []openai.ChatCompletionMessageParamUnion{userMsg("please audit the books")}
	comp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	calls := comp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "auditor__confirm" || comp.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("choice %+v", comp.Choices[0])
	}
	if comp.Choices[0].Message.Content != "" {
		t.Errorf("the child's text leaked: %q", comp.Choices[0].Message.Content)
	}
	msgs = append(msgs, comp.Choices[0].Message.ToParam(), openai.ToolMessage(`{"ok":true}`, calls[0].ID))
	comp, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "desk", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got := comp.Choices[0].Message.Content; got != "Audit result: audited, confirmed=true" {
		t.Errorf("answer %q", got)
	}
}

// response_format's schema and the sampling fields reach the root agent's
// model; without include_usage no usage chunk is sent.
func TestResponseFormatAndSamplingReachModel(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.post("/v1/chat/completions", `{"model":"fake","stream":true,"temperature":0.25,"max_tokens":77,"stop":"END",
		"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object","properties":{"a":{"type":"string"}}}}},
		"messages":[{"role":"user","content":"x"}]}`)
	data, _ := sseFrames(t, resp.Body)
	resp.Body.Close()
	for _, d := range data {
		if strings.Contains(d, `"usage"`) {
			t.Errorf("usage chunk without include_usage: %s", d)
		}
	}
	req := f.fakes["solo"].requests()[0]
	cfg := req.Config
	if cfg.ResponseMIMEType != "application/json" || cfg.ResponseJsonSchema == nil {
		t.Errorf("schema not applied: %q %v", cfg.ResponseMIMEType, cfg.ResponseJsonSchema)
	}
	if cfg.Temperature == nil || *cfg.Temperature != 0.25 || cfg.MaxOutputTokens != 77 || len(cfg.StopSequences) != 1 || cfg.StopSequences[0] != "END" {
		t.Errorf("sampling not applied: temp %v max %d stop %v", cfg.Temperature, cfg.MaxOutputTokens, cfg.StopSequences)
	}
}

func TestRequestIDEchoed(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.post("/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`, "X-Request-Id", "abc-123")
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("X-Request-Id = %q", got)
	}
	resp = f.post("/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Errorf("generated X-Request-Id = %q", got)
	}
}
