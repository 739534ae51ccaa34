package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
	"github.com/agentgate/agentgate/sessions"
)

// respond posts a non-streamed /v1/responses body, checks a 200's body
// against the specification and returns the status and the decoded body.
func (f *fixture) respond(body string, headers ...string) (int, map[string]any) {
	f.t.Helper()
	resp := f.post("/v1/responses", body, headers...)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := responsescheck.Response(raw); err != nil {
			f.t.Errorf("response against the specification: %v\n%s", err, raw)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		f.t.Fatalf("decode %s: %v", raw, err)
	}
	return resp.StatusCode, m
}

// respondStream posts a streamed /v1/responses body, checks the stream
// against the specification and returns its frames.
func (f *fixture) respondStream(body string) []responsescheck.Frame {
	f.t.Helper()
	resp := f.post("/v1/responses", body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("stream: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	if err := responsescheck.Stream(raw); err != nil {
		f.t.Errorf("stream against the specification: %v\n%s", err, raw)
	}
	return responsescheck.Frames(raw)
}

// get sends a request without a body and returns the status and the
// decoded body.
func (f *fixture) call(method, path string) (int, map[string]any) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, decode(f.t, resp.Body)
}

// outputText joins the text of a response's message items.
func outputText(resp map[string]any) string {
	var b strings.Builder
	for _, it := range resp["output"].([]any) {
		item := it.(map[string]any)
		if item["type"] != "message" {
			continue
		}
		for _, p := range item["content"].([]any) {
			b.WriteString(p.(map[string]any)["text"].(string))
		}
	}
	return b.String()
}

func sessionOf(resp map[string]any) string {
	s, _ := resp["agentgate"].(map[string]any)["session_id"].(string)
	return s
}

func TestResponsesCreateGetDelete(t *testing.T) {
	f := newFixture(t, nil)
	status, resp := f.respond(`{"model":"desk","input":"hello there","metadata":{"k":"v"}}`)
	if status != 200 {
		t.Fatalf("create: %d %v", status, resp)
	}
	if resp["status"] != "completed" || outputText(resp) != "Hello from the greeter!" {
		t.Errorf("response %v", resp)
	}
	ext := resp["agentgate"].(map[string]any)
	if tr := ext["transfers"].([]any); len(tr) != 1 || tr[0].(map[string]any)["to"] != "greeter" {
		t.Errorf("transfers %v", ext["transfers"])
	}
	item := resp["output"].([]any)[0].(map[string]any)["agentgate"].(map[string]any)
	if item["author"] != "greeter" || item["transferred_from"] != "coordinator" {
		t.Errorf("item extension %v", item)
	}
	if resp["metadata"].(map[string]any)["k"] != "v" {
		t.Errorf("metadata %v", resp["metadata"])
	}
	id := resp["id"].(string)
	sid := sessionOf(resp)
	if sid == "" {
		t.Fatal("a stored response names its session")
	}
	stored, err := f.store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: sid})
	if err != nil || len(stored.Events) == 0 {
		t.Fatalf("session %s: %v", sid, err)
	}

	status, got := f.call(http.MethodGet, "/v1/responses/"+id)
	if status != 200 || got["id"] != id || outputText(got) != outputText(resp) {
		t.Errorf("GET: %d %v", status, got)
	}
	status, items := f.call(http.MethodGet, "/v1/responses/"+id+"/input_items")
	data, _ := items["data"].([]any)
	if status != 200 || items["object"] != "list" || len(data) != 1 || items["has_more"] != false {
		t.Fatalf("input_items: %d %v", status, items)
	}
	first := data[0].(map[string]any)
	if first["type"] != "message" || first["role"] != "user" || first["id"] == "" || items["first_id"] != first["id"] {
		t.Errorf("input item %v", first)
	}

	status, del := f.call(http.MethodDelete, "/v1/responses/"+id)
	if status != 200 || del["deleted"] != true || del["object"] != "response.deleted" || del["id"] != id {
		t.Errorf("DELETE: %d %v", status, del)
	}
	for _, path := range []string{"/v1/responses/" + id, "/v1/responses/resp_unknown", "/v1/responses/" + id + "/input_items"} {
		status, e := f.call(http.MethodGet, path)
		if status != 404 || e["error"].(map[string]any)["type"] != "invalid_request_error" {
			t.Errorf("GET %s after delete: %d %v", path, status, e)
		}
	}
	if _, err := f.store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: sid}); err != nil {
		t.Errorf("deleting a response keeps its conversation: %v", err)
	}
}

func TestResponsesClientErrors(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		body   string
		status int
		param  string
	}{
		{`{"model":"nope","input":"x"}`, 404, ""},
		{`{"model":"desk"}`, 400, "input"},
		{`{"model":"desk","input":5}`, 400, "input"},
		{`{"model":"desk","input":"x","previous_response_id":"resp_gone"}`, 400, "previous_response_id"},
		{`{"model":"desk","input":[{"type":"item_reference","id":"msg_gone"}]}`, 400, "input[0].id"},
		{`{"model":"desk","input":"x","store":false,"conversation":"c1"}`, 400, "store"},
		{`{"model":"desk","input":[{"type":"function_call_output","call_id":"call_unknown","output":"{}"}]}`, 400, ""},
		{`{"model":"desk","input":"x","tools":[{"type":"web_search"}]}`, 400, "tools[0].type"},
	} {
		status, e := f.respond(tc.body)
		eo, _ := e["error"].(map[string]any)
		if status != tc.status || eo == nil || tc.param != "" && eo["param"] != tc.param {
			t.Errorf("%s: %d %v", tc.body, status, e)
		}
	}
}

func TestResponsesStream(t *testing.T) {
	f := newFixture(t, nil)
	frames := f.respondStream(`{"model":"desk","input":"hello","stream":true}`)
	var types []string
	var text strings.Builder
	for _, fr := range frames {
		types = append(types, fr.Event)
		if fr.Event == "response.output_text.delta" {
			var ev struct{ Delta string }
			_ = json.Unmarshal(fr.Data, &ev)
			text.WriteString(ev.Delta)
		}
	}
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
		t.Errorf("events %v", types)
	}
	if text.String() != "Hello from the greeter!" {
		t.Errorf("deltas %q", text.String())
	}
	var done struct{ Response map[string]any }
	_ = json.Unmarshal(frames[len(frames)-1].Data, &done)
	status, got := f.call(http.MethodGet, "/v1/responses/"+done.Response["id"].(string))
	if status != 200 || outputText(got) != "Hello from the greeter!" {
		t.Errorf("stored streamed response: %d %v", status, got)
	}
}

func TestResponsesStreamFailsAfterStart(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		if !yield(&model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "par"}}}}, nil) {
			return
		}
		yield(nil, &model.Error{Status: 500, Message: "upstream broke"})
	})
	frames := f.respondStream(`{"model":"fake","input":"x","stream":true}`)
	last := frames[len(frames)-1]
	if last.Event != "response.failed" || !bytes.Contains(last.Data, []byte(`"status":"failed"`)) {
		t.Errorf("last event %s %s", last.Event, last.Data)
	}
}

func TestResponsesStreamDisconnectCancels(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started, cancelled := make(chan struct{}), make(chan struct{})
	f := newFixture(t, partialThenWait(started, cancelled))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/v1/responses", strings.NewReader(`{"model":"fake","input":"x","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	resp.Body.Close()
	<-cancelled
	waitFor(t, "the run to end", func() bool { return f.gw.RunRegistry().Live() == 0 })
	f.srv.Close()
}

func TestResponsesPreviousResponseAndBranch(t *testing.T) {
	f := newFixture(t, nil)
	_, r1 := f.respond(`{"model":"desk","input":"one"}`)
	_, r2 := f.respond(`{"model":"desk","input":"two","previous_response_id":"` + r1["id"].(string) + `"}`)
	sid := sessionOf(r1)
	if sessionOf(r2) != sid || outputText(r2) != "Coordinator here. You said: two" {
		t.Fatalf("continued: %v", r2)
	}
	if r2["previous_response_id"] != r1["id"] {
		t.Errorf("previous_response_id echoed %v", r2["previous_response_id"])
	}
	before, _ := f.store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: sid})
	// r1 is no longer the latest: continuing it branches.
	_, r3 := f.respond(`{"model":"desk","input":"three","previous_response_id":"` + r1["id"].(string) + `"}`)
	branch := sessionOf(r3)
	if branch == "" || branch == sid {
		t.Fatalf("branch session %q (original %q)", branch, sid)
	}
	after, _ := f.store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: sid})
	if len(after.Events) != len(before.Events) {
		t.Errorf("the original session changed: %d events, was %d", len(after.Events), len(before.Events))
	}
	b, _ := f.store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: branch})
	var said []string
	for _, ev := range b.Events {
		if ev.Author == "user" {
			said = append(said, ev.Text())
		}
	}
	if strings.Join(said, ",") != "one,three" {
		t.Errorf("branch history %q", said)
	}
}

func TestResponsesConversationSharedWithNative(t *testing.T) {
	f := newFixture(t, nil)
	_, r1 := f.respond(`{"model":"desk","input":"first","conversation":"conv-1"}`)
	_, r2 := f.respond(`{"model":"desk","input":"second","conversation":{"id":"conv-1"}}`)
	if sessionOf(r1) != "conv-1" || sessionOf(r2) != "conv-1" {
		t.Fatalf("sessions %q %q", sessionOf(r1), sessionOf(r2))
	}
	status, sess := f.call(http.MethodGet, "/apps/desk/users/anonymous/sessions/conv-1")
	if status != 200 || len(sess["events"].([]any)) < 4 {
		t.Errorf("native view: %d %v", status, sess)
	}
}

func TestResponsesStoreFalse(t *testing.T) {
	f := newFixture(t, nil)
	status, r := f.respond(`{"model":"desk","input":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"store":false}`)
	if status != 200 || r["store"] != false || r["agentgate"].(map[string]any)["session_id"] != nil {
		t.Fatalf("stateless: %d %v", status, r)
	}
	if status, _ := f.call(http.MethodGet, "/v1/responses/"+r["id"].(string)); status != 404 {
		t.Errorf("a response with store false is not kept: %d", status)
	}
	list, _ := f.store.List(context.Background(), sessions.ListRequest{AppName: "desk", UserID: "anonymous"})
	if len(list.Sessions) != 0 {
		t.Errorf("sessions kept: %v", list.Sessions)
	}
}

// The AI SDK and the Agents SDK resend the whole history, store unset, no
// previous_response_id: the function_call_output finds the paused call by
// its id and the sub-agent that made it answers.
func TestResponsesClientToolResume(t *testing.T) {
	f := newFixture(t, nil)
	_, r1 := f.respond(`{"model":"desk","input":"I need a refund"}`)
	var call map[string]any
	for _, it := range r1["output"].([]any) {
		if m := it.(map[string]any); m["type"] == "function_call" {
			call = m
		}
	}
	if call == nil || call["name"] != "billing__issue_refund" {
		t.Fatalf("no client call: %v", r1["output"])
	}
	history, _ := json.Marshal([]any{
		map[string]any{"role": "user", "content": "I need a refund"},
		call,
		map[string]any{"type": "function_call_output", "call_id": call["call_id"], "output": `{"status":"ok"}`},
	})
	status, r2 := f.respond(`{"model":"desk","input":` + string(history) + `}`)
	if status != 200 || outputText(r2) != "Refund done: ok" || sessionOf(r2) != sessionOf(r1) {
		t.Fatalf("resumed: %d %v", status, r2)
	}
	item := r2["output"].([]any)[0].(map[string]any)["agentgate"].(map[string]any)
	if item["author"] != "billing" {
		t.Errorf("answered by %v", item)
	}
}

func TestResponsesOpenAIClient(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "desk",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "Hello from the greeter!" || resp.Status != "completed" {
		t.Errorf("create: %q %s", resp.OutputText(), resp.Status)
	}
	got, err := c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != resp.OutputText() {
		t.Errorf("get: %v %v", got, err)
	}
	stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "desk",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("summarize this")}, PreviousResponseID: openai.String(resp.ID)})
	var text string
	var seq []int64
	for stream.Next() {
		ev := stream.Current()
		seq = append(seq, ev.SequenceNumber)
		if ev.Type == "response.completed" {
			text = ev.Response.OutputText()
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "Summary: ") {
		t.Errorf("streamed: %q", text)
	}
	for i, n := range seq {
		if n != int64(i) {
			t.Fatalf("sequence numbers %v", seq)
		}
	}
	if err := c.Responses.Delete(ctx, resp.ID); err != nil {
		t.Error(err)
	}
	_, err = c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("get after delete: %v", err)
	}
}

// getRaw sends a GET and returns the status and the body.
func (f *fixture) getRaw(path string) (int, []byte) {
	f.t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, raw
}

func TestResponsesBackgroundReplay(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newFixture(t, nil)
	status, r := f.respond(`{"model":"desk","input":"hello","background":true}`)
	if status != 200 || r["background"] != true || (r["status"] != "in_progress" && r["status"] != "queued") {
		t.Fatalf("create: %d %v", status, r)
	}
	id := r["id"].(string)
	waitFor(t, "the background run", func() bool { return f.gw.RunRegistry().Live() == 0 })
	_, got := f.call(http.MethodGet, "/v1/responses/"+id)
	if got["status"] != "completed" || outputText(got) != "Hello from the greeter!" {
		t.Fatalf("polled: %v", got)
	}
	status, whole := f.getRaw("/v1/responses/" + id + "?stream=true")
	if status != 200 {
		t.Fatalf("replay: %d %s", status, whole)
	}
	if err := responsescheck.Stream(whole); err != nil {
		t.Fatalf("replay against the specification: %v\n%s", err, whole)
	}
	all := responsescheck.Frames(whole)
	var done struct{ Response map[string]any }
	_ = json.Unmarshal(all[len(all)-1].Data, &done)
	if outputText(done.Response) != outputText(got) || done.Response["usage"].(map[string]any)["total_tokens"] != got["usage"].(map[string]any)["total_tokens"] {
		t.Errorf("replayed ending %v, stored %v", done.Response, got)
	}
	// A replay after a sequence number is the rest of the same frames.
	for _, after := range []int{1, 3} {
		_, rest := f.getRaw("/v1/responses/" + id + "?stream=true&starting_after=" + strconv.Itoa(after))
		tail := responsescheck.Frames(rest)
		if err := responsescheck.Events(tail, responsescheck.StreamOptions{After: int64(after)}); err != nil {
			t.Fatalf("replay after %d: %v\n%s", after, err, rest)
		}
		if len(tail) != len(all)-after-1 {
			t.Fatalf("replay after %d has %d frames, want %d", after, len(tail), len(all)-after-1)
		}
		for i := range tail {
			if !bytes.Equal(tail[i].Data, all[i+after+1].Data) {
				t.Errorf("frame %d replayed as\n%s\nwas\n%s", i+after+1, tail[i].Data, all[i+after+1].Data)
			}
		}
	}
	// background with stream: the create call streams what a replay gives.
	created := f.respondStream(`{"model":"desk","input":"hello","background":true,"stream":true}`)
	var cr struct{ Response map[string]any }
	_ = json.Unmarshal(created[0].Data, &cr)
	_, again := f.getRaw("/v1/responses/" + cr.Response["id"].(string) + "?stream=true")
	if re := responsescheck.Frames(again); len(re) != len(created) || !bytes.Equal(re[len(re)-2].Data, created[len(created)-2].Data) {
		t.Errorf("streamed create and replay differ:\n%v\n%s", created, again)
	}
	if status, e := f.call(http.MethodPost, "/v1/responses/"+id+"/cancel"); status != 200 || e["status"] != "completed" {
		t.Errorf("cancelling a finished response: %d %v", status, e)
	}
	f.srv.Close()
}

func TestResponsesBackgroundCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started := make(chan struct{})
	f := newFixture(t, partialThenWait(started, nil))
	_, r := f.respond(`{"model":"fake","input":"x","background":true}`)
	id := r["id"].(string)
	<-started
	if _, got := f.call(http.MethodGet, "/v1/responses/"+id); got["status"] != "in_progress" {
		t.Errorf("polled while running: %v", got["status"])
	}
	// A stream attached while the run goes on follows it to its end.
	resp, err := http.Get(f.srv.URL + "/v1/responses/" + id + "?stream=true&starting_after=0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	status, c := f.call(http.MethodPost, "/v1/responses/"+id+"/cancel")
	if status != 200 || c["status"] != "cancelled" {
		t.Fatalf("cancel: %d %v", status, c)
	}
	raw, _ := io.ReadAll(resp.Body)
	frames := responsescheck.Frames(raw)
	if err := responsescheck.Events(frames, responsescheck.StreamOptions{After: 0}); err != nil {
		t.Errorf("attached stream: %v\n%s", err, raw)
	}
	if last := frames[len(frames)-1]; last.Event != "response.failed" || !bytes.Contains(last.Data, []byte(`"status":"cancelled"`)) {
		t.Errorf("attached stream ended with %s %s", last.Event, last.Data)
	}
	waitFor(t, "the cancelled run", func() bool { return f.gw.RunRegistry().Live() == 0 })
	if status, e := f.respond(`{"model":"fake","input":"x","background":true,"store":false}`); status != 400 || e["error"].(map[string]any)["param"] != "background" {
		t.Errorf("background without store: %d %v", status, e)
	}
	_, fg := f.respond(`{"model":"desk","input":"hi"}`)
	if status, _ := f.call(http.MethodPost, "/v1/responses/"+fg["id"].(string)+"/cancel"); status != 400 {
		t.Errorf("cancelling a foreground response: %d", status)
	}
	f.srv.Close()
}

// A response is its user's: another user's token gets 404 on every route
// and cannot continue it or reference its items.
func TestResponsesOwnership(t *testing.T) {
	f := newFixture(t, nil, withJWT(t))
	desk := map[string]any{"models": []string{"desk"}}
	alice, bob := token(t, "alice", desk), token(t, "bob", desk)
	status, _, raw := call(t, f, http.MethodPost, "/v1/responses", alice, `{"model":"desk","input":"I need a refund"}`)
	if status != 200 {
		t.Fatalf("create: %d %s", status, raw)
	}
	var r map[string]any
	_ = json.Unmarshal(raw, &r)
	id := r["id"].(string)
	fc := r["output"].([]any)[len(r["output"].([]any))-1].(map[string]any)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/responses/" + id, ""},
		{http.MethodGet, "/v1/responses/" + id + "/input_items", ""},
		{http.MethodDelete, "/v1/responses/" + id, ""},
		{http.MethodPost, "/v1/responses/" + id + "/cancel", ""},
	} {
		if status, _, raw := call(t, f, tc.method, tc.path, bob, tc.body); status != 404 {
			t.Errorf("bob %s %s: %d %s", tc.method, tc.path, status, raw)
		}
	}
	if status, _, raw := call(t, f, http.MethodPost, "/v1/responses", bob, `{"model":"desk","input":"x","previous_response_id":"`+id+`"}`); status != 400 {
		t.Errorf("bob continues alice's response: %d %s", status, raw)
	}
	ref := `{"model":"desk","input":[{"type":"item_reference","id":"` + fc["id"].(string) + `"},{"type":"function_call_output","call_id":"` + fc["call_id"].(string) + `","output":"{\"status\":\"ok\"}"}]}`
	if status, _, raw := call(t, f, http.MethodPost, "/v1/responses", bob, ref); status != 400 {
		t.Errorf("bob references alice's item: %d %s", status, raw)
	}
	// alice's own reference resolves, and her call output resumes the turn.
	status, _, raw = call(t, f, http.MethodPost, "/v1/responses", alice, ref)
	var r2 map[string]any
	_ = json.Unmarshal(raw, &r2)
	if status != 200 || outputText(r2) != "Refund done: ok" {
		t.Errorf("alice resumes through item_reference: %d %s", status, raw)
	}
	if err := responsescheck.Response(raw); err != nil {
		t.Error(err)
	}
	if status, _, _ := call(t, f, http.MethodGet, "/v1/responses/"+id, alice, ""); status != 200 {
		t.Errorf("alice reads her response: %d", status)
	}
}

// What the client asks of the model reaches the model call: text.format's
// schema with its name and strict flag, sampling, max_output_tokens, the
// client's function tools and tool_choice; metadata param.<name> entries
// are caller parameters, checked as on chat.
func TestResponsesSettingsReachTheModel(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		yield(textFinal(`{"answer":42}`), nil)
	})
	status, r := f.respond(`{"model":"fake","input":"x","temperature":0.2,"top_p":0.5,"max_output_tokens":64,
		"text":{"format":{"type":"json_schema","name":"answer","strict":true,"schema":{"type":"object","properties":{"answer":{"type":"integer"}}}}},
		"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{}}}],"tool_choice":"required",
		"metadata":{"k":"v"}}`)
	if status != 200 {
		t.Fatalf("%d %v", status, r)
	}
	format := r["text"].(map[string]any)["format"].(map[string]any)
	if format["name"] != "answer" || format["strict"] != true || r["temperature"] != 0.2 || r["tool_choice"] != "required" {
		t.Errorf("echoed settings: %v", r)
	}
	reqs := f.fakes["solo"].requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	cfg, opts := reqs[0].Config, reqs[0].Options
	if cfg.ResponseJsonSchema == nil || cfg.ResponseMIMEType != "application/json" || opts.SchemaName != "answer" || opts.SchemaStrict == nil || !*opts.SchemaStrict {
		t.Errorf("schema: %q %v %+v", cfg.ResponseMIMEType, cfg.ResponseJsonSchema, opts)
	}
	if cfg.Temperature == nil || *cfg.Temperature != 0.2 || cfg.TopP == nil || *cfg.TopP != 0.5 || cfg.MaxOutputTokens != 64 {
		t.Errorf("sampling: %+v", cfg)
	}
	if cfg.ToolConfig == nil || cfg.ToolConfig.FunctionCallingConfig.Mode != genai.FunctionCallingConfigModeAny {
		t.Errorf("tool_choice: %+v", cfg.ToolConfig)
	}
	var offered []string
	for _, tl := range cfg.Tools {
		for _, d := range tl.FunctionDeclarations {
			offered = append(offered, d.Name)
		}
	}
	if !strings.Contains(strings.Join(offered, ","), "lookup") {
		t.Errorf("client tools offered: %v", offered)
	}
	status, e := f.respond(`{"model":"fake","input":"x","metadata":{"param.tenant":"acme"}}`)
	if eo, _ := e["error"].(map[string]any); status != 400 || eo["param"] != "metadata.param.tenant" {
		t.Errorf("an undeclared caller parameter: %d %v", status, e)
	}
}

// recordFailing is a session store whose writes of response records fail,
// as when the store is unreachable: creating them while create is set,
// replacing them (a background response's end) while replace is set. The
// rest of the store works.
type recordFailing struct {
	*sessions.MemoryService
	create, replace atomic.Bool
}

func (r *recordFailing) Create(ctx context.Context, req sessions.CreateRequest) (*sessions.Session, error) {
	if req.AppName == gateway.ResponsesApp && r.create.Load() {
		return nil, fmt.Errorf("record %s: %w", req.SessionID, sessions.ErrUnavailable)
	}
	return r.MemoryService.Create(ctx, req)
}

func (r *recordFailing) AppendEvent(ctx context.Context, sess *sessions.Session, ev *sessions.Event) error {
	if sess.AppName == gateway.ResponsesApp && r.replace.Load() {
		return fmt.Errorf("record %s: %w", sess.ID, sessions.ErrUnavailable)
	}
	return r.MemoryService.AppendEvent(ctx, sess, ev)
}

// A response that store true promised to keep and that could not be
// stored fails: not streamed, a 503; streamed, response.failed after its
// text; background, the create call before anything runs. Its turn's
// events stay in its conversation, which goes on. A background response
// whose end could not be stored is answered failed once its run is over.
func TestResponsesNotStored(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var store *recordFailing
	f := newFixture(t, nil, func(c *gateway.Config) {
		store = &recordFailing{MemoryService: c.Sessions.(*sessions.MemoryService)}
		c.Sessions = store
	})
	store.create.Store(true)
	wantUnavailable := func(what string, status int, e map[string]any) {
		t.Helper()
		err, _ := e["error"].(map[string]any)
		if status != http.StatusServiceUnavailable || err["code"] != "session_store_unavailable" || !strings.Contains(err["message"].(string), "could not be stored") {
			t.Errorf("%s: %d %v", what, status, e)
		}
	}
	status, e := f.respond(`{"model":"desk","input":"hello","conversation":"ns-1"}`)
	wantUnavailable("not streamed", status, e)

	frames := f.respondStream(`{"model":"desk","input":"hello","conversation":"ns-2","stream":true}`)
	var text string
	for _, fr := range frames {
		var ev struct{ Type, Delta string }
		_ = json.Unmarshal(fr.Data, &ev)
		if ev.Type == "response.output_text.delta" {
			text += ev.Delta
		}
	}
	last := frames[len(frames)-1]
	if text != "Hello from the greeter!" || last.Event != "response.failed" ||
		!bytes.Contains(last.Data, []byte(`"status":"failed"`)) || !bytes.Contains(last.Data, []byte(`"code":"session_store_unavailable"`)) {
		t.Errorf("streamed: text %q, then %s %s", text, last.Event, last.Data)
	}

	if status, r := f.respond(`{"model":"desk","input":"hello","store":false}`); status != 200 || r["status"] != "completed" {
		t.Errorf("store false keeps nothing and needs no record: %d %v", status, r)
	}

	status, e = f.respond(`{"model":"fake","input":"x","background":true,"conversation":"bg-1"}`)
	wantUnavailable("background", status, e)
	if n := len(f.fakes["solo"].requests()); n != 0 || f.gw.RunRegistry().Live() != 0 {
		t.Errorf("a background response that could not be stored ran: %d model calls, %d live runs", n, f.gw.RunRegistry().Live())
	}

	// The store is back: the conversations go on (their locks were let
	// go of), the failed turns' events still in them.
	store.create.Store(false)
	if status, r := f.respond(`{"model":"desk","input":"who are you?","conversation":"ns-1"}`); status != 200 || r["status"] != "completed" {
		t.Errorf("ns-1 afterwards: %d %v", status, r)
	}
	sess, err := store.Get(context.Background(), sessions.GetRequest{AppName: "desk", UserID: "anonymous", SessionID: "ns-1"})
	if err != nil || len(sess.Events) < 4 || sess.Events[0].Text() != "hello" {
		t.Errorf("ns-1 keeps the failed turn: %v %v", sess, err)
	}
	status, r := f.respond(`{"model":"fake","input":"x","background":true,"conversation":"bg-1"}`)
	if status != 200 {
		t.Fatalf("bg-1 afterwards: %d %v", status, r)
	}
	waitFor(t, "the background run", func() bool { return f.gw.RunRegistry().Live() == 0 })

	// A background response's end that could not be stored.
	store.replace.Store(true)
	_, r = f.respond(`{"model":"fake","input":"x","background":true}`)
	id := r["id"].(string)
	waitFor(t, "the background run", func() bool { return f.gw.RunRegistry().Live() == 0 })
	store.replace.Store(false)
	for _, route := range []string{"GET", "POST /cancel"} {
		method, path, _ := strings.Cut(route, " ")
		if status, got := f.call(method, "/v1/responses/"+id+path); status != 200 || got["status"] != "failed" || got["error"].(map[string]any)["code"] != "server_error" {
			t.Errorf("%s of a background response whose end was not stored: %d %v", route, status, got)
		}
	}
	_, replay := f.getRaw("/v1/responses/" + id + "?stream=true")
	if err := responsescheck.Stream(replay); err != nil {
		t.Errorf("replay: %v\n%s", err, replay)
	}
	if frames := responsescheck.Frames(replay); frames[len(frames)-1].Event != "response.failed" {
		t.Errorf("the replay ended with %s", frames[len(frames)-1].Data)
	}
	f.srv.Close()
}
