package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// cmdLog records the arguments of every command a client sends.
type cmdLog struct {
	mu   sync.Mutex
	cmds [][]any
}

func (l *cmdLog) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (l *cmdLog) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		l.mu.Lock()
		l.cmds = append(l.cmds, slices.Clone(cmd.Args()))
		l.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (l *cmdLog) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		l.mu.Lock()
		for _, cmd := range cmds {
			l.cmds = append(l.cmds, slices.Clone(cmd.Args()))
		}
		l.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (l *cmdLog) take() [][]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cmds
	l.cmds = nil
	return c
}

// A luaScript's call sends what goredis.Script.Run sends for the same keys
// and arguments (EVALSHA, then EVAL after a NOSCRIPT), gets the same
// replies, and routes by its first key on Cluster as Run does.
func TestLuaScriptCallAsRun(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{URL: srv.URL(""), KeyPrefix: "luascript:"})
	ctx := context.Background()
	log := &cmdLog{}
	st.client.AddHook(log)
	sc := newLuaScript(`redis.call('SET', KEYS[1], ARGV[1]); return {KEYS, ARGV}`)
	for i, tc := range []struct {
		keys []string
		args []any
	}{
		{[]string{"k1"}, []any{"", 0, int64(1) << 40, []byte("bytes"), []byte(nil), 1.5}},
		{[]string{"k1", "k2", "k3"}, []any{"x", "y", "z", 7}},
	} {
		for _, flush := range []bool{true, false} { // NOSCRIPT first, then cached
			if flush {
				if err := st.client.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			log.take()
			want, wantErr := sc.Script.Run(ctx, st.client, tc.keys, tc.args...).Result()
			wantCmds := log.take()
			if flush {
				if err := st.client.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				log.take()
			}
			got, err := sc.run(ctx, st.client, append(sc.call(len(tc.args), tc.keys...), tc.args...)).Result()
			gotCmds := log.take()
			if err != nil || wantErr != nil {
				t.Fatalf("case %d: %v; Run: %v", i, err, wantErr)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("case %d, flushed %v: reply (-Run +call):\n%s", i, flush, d)
			}
			if d := cmp.Diff(fmt.Sprint(wantCmds), fmt.Sprint(gotCmds)); d != "" {
				t.Errorf("case %d, flushed %v: commands (-Run +call):\n%s", i, flush, d)
			}
			if n := len(gotCmds); n != map[bool]int{true: 2, false: 1}[flush] {
				t.Errorf("case %d, flushed %v: %d commands %v", i, flush, n, gotCmds)
			}
		}
	}
}

// A session's turn on a server that lost its scripts (a restart, a
// failover) sends them again and goes on.
func TestTurnAfterScriptFlush(t *testing.T) {
	srv := startServer(t)
	st := newStore(t, Config{URL: srv.URL(""), KeyPrefix: "flushed:"})
	ctx := context.Background()
	for i := range 3 {
		if err := st.client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprint("s", i)
		sess, lease, err := st.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: "a", UserID: "u", SessionID: id}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ev := &sessions.Event{ID: "e" + id, InvocationID: "i", Author: "user"}
		if err := st.AppendEventsRelease(ctx, sess, []*sessions.Event{ev}, lease); err != nil {
			t.Fatal(err)
		}
		if !lease.(*heldLease).released.Load() {
			t.Errorf("turn %d: the lease was not released with the write", i)
		}
		got, err := st.Get(ctx, sessions.GetRequest{AppName: "a", UserID: "u", SessionID: id})
		if err != nil || len(got.Events) != 1 || got.Events[0].ID != ev.ID {
			t.Fatalf("turn %d: read %+v, %v", i, got, err)
		}
	}
}

// heldLease.locks names the lease's own session only, escaped names
// included.
func TestHeldLeaseLocks(t *testing.T) {
	type name struct{ app, user, id string }
	st := &Store{prefix: "p:"}
	for _, own := range []name{{"a", "u", "s"}, {"a|b", "{u}", "s/sub"}, {"%7C", "u%", ""}} {
		sess := &sessions.Session{AppName: own.app, UserID: own.user, ID: own.id}
		l := &heldLease{s: st, key: st.lockKey(own.app, own.user, own.id)}
		if !l.locks(sess) {
			t.Errorf("lease %q does not lock its session %+v", l.key, own)
		}
		for _, other := range []name{
			{own.app + "x", own.user, own.id}, {own.app, own.user + "x", own.id},
			{own.app, own.user, own.id + "x"}, {own.app, own.user, strings.TrimSuffix("x"+own.id, "s")},
			{own.user, own.app, own.id}, {"", "", ""},
		} {
			want := st.lockKey(other.app, other.user, other.id) == l.key
			if got := l.locks(&sessions.Session{AppName: other.app, UserID: other.user, ID: other.id}); got != want {
				t.Errorf("lease %q locks %+v: %v, want %v", l.key, other, got, want)
			}
		}
		if (&heldLease{s: &Store{prefix: "q:"}, key: l.key}).locks(sess) {
			t.Errorf("a lease of prefix q: locks a session of p:")
		}
	}
}
