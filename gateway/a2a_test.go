package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

// Two agentgate instances in one test: a "front" tree on one delegates to
// agents served by the other over A2A, as transfer targets and as agent
// tools.

// gate is a model that answers only when released (or its call is
// canceled); it tells when it was called and when a call was canceled.
type gate struct {
	reply    string
	started  chan struct{}
	release  chan struct{}
	canceled chan struct{}
	once     sync.Once
}

func newGate(reply string) *gate {
	return &gate{reply: reply, started: make(chan struct{}, 16), release: make(chan struct{}), canceled: make(chan struct{})}
}

func (g *gate) Name() string { return "gate" }

func (g *gate) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		g.started <- struct{}{}
		select {
		case <-g.release:
			yield(textFinal(g.reply), nil)
		case <-ctx.Done():
			g.once.Do(func() { close(g.canceled) })
			yield(nil, ctx.Err())
		}
	}
}

// peer is one agentgate instance behind an httptest server whose handler
// records the JSON-RPC methods it is sent.
type peer struct {
	t       *testing.T
	gw      *gateway.Server
	srv     *httptest.Server
	store   *sessions.MemoryService
	remotes *a2a.Remotes
	// v03 strips v1's supportedInterfaces from the cards served, so
	// clients speak v0.3.
	v03 bool

	mu      sync.Mutex
	methods []string
}

func (p *peer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/a2a/") {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ Method string }
		_ = json.Unmarshal(body, &req)
		p.mu.Lock()
		p.methods = append(p.methods, req.Method)
		p.mu.Unlock()
	}
	if p.v03 && strings.HasSuffix(r.URL.Path, "agent-card.json") {
		rec := httptest.NewRecorder()
		p.gw.ServeHTTP(rec, r)
		var card map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &card)
		delete(card, "supportedInterfaces")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(card)
		return
	}
	p.gw.ServeHTTP(w, r)
}

func (p *peer) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.methods)
}

// newPeer serves set; models of provider type "gate" are the given gates
// (by model id).
func newPeer(t *testing.T, set spec.Set, gates map[string]*gate) *peer {
	t.Helper()
	p := &peer{t: t, store: sessions.NewMemoryService(sessions.MemoryConfig{})}
	p.remotes = a2a.NewRemotes(a2a.NewClient(a2a.ClientConfig{}), nil)
	cat := p.build(set, gates)
	var err error
	p.gw, err = gateway.New(gateway.Config{Catalog: cat, Sessions: p.store, KeepaliveInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p.remotes.Apply(set)
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *peer) build(set spec.Set, gates map[string]*gate) *spec.Catalog {
	p.t.Helper()
	cat, err := spec.Build(set, spec.BuildOptions{Remote: p.remotes.Build, Factories: map[string]spec.ProviderFactory{
		"gate": func(spec.Provider) (func(string) (model.LLM, error), error) {
			return func(id string) (model.LLM, error) { return gates[id], nil }, nil
		},
	}})
	if err != nil {
		p.t.Fatalf("spec.Build: %v", err)
	}
	return cat
}

// reload swaps the peer's catalog, as cmd/gateway does on SIGHUP.
func (p *peer) reload(set spec.Set, gates map[string]*gate) {
	p.t.Helper()
	if err := p.gw.Reload(p.build(set, gates)); err != nil {
		p.t.Fatal(err)
	}
	p.remotes.Apply(set)
}

func (p *peer) post(ctx context.Context, path, body string, headers ...string) *http.Response {
	p.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.srv.URL+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

// chat sends one chat completion and returns the decoded body and the
// session id header.
func (p *peer) chat(model, session string, messages ...map[string]any) (map[string]any, string) {
	p.t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "messages": messages})
	var hdr []string
	if session != "" {
		hdr = []string{"X-Session-Id", session}
	}
	resp := p.post(context.Background(), "/v1/chat/completions", string(body), hdr...)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("chat: status %d: %s", resp.StatusCode, b)
	}
	return decode(p.t, resp.Body), resp.Header.Get("X-Session-Id")
}

// rpc posts one JSON-RPC request to /a2a/{model} and decodes the answer.
func (p *peer) rpc(model, method string, params any) map[string]any {
	p.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	resp := p.post(context.Background(), "/a2a/"+model, string(body))
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	return decode(p.t, resp.Body)
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func choice(t *testing.T, body map[string]any) (content string, msg map[string]any) {
	t.Helper()
	choices, _ := body["choices"].([]any)
	if len(choices) != 1 {
		t.Fatalf("want one choice, got %v", body)
	}
	msg, _ = choices[0].(map[string]any)["message"].(map[string]any)
	content, _ = msg["content"].(string)
	return content, msg
}

// remoteSet is what the remote instance serves: an analyst, an agent that
// asks the user a question (get_user_choice), one that fails
// (max_iterations), and one on a gate.
func remoteSet() spec.Set {
	return spec.Set{
		Providers: []spec.Provider{{Name: "rs", Type: "scripted", ChunkSize: 5, Rules: []scripted.Rule{
			{Agent: "analyst", Reply: "analysis of [{last}]"},
			{Agent: "asker", AfterTool: "get_user_choice", Reply: "asker chose {response.text}"},
			{Agent: "asker", Call: &scripted.Call{Name: "get_user_choice", Args: map[string]any{"prompt": "Which plan?", "options": []any{"basic", "pro"}}}},
			{Agent: "broken", Call: &scripted.Call{Name: "load_memory", Args: map[string]any{"query": "{last}"}}},
		}}, {Name: "g", Type: "gate"}},
		Agents: []spec.Agent{
			{Name: "analyst", Model: "rs/analyst", Description: "Analyses anything."},
			{Name: "asker", Model: "rs/asker", Description: "Asks which plan.", Tools: []spec.Tool{{Builtin: agentcore.GetUserChoiceToolName}}},
			{Name: "broken", Model: "rs/broken", Description: "Always fails.", MaxIterations: 1, Tools: []spec.Tool{{Builtin: agentcore.LoadMemoryToolName}}},
			{Name: "gated", Model: "g/gated", Description: "Answers when released."},
		},
		Models: []spec.VirtualModel{{ID: "analyst", Agent: "analyst"}, {ID: "asker", Agent: "asker"}, {ID: "broken", Agent: "broken"}, {ID: "gated", Agent: "gated"}},
	}
}

// frontSet is the calling instance's tree: front transfers to r_analyst
// and r_asker and calls t_* as tools; every r_/t_ agent is remote.
func frontSet(remote string, streaming *bool, gatedTimeout time.Duration) spec.Set {
	ep := func(model string) *spec.Endpoint {
		return &spec.Endpoint{A2A: remote + "/a2a/" + model, Streaming: streaming, PollInterval: 10 * time.Millisecond}
	}
	gated := ep("gated")
	gated.Timeout = gatedTimeout
	return spec.Set{
		Providers: []spec.Provider{{Name: "fs", Type: "scripted", Rules: []scripted.Rule{
			{Agent: "front", Match: "transfer", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "r_analyst"}}},
			{Agent: "front", Match: "plan", Call: &scripted.Call{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "r_asker"}}},
			{Agent: "front", AfterTool: "t_analyst", Reply: "front got: {response.text}"},
			{Agent: "front", Match: "tool", Call: &scripted.Call{Name: "t_analyst", Args: map[string]any{"request": "{last}"}}},
			{Agent: "front", AfterTool: "t_broken", Reply: "front saw error: {response.error}"},
			{Agent: "front", Match: "break", Call: &scripted.Call{Name: "t_broken", Args: map[string]any{"request": "{last}"}}},
			{Agent: "front", AfterTool: "t_asker", Reply: "front resumed: {response.text}"},
			{Agent: "front", Match: "ask", Call: &scripted.Call{Name: "t_asker", Args: map[string]any{"request": "{last}"}}},
			{Agent: "front", AfterTool: "t_gated", Reply: "front waited: {response.text}{response.error}"},
			{Agent: "front", Match: "wait", Call: &scripted.Call{Name: "t_gated", Args: map[string]any{"request": "{last}"}}},
			{Agent: "front", Reply: "front here"},
		}}},
		Agents: []spec.Agent{
			{Name: "front", Model: "fs/front", Description: "Front desk.", SubAgents: []string{"r_analyst", "r_asker"},
				AgentTools: []string{"t_analyst", "t_broken", "t_asker", "t_gated"}},
			{Name: "r_analyst", Description: "Remote analyst.", Endpoint: ep("analyst")},
			{Name: "r_asker", Description: "Remote asker.", Endpoint: ep("asker")},
			{Name: "t_analyst", Description: "Remote analyst as a tool.", Endpoint: ep("analyst")},
			{Name: "t_broken", Description: "Remote failing agent.", Endpoint: ep("broken")},
			{Name: "t_asker", Description: "Remote asker as a tool.", Endpoint: ep("asker")},
			{Name: "t_gated", Description: "Remote gated agent.", Endpoint: gated},
		},
		Models: []spec.VirtualModel{{ID: "front", Agent: "front", RouteNextTurn: "root"}},
	}
}

func boolp(b bool) *bool { return &b }

// modes are the ways the front calls: streaming or polling, v1 or v0.3.
var modes = []struct {
	name      string
	streaming bool
	v03       bool
	want      []string // JSON-RPC methods the remote must see
}{
	{"stream-v1", true, false, []string{"SendStreamingMessage"}},
	{"poll-v1", false, false, []string{"SendMessage"}},
	{"stream-v0.3", true, true, []string{"message/stream"}},
	{"poll-v0.3", false, true, []string{"message/send"}},
}

func TestA2ATransferAndAgentTool(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			remote := newPeer(t, remoteSet(), map[string]*gate{"gated": newGate("gated")})
			remote.v03 = m.v03
			front := newPeer(t, frontSet(remote.srv.URL, boolp(m.streaming), 0), nil)

			body, sid := front.chat("front", "s1", user("please transfer this"))
			content, msg := choice(t, body)
			if content != "analysis of [please transfer this]" {
				t.Errorf("transfer: content %q", content)
			}
			if ag, _ := msg["agentgate"].(map[string]any); ag != nil && ag["author"] != "r_analyst" {
				t.Errorf("transfer: author %v, want r_analyst", ag["author"])
			}
			if got := remote.seen(); !containsAll(got, m.want) || (!m.streaming && slices.ContainsFunc(got, isStreamMethod)) {
				t.Errorf("remote saw %v, want %v among them", got, m.want)
			}

			body, _ = front.chat("front", sid, user("use the tool"))
			if content, _ := choice(t, body); content != "front got: analysis of [use the tool]" {
				t.Errorf("agent tool: content %q", content)
			}
			// A second call from the same session continues the same
			// remote context: one remote session holds both requests.
			body, _ = front.chat("front", sid, user("tool again"))
			if content, _ := choice(t, body); content != "front got: analysis of [tool again]" {
				t.Errorf("agent tool again: content %q", content)
			}
			sub, err := front.store.Get(context.Background(), sessions.GetRequest{AppName: "front", UserID: "anonymous", SessionID: "s1/t_analyst"})
			if err != nil {
				t.Fatal(err)
			}
			last := sub.Events[len(sub.Events)-1]
			ctxID, _ := last.CustomMetadata[a2a.MetaContextID].(string)
			if ctxID == "" || last.CustomMetadata[a2a.MetaState] != "completed" {
				t.Fatalf("sub-conversation's last event metadata %v", last.CustomMetadata)
			}
			rs, err := remote.store.Get(context.Background(), sessions.GetRequest{AppName: "analyst", UserID: "anonymous", SessionID: ctxID})
			if err != nil {
				t.Fatalf("remote session for context %s: %v", ctxID, err)
			}
			var asked []string
			for _, ev := range rs.Events {
				if ev.Author == "user" {
					asked = append(asked, ev.Text())
				}
			}
			if want := []string{"use the tool", "tool again"}; !slices.Equal(asked, want) {
				t.Errorf("remote context got %q, want %q", asked, want)
			}
		})
	}
}

func isStreamMethod(m string) bool { return m == "message/stream" || m == "SendStreamingMessage" }

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// A remote agent that asks for input pauses the calling invocation; the
// client's answer resumes it and continues the same remote task.
func TestA2APausedRemoteResumed(t *testing.T) {
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			remote := newPeer(t, remoteSet(), nil)
			front := newPeer(t, frontSet(remote.srv.URL, boolp(m.streaming), 0), nil)
			for _, tc := range []struct{ name, say, want string }{
				{"agent-tool", "ask the asker", "front resumed: asker chose pro"},
				{"transfer", "which plan", "asker chose pro"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					sid := "p-" + tc.name
					body, _ := front.chat("front", sid, user(tc.say))
					_, msg := choice(t, body)
					calls, _ := msg["tool_calls"].([]any)
					if len(calls) != 1 {
						t.Fatalf("want the remote's question as one tool call, got %v", msg)
					}
					call := calls[0].(map[string]any)
					fn := call["function"].(map[string]any)
					if fn["name"] != a2a.InputRequiredToolName {
						t.Fatalf("tool call %v", fn)
					}
					var args map[string]any
					_ = json.Unmarshal([]byte(fn["arguments"].(string)), &args)
					if args["state"] != "input-required" || !strings.Contains(args["message"].(string), "Which plan?") || args["task_id"] == "" {
						t.Fatalf("pause arguments %v", args)
					}
					body, _ = front.chat("front", sid,
						map[string]any{"role": "assistant", "tool_calls": calls},
						map[string]any{"role": "tool", "tool_call_id": call["id"], "content": "pro"})
					if content, _ := choice(t, body); content != tc.want {
						t.Errorf("after the answer: %q, want %q", content, tc.want)
					}
					// The same remote task went on: its id is the one
					// the pause carried.
					task := remote.rpc("asker", "tasks/get", map[string]any{"id": args["task_id"]})
					res, _ := task["result"].(map[string]any)
					if st, _ := res["status"].(map[string]any); st == nil || st["state"] != "completed" {
						t.Errorf("remote task after the answer: %v", task)
					}
				})
			}
		})
	}
}

// A failing remote and a remote that times out are errors the calling
// model sees; the timed-out task is canceled on the remote.
func TestA2AFailureAndTimeout(t *testing.T) {
	g := newGate("late")
	remote := newPeer(t, remoteSet(), map[string]*gate{"gated": g})
	front := newPeer(t, frontSet(remote.srv.URL, nil, 300*time.Millisecond), nil)

	body, _ := front.chat("front", "", user("break it"))
	content, _ := choice(t, body)
	if !strings.HasPrefix(content, "front saw error: remote agent t_broken: task failed:") || !strings.Contains(content, "MAX_ITERATIONS") && !strings.Contains(content, "max_iterations") {
		t.Errorf("failure: %q", content)
	}

	body, _ = front.chat("front", "", user("wait for it"))
	content, _ = choice(t, body)
	if !strings.Contains(content, "front waited: remote agent t_gated did not finish within 300ms") {
		t.Errorf("timeout: %q", content)
	}
	select {
	case <-g.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the remote run was not canceled")
	}
	if got := remote.seen(); !slices.Contains(got, "CancelTask") {
		t.Errorf("remote saw %v, want CancelTask", got)
	}
}

// Cancelling the calling run (the client goes away) cancels the remote
// task.
func TestA2ACancellationPropagates(t *testing.T) {
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			g := newGate("never")
			remote := newPeer(t, remoteSet(), map[string]*gate{"gated": g})
			front := newPeer(t, frontSet(remote.srv.URL, boolp(m.streaming), 0), nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				body := `{"model": "front", "stream": true, "messages": [{"role": "user", "content": "wait please"}]}`
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, front.srv.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			select {
			case <-g.started:
			case <-time.After(5 * time.Second):
				t.Fatal("the remote agent was never called")
			}
			if !m.streaming {
				waitFor(t, "polling", func() bool { return slices.Contains(remote.seen(), "GetTask") })
			}
			cancel()
			<-done
			select {
			case <-g.canceled:
			case <-time.After(5 * time.Second):
				t.Fatal("the remote run was not canceled")
			}
			if !m.streaming {
				// Polling: only tasks/cancel can stop the remote run. (A
				// stream also ends it by closing; CancelTask follows when
				// the task id had arrived.)
				waitFor(t, "CancelTask at the remote", func() bool { return slices.Contains(remote.seen(), "CancelTask") })
			}
		})
	}
}

// A reload switches the endpoint of a delegate: an invocation running on
// the old remote finishes there, the next call goes to the new one.
func TestA2AReloadSwitchesEndpoint(t *testing.T) {
	oldGate, newG := newGate("from the old remote"), newGate("from the new remote")
	close(newG.release)
	oldRemote := newPeer(t, remoteSet(), map[string]*gate{"gated": oldGate})
	newRemote := newPeer(t, remoteSet(), map[string]*gate{"gated": newG})
	front := newPeer(t, frontSet(oldRemote.srv.URL, nil, 0), nil)

	first := make(chan string, 1)
	go func() {
		body, _ := front.chat("front", "long", user("wait for the old one"))
		c, _ := choice(t, body)
		first <- c
	}()
	select {
	case <-oldGate.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the old remote was never called")
	}
	front.reload(frontSet(newRemote.srv.URL, nil, 0), nil)

	body, _ := front.chat("front", "next", user("wait for the new one"))
	if c, _ := choice(t, body); c != "front waited: from the new remote" {
		t.Errorf("after the reload: %q", c)
	}
	close(oldGate.release)
	select {
	case c := <-first:
		if c != "front waited: from the old remote" {
			t.Errorf("the running invocation: %q", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running invocation did not finish")
	}
	if n := len(newRemote.seen()); n == 0 {
		t.Error("the new remote was never called")
	}
}
