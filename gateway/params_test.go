package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/auth"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

func newJSONLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// toolLog records the parameters each test tool received.
type toolLog struct {
	mu   sync.Mutex
	seen map[string][]map[string]any
}

func (l *toolLog) last(tool string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen[tool]) == 0 {
		return nil
	}
	return l.seen[tool][len(l.seen[tool])-1]
}

func (l *toolLog) count(tool string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen[tool])
}

// tools makes every configured http tool a function tool that records its
// parameters and echoes them back, as a careless tool that returns the
// user id would.
func (l *toolLog) tools(t *testing.T) func(agent string, st spec.Tool) (agentcore.Tool, error) {
	return func(agent string, st spec.Tool) (agentcore.Tool, error) {
		if st.Kind != "http" {
			return nil, nil
		}
		return agentcore.NewFunctionTool(agentcore.FunctionToolConfig{Name: st.Name, Description: st.Description},
			func(_ context.Context, tc *agentcore.ToolContext, _ struct{}) (map[string]any, error) {
				got := map[string]any{}
				for n, v := range tc.Params().All() {
					got[n] = v.Value
				}
				l.mu.Lock()
				if l.seen == nil {
					l.seen = map[string][]map[string]any{}
				}
				l.seen[st.Name] = append(l.seen[st.Name], got)
				l.mu.Unlock()
				out := map[string]any{"echo": fmt.Sprintf("%v", got)}
				for n, v := range got {
					out[n] = v
				}
				return out, nil
			})
	}
}

// serveSet builds a gateway over set with the test tools.
func serveSet(t *testing.T, set spec.Set, factories map[string]spec.ProviderFactory, tl *toolLog, opts ...fixtureOpt) *fixture {
	t.Helper()
	cat, err := spec.Build(set, spec.BuildOptions{Factories: factories, Tools: tl.tools(t)})
	if err != nil {
		t.Fatalf("spec.Build: %v", err)
	}
	f := &fixture{t: t, store: sessions.NewMemoryService(sessions.MemoryConfig{})}
	cfg := gateway.Config{Catalog: cat, Sessions: f.store}
	for _, o := range opts {
		o(&cfg)
	}
	if f.gw, err = gateway.New(cfg); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.gw)
	t.Cleanup(f.srv.Close)
	return f
}

// paramsSet is a scripted tree: the coordinator calls profile (needs the
// hidden, trusted userId) and shop (productType may be generated) as
// tools, and transfers to desk (needs region, never generated).
func paramsSet() spec.Set {
	no := false
	rules := []scripted.Rule{
		{Agent: "coordinator", AfterTool: "profile", Reply: "Profile: {response}"},
		{Agent: "coordinator", AfterTool: "shop", Reply: "Shop: {response.text}"},
		{Agent: "coordinator", AfterTool: "transfer_to_agent", Reply: "Transfer: {response}"},
		{Agent: "coordinator", Match: "impersonate", Call: &scripted.Call{Name: "profile", Args: map[string]any{"request": "{last}", "userId": "mallory"}}},
		{Agent: "coordinator", Match: "who am i", Call: &scripted.Call{Name: "profile", Args: map[string]any{"request": "{last}"}}},
		{Agent: "coordinator", Match: "shop", Call: &scripted.Call{Name: "shop", Args: map[string]any{"request": "{last}", "productType": "Laptop"}}},
		{Agent: "coordinator", Match: "desk", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "desk"}}},
		{Agent: "coordinator", Reply: "hello"},
		{Agent: "profile", AfterTool: "echo_user", Reply: "You are {response.userId} ({response.echo})"},
		{Agent: "profile", Call: &scripted.Call{Name: "echo_user"}},
		{Agent: "shop", AfterTool: "probe", Reply: "Looking for {response.productType}"},
		{Agent: "shop", Call: &scripted.Call{Name: "probe"}},
		{Agent: "desk", AfterTool: "locate", Reply: "desk in {response.region}"},
		{Agent: "desk", Call: &scripted.Call{Name: "locate"}},
	}
	return spec.Set{
		Providers: []spec.Provider{{Name: "demo", Type: "scripted", Rules: rules}},
		Agents: []spec.Agent{
			{Name: "coordinator", Model: "demo/c", AgentTools: []string{"profile", "shop"}, SubAgents: []string{"desk"}},
			{Name: "profile", Model: "demo/p", Description: "Looks up the signed-in user.",
				Parameters: []spec.Parameter{{Name: "userId", SendToModel: &no, ForbidModelGeneration: true}},
				Tools:      []spec.Tool{{Name: "echo_user", Kind: "http", URL: "http://unused.invalid"}}},
			{Name: "shop", Model: "demo/s", Parameters: []spec.Parameter{{Name: "productType", Description: "What to shop for"}, {Name: "userId"}},
				Tools: []spec.Tool{{Name: "probe", Kind: "http", URL: "http://unused.invalid"}}},
			{Name: "desk", Model: "demo/d", Description: "Regional desk.", Parameters: []spec.Parameter{{Name: "region", ForbidModelGeneration: true}},
				Tools: []spec.Tool{{Name: "locate", Kind: "http", URL: "http://unused.invalid"}}},
		},
		Models: []spec.VirtualModel{{ID: "app", Agent: "coordinator", RouteNextTurn: "root"}},
	}
}

// answer is the assistant text of a non-streamed completion.
func answer(t *testing.T, b []byte) string {
	t.Helper()
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("not a completion: %s", b)
	}
	return c.Choices[0].Message.Content
}

func chatWithMetadata(model, text string, md map[string]string) string {
	b, _ := json.Marshal(map[string]any{"model": model, "metadata": md, "messages": []any{map[string]any{"role": "user", "content": text}}})
	return string(b)
}

func TestParametersOverOpenAI(t *testing.T) {
	const secret = "alice-SECRET-7"
	var tl toolLog
	f := serveSet(t, paramsSet(), nil, &tl, withJWT(t))
	tok := token(t, secret, map[string]any{"models": []string{"app"}})

	t.Run("hidden trusted value reaches the tool, never the answer", func(t *testing.T) {
		status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatBody("app", "who am I?"))
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		if got := tl.last("echo_user")["userId"]; got != secret {
			t.Errorf("the tool got userId %v", got)
		}
		text := answer(t, b)
		if strings.Contains(string(b), secret) || !strings.Contains(text, "You are [hidden:userId]") {
			t.Errorf("answer %q", text)
		}
	})
	t.Run("a model-invented value for a forbidden parameter", func(t *testing.T) {
		before := tl.count("echo_user")
		_, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatBody("app", "impersonate mallory"))
		if text := answer(t, b); !strings.Contains(text, `"code":"FORBIDDEN_PARAMETER"`) {
			t.Errorf("answer %q", text)
		}
		if tl.count("echo_user") != before {
			t.Error("profile ran with an invented user id")
		}
	})
	t.Run("generated as an extra argument", func(t *testing.T) {
		status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatBody("app", "shop for me"))
		if status != http.StatusOK || answer(t, b) != "Shop: Looking for Laptop" {
			t.Fatalf("%d %s", status, b)
		}
		if got := tl.last("probe"); got["productType"] != "Laptop" || got["userId"] != secret {
			t.Errorf("probe got %v", got)
		}
	})
	t.Run("the conversation's value beats the model's", func(t *testing.T) {
		status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatWithMetadata("app", "shop", map[string]string{"param.productType": "Desktop"}))
		if status != http.StatusOK || answer(t, b) != "Shop: Looking for Desktop" {
			t.Fatalf("%d %s", status, b)
		}
	})
	t.Run("MISSING_PARAMETER on transfer, then the value from metadata", func(t *testing.T) {
		_, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatBody("app", "desk please"))
		if text := answer(t, b); !strings.Contains(text, `"code":"MISSING_PARAMETER"`) || !strings.Contains(text, "transfer not performed") {
			t.Errorf("answer %q", text)
		}
		_, _, b = call(t, f, http.MethodPost, "/v1/chat/completions", tok,
			chatWithMetadata("app", "desk please", map[string]string{"param.region": "eu-west", "param.region.send_to_model": "false"}))
		if text := answer(t, b); text != "desk in [hidden:region]" {
			t.Errorf("answer %q", text)
		}
		if got := tl.last("locate")["region"]; got != "eu-west" {
			t.Errorf("locate got region %v", got)
		}
	})
	for _, tc := range []struct {
		name   string
		md     map[string]string
		status int
		code   string
	}{
		{"bound by the token", map[string]string{"param.userId": "mallory"}, http.StatusForbidden, "parameter_bound_by_token"},
		{"declared by no agent", map[string]string{"param.nope": "x"}, http.StatusBadRequest, "unknown_parameter"},
		{"bad send_to_model", map[string]string{"param.region": "x", "param.region.send_to_model": "maybe"}, http.StatusBadRequest, "invalid_parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatWithMetadata("app", "hi", tc.md))
			if status != tc.status || !strings.Contains(string(b), `"code":"`+tc.code+`"`) || !strings.Contains(string(b), `"param":"metadata.param.`) {
				t.Errorf("%d %s", status, b)
			}
		})
	}
}

func TestParametersOverNative(t *testing.T) {
	const secret = "bob-SECRET-3"
	var tl toolLog
	f := serveSet(t, paramsSet(), nil, &tl, withJWT(t))
	tok := token(t, secret, map[string]any{"models": []string{"app"}})

	status, _, b := call(t, f, http.MethodPost, "/apps/app/users/me/sessions", tok,
		`{"sessionId":"n1","parameters":{"region":{"value":"ap-south","sendToModel":false},"productType":"Phone"}}`)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, b)
	}
	for _, body := range [][]byte{b, func() []byte {
		_, _, b := call(t, f, http.MethodGet, "/apps/app/users/me/sessions/n1", tok, "")
		return b
	}()} {
		var sess struct {
			State map[string]any `json:"state"`
		}
		if err := json.Unmarshal(body, &sess); err != nil {
			t.Fatal(err)
		}
		got := asJSON(sess.State[gateway.ParametersStateKey])
		want := `{"productType":{"sendToModel":true,"value":"Phone"},"region":{"sendToModel":false,"value":"[hidden]"},` +
			`"userId":{"sendToModel":false,"trusted":true,"value":"[hidden]"}}`
		if got != want || strings.Contains(string(body), "ap-south") {
			t.Errorf("stored parameters over REST = %s", got)
		}
	}
	// Later turns have the stored values.
	status, _, b = call(t, f, http.MethodPost, "/run", tok, `{"appName":"app","userId":"me","sessionId":"n1","newMessage":{"parts":[{"text":"desk"}]}}`)
	if status != http.StatusOK || !strings.Contains(string(b), "desk in [hidden:region]") {
		t.Fatalf("run: %d %s", status, b)
	}
	if got := tl.last("locate")["region"]; got != "ap-south" {
		t.Errorf("locate got region %v", got)
	}
	_, _, b = call(t, f, http.MethodPost, "/run", tok, `{"appName":"app","userId":"me","sessionId":"n1","newMessage":{"parts":[{"text":"shop"}]}}`)
	if !strings.Contains(string(b), "Looking for Phone") {
		t.Errorf("shop run: %s", b)
	}
	// The sub-conversation of profile keeps the values it resolved, masked.
	call(t, f, http.MethodPost, "/run", tok, `{"appName":"app","userId":"me","sessionId":"n1","newMessage":{"parts":[{"text":"who am i"}]}}`)
	status, _, b = call(t, f, http.MethodGet, "/apps/app/users/me/sessions/n1%2Fprofile", tok, "")
	if status != http.StatusOK || !strings.Contains(string(b), `"~parameters":{"userId":{"sendToModel":false,"trusted":true,"value":"[hidden]"}}`) {
		t.Errorf("sub-conversation: %d %s", status, b)
	}
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"parameters":{"userId":"mallory"}}`, http.StatusForbidden},
		{`{"parameters":{"nope":1}}`, http.StatusBadRequest},
		{`{"parameters":{"region":{"value":"x","sendToModel":"no"}}}`, http.StatusBadRequest},
		{`{"state":{"~parameters":{"userId":"mallory"}}}`, http.StatusBadRequest},
	} {
		if status, _, b := call(t, f, http.MethodPost, "/apps/app/users/me/sessions", tok, tc.body); status != tc.status {
			t.Errorf("create %s: %d %s, want %d", tc.body, status, b, tc.status)
		}
	}
	status, _, b = call(t, f, http.MethodPatch, "/apps/app/users/me/sessions/n1", tok, `{"stateDelta":{"~parameters":{}}}`)
	if status != http.StatusBadRequest {
		t.Errorf("patching the parameters: %d %s", status, b)
	}
}

// TestMissingTrustedParameterWithoutAuth: with auth.mode none nothing
// binds userId; profile does not run and the coordinator's model is told.
func TestMissingTrustedParameterWithoutAuth(t *testing.T) {
	var tl toolLog
	f := serveSet(t, paramsSet(), nil, &tl)
	_, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", "", chatBody("app", "who am I?"))
	if text := answer(t, b); !strings.Contains(text, `"code":"MISSING_PARAMETER"`) || !strings.Contains(text, "agent profile did not run") {
		t.Errorf("answer %q", text)
	}
	if tl.last("echo_user") != nil {
		t.Error("profile's tool ran")
	}
	// Without a token a caller may supply it.
	_, _, b = call(t, f, http.MethodPost, "/v1/chat/completions", "", chatWithMetadata("app", "who am I?", map[string]string{"param.userId": "self-declared"}))
	if text := answer(t, b); !strings.HasPrefix(text, "Profile: ") || !strings.Contains(text, "[hidden:userId]") {
		t.Errorf("answer %q", text)
	}
}

// upstreamRecorder is an OpenAI-compatible server that records every
// request byte and scripts a three-level tree: root transfers to desk,
// desk calls profile as a tool, profile calls echo_user, and each model
// then repeats the tool result it was given.
type upstreamRecorder struct {
	mu      sync.Mutex
	bodies  []string
	byModel map[string][]map[string]any
}

func (u *upstreamRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var req struct {
		Model    string           `json:"model"`
		Stream   bool             `json:"stream"`
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal(raw, &req)
	var hdr strings.Builder
	_ = r.Header.Write(&hdr)
	u.mu.Lock()
	u.bodies = append(u.bodies, hdr.String()+string(raw))
	if u.byModel == nil {
		u.byModel = map[string][]map[string]any{}
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	u.byModel[req.Model] = append(u.byModel[req.Model], m)
	u.mu.Unlock()

	last := req.Messages[len(req.Messages)-1]
	afterTool := last["role"] == "tool"
	var name, args, text string
	switch {
	case req.Model == "root-m" && !afterTool:
		name, args = "transfer_to_agent", `{"agent_name":"desk"}`
	case req.Model == "desk-m" && !afterTool:
		name, args = "profile", `{"request":"who is the user?"}`
	case req.Model == "profile-m" && !afterTool:
		name, args = "echo_user", `{}`
	default:
		content, _ := last["content"].(string)
		text = "the tool said " + content
	}
	msg := map[string]any{"role": "assistant", "content": text}
	finish := "stop"
	if name != "" {
		msg = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_" + name, "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(msg, nil, nil)
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// leakTree is the leak tests' tree on the OpenAI-compatible upstream at
// upURL (an upstreamRecorder), its provider sending through hc (nil: its
// own client): root transfers to desk, desk calls profile as a tool, and
// profile's echo_user returns the hidden, token-bound userId.
func leakTree(upURL string, hc *http.Client) (spec.Set, map[string]spec.ProviderFactory) {
	no := false
	hidden := spec.Parameter{Name: "userId", Description: "The signed-in user", SendToModel: &no, ForbidModelGeneration: true}
	set := spec.Set{
		Providers: []spec.Provider{{Name: "up", Type: "openai", BaseURL: upURL + "/v1", APIKey: "sk-test"}},
		Agents: []spec.Agent{
			{Name: "root", Model: "up/root-m", Instruction: "Route.", SubAgents: []string{"desk"}},
			{Name: "desk", Model: "up/desk-m", Description: "The desk.", Instruction: "Help the user.", AgentTools: []string{"profile"},
				Parameters: []spec.Parameter{hidden}},
			{Name: "profile", Model: "up/profile-m", Description: "Profile lookup.", Instruction: "Look the user up.",
				Parameters: []spec.Parameter{hidden}, Tools: []spec.Tool{{Name: "echo_user", Kind: "http", URL: "http://unused.invalid"}}},
		},
		Models: []spec.VirtualModel{{ID: "leak", Agent: "root"}},
	}
	factories := map[string]spec.ProviderFactory{"openai": func(p spec.Provider) (func(string) (model.LLM, error), error) {
		prov, err := openai.New(openai.Config{Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey, MaxRetries: -1, HTTPClient: hc})
		if err != nil {
			return nil, err
		}
		return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
	}}
	return set, factories
}

// TestHiddenValueNeverReachesTheUpstream is the leak test: a three-level
// tree on a recording OpenAI-compatible upstream, the token-bound userId
// hidden, a tool that echoes it. The tool receives the value; no byte of
// any upstream request holds it.
func TestHiddenValueNeverReachesTheUpstream(t *testing.T) {
	const secret = "u-LEAKCHECK-4711"
	up := &upstreamRecorder{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	set, factories := leakTree(upSrv.URL, nil)
	var tl toolLog
	f := serveSet(t, set, factories, &tl, withJWT(t))
	tok := token(t, secret, map[string]any{"models": []string{"leak"}})

	for _, stream := range []bool{false, true} {
		body, _ := json.Marshal(map[string]any{"model": "leak", "stream": stream, "messages": []any{map[string]any{"role": "user", "content": "who am I?"}}})
		status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, string(body))
		if status != http.StatusOK {
			t.Fatalf("stream=%v: %d %s", stream, status, b)
		}
		if !strings.Contains(string(b), "[hidden:userId]") || strings.Contains(string(b), secret) {
			t.Errorf("stream=%v: answer %s", stream, b)
		}
	}
	if got := tl.last("echo_user")["userId"]; got != secret {
		t.Fatalf("the tool got userId %v", got)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.bodies) != 10 {
		t.Errorf("%d upstream requests, want 10", len(up.bodies))
	}
	all := strings.Join(up.bodies, "\n")
	if strings.Contains(all, secret) {
		t.Fatalf("the hidden value reached the upstream:\n%s", all)
	}
	// The tool's echo reached profile's model redacted, and profile's
	// answer reached desk's model (through the agent tool) the same way.
	for _, m := range []string{"profile-m", "desk-m"} {
		if reqs := up.byModel[m]; !strings.Contains(asJSON(reqs[len(reqs)-1]), "[hidden:userId]") {
			t.Errorf("%s never saw the placeholder: %s", m, asJSON(reqs))
		}
	}
	// Each agent declaring userId is told it exists; root, which declares
	// nothing, is not.
	if s := asJSON(up.byModel["profile-m"][0]); !strings.Contains(s, "userId: set, value hidden from you") {
		t.Errorf("profile's request: %s", s)
	}
	if s := asJSON(up.byModel["root-m"][0]); strings.Contains(s, "userId") {
		t.Errorf("root's request mentions userId: %s", s)
	}
}

// TestAndGateOverOpenAI: through /v1 with a model that records its
// requests, a value is shown only when the agent's declaration and the
// conversation both allow it; an undeclared one is never mentioned.
func TestAndGateOverOpenAI(t *testing.T) {
	no := false
	set := spec.Set{
		Providers: []spec.Provider{{Name: "fk", Type: "fake"}},
		Agents: []spec.Agent{{Name: "solo", Model: "fk/solo", Parameters: []spec.Parameter{
			{Name: "lang", Description: "Reply language"}, {Name: "plan", SendToModel: &no}, {Name: "tier"}}}},
		Models: []spec.VirtualModel{{ID: "fake", Agent: "solo"}},
	}
	f := newFixtureWith(t, set, nil, withJWT(t, func(c *auth.Config) {
		c.Parameters = append(c.Parameters, auth.ClaimParameter{Claim: "org", Name: "org", SendToModel: true})
	}))
	tok := token(t, "dana", map[string]any{"models": []string{"fake"}, "org": "org-ACME-77"})
	md := map[string]string{"param.lang": "fr-FR", "param.plan": "plan-GOLD-11", "param.tier": "tier-T9", "param.tier.send_to_model": "false"}
	status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", tok, chatWithMetadata("fake", "my plan is plan-GOLD-11", md))
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, b)
	}
	reqs := f.fakes["solo"].requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	raw, _ := json.Marshal(reqs[0])
	got := string(raw)
	for _, want := range []string{"- lang=fr-FR (Reply language)", "- plan: set, value hidden from you", "- tier: set, value hidden from you",
		"my plan is [hidden:plan]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the request lacks %q:\n%s", want, got)
		}
	}
	for _, never := range []string{"plan-GOLD-11", "tier-T9", "org", "dana"} {
		if strings.Contains(got, never) {
			t.Errorf("the request holds %q:\n%s", never, got)
		}
	}
}
