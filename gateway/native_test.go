package gateway_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/gateway/metrics"
	"github.com/agentgate/agentgate/sessions"
)

var updateNative = flag.Bool("update-native", false, "rewrite the native surface's golden SSE transcripts")

// nativeRules extend the demo desk with a human-in-the-loop choice, made by
// the coordinator itself or inside an agent it calls as a tool.
var nativeRules = append([]scripted.Rule{
	{Agent: "coordinator", Match: "choose", Call: &scripted.Call{Name: "get_user_choice", Args: map[string]any{"prompt": "Pick a colour", "options": []any{"red", "blue"}}}},
	{Agent: "coordinator", AfterTool: "get_user_choice", Reply: "You chose {response.choice}."},
	{Agent: "coordinator", Match: "delegate", Call: &scripted.Call{Name: "picker", Args: map[string]any{"request": "{last}"}}},
	{Agent: "coordinator", AfterTool: "picker", Reply: "Picker said: {response.text}"},
	{Agent: "picker", Call: &scripted.Call{Name: "get_user_choice", Args: map[string]any{"options": []any{"x", "y"}}}},
	{Agent: "picker", AfterTool: "get_user_choice", Reply: "picked {response.choice}"},
}, demoRules...)

// nativeFixture serves "desk" (coordinator with transfer targets greeter
// and billing, agent tools summarizer and picker, get_user_choice),
// "fake" (one agent on a fake model) and "team" (a parallel fan-out), with
// a deterministic clock and ids.
type nativeFixture struct {
	*fixture
	models map[string]*fakeModel
}

func newNativeFixture(t *testing.T, fake fakeFn, opts ...fixtureOpt) *nativeFixture {
	t.Helper()
	nf := &nativeFixture{models: map[string]*fakeModel{}}
	set := spec.Set{
		Providers: []spec.Provider{{Name: "demo", Type: "scripted", ChunkSize: 8, Rules: nativeRules}, {Name: "fk", Type: "fake"}},
		Agents: []spec.Agent{
			{Name: "coordinator", Model: "demo/coord", Description: "Routes.", Instruction: "Route.", SubAgents: []string{"greeter", "billing"},
				AgentTools: []string{"summarizer", "picker"}, Tools: []spec.Tool{{Builtin: "get_user_choice"}}},
			{Name: "greeter", Model: "demo/greeter", Description: "Greets."},
			{Name: "billing", Model: "demo/billing", Description: "Refunds.", Parameters: []spec.Parameter{{Name: "customerId"}}},
			{Name: "summarizer", Model: "demo/summ", Description: "Summarizes."},
			{Name: "picker", Model: "demo/picker", Description: "Asks the user to pick.", Tools: []spec.Tool{{Builtin: "get_user_choice"}}},
			{Name: "solo", Model: "fk/solo", Description: "A single agent on a fake model."},
			{Name: "fanout", Type: "parallel", SubAgents: []string{"greeter", "summarizer"}},
		},
		Models: []spec.VirtualModel{{ID: "desk", Agent: "coordinator", Description: "The desk.", RouteNextTurn: "root"},
			{ID: "fake", Agent: "solo"}, {ID: "team", Agent: "fanout"}, {ID: "desk-live", Agent: "coordinator", RouteNextTurn: "root", StreamSubAgents: true}},
	}
	cat := buildCatalog(t, set, fake, nf.models)
	now, ids := nativeDeterminism()
	base := func(c *gateway.Config) { c.Catalog, c.Now, c.NewID = cat, now, ids }
	nf.fixture = newFixture(t, nil, append([]fixtureOpt{base}, opts...)...)
	return nf
}

// nativeDeterminism is a clock that advances one millisecond per reading
// and a counter for ids.
func nativeDeterminism() (func() time.Time, func() string) {
	var mu sync.Mutex
	t := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var n atomic.Int64
	return func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			t = t.Add(time.Millisecond)
			return t
		}, func() string {
			return fmt.Sprintf("id-%04d", n.Add(1))
		}
}

// do sends a request with an optional body and returns status and body.
func (f *nativeFixture) do(method, path, body string) (int, []byte) {
	f.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, r)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// mustDo is do that fails the test unless the status is want.
func (f *nativeFixture) mustDo(want int, method, path, body string) []byte {
	f.t.Helper()
	status, b := f.do(method, path, body)
	if status != want {
		f.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, want, b)
	}
	return b
}

// createSession creates a session with the given id for user u1 in app.
func (f *nativeFixture) createSession(app, id string) {
	f.t.Helper()
	f.mustDo(http.StatusOK, http.MethodPost, "/apps/"+app+"/users/u1/sessions", `{"sessionId":"`+id+`"}`)
}

// runSSE posts a /run_sse body and returns the response status, raw body
// and decoded data frames.
func (f *nativeFixture) runSSE(body string) (int, string, []map[string]any) {
	f.t.Helper()
	resp := f.post("/run_sse", body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(raw), nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		f.t.Errorf("Content-Type %q", ct)
	}
	data, _ := sseFrames(f.t, strings.NewReader(string(raw)))
	events := make([]map[string]any, len(data))
	for i, d := range data {
		if err := json.Unmarshal([]byte(d), &events[i]); err != nil {
			f.t.Fatalf("frame %d is not one JSON line: %v\n%s", i, err, d)
		}
	}
	return resp.StatusCode, string(raw), events
}

// mustRunSSE is runSSE that fails the test unless the status is 200.
func (f *nativeFixture) mustRunSSE(body string) (string, []map[string]any) {
	f.t.Helper()
	status, raw, events := f.runSSE(body)
	if status != http.StatusOK {
		f.t.Fatalf("run_sse: status %d: %s", status, raw)
	}
	return raw, events
}

func runBody(session, text string, extra string) string {
	b := `{"appName":"desk","userId":"u1","sessionId":"` + session + `","newMessage":{"role":"user","parts":[{"text":"` + text + `"}]}`
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// callIDRE matches the random function-call ids of the scripted model.
var callIDRE = regexp.MustCompile(`call_[0-9a-f]{32}`)

// checkGolden compares got with testdata/native/<name>.golden.sse, with
// the random call ids replaced by call_1, call_2, ... in order of
// appearance.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	seen := map[string]string{}
	got = callIDRE.ReplaceAllStringFunc(got, func(id string) string {
		if _, ok := seen[id]; !ok {
			seen[id] = fmt.Sprintf("call_%d", len(seen)+1)
		}
		return seen[id]
	})
	path := filepath.Join("testdata", "native", name+".golden.sse")
	if *updateNative {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-native to create it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func str(v any) string { s, _ := v.(string); return s }

// texts returns the concatenated text parts of an event.
func texts(ev map[string]any) string {
	var b strings.Builder
	content, _ := ev["content"].(map[string]any)
	parts, _ := content["parts"].([]any)
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		b.WriteString(str(pm["text"]))
	}
	return b.String()
}

// part returns the first part of an event holding key (functionCall,
// functionResponse), or nil.
func part(ev map[string]any, key string) map[string]any {
	content, _ := ev["content"].(map[string]any)
	parts, _ := content["parts"].([]any)
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		if v, ok := pm[key].(map[string]any); ok {
			return v
		}
	}
	return nil
}

func actions(ev map[string]any) map[string]any { a, _ := ev["actions"].(map[string]any); return a }

// checkTurns checks the streaming rule: within each run of events of one
// author and branch, text deltas arrive as partial events and exactly one
// non-partial event follows, holding their concatenation.
func checkTurns(t *testing.T, events []map[string]any) {
	t.Helper()
	var pending strings.Builder
	partials := 0
	for i, ev := range events {
		if ev["partial"] == true {
			partials++
			pending.WriteString(texts(ev))
			if i == len(events)-1 {
				t.Errorf("stream ends on a partial event")
			}
			continue
		}
		if partials > 0 {
			if got := texts(ev); got != pending.String() {
				t.Errorf("event %d: whole text %q, partial deltas added up to %q", i, got, pending.String())
			}
		}
		pending.Reset()
		partials = 0
	}
}

func TestNativeTransferStream(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	raw, events := f.mustRunSSE(runBody("s1", "hello there", `"streaming":true`))
	checkGolden(t, "transfer", raw)
	checkTurns(t, events)
	if strings.Contains(raw, "event:") || strings.Contains(raw, "[DONE]") {
		t.Errorf("framing other than data: and id: lines:\n%s", raw)
	}
	inv := str(events[0]["invocationId"])
	// Every frame is a one-line data block after an id-only block naming
	// it "<invocationId>:<n>", n from 0: EventSource's cursor, and blocks
	// ADK's AdkApiClient (one data: line or skipped) reads as before.
	blocks := strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n\n")
	if len(blocks) != 2*len(events) {
		t.Fatalf("%d blocks for %d events:\n%s", len(blocks), len(events), raw)
	}
	for i := range events {
		if want := fmt.Sprintf("id: %s:%d", inv, i); blocks[2*i] != want {
			t.Errorf("block %d = %q, want %q", 2*i, blocks[2*i], want)
		}
		if d := blocks[2*i+1]; !strings.HasPrefix(d, "data: {") || strings.Contains(d, "\n") {
			t.Errorf("block %d is not one data: line: %q", 2*i+1, d)
		}
	}
	transfer := -1
	partials := 0
	for i, ev := range events {
		if got := str(ev["invocationId"]); got != inv {
			t.Errorf("event %d: invocationId %q, want %q for the whole turn", i, got, inv)
		}
		if a := actions(ev); a["transferToAgent"] != nil {
			transfer = i
			if part(ev, "functionResponse") == nil || ev["author"] != "coordinator" {
				t.Errorf("transferToAgent on %v, want the coordinator's function-response event", ev)
			}
		}
		for _, k := range []string{"stateDelta", "artifactDelta", "requestedAuthConfigs", "requestedToolConfirmations"} {
			if _, ok := actions(ev)[k].(map[string]any); !ok {
				t.Errorf("event %d: actions.%s missing", i, k)
			}
		}
		if _, ok := ev["longRunningToolIds"].([]any); !ok {
			t.Errorf("event %d: longRunningToolIds missing", i)
		}
		if _, ok := ev["timestamp"].(float64); !ok || ev["id"] == "" {
			t.Errorf("event %d: id/timestamp %v %v", i, ev["id"], ev["timestamp"])
		}
		if ev["partial"] == true {
			partials++
			if ev["author"] != "greeter" {
				t.Errorf("partial from %v", ev["author"])
			}
		}
	}
	if transfer < 0 || str(actions(events[transfer])["transferToAgent"]) != "greeter" {
		t.Fatalf("no transfer to greeter in %s", raw)
	}
	if partials < 2 {
		t.Errorf("streaming:true sent %d partial events", partials)
	}
	last := events[len(events)-1]
	if last["author"] != "greeter" || last["partial"] != nil || texts(last) != "Hello from the greeter!" {
		t.Errorf("last event %v", last)
	}
}

func TestNativeAgentToolStream(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	raw, events := f.mustRunSSE(runBody("s1", "summarize the news", ""))
	checkGolden(t, "agent_tool", raw)
	for _, ev := range events {
		if ev["partial"] == true {
			t.Errorf("streaming:false sent a partial event %v", ev)
		}
		if ev["author"] == "summarizer" {
			t.Errorf("the agent tool's own events are not streamed without streamSubAgents: %v", ev)
		}
	}
	if got := texts(events[len(events)-1]); got != "Summary: short version of: summarize the news" {
		t.Errorf("final text %q", got)
	}
}

func TestNativeStreamSubAgents(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	_, events := f.mustRunSSE(runBody("s1", "summarize the news", `"streaming":true,"streamSubAgents":true`))
	checkTurns(t, events)
	inv := str(events[0]["invocationId"])
	var child []map[string]any
	for _, ev := range events {
		if ev["author"] == "summarizer" {
			child = append(child, ev)
		}
	}
	if len(child) < 2 {
		t.Fatalf("summarizer events %v", child)
	}
	for _, ev := range child {
		if ev["branch"] != "coordinator.summarizer" || ev["invocationId"] != inv+".sub.summarizer" {
			t.Errorf("child event attributed as branch %v invocation %v", ev["branch"], ev["invocationId"])
		}
	}
	if last := child[len(child)-1]; last["partial"] != nil || texts(last) != "short version of: summarize the news" {
		t.Errorf("child's final event %v", last)
	}
	// They never enter the parent's history.
	var sess sessions.Session
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/apps/desk/users/u1/sessions/s1", ""), &sess); err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.Events {
		if ev.Author == "summarizer" {
			t.Errorf("child event stored in the parent: %+v", ev)
		}
	}
}

// An app configured with stream_sub_agents streams agent-tool events
// without the request asking.
func TestNativeStreamSubAgentsFromConfig(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk-live", "s1")
	_, events := f.mustRunSSE(`{"appName":"desk-live","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"summarize it"}]}}`)
	n := 0
	for _, ev := range events {
		if ev["author"] == "summarizer" {
			n++
		}
	}
	if n < 2 {
		t.Fatalf("summarizer events streamed: %d", n)
	}
	f.createSession("desk", "s2")
	_, events = f.mustRunSSE(`{"appName":"desk","userId":"u1","sessionId":"s2","streaming":true,"newMessage":{"parts":[{"text":"summarize it"}]}}`)
	for _, ev := range events {
		if ev["author"] == "summarizer" {
			t.Fatalf("an app without stream_sub_agents streamed a child event: %v", ev)
		}
	}
}

func TestNativeParallelBranches(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("team", "s1")
	raw, events := f.mustRunSSE(`{"appName":"team","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"summarize hi"}]}}`)
	// The branches interleave freely: the golden transcript holds each
	// branch's frames in order, branches sorted, with event ids and
	// timestamps (which depend on the interleaving) masked.
	frames := strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n\n")
	slices.SortStableFunc(frames, func(a, b string) int { return strings.Compare(branchOf(a), branchOf(b)) })
	canon := regexp.MustCompile(`"id":"id-\d+"|"timestamp":[0-9.]+`).ReplaceAllStringFunc(strings.Join(frames, "\n\n")+"\n\n", func(m string) string {
		if strings.HasPrefix(m, `"id"`) {
			return `"id":"id-*"`
		}
		return `"timestamp":0`
	})
	checkGolden(t, "parallel", canon)
	got := map[string]string{}
	for _, ev := range events {
		got[str(ev["author"])] = str(ev["branch"])
	}
	want := map[string]string{"greeter": "fanout.greeter", "summarizer": "fanout.summarizer"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("branches (-want +got):\n%s", diff)
	}
}

// branchOf reads the branch of an SSE frame.
func branchOf(frame string) string {
	var ev struct {
		Branch string `json:"branch"`
	}
	_ = json.Unmarshal([]byte(strings.TrimPrefix(frame, "data: ")), &ev)
	return ev.Branch
}

func TestNativeRunReturnsArray(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	b := f.mustDo(http.StatusOK, http.MethodPost, "/run", runBody("s1", "hello", `"streaming":true`))
	var events []map[string]any
	if err := json.Unmarshal(b, &events); err != nil {
		t.Fatalf("/run body is not a JSON array: %v\n%s", err, b)
	}
	if len(events) != 3 {
		t.Fatalf("got %d events: %s", len(events), b)
	}
	for _, ev := range events {
		if ev["partial"] != nil {
			t.Errorf("/run sent a partial event: %v", ev)
		}
	}
	if events[1]["actions"].(map[string]any)["transferToAgent"] != "greeter" || texts(events[2]) != "Hello from the greeter!" {
		t.Errorf("events %s", b)
	}
}

func TestNativeStateDeltaOnUserEvent(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	f.mustRunSSE(runBody("s1", "anything", `"stateDelta":{"lang":"fr","user:tier":"gold"}`))
	var sess sessions.Session
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/apps/desk/users/u1/sessions/s1", ""), &sess); err != nil {
		t.Fatal(err)
	}
	first := sess.Events[0]
	if first.Author != "user" || first.Text() != "anything" {
		t.Fatalf("first event %+v", first)
	}
	if diff := cmp.Diff(map[string]any{"lang": "fr", "user:tier": "gold"}, first.Actions.StateDelta); diff != "" {
		t.Errorf("user event stateDelta (-want +got):\n%s", diff)
	}
	if sess.State["lang"] != "fr" || sess.State["user:tier"] != "gold" {
		t.Errorf("state %v", sess.State)
	}
}

func TestNativeRequestCasing(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	// snake_case keys, unknown keys, and the snake_case Part field names
	// Python clients may send.
	_, events := f.mustRunSSE(`{"app_name":"desk","user_id":"u1","session_id":"s1","unknown_key":{"x":1},"custom_metadata":{"a":1},
		"new_message":{"role":"user","parts":[{"text":"please choose","thought_signature":null}]},"state_delta":{"snake_case_key":1}}`)
	call := part(events[0], "functionCall")
	if call == nil || call["name"] != "get_user_choice" {
		t.Fatalf("events %v", events)
	}
	resume := fmt.Sprintf(`{"app_name":"desk","user_id":"u1","session_id":"s1","invocation_id":%q,
		"new_message":{"role":"user","parts":[{"function_response":{"id":%q,"name":"get_user_choice","response":{"choice":"blue","user_note":"kept as sent"}}}]}}`,
		events[0]["invocationId"], call["id"])
	_, events = f.mustRunSSE(resume)
	if got := texts(events[len(events)-1]); got != "You chose blue." {
		t.Fatalf("resumed turn ended with %q", got)
	}
	var sess sessions.Session
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/apps/desk/users/u1/sessions/s1", ""), &sess); err != nil {
		t.Fatal(err)
	}
	if sess.State["snake_case_key"] != float64(1) {
		t.Errorf("state_delta keys are the caller's data and stay as sent: %v", sess.State)
	}
	var resp *genai.FunctionResponse
	for _, ev := range sess.Events {
		if ev.Author == "user" {
			if rs := ev.FunctionResponses(); len(rs) > 0 {
				resp = rs[0]
			}
		}
	}
	if resp == nil || resp.Response["user_note"] != "kept as sent" {
		t.Errorf("stored response %+v", resp)
	}
}

func TestNativePauseAndResume(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	raw1, events := f.mustRunSSE(runBody("s1", "please choose", `"streaming":true`))
	var pause map[string]any
	for _, ev := range events {
		if ids, _ := ev["longRunningToolIds"].([]any); len(ids) > 0 {
			pause = ev
		}
	}
	if pause == nil {
		t.Fatalf("no event with longRunningToolIds in %s", raw1)
	}
	call := part(pause, "functionCall")
	if call["name"] != "get_user_choice" || pause["longRunningToolIds"].([]any)[0] != call["id"] {
		t.Fatalf("pause event %v", pause)
	}
	inv := str(pause["invocationId"])
	resume := fmt.Sprintf(`{"appName":"desk","userId":"u1","sessionId":"s1","invocationId":%q,"functionCallEventId":%q,"streaming":true,
		"newMessage":{"role":"user","parts":[{"functionResponse":{"id":%q,"name":"get_user_choice","response":{"choice":"red"}}}]}}`,
		inv, pause["id"], call["id"])
	raw2, events := f.mustRunSSE(resume)
	checkGolden(t, "pause_resume", raw1+"### resumed\n"+raw2)
	checkTurns(t, events)
	for _, ev := range events {
		if ev["invocationId"] != inv {
			t.Errorf("resumed event in invocation %v, want %s", ev["invocationId"], inv)
		}
	}
	if got := texts(events[len(events)-1]); got != "You chose red." {
		t.Errorf("final text %q", got)
	}
	// The same call cannot be answered twice.
	status, body, _ := f.runSSE(resume)
	if status != http.StatusBadRequest || !strings.Contains(body, `"error"`) {
		t.Errorf("second answer: %d %s", status, body)
	}
}

func TestNativePauseInsideAgentTool(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	_, events := f.mustRunSSE(runBody("s1", "delegate this", ""))
	inv := str(events[0]["invocationId"])
	var pause map[string]any
	for _, ev := range events {
		if ids, _ := ev["longRunningToolIds"].([]any); len(ids) > 0 {
			pause = ev
		}
	}
	if pause == nil || pause["author"] != "picker" || pause["branch"] != "coordinator.picker" || pause["invocationId"] != inv+".sub.picker" {
		t.Fatalf("pause inside the agent tool not forwarded as expected: %v", events)
	}
	call := part(pause, "functionCall")
	// adk-web answers with the invocation id of the event that asked.
	resume := fmt.Sprintf(`{"appName":"desk","userId":"u1","sessionId":"s1","invocationId":%q,"streamSubAgents":true,
		"newMessage":{"role":"user","parts":[{"functionResponse":{"id":%q,"name":"get_user_choice","response":{"choice":"y"}}}]}}`,
		pause["invocationId"], call["id"])
	_, events = f.mustRunSSE(resume)
	if got := texts(events[len(events)-1]); got != "Picker said: picked y" {
		t.Fatalf("resumed turn ended with %q: %v", got, events)
	}
	sawChild := false
	for _, ev := range events {
		if ev["author"] == "picker" {
			// The call into picker was made by the earlier request; the
			// branch still names the agent that holds the tool.
			sawChild = true
			if ev["branch"] != "coordinator.picker" || ev["invocationId"] != inv+".sub.picker" {
				t.Errorf("resumed child event %v", ev)
			}
			continue
		}
		if ev["invocationId"] != inv {
			t.Errorf("resumed top-level event in invocation %v, want %s", ev["invocationId"], inv)
		}
	}
	if !sawChild {
		t.Errorf("streamSubAgents did not forward the resumed child's events: %v", events)
	}
	// The sub-conversation holds the pause and its answer.
	var child sessions.Session
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/apps/desk/users/u1/sessions/s1%2Fpicker", ""), &child); err != nil {
		t.Fatal(err)
	}
	if last := child.Events[len(child.Events)-1]; last.Text() != "picked y" {
		t.Errorf("sub-conversation ends with %+v", last)
	}
}

func TestNativeRunErrors(t *testing.T) {
	f := newNativeFixture(t, nil)
	f.createSession("desk", "s1")
	f.createSession("desk", "paused")
	_, events := f.mustRunSSE(runBody("paused", "please choose", ""))
	pauseInv, callID := str(events[0]["invocationId"]), str(part(events[0], "functionCall")["id"])
	answer := func(inv, id string) string {
		return fmt.Sprintf(`{"appName":"desk","userId":"u1","sessionId":"paused","invocationId":%q,
			"newMessage":{"parts":[{"functionResponse":{"id":%q,"name":"get_user_choice","response":{"choice":"red"}}}]}}`, inv, id)
	}
	tests := []struct {
		name   string
		body   string
		status int
	}{
		{"bad JSON", `{"appName":`, 400},
		{"not an object", `[1,2]`, 400},
		{"wrong type", `{"appName":"desk","userId":"u1","sessionId":"s1","streaming":"yes","newMessage":{"parts":[{"text":"x"}]}}`, 400},
		{"no app", `{"userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`, 400},
		{"unknown app", `{"appName":"nope","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`, 404},
		{"no user", `{"appName":"desk","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`, 400},
		{"no session id", `{"appName":"desk","userId":"u1","newMessage":{"parts":[{"text":"x"}]}}`, 400},
		{"missing session", runBody("nope", "x", ""), 404},
		{"reserved session", runBody("~tmp-x", "x", ""), 404},
		{"sub-conversation", runBody("s1/summarizer", "x", ""), 400},
		{"no message", `{"appName":"desk","userId":"u1","sessionId":"s1"}`, 400},
		{"empty message", `{"appName":"desk","userId":"u1","sessionId":"s1","newMessage":{"parts":[]}}`, 400},
		{"message not an object", `{"appName":"desk","userId":"u1","sessionId":"s1","newMessage":"hi"}`, 400},
		{"reserved state key", runBody("s1", "x", `"stateDelta":{"~parameters":{}}`), 400},
		{"unknown call", answer(pauseInv, "call_unknown"), 400},
		{"invocationId without responses", runBody("s1", "x", `"invocationId":"e-1"`), 400},
		{"unknown invocation", answer("e-unknown", callID), 400},
		{"malformed invocation", answer(pauseInv+".sub.", callID), 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, route := range []string{"/run", "/run_sse"} {
				resp := f.post(route, tc.body)
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Errorf("%s: status %d, want %d: %s", route, resp.StatusCode, tc.status, b)
				}
				var e struct {
					Error string `json:"error"`
				}
				if err := json.Unmarshal(b, &e); err != nil || e.Error == "" {
					t.Errorf("%s: body %s is not {\"error\": \"...\"}", route, b)
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("%s: Content-Type %q", route, ct)
				}
			}
		})
	}
	// After all that, the paused invocation still resumes.
	_, events = f.mustRunSSE(answer(pauseInv, callID))
	if got := texts(events[len(events)-1]); got != "You chose red." {
		t.Errorf("resume after failed attempts: %q", got)
	}
}

func TestNativeSessionBusy(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	f := newNativeFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
		yield(textFinal("done"), nil)
	})
	f.createSession("fake", "s1")
	body := `{"appName":"fake","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`
	done := make(chan int)
	go func() {
		resp := f.post("/run_sse", body)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-started
	for _, route := range []string{"/run", "/run_sse"} {
		status, b := f.do(http.MethodPost, route, body)
		if status != http.StatusConflict || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s while busy: %d %s", route, status, b)
		}
	}
	if status, b := f.do(http.MethodPatch, "/apps/fake/users/u1/sessions/s1", `{"stateDelta":{"a":1}}`); status != http.StatusConflict {
		t.Errorf("PATCH while busy: %d %s", status, b)
	}
	close(release)
	if status := <-done; status != http.StatusOK {
		t.Errorf("first run: %d", status)
	}
	f.mustDo(http.StatusOK, http.MethodPost, "/run", body)
}

func TestNativeErrorAfterStreamStarted(t *testing.T) {
	f := newNativeFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		part := &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "so far"}}}}
		if !yield(part, nil) {
			return
		}
		yield(nil, &model.Error{Provider: "fk", Model: "solo", Status: 500})
	})
	f.createSession("fake", "s1")
	raw, events := f.mustRunSSE(`{"appName":"fake","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"x"}]}}`)
	if len(events) != 2 || texts(events[0]) != "so far" {
		t.Fatalf("frames %s", raw)
	}
	want := map[string]any{"error": "The upstream model fk/solo failed with status 500."}
	if diff := cmp.Diff(want, events[1]); diff != "" {
		t.Errorf("error frame (-want +got):\n%s", diff)
	}
	// Before any event, the same failure is an HTTP error.
	f2 := newNativeFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		yield(nil, &model.Error{Provider: "fk", Model: "solo", Status: 429})
	})
	f2.createSession("fake", "s1")
	status, body, _ := f2.runSSE(`{"appName":"fake","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`)
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"error"`) {
		t.Errorf("error before the first event: %d %s", status, body)
	}
}

func TestNativeKeepalive(t *testing.T) {
	heard := make(chan struct{})
	f := newNativeFixture(t, silentUntil(heard), func(c *gateway.Config) { c.KeepaliveInterval = 20 * time.Millisecond })
	f.createSession("fake", "s1")
	resp := f.post("/run_sse", `{"appName":"fake","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"text":"x"}]}}`)
	defer resp.Body.Close()
	data := keptAliveData(t, resp.Body, heard)
	if len(data) != 1 || !strings.Contains(data[0], `"late"`) {
		t.Errorf("data %v", data)
	}
}

func TestNativeClientDisconnect(t *testing.T) {
	verifyNoLeaks(t)
	cancelled := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	f := newNativeFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		if calls.Add(1) > 1 {
			yield(textFinal("second"), nil)
			return
		}
		partialThenWait(started, cancelled)(ctx, req, stream, yield)
	})
	f.createSession("fake", "s1")
	body := `{"appName":"fake","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"x"}]}}`
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+"/run_sse", strings.NewReader(body))
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
	// The session's lock was released with the run.
	waitFor(t, "the session to be free again", func() bool {
		status, _ := f.do(http.MethodPost, "/run", body)
		return status == http.StatusOK
	})
	f.srv.CloseClientConnections()
}

func TestNativeShutdownEndsStreams(t *testing.T) {
	started := make(chan struct{})
	f := newNativeFixture(t, partialThenWait(started, nil))
	f.createSession("fake", "s1")
	body := `{"appName":"fake","userId":"u1","sessionId":"s1","streaming":true,"newMessage":{"parts":[{"text":"x"}]}}`
	done := make(chan []string)
	go func() {
		resp := f.post("/run_sse", body)
		defer resp.Body.Close()
		data, _ := sseFrames(t, resp.Body)
		done <- data
	}()
	<-started
	f.shutdownNow()
	select {
	case data := <-done:
		if len(data) != 2 || data[1] != `{"error":"The server is shutting down; retry the request."}` {
			t.Errorf("frames %v", data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream not ended by Shutdown")
	}
}

func TestNativeMetricsAndLogs(t *testing.T) {
	logs := &syncBuffer{}
	m, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := newNativeFixture(t, nil, func(c *gateway.Config) {
		c.Metrics = m
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	f.createSession("desk", "s1")
	_, events := f.mustRunSSE(runBody("s1", "hello", `"streaming":true`))
	if len(events) < 3 {
		t.Fatalf("events through the metered writer: %v", events)
	}
	var access map[string]any
	for _, rec := range logs.lines(t) {
		if rec["msg"] == "request" && rec["route"] == "/run_sse" {
			access = rec
		}
	}
	if access == nil || access["model"] != "desk" || access["session_id"] != "s1" || access["invocation_id"] != events[0]["invocationId"] ||
		access["agent"] != "coordinator" || access["status"] != float64(200) {
		t.Errorf("access log %v", access)
	}
	got := scrape(t, f.srv.URL)
	if got[`agentgate_http_requests_total{method="POST",route="/run_sse",status="2xx"}`] != 1 {
		t.Errorf("request counter: %v", got)
	}
}

// adk-web draws an app from build_graph (ADK's serialize_app_info shape).
func TestNativeBuildGraph(t *testing.T) {
	f := newNativeFixture(t, nil)
	var got map[string]any
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodGet, "/dev/apps/desk/build_graph", ""), &got); err != nil {
		t.Fatal(err)
	}
	root := got["root_agent"].(map[string]any)
	if got["name"] != "desk" || root["name"] != "coordinator" || root["type"] != "LlmAgent" || root["model"] != "coord" {
		t.Errorf("build_graph = %v", got)
	}
	subs := root["sub_agents"].([]any)
	if len(subs) != 2 || subs[0].(map[string]any)["name"] != "greeter" {
		t.Errorf("sub_agents = %v", subs)
	}
	var tools []string
	for _, tl := range root["tools"].([]any) {
		m := tl.(map[string]any)
		tools = append(tools, m["name"].(string)+":"+m["type"].(string))
	}
	if want := "get_user_choice:FunctionTool summarizer:AgentTool picker:AgentTool"; strings.Join(tools, " ") != want {
		t.Errorf("tools = %v, want %s", tools, want)
	}
	f.mustDo(http.StatusNotFound, http.MethodGet, "/dev/apps/nope/build_graph", "")
}

// ADK's JS client creates a session with a chosen id as {"state": {...}}.
func TestNativeCreateWithIDStateWrapper(t *testing.T) {
	f := newNativeFixture(t, nil)
	var sess map[string]any
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, "/apps/desk/users/u1/sessions/wrapped", `{"state":{"a":1}}`), &sess); err != nil {
		t.Fatal(err)
	}
	if st := sess["state"].(map[string]any); st["a"] != float64(1) || st["state"] != nil {
		t.Errorf("state = %v", st)
	}
	// ADK Python's raw-state body still works.
	if err := json.Unmarshal(f.mustDo(http.StatusOK, http.MethodPost, "/apps/desk/users/u1/sessions/raw", `{"a":2,"b":3}`), &sess); err != nil {
		t.Fatal(err)
	}
	if st := sess["state"].(map[string]any); st["a"] != float64(2) || st["b"] != float64(3) {
		t.Errorf("state = %v", st)
	}
}
