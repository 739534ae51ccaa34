package gateway_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

// mapTasks is a gateway.TaskStore in a map, shared by the gateways of a
// test as Redis is by replicas.
type mapTasks struct {
	mu   sync.Mutex
	recs map[string][]byte
	ttls map[string]time.Duration
	puts map[string]int // writes of each record
}

func taskKey(app, user, id string) string { return app + "\x00" + user + "\x00" + id }

func (m *mapTasks) PutTask(_ context.Context, app, user, id string, record []byte, retention time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[taskKey(app, user, id)], m.ttls[taskKey(app, user, id)] = slices.Clone(record), retention
	m.puts[taskKey(app, user, id)]++
	return nil
}

func (m *mapTasks) GetTask(_ context.Context, app, user, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.recs[taskKey(app, user, id)]
	if !ok {
		return nil, sessions.ErrNotFound
	}
	return slices.Clone(b), nil
}

// taskPeers are two gateways on one session store and one task store, as
// two replicas on one Redis (without a run index: nothing runs across).
func taskPeers(t *testing.T) (a, b *peer, tasks *mapTasks) {
	tasks = &mapTasks{recs: map[string][]byte{}, ttls: map[string]time.Duration{}, puts: map[string]int{}}
	store := sessions.NewMemoryService(sessions.MemoryConfig{})
	mk := func() *peer {
		p := &peer{t: t, store: store, remotes: a2a.NewRemotes(a2a.NewClient(a2a.ClientConfig{}), nil)}
		var err error
		if p.gw, err = gateway.New(gateway.Config{Catalog: p.build(remoteSet(), nil), Sessions: store, Tasks: tasks, KeepaliveInterval: time.Hour}); err != nil {
			t.Fatal(err)
		}
		p.srv = httptest.NewServer(p)
		t.Cleanup(p.srv.Close)
		return p
	}
	return mk(), mk(), tasks
}

// A task's record is in the task store: the other gateway answers
// tasks/get with it (historyLength honoured), not to another user; a
// paused task is resumed on the other one, which carries its history on,
// and the first then shows the task as it ended there, not as it paused
// here; a paused task canceled on the other one is canceled on both, and
// cannot be answered any more; a task that is over cannot be canceled.
func TestA2ATaskStoreSharesTasks(t *testing.T) {
	a, b, tasks := taskPeers(t)
	res := a.rpc("asker", "message/send", map[string]any{"message": textMsg("help me choose", nil)})
	id, ctxID := dig(res, "result", "id").(string), dig(res, "result", "contextId")
	got := b.rpc("asker", "tasks/get", map[string]any{"id": id})
	if dig(got, "result", "status", "state") != "input-required" || dig(got, "result", "contextId") != ctxID ||
		dig(got, "result", "status", "message", "parts", 1, "data", "pendingCalls", 0, "name") != "get_user_choice" ||
		len(dig(got, "result", "history").([]any)) != 2 {
		t.Fatalf("the paused task on the other gateway: %v", got)
	}
	if tasks.ttls[taskKey("asker", "anonymous", id)] != time.Hour {
		t.Errorf("the task is kept %v, want an hour", tasks.ttls[taskKey("asker", "anonymous", id)])
	}
	if got := b.rpc("asker", "GetTask", map[string]any{"id": id, "historyLength": 1}); len(dig(got, "result", "history").([]any)) != 1 ||
		dig(got, "result", "status", "state") != "TASK_STATE_INPUT_REQUIRED" {
		t.Errorf("GetTask historyLength 1 on the other gateway: %v", got)
	}
	if got := b.rpc("asker", "tasks/get", map[string]any{"id": id, "metadata": map[string]any{"user": "mallory"}}); dig(got, "error", "code") != float64(-32001) {
		t.Errorf("another user's task: %v", got)
	}

	res = b.rpc("asker", "message/send", map[string]any{"message": textMsg("pro", map[string]any{"taskId": id})})
	if dig(res, "result", "status", "state") != "completed" || dig(res, "result", "contextId") != ctxID ||
		dig(res, "result", "artifacts", 0, "parts", 0, "text") != "asker chose pro" || len(dig(res, "result", "history").([]any)) != 4 {
		t.Fatalf("the task resumed on the other gateway: %v", res)
	}
	if got := a.rpc("asker", "tasks/get", map[string]any{"id": id}); dig(got, "result", "status", "state") != "completed" ||
		dig(got, "result", "artifacts", 0, "parts", 0, "text") != "asker chose pro" || len(dig(got, "result", "history").([]any)) != 4 {
		t.Errorf("the first gateway after the other resumed the task: %v", got)
	}
	if got := a.rpc("asker", "tasks/cancel", map[string]any{"id": id}); dig(got, "error", "code") != float64(-32002) {
		t.Errorf("canceling a completed task: %v", got)
	}

	res = a.rpc("asker", "message/send", map[string]any{"message": textMsg("again", nil)})
	id = dig(res, "result", "id").(string)
	if got := b.rpc("asker", "tasks/cancel", map[string]any{"id": id}); dig(got, "result", "status", "state") != "canceled" {
		t.Fatalf("canceling a paused task on the other gateway: %v", got)
	}
	if got := a.rpc("asker", "tasks/get", map[string]any{"id": id}); dig(got, "result", "status", "state") != "canceled" ||
		dig(got, "result", "status", "message", "parts", 0, "text") != "The task was canceled." {
		t.Errorf("the first gateway after the other canceled its paused task: %v", got)
	}
	if got := a.rpc("asker", "message/send", map[string]any{"message": textMsg("pro", map[string]any{"taskId": id})}); dig(got, "error", "code") != float64(-32602) {
		t.Errorf("answering the canceled task: %v", got)
	}
}

// A record in the task store that is not one the gateway wrote is an
// internal error, on tasks/get and tasks/cancel alike.
func TestA2ATaskStoreBadRecord(t *testing.T) {
	_, b, tasks := taskPeers(t)
	for i, rec := range []string{`not json`, `{}`, `{"task":7}`, `{"task":{"kind":"message","messageId":"m"}}`,
		`{"task":{"kind":"task","id":"e-other","status":{"state":"working","timestamp":"2026-01-01T00:00:00Z"}}}`,
		`{"task":{"kind":"task","id":"e-bad","status":{"state":"working"}}}`} {
		_ = tasks.PutTask(context.Background(), "analyst", "anonymous", "e-bad", []byte(rec), time.Hour)
		for _, m := range []string{"tasks/get", "tasks/cancel"} {
			if got := b.rpc("analyst", m, map[string]any{"id": "e-bad"}); dig(got, "error", "code") != float64(-32603) {
				t.Errorf("record %d, %s: %v", i, m, got)
			}
		}
	}
}

// A blocking message/send of a new task writes its record once, at its
// end (nobody has its id before); a follow-up of a task, whose id the
// client has, writes its start as well.
func TestA2ATaskStoreWritesOfABlockingSend(t *testing.T) {
	a, _, tasks := taskPeers(t)
	res := a.rpc("asker", "message/send", map[string]any{"message": textMsg("help me choose", nil)})
	id := dig(res, "result", "id").(string)
	if n := tasks.puts[taskKey("asker", "anonymous", id)]; n != 1 {
		t.Errorf("a blocking send of a new task wrote its record %d times, want 1 (its end)", n)
	}
	res = a.rpc("asker", "message/send", map[string]any{"message": textMsg("pro", map[string]any{"taskId": id})})
	if dig(res, "result", "status", "state") != "completed" {
		t.Fatalf("the follow-up: %v", res)
	}
	if n := tasks.puts[taskKey("asker", "anonymous", id)]; n != 3 {
		t.Errorf("after a follow-up the record was written %d times, want 3 (working, then its end)", n)
	}
}
