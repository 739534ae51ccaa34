package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/sessions"
)

// The runtime over the Store: what a whole turn costs in round trips, and
// what an outage before the turn's write leaves behind.

// opLog names each round trip a client makes: a pipeline or a command sent
// alone is one. A command is named after what it does: for this package's
// scripts "get" (the open script reading), "create+get" (creating a
// missing session first), "create" (creating only), each with "lock+"
// ahead when it takes the run lease, "append" (with "+release" when it
// releases the lease; "append+release+end" when it also ends a run, see
// appendEndScript), "run write" (the run log's script), "list", "delete",
// "unlock", "renew"; "lock" for
// the lease's SET NX. A pipeline is named after its named commands,
// joined by "+", other commands (the app: hash's HGETALL on Cluster)
// left out.
type opLog struct {
	mu    sync.Mutex
	ops   []string
	names map[string]string // script SHA1 -> name
}

func newOpLog() *opLog {
	l := &opLog{names: map[string]string{}}
	for name, sc := range map[string]*goredis.Script{"open": openScript.Script, "append": appendScript.Script,
		"list": listScript.Script, "delete": deleteScript.Script, "unlock": releaseScript, "renew": renewScript,
		"append+release+end": appendEndScript.Script, "run write": runWriteScript.Script} {
		l.names[sc.Hash()] = name
	}
	return l
}

func (l *opLog) name(cmd goredis.Cmder) string {
	args := cmd.Args()
	switch strings.ToLower(cmd.Name()) {
	case "evalsha", "eval":
		sha, _ := args[1].(string)
		if cmd.Name() == "eval" {
			sum := sha1.Sum([]byte(sha))
			sha = hex.EncodeToString(sum[:])
		}
		name := l.names[sha]
		// ARGV after EVALSHA sha numkeys KEYS...
		nkeys, _ := args[2].(int)
		argv := args[3+nkeys:]
		arg := func(i int) string { s, _ := argv[i].(string); return s }
		switch name {
		case "open":
			name = map[string]string{openRead: "get", openGetOrCreate: "create+get", openCreate: "create"}[arg(5)]
			if arg(3) != "" {
				name = "lock+" + name
			}
		case "append":
			if arg(8) != "" { // the token
				name += "+release"
			}
		}
		return name
	case "set":
		if slices.ContainsFunc(args, func(a any) bool { s, _ := a.(string); return strings.EqualFold(s, "nx") }) {
			return "lock"
		}
	}
	return cmd.Name()
}

func (l *opLog) record(name string) {
	l.mu.Lock()
	l.ops = append(l.ops, name)
	l.mu.Unlock()
}

func (l *opLog) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (l *opLog) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		l.record(l.name(cmd))
		return next(ctx, cmd)
	}
}

func (l *opLog) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		var names []string
		for _, c := range cmds {
			if n := l.name(c); n != "" && n != c.Name() {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			names = append(names, cmds[0].Name())
		}
		l.record(strings.Join(names, "+"))
		return next(ctx, cmds)
	}
}

// during returns the round trips fn makes.
func (l *opLog) during(t *testing.T, fn func() error) []string {
	t.Helper()
	l.mu.Lock()
	l.ops = nil
	l.mu.Unlock()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ops
}

// turnTree is a coordinator that transfers greetings to a greeter and hands
// texts to summarize to a summarizer called as a tool.
// turnRunner runs turnTree's turns on s, as the gateway does (sessions
// created on first use, every turn at the root).
func turnRunner(t testing.TB, s *Store) *agentcore.Runner {
	t.Helper()
	r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: turnTree(t), Sessions: s, AutoCreateSession: true, RouteToRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func turnTree(t testing.TB) agentcore.Agent {
	t.Helper()
	m, err := scripted.New("turns", scripted.Config{Rules: []scripted.Rule{
		{Agent: "coordinator", Match: "hello", Call: &scripted.Call{Name: agentcore.TransferToolName, Args: map[string]any{"agent_name": "greeter"}}},
		{Agent: "coordinator", AfterTool: "summarizer", Reply: "The summary: {response.text}"},
		{Agent: "coordinator", Match: "summarize", Call: &scripted.Call{Name: "summarizer", Args: map[string]any{"request": "{last}"}}},
		{Agent: "greeter", Reply: "Hello there!"},
		{Agent: "summarizer", Reply: "- one\n- two"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	llm := func(cfg agentcore.LlmConfig) *agentcore.LlmAgent {
		cfg.Model = m
		a, err := agentcore.NewLlmAgent(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tool, err := agentcore.NewAgentTool(llm(agentcore.LlmConfig{Name: "summarizer", Description: "Summarizes."}), agentcore.AgentToolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return llm(agentcore.LlmConfig{Name: "coordinator", Tools: []agentcore.Tool{tool},
		SubAgents: []agentcore.Agent{llm(agentcore.LlmConfig{Name: "greeter", Description: "Greets."})}})
}

// gatewayTurn runs one turn as the gateway does: take the session's run
// lock with its read, creating it when it is new (AcquireGetOrCreate), run
// the turn on that read with its lease to its end, let the lock go (the
// turn's write has already released it). It returns the events.
func gatewayTurn(ctx context.Context, s *Store, r *agentcore.Runner, app, id, text string) ([]*sessions.Event, error) {
	sess, release, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: app, UserID: "u", SessionID: id}, 0)
	if release != nil {
		defer release.Release()
	}
	if err != nil {
		return nil, err
	}
	var evs []*sessions.Event
	for ev, err := range r.Run(ctx, agentcore.RunRequest{UserID: "u", SessionID: id, Session: sess, Lease: release, NewMessage: genai.NewContentFromText(text, genai.RoleUser)}).Events() {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// checkTurnRoundTrips asserts the round trips of whole turns in steady
// state (scripts cached, connections open).
func checkTurnRoundTrips(t *testing.T, s *Store) {
	ops := newOpLog()
	s.client.AddHook(ops)
	r := turnRunner(t, s)
	ctx := t.Context()
	for _, text := range []string{"hello", "summarize this"} { // load every script once
		if _, err := gatewayTurn(ctx, s, r, "app", "warm", text); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, session, text string
		want                []string
	}{
		// A new session: the lease, the create (it runs only under this
		// lease, and only if the session is still missing) and the read
		// travel in one pipeline; 4 events stored (the user's message, the
		// transfer call and its response, the greeter's answer) in one
		// append that also releases the lease: two round trips in all.
		{"transfer, new session", "s1", "hello", []string{"lock+create+get", "append+release"}},
		// An existing session: the same two (the create finds the session
		// and does nothing).
		{"transfer", "s1", "hello", []string{"lock+create+get", "append+release"}},
		// The sub-conversation is a session of its own: read, and created
		// on the first call, in one round trip, then written when its turn
		// ends, before the turn's own write.
		{"agent tool, first call", "s1", "summarize this", []string{"lock+create+get", "create+get", "append", "append+release"}},
		{"agent tool, next call", "s1", "summarize that", []string{"lock+create+get", "create+get", "append", "append+release"}},
		{"agent tool, new session", "s2", "summarize this", []string{"lock+create+get", "create+get", "append", "append+release"}},
	}
	for _, tt := range tests {
		var evs []*sessions.Event
		got := ops.during(t, func() error {
			var err error
			evs, err = gatewayTurn(ctx, s, r, "app", tt.session, tt.text)
			return err
		})
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s turn: round trips %v, want %v", tt.name, got, tt.want)
		}
		if len(evs) < 3 {
			t.Errorf("%s turn: %d events, want a whole turn", tt.name, len(evs))
		}
	}
	stored, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Events) != 4*4 {
		t.Errorf("%d events stored after four turns, want 16", len(stored.Events))
	}
	// The sessions created with their turns are listed, each once, with
	// their sub-conversations.
	list, err := s.List(ctx, sessions.ListRequest{AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ls := range list.Sessions {
		ids = append(ids, ls.ID)
	}
	slices.Sort(ids)
	if want := []string{"s1", "s1/summarizer", "s2", "s2/summarizer", "warm", "warm/summarizer"}; !slices.Equal(ids, want) {
		t.Errorf("listed sessions %v, want %v", ids, want)
	}
}

func TestTurnRoundTrips(t *testing.T) {
	srv := startServer(t)
	checkTurnRoundTrips(t, newStore(t, Config{URL: srv.URL(""), TTL: time.Hour}))
}

// Redis goes away during a turn, before the turn's write: the run reports
// ErrUnavailable after the events it streamed, and once Redis is back the
// session holds exactly what it held before the turn.
func TestTurnRedisDownBeforeWrite(t *testing.T) {
	srv := startServer(t, "--appendonly", "yes", "--appendfsync", "always")
	s := newStore(t, Config{URL: srv.URL(fastFail), TTL: time.Hour})
	ctx := t.Context()
	m, err := scripted.New("turns", scripted.Config{Rules: []scripted.Rule{
		{Agent: "helper", AfterTool: "outage", Reply: "Done."},
		{Agent: "helper", Match: "break", Call: &scripted.Call{Name: "outage"}},
		{Agent: "helper", Reply: "Hi."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	outage, err := agentcore.NewFunctionTool(agentcore.FunctionToolConfig{Name: "outage", Description: "Stops Redis."},
		func(ctx context.Context, tc *agentcore.ToolContext, _ map[string]any) (map[string]any, error) {
			tc.SetState("k", "lost")
			tc.SetState("user:k", "lost")
			tc.SetState("app:k", "lost")
			srv.Stop()
			return map[string]any{"ok": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	helper, err := agentcore.NewLlmAgent(agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{outage}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: helper, Sessions: s, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	run := func(text string) ([]*sessions.Event, error) {
		var evs []*sessions.Event
		for ev, err := range r.Run(ctx, agentcore.RunRequest{UserID: "u", SessionID: "s1", NewMessage: genai.NewContentFromText(text, genai.RoleUser)}).Events() {
			if err != nil {
				return evs, err
			}
			evs = append(evs, ev)
		}
		return evs, nil
	}
	if _, err := run("hi"); err != nil {
		t.Fatal(err)
	}
	before, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}

	evs, err := run("break")
	if !errors.Is(err, sessions.ErrUnavailable) {
		t.Fatalf("run with Redis stopped before the write: err = %v, want ErrUnavailable", err)
	}
	if len(evs) != 3 || evs[2].Text() != "Done." {
		t.Errorf("streamed before the error: %d events, want the call, its response and the answer", len(evs))
	}

	srv.Start()
	waitUp(t, s)
	after, err := s.Get(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, ev := range after.Events {
		got = append(got, ev.ID)
	}
	for _, ev := range before.Events {
		want = append(want, ev.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("events after the outage %v, want those before the turn %v", got, want)
	}
	for _, k := range []string{"k", "user:k", "app:k"} {
		if v, ok := after.State[k]; ok {
			t.Errorf("state %s = %v after a turn that was not stored", k, v)
		}
	}
	// The next turn runs on the session as it was.
	if _, err := run("hi again"); err != nil {
		t.Fatalf("turn after Redis came back: %v", err)
	}
}

// The lease taken with the read is gone once the turn is written: another
// run can take the session at once, and the holder's release costs nothing.
func TestTurnWriteReleasesLease(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL(""), TTL: time.Hour})
	ops := newOpLog()
	s.client.AddHook(ops)
	r := turnRunner(t, s)
	ctx := t.Context()
	sess, release, err := s.AcquireGet(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "l1"}, 0)
	if !errors.Is(err, sessions.ErrNotFound) || release == nil {
		t.Fatalf("AcquireGet on a new session: %v (release %v)", err, release != nil)
	}
	// Busy while held.
	if _, _, err := s.AcquireGet(ctx, sessions.GetRequest{AppName: "app", UserID: "u", SessionID: "l1"}, 0); !errors.Is(err, sessions.ErrConflict) {
		t.Fatalf("second AcquireGet: %v, want ErrConflict", err)
	}
	if sess, err = s.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u", SessionID: "l1"}); err != nil {
		t.Fatal(err)
	}
	for _, err := range r.Run(ctx, agentcore.RunRequest{UserID: "u", SessionID: "l1", Session: sess, Lease: release, NewMessage: genai.NewContentFromText("hello", genai.RoleUser)}).Events() {
		if err != nil {
			t.Fatal(err)
		}
	}
	other, err := s.Acquire(ctx, "app", "u", "l1", 0)
	if err != nil {
		t.Fatalf("the written turn did not free the lease: %v", err)
	}
	if got := ops.during(t, func() error { release.Release(); return nil }); len(got) != 0 {
		t.Errorf("release after the write made round trips %v", got)
	}
	// The first holder's release did not free the second holder's lease.
	if _, err := s.Acquire(ctx, "app", "u", "l1", 0); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("lease of the second holder: %v, want ErrConflict", err)
	}
	other.Release()
}
