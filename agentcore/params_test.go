package agentcore_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// seen records what tools received.
type seen struct {
	mu     sync.Mutex
	params map[string]map[string]any // tool -> name -> value
}

func (s *seen) record(tool string, p *agentcore.Params) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.params == nil {
		s.params = map[string]map[string]any{}
	}
	m := map[string]any{}
	for n, v := range p.All() {
		m[n] = v.Value
	}
	s.params[tool] = m
}

func (s *seen) get(tool string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.params[tool]
}

// paramTool records the parameters it receives and echoes them back in
// its result, the way a careless tool leaks a user id.
func paramTool(t *testing.T, name string, s *seen) agentcore.CallableTool {
	return fnTool(t, name, func(_ context.Context, tc *agentcore.ToolContext, _ struct{}) (map[string]any, error) {
		p := tc.Params()
		s.record(name, p)
		out := map[string]any{}
		for n, v := range p.All() {
			out[n] = v.Value
			out["note_"+n] = "the value of " + n + " is " + jsonString(v.Value)
		}
		return out, nil
	})
}

// allRequests is every byte sent to the fakes, as JSON.
func allRequests(t *testing.T, fakes ...*fakeLLM) string {
	t.Helper()
	var b strings.Builder
	for _, f := range fakes {
		for _, r := range f.requests() {
			raw, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(raw)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// echoLast answers with a text quoting the last function response it got,
// as a model summarising a tool result would.
func echoLast(req *model.Request) *model.Response {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			return textResp("result: " + jsonString(p.FunctionResponse.Response))
		}
	}
	return textResp("nothing to report")
}

// TestHiddenParameterNeverReachesAModel runs a three-level tree: root ->
// (transfer) desk -> (agent tool) profile -> tool that echoes the hidden,
// token-bound userId. The tool receives the value; no model request holds
// it, in instructions, tool results or sub-agent results.
func TestHiddenParameterNeverReachesAModel(t *testing.T) {
	const secretID = "u-7f3a-SECRET"
	var got seen
	llm := &fakeLLM{name: "fake"}
	var mu sync.Mutex
	count := map[string]int{}
	llm.fn = func(_ context.Context, req *model.Request, _ bool, _ int) ([]*model.Response, error) {
		mu.Lock()
		count[req.Agent]++
		n := count[req.Agent]
		mu.Unlock()
		switch {
		case req.Agent == "root":
			return []*model.Response{transferResp("t1", "desk")}, nil
		case req.Agent == "desk" && n == 1:
			return []*model.Response{callResp("a1", "profile", map[string]any{"request": "who am I?"})}, nil
		case req.Agent == "profile" && n == 1:
			return []*model.Response{callResp("p1", "lookup", nil)}, nil
		}
		return []*model.Response{echoLast(req)}, nil
	}
	hiddenUser := agentcore.ParamSpec{Name: "userId", Description: "The signed-in user", HideFromModel: true, ForbidModelGeneration: true}
	profile := mustLlm(t, agentcore.LlmConfig{Name: "profile", Model: llm, Instruction: "Look the user up.",
		Parameters: []agentcore.ParamSpec{hiddenUser}, Tools: []agentcore.Tool{paramTool(t, "lookup", &got)}})
	desk := mustLlm(t, agentcore.LlmConfig{Name: "desk", Model: llm, Instruction: "Help.", Description: "front desk",
		Parameters: []agentcore.ParamSpec{hiddenUser}, Tools: []agentcore.Tool{agentTool(t, profile)}})
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Instruction: "Route.", SubAgents: []agentcore.Agent{desk}})
	h := newHarness(t, root)

	conv := agentcore.NewParams(map[string]agentcore.Param{"userId": {Value: secretID, Trusted: true}})
	evs, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s1", NewMessage: userText("tell me about me"), Params: conv})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"userId": secretID}, got.get("lookup")); d != "" {
		t.Errorf("the tool's parameters (-want +got):\n%s", d)
	}
	all := allRequests(t, llm)
	if strings.Contains(all, secretID) {
		t.Fatalf("the hidden value reached a model:\n%s", all)
	}
	if !strings.Contains(all, "[hidden:userId]") {
		t.Errorf("the echoed value was not redacted into a placeholder:\n%s", all)
	}
	for _, r := range llm.requestsBy("profile") {
		if s := sysText(r); !strings.Contains(s, "userId: set, value hidden from you") {
			t.Errorf("profile is not told its hidden parameter exists:\n%s", s)
		}
	}
	if s := sysText(llm.requestsBy("root")[0]); strings.Contains(s, "userId") {
		t.Errorf("root, which declares no parameter, was told about userId:\n%s", s)
	}
	// The audit trail (the sub-conversation) keeps what the tool returned,
	// and the parameters stored with it are masked for REST.
	child := h.session("s1/profile")
	stored := child.State[agentcore.ParamsStateKey]
	if d := cmp.Diff(map[string]any{"userId": map[string]any{"value": agentcore.MaskedValue, "sendToModel": false, "trusted": true}},
		agentcore.MaskParamsState(stored)); d != "" {
		t.Errorf("masked sub-conversation parameters (-want +got):\n%s", d)
	}
	if texts(evs) == nil {
		t.Error("the turn produced no text")
	}
}

// TestVisibilityAndGate checks what each model is shown: a value only
// when both the agent's declaration and the conversation allow it, and
// never a parameter the agent does not declare.
func TestVisibilityAndGate(t *testing.T) {
	llm := perAgent(map[string][]*model.Response{
		"root":  {callResp("c1", "spec", map[string]any{"request": "go"}), textResp("ok")},
		"spec":  {textResp("spec done")},
		"other": {textResp("-")},
	})
	spec := mustLlm(t, agentcore.LlmConfig{Name: "spec", Model: llm, Parameters: []agentcore.ParamSpec{
		{Name: "country"}, {Name: "account"}, {Name: "tier"}}})
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Tools: []agentcore.Tool{agentTool(t, spec)},
		Parameters: []agentcore.ParamSpec{{Name: "country", Description: "where the user lives"}, {Name: "tier", HideFromModel: true}}})
	h := newHarness(t, root)
	conv := agentcore.NewParams(map[string]agentcore.Param{
		"country": {Value: "France", SendToModel: true},
		"tier":    {Value: "gold-tier", SendToModel: true},
		"account": {Value: "ACC-991", SendToModel: false},
	})
	if _, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("hi"), Params: conv}); err != nil {
		t.Fatal(err)
	}
	rootSys := sysText(llm.requestsBy("root")[0])
	for _, want := range []string{"Parameters:", "- country=France (where the user lives)", "- tier: set, value hidden from you"} {
		if !strings.Contains(rootSys, want) {
			t.Errorf("root instruction lacks %q:\n%s", want, rootSys)
		}
	}
	for _, never := range []string{"gold-tier", "account", "ACC-991"} {
		if strings.Contains(rootSys, never) {
			t.Errorf("root instruction holds %q:\n%s", never, rootSys)
		}
	}
	// spec declares tier without hiding it: its own gate is open, and the
	// conversation allows it, so spec sees the value root may not.
	specSys := sysText(llm.requestsBy("spec")[0])
	for _, want := range []string{"- country=France", "- tier=gold-tier", "- account: set, value hidden from you"} {
		if !strings.Contains(specSys, want) {
			t.Errorf("spec instruction lacks %q:\n%s", want, specSys)
		}
	}
	if strings.Contains(allRequests(t, llm), "ACC-991") {
		t.Error("a conversation-hidden value reached a model")
	}
}

// TestGeneratedParameter: a parameter neither the caller nor the
// conversation holds, and that allows generation, becomes a required
// argument of the agent tool; the value the model writes reaches the
// sub-agent.
func TestGeneratedParameter(t *testing.T) {
	var got seen
	llm := perAgent(map[string][]*model.Response{
		"root": {callResp("c1", "shop", map[string]any{"request": "find one", "productType": "Laptop", "userId": "ignored"}), textResp("ok")},
		"shop": {callResp("c2", "probe", nil), textResp("found")},
	})
	shop := mustLlm(t, agentcore.LlmConfig{Name: "shop", Model: llm, Tools: []agentcore.Tool{paramTool(t, "probe", &got)},
		Parameters: []agentcore.ParamSpec{{Name: "productType", Description: "What to look for"}, {Name: "userId"}}})
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Tools: []agentcore.Tool{agentTool(t, shop)},
		Parameters: []agentcore.ParamSpec{{Name: "userId"}}})
	h := newHarness(t, root)
	conv := agentcore.NewParams(map[string]agentcore.Param{"userId": {Value: "u1", SendToModel: true}})
	if _, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("hi"), Params: conv}); err != nil {
		t.Fatal(err)
	}
	d := decl(llm.requestsBy("root")[0], "shop")
	schema := d.ParametersJsonSchema.(map[string]any)
	if d := cmp.Diff([]string{"request", "productType"}, schema["required"]); d != "" {
		t.Errorf("required arguments (-want +got):\n%s", d)
	}
	props := schema["properties"].(map[string]any)
	if _, ok := props["userId"]; ok {
		t.Error("an inherited parameter is offered for generation")
	}
	// Generated productType; userId inherited from root, the model's value
	// ignored.
	if d := cmp.Diff(map[string]any{"productType": "Laptop", "userId": "u1"}, got.get("probe")); d != "" {
		t.Errorf("sub-agent parameters (-want +got):\n%s", d)
	}
	if s := sysText(llm.requestsBy("shop")[0]); !strings.Contains(s, "- productType=Laptop (What to look for)") {
		t.Errorf("shop is not shown the generated value:\n%s", s)
	}
}

func TestMissingAndForbiddenParameters(t *testing.T) {
	trustedUser := agentcore.ParamSpec{Name: "userId", HideFromModel: true, ForbidModelGeneration: true}
	tests := []struct {
		name     string
		args     map[string]any
		conv     map[string]agentcore.Param
		wantCode string
	}{
		{"forbidden and not inheritable", map[string]any{"request": "x"}, nil, agentcore.CodeMissingParameter},
		{"model invents a forbidden value", map[string]any{"request": "x", "userId": "u-evil"},
			map[string]agentcore.Param{"userId": {Value: "u-good", Trusted: true}}, agentcore.CodeForbiddenParameter},
		{"generatable but not generated", map[string]any{"request": "x"},
			map[string]agentcore.Param{"userId": {Value: "u-good", Trusted: true}}, agentcore.CodeMissingParameter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			llm := perAgent(map[string][]*model.Response{
				"root":    {callResp("c1", "profile", tc.args), textResp("sorry")},
				"profile": {textResp("should not run")},
			})
			profile := mustLlm(t, agentcore.LlmConfig{Name: "profile", Model: llm,
				Parameters: []agentcore.ParamSpec{trustedUser, {Name: "topic"}}})
			root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Tools: []agentcore.Tool{agentTool(t, profile)}})
			h := newHarness(t, root)
			evs, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("hi"),
				Params: agentcore.NewParams(tc.conv)})
			if err != nil {
				t.Fatal(err)
			}
			resp := responses(evs)["c1"]
			if resp["code"] != tc.wantCode || resp["error"] == nil {
				t.Errorf("response = %v, want code %s", resp, tc.wantCode)
			}
			// The response event carries the code too.
			for _, ev := range evs {
				for _, r := range ev.FunctionResponses() {
					if r.ID == "c1" && (ev.ErrorCode != tc.wantCode || ev.ErrorMessage != resp["error"]) {
						t.Errorf("response event errorCode %q message %q, want %s", ev.ErrorCode, ev.ErrorMessage, tc.wantCode)
					}
				}
			}
			if n := len(llm.requestsBy("profile")); n != 0 {
				t.Errorf("profile ran %d times", n)
			}
			if _, err := h.svc.Get(context.Background(), sessions.GetRequest{AppName: "app", UserID: "u1", SessionID: "s/profile"}); !errors.Is(err, sessions.ErrNotFound) {
				t.Errorf("the sub-conversation exists (err %v)", err)
			}
			// The model is told, and the turn goes on.
			if got := texts(evs); len(got) == 0 || got[len(got)-1] != "root: sorry" {
				t.Errorf("texts = %v", got)
			}
		})
	}
}

func TestTransferNeedsParameters(t *testing.T) {
	tree := func() (*fakeLLM, agentcore.Agent) {
		llm := perAgent(map[string][]*model.Response{
			"root": {transferResp("t1", "desk"), textResp("cannot")},
			"desk": {textResp("desk here")},
		})
		desk := mustLlm(t, agentcore.LlmConfig{Name: "desk", Model: llm, Description: "d",
			Parameters: []agentcore.ParamSpec{{Name: "userId", ForbidModelGeneration: true}}})
		return llm, mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, SubAgents: []agentcore.Agent{desk}})
	}
	llm, root := tree()
	evs := newHarness(t, root).mustRun("s", userText("hi"), agentcore.RunConfig{})
	if resp := responses(evs)["t1"]; resp["code"] != agentcore.CodeMissingParameter {
		t.Errorf("transfer response = %v, want MISSING_PARAMETER", resp)
	}
	if d := cmp.Diff([]string{"root: cannot"}, texts(evs)); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if len(llm.requestsBy("desk")) != 0 {
		t.Error("desk ran")
	}

	// With the value in the conversation the transfer happens.
	_, root = tree()
	evs, err := newHarness(t, root).runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("hi"),
		Params: agentcore.NewParams(map[string]agentcore.Param{"userId": {Value: "u9", Trusted: true}})})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"desk: desk here"}, texts(evs)); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
}

func TestRootMissingParameterFailsTheTurn(t *testing.T) {
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: replies(textResp("hi")),
		Parameters: []agentcore.ParamSpec{{Name: "userId", ForbidModelGeneration: true}}})
	h := newHarness(t, root)
	_, err := h.run("s", userText("hi"), agentcore.RunConfig{})
	var pe *agentcore.ParamError
	if !errors.As(err, &pe) || pe.Code != agentcore.CodeMissingParameter || pe.Agent != "root" {
		t.Fatalf("err = %v, want a MISSING_PARAMETER ParamError", err)
	}
	if n := len(h.session("s").Events); n != 0 {
		t.Errorf("%d events stored for a turn that could not start", n)
	}
}

// TestWorkflowStepMissingParameter: a workflow passes values through; a
// step that finds none it may accept does not run and says why.
func TestWorkflowStepMissingParameter(t *testing.T) {
	var got seen
	llm := perAgent(map[string][]*model.Response{
		"a": {callResp("c1", "probe_a", nil), textResp("a done")},
		"b": {textResp("b ran")},
	})
	a := mustLlm(t, agentcore.LlmConfig{Name: "a", Model: llm, Tools: []agentcore.Tool{paramTool(t, "probe_a", &got)},
		Parameters: []agentcore.ParamSpec{{Name: "region"}}})
	b := mustLlm(t, agentcore.LlmConfig{Name: "b", Model: llm, Parameters: []agentcore.ParamSpec{{Name: "userId", ForbidModelGeneration: true}}})
	seq, err := agentcore.NewSequentialAgent(agentcore.WorkflowConfig{Name: "seq", SubAgents: []agentcore.Agent{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, seq)
	evs, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("go"),
		Params: agentcore.NewParams(map[string]agentcore.Param{"region": {Value: "eu", SendToModel: true}})})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"region": "eu"}, got.get("probe_a")); d != "" {
		t.Errorf("a's parameters (-want +got):\n%s", d)
	}
	ev := last(t, evs)
	if ev.Author != "b" || ev.ErrorCode != agentcore.CodeMissingParameter {
		t.Errorf("last event = %s %s %q, want b's MISSING_PARAMETER", ev.Author, ev.ErrorCode, ev.ErrorMessage)
	}
	if len(llm.requestsBy("b")) != 0 {
		t.Error("b called its model")
	}
}

// TestStoredParameters: values stored with the session apply to later
// turns; the request's own values win; stored trusted values do not count
// (only the current token's do).
func TestStoredParameters(t *testing.T) {
	var got seen
	llm := perAgent(map[string][]*model.Response{"root": {callResp("c1", "probe", nil), textResp("ok")}})
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Tools: []agentcore.Tool{paramTool(t, "probe", &got)},
		Parameters: []agentcore.ParamSpec{{Name: "lang"}, {Name: "userId"}, {Name: "plan"}}})
	h := newHarness(t, root)
	stored := agentcore.ParamsToState(agentcore.NewParams(map[string]agentcore.Param{
		"lang":   {Value: "fr", SendToModel: true},
		"userId": {Value: "stale-user", Trusted: true},
		"plan":   {Value: "basic", SendToModel: false},
	}))
	if _, err := h.svc.Create(context.Background(), sessions.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s",
		State: map[string]any{agentcore.ParamsStateKey: stored}}); err != nil {
		t.Fatal(err)
	}
	_, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("hi"),
		Params: agentcore.NewParams(map[string]agentcore.Param{"plan": {Value: "pro", SendToModel: true}})})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]any{"lang": "fr", "plan": "pro"}, got.get("probe")); d != "" {
		t.Errorf("parameters (-want +got):\n%s", d)
	}
}

// TestRedactionReachesEveryPart: hidden values are replaced in state
// templated into instructions, in call arguments, in numbers and in
// nested tool results.
func TestRedactionReachesEveryPart(t *testing.T) {
	llm := perAgent(map[string][]*model.Response{"root": {
		callResp("c1", "save", map[string]any{"v": "pin 4242 and key k-SECRET"}),
		textResp("ok"),
	}})
	save := fnTool(t, "save", func(_ context.Context, tc *agentcore.ToolContext, args map[string]any) (map[string]any, error) {
		tc.SetState("note", "remember k-SECRET")
		return map[string]any{"pin": 4242, "nested": []any{map[string]any{"k": "k-SECRET-xyz"}}}, nil
	})
	root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: llm, Instruction: "Note: {note?}", Tools: []agentcore.Tool{save}})
	h := newHarness(t, root)
	conv := agentcore.NewParams(map[string]agentcore.Param{
		"key": {Value: "k-SECRET"},
		"pin": {Value: 4242},
	})
	if _, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s", NewMessage: userText("my key is k-SECRET"), Params: conv}); err != nil {
		t.Fatal(err)
	}
	second := llm.requestsBy("root")[1]
	if d := cmp.Diff([]string{
		"user: my key is [hidden:key]",
		`model: call save {"v":"pin [hidden:pin] and key [hidden:key]"}`,
		`user: resp save {"nested":[{"k":"[hidden:key]-xyz"}],"pin":"[hidden:pin]"}`,
	}, render(second.Contents)); d != "" {
		t.Errorf("contents (-want +got):\n%s", d)
	}
	if s := sysText(second); s != "Note: remember [hidden:key]" {
		t.Errorf("instruction = %q", s)
	}
	// What is stored is what happened: redaction only touches requests.
	if got := h.session("s").State["note"]; got != "remember k-SECRET" {
		t.Errorf("stored state = %v", got)
	}
}

func TestParamsStateRoundTrip(t *testing.T) {
	p := agentcore.NewParams(map[string]agentcore.Param{
		"a": {Value: "x", SendToModel: true},
		"b": {Value: 2.0, SendToModel: false},
		"t": {Value: "tok", Trusted: true},
	})
	st := agentcore.ParamsToState(p)
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	got := agentcore.ParamsFromState(back)
	if d := cmp.Diff([]string{"a", "b"}, got.Names()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if v, _ := got.Get("b"); v.SendToModel || v.Value != 2.0 {
		t.Errorf("b = %+v", v)
	}
	// A plain map (what a caller sends) reads as visible values.
	plain := agentcore.ParamsFromState(map[string]any{"lang": "fr", "bad name": 1, "obj": map[string]any{"value": 1, "sendToModel": false}})
	if v, _ := plain.Get("lang"); v.Value != "fr" || !v.SendToModel {
		t.Errorf("lang = %+v", v)
	}
	if v, _ := plain.Get("obj"); v.Value != 1 || v.SendToModel {
		t.Errorf("obj = %+v", v)
	}
	if _, ok := plain.Get("bad name"); ok {
		t.Error("an invalid name was read")
	}
	masked := agentcore.MaskParamsState(back)
	if d := cmp.Diff(map[string]any{
		"a": map[string]any{"value": "x", "sendToModel": true},
		"b": map[string]any{"value": agentcore.MaskedValue, "sendToModel": false},
		"t": map[string]any{"value": agentcore.MaskedValue, "sendToModel": false, "trusted": true},
	}, masked); d != "" {
		t.Errorf("masked (-want +got):\n%s", d)
	}
}

func TestParameterDeclarationsAreValidated(t *testing.T) {
	m := replies(textResp("x"))
	for name, specs := range map[string][]agentcore.ParamSpec{
		"bad name":  {{Name: "user id"}},
		"duplicate": {{Name: "a"}, {Name: "a"}},
	} {
		if _, err := agentcore.NewLlmAgent(agentcore.LlmConfig{Name: "a", Model: m, Parameters: specs}); err == nil {
			t.Errorf("%s: NewLlmAgent accepted %v", name, specs)
		}
	}
	a := mustLlm(t, agentcore.LlmConfig{Name: "a", Model: m, Parameters: []agentcore.ParamSpec{{Name: "request"}}})
	if _, err := agentcore.NewAgentTool(a, agentcore.AgentToolConfig{}); err == nil {
		t.Error("an agent tool accepted a parameter named request")
	}
	tree := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: m, Parameters: []agentcore.ParamSpec{{Name: "x"}},
		SubAgents: []agentcore.Agent{mustLlm(t, agentcore.LlmConfig{Name: "s", Model: m, Parameters: []agentcore.ParamSpec{{Name: "y", HideFromModel: true}}})},
		Tools:     []agentcore.Tool{agentTool(t, mustLlm(t, agentcore.LlmConfig{Name: "tool", Model: m, Parameters: []agentcore.ParamSpec{{Name: "z"}}}))}})
	got := agentcore.TreeParams(tree)
	if d := cmp.Diff(map[string]agentcore.ParamSpec{"x": {Name: "x"}, "y": {Name: "y", HideFromModel: true}, "z": {Name: "z"}}, got); d != "" {
		t.Errorf("TreeParams (-want +got):\n%s", d)
	}
}

// declaringAgent is an agent of its own kind that declares parameters
// (ParamDeclarer) beside the LLM agent it runs.
type declaringAgent struct {
	*agentcore.LlmAgent
	specs []agentcore.ParamSpec
}

func (d *declaringAgent) Parameters() []agentcore.ParamSpec { return d.specs }

// TestDeclaringAgentOfItsOwnKind: parameters declared by an agent that is
// not an LLM agent are resolved like an LLM agent's (a tree without LLM
// agents that declare any still reads them).
func TestDeclaringAgentOfItsOwnKind(t *testing.T) {
	llm := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: replies(textResp("hi"))})
	root := &declaringAgent{LlmAgent: llm, specs: []agentcore.ParamSpec{{Name: "userId", ForbidModelGeneration: true}}}
	h := newHarness(t, root)
	_, err := h.run("s", userText("hi"), agentcore.RunConfig{})
	var pe *agentcore.ParamError
	if !errors.As(err, &pe) || pe.Code != agentcore.CodeMissingParameter || pe.Agent != "root" {
		t.Fatalf("err = %v, want a MISSING_PARAMETER ParamError", err)
	}
}
