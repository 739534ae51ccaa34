package gateway_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/agentcore/spec"
)

// fidelityFixture serves a root agent (on root-m, which transfers to desk)
// and desk (on desk2-m, which answers) on a recording OpenAI-compatible
// upstream: "fid" lets the client's system text in (client_instructions:
// append), "fid-ignore" does not.
func fidelityFixture(t *testing.T) (*fixture, *upstreamRecorder) {
	t.Helper()
	up := &upstreamRecorder{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	set := spec.Set{
		Providers: []spec.Provider{{Name: "up", Type: "openai", BaseURL: upSrv.URL + "/v1", APIKey: "sk-test"}},
		Agents: []spec.Agent{
			{Name: "root", Model: "up/root-m", Instruction: "Route.", SubAgents: []string{"desk"}},
			{Name: "desk", Model: "up/desk2-m", Description: "The desk.", Instruction: "Help the user."},
		},
		Models: []spec.VirtualModel{{ID: "fid", Agent: "root", ClientInstructions: "append"}, {ID: "fid-ignore", Agent: "root"}},
	}
	factories := map[string]spec.ProviderFactory{"openai": func(p spec.Provider) (func(string) (model.LLM, error), error) {
		prov, err := openai.New(openai.Config{Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey, MaxRetries: -1})
		if err != nil {
			return nil, err
		}
		return func(id string) (model.LLM, error) { return prov.Model(id), nil }, nil
	}}
	return serveSet(t, set, factories, &toolLog{}), up
}

// What a chat client asks for reaches the model calls it applies to, as
// the upstream receives them: the json_schema's name and strictness (the
// root's call only), image detail, reasoning effort, verbosity and service
// tier (every call), parallel_tool_calls and tool_choice on the calls
// offering the client's tools, where "none" withdraws only the client's
// functions so that the root can still transfer; system and developer
// messages are appended to the root's instruction when the model says so.
func TestChatFidelityReachesTheUpstream(t *testing.T) {
	f, up := fidelityFixture(t)
	body := `{"model":"%s","messages":[
		{"role":"system","content":"Answer in French."},
		{"role":"developer","content":[{"type":"text","text":"Be brief."}]},
		{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://img.example/a.png","detail":"low"}}]}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
		"tool_choice":"none","parallel_tool_calls":false,
		"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}}},
		"reasoning_effort":"low","verbosity":"high","service_tier":"flex"}`
	roots, desks := fidelityCalls(t, f, up, "/v1/chat/completions", body)
	root, desk := roots[0], desks[0]
	checkFidelity(t, roots, desks, map[string]any{"parallel_tool_calls": false})
	for name, req := range map[string]map[string]any{"root": root, "desk": desk} {
		// tool_choice none keeps the client's function from being
		// called, and nothing else.
		if tc := asJSON(req["tool_choice"]); strings.Contains(tc, "get_weather") || tc == "null" {
			t.Errorf("%s's tool_choice %s", name, tc)
		}
	}
	if got := asJSON(root["tool_choice"]); got != `{"allowed_tools":{"mode":"auto","tools":[{"function":{"name":"transfer_to_agent"},"type":"function"}]},"type":"allowed_tools"}` {
		t.Errorf("root's tool_choice %s: the transfer must stay callable", got)
	}

	if s := systemOf(desk); strings.Contains(s, "French") {
		t.Errorf("the client's system text reached the desk, which is not the root: %q", s)
	}
}

// Without client tools, tool_choice has no call to apply to: "none" does
// not reach the root, which transfers as usual; the options without
// tools leave parallel_tool_calls out (OpenAI refuses it without tools).
func TestChatToolChoiceWithoutClientTools(t *testing.T) {
	f, up := fidelityFixture(t)
	status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", "",
		`{"model":"fid","tool_choice":"none","parallel_tool_calls":false,"messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, b)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	root := up.byModel["root-m"][0]
	if _, ok := root["tool_choice"]; ok {
		t.Errorf("root's tool_choice %s", asJSON(root["tool_choice"]))
	}
	if _, ok := root["parallel_tool_calls"]; ok {
		t.Errorf("root's parallel_tool_calls %s", asJSON(root["parallel_tool_calls"]))
	}
	if len(up.byModel["desk2-m"]) != 1 {
		t.Errorf("the transfer did not happen: %d desk calls", len(up.byModel["desk2-m"]))
	}
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content == "" {
		t.Errorf("completion %s", b)
	}
}

// Log probabilities are refused with a 400 naming the field, never
// answered with null; bad option values are 400s too.
func TestChatRefusesLogprobs(t *testing.T) {
	f, up := fidelityFixture(t)
	for _, tc := range []struct{ extra, param string }{
		{`"logprobs":true`, "logprobs"},
		{`"logprobs":false,"top_logprobs":3`, "top_logprobs"},
		{`"reasoning_effort":"max"`, "reasoning_effort"},
		{`"reasoning":{"effort":"max"}`, "reasoning.effort"},
		{`"verbosity":"loud"`, "verbosity"},
		{`"service_tier":"gold"`, "service_tier"},
	} {
		status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", "",
			`{"model":"fid",`+tc.extra+`,"messages":[{"role":"user","content":"hi"}]}`)
		var env struct {
			Error struct{ Param, Type string } `json:"error"`
		}
		_ = json.Unmarshal(b, &env)
		if status != http.StatusBadRequest || env.Error.Param != tc.param || env.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s; want 400 naming %s", tc.extra, status, b, tc.param)
		}
	}
	up.mu.Lock()
	calls := len(up.bodies)
	up.mu.Unlock()
	if calls != 0 {
		t.Errorf("%d upstream calls for refused requests", calls)
	}
	status, _, b := call(t, f, http.MethodPost, "/v1/chat/completions", "",
		`{"model":"fid","logprobs":false,"top_logprobs":0,"messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusOK {
		t.Errorf("logprobs false: %d %s", status, b)
	}
}

// The same on /v1/responses, as the upstream receives it: instructions
// and developer messages follow client_instructions, the json_schema
// format keeps its name and strictness on the root's call only, and
// reasoning, verbosity, service tier and image detail reach every call.
func TestResponsesFidelityReachesTheUpstream(t *testing.T) {
	f, up := fidelityFixture(t)
	body := `{"model":"%s","instructions":"Answer in French.","input":[
		{"role":"developer","content":"Be brief."},
		{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"https://img.example/a.png","detail":"low"}]}],
		"text":{"format":{"type":"json_schema","name":"answer","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}},"verbosity":"high"},
		"reasoning":{"effort":"low"},"service_tier":"flex","store":false}`
	roots, desks := fidelityCalls(t, f, up, "/v1/responses", body)
	checkFidelity(t, roots, desks, nil)
}

// fidelityCalls posts body (its model "%s") for "fid" and then
// "fid-ignore" to path, and returns the upstream's requests of the root's
// and the desk's calls, two of each.
func fidelityCalls(t *testing.T, f *fixture, up *upstreamRecorder, path, body string) (roots, desks []map[string]any) {
	t.Helper()
	for _, m := range []string{"fid", "fid-ignore"} {
		status, _, b := call(t, f, http.MethodPost, path, "", strings.Replace(body, "%s", m, 1))
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", m, status, b)
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	roots, desks = up.byModel["root-m"], up.byModel["desk2-m"]
	if len(roots) != 2 || len(desks) != 2 {
		t.Fatalf("%d root and %d desk calls, want 2 of each", len(roots), len(desks))
	}
	return roots, desks
}

// checkFidelity checks what both OpenAI surfaces pass on alike: the
// json_schema "answer" (strict) on the root's call only, reasoning effort
// low, verbosity high, service tier flex (and the fields of more) and the
// image of detail low on every call, and the client's system text "Answer
// in French." and "Be brief." appended to the root's instruction with
// client_instructions append (the first calls), never otherwise.
func checkFidelity(t *testing.T, roots, desks []map[string]any, more map[string]any) {
	t.Helper()
	root, desk := roots[0], desks[0]
	if got := asJSON(root["response_format"]); got != `{"json_schema":{"name":"answer","schema":{"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"],"type":"object"},"strict":true},"type":"json_schema"}` {
		t.Errorf("root's response_format: %s", got)
	}
	if _, ok := desk["response_format"]; ok {
		t.Errorf("the schema reached the desk: %s", asJSON(desk["response_format"]))
	}
	want := map[string]any{"reasoning_effort": "low", "verbosity": "high", "service_tier": "flex"}
	maps.Copy(want, more)
	for name, req := range map[string]map[string]any{"root": root, "desk": desk} {
		for k, v := range want {
			if req[k] != v {
				t.Errorf("%s's %s = %v, want %v", name, k, req[k], v)
			}
		}
		if msgs := asJSON(req["messages"]); !strings.Contains(msgs, `{"image_url":{"detail":"low","url":"https://img.example/a.png"},"type":"image_url"}`) {
			t.Errorf("%s's messages lack the image with its detail: %s", name, msgs)
		}
	}
	if s := systemOf(root); !strings.HasPrefix(s, "Route.\n\nAnswer in French.\n\nBe brief.") {
		t.Errorf("root's system message with client_instructions append: %q", s)
	}
	if s := systemOf(roots[1]); strings.Contains(s, "French") || strings.Contains(s, "brief") {
		t.Errorf("root's system message with client_instructions ignore: %q", s)
	}
}

// systemOf is the system message a model request starts with; "" when it
// has none.
func systemOf(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	first, _ := msgs[0].(map[string]any)
	if first["role"] != "system" {
		return ""
	}
	s, _ := first["content"].(string)
	return s
}
