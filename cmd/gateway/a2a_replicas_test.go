package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// a2aRPC posts a JSON-RPC request to the A2A route of model desk on base,
// and decodes its answer.
func a2aRPC(t *testing.T, base, method, params string) map[string]any {
	t.Helper()
	var out map[string]any
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	if err := json.Unmarshal([]byte(mustRead(t, http.MethodPost, base+"/a2a/desk", body, 200)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// taskField reads a field of a JSON-RPC answer's result (or error) by
// path.
func taskField(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// a2aSendNow sends text in context ctxID as user u1 with blocking false
// (returnImmediately) and returns the task's id and state.
func a2aSendNow(t *testing.T, base, ctxID, text string) (string, any) {
	t.Helper()
	res := a2aRPC(t, base, "message/send", `{"message":{"messageId":"m-`+text+`","role":"user","contextId":"`+ctxID+
		`","parts":[{"kind":"text","text":"`+text+`"}],"metadata":{"user":"u1"}},"configuration":{"blocking":false}}`)
	id, _ := taskField(res, "result", "id").(string)
	if id == "" {
		t.Fatalf("message/send: %v", res)
	}
	return id, taskField(res, "result", "status", "state")
}

func taskQuery(id, user string) string {
	return `{"id":"` + id + `","metadata":{"user":"` + user + `"}}`
}

// Two gateway binaries on one private Redis: an A2A task sent with
// blocking false (returnImmediately) to A is followed on B with
// tasks/get, working while A's upstream call is held, then completed with
// its artifact; another user's tasks/get on B is -32001. A task running
// on A is canceled on B (answered canceled, A's upstream call aborted);
// one waiting in its session's line on A (model multitask enqueue) is
// canceled on B too, and never runs.
func TestReplicasA2ATasks(t *testing.T) {
	r := heldReplicas(t, "")
	r.enqueue(t)
	up, a, b := r.up, r.start(t), r.start(t)
	waitState := func(base, id, want string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := a2aRPC(t, base, "tasks/get", taskQuery(id, "u1"))
			if taskField(got, "result", "status", "state") == want {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s on %s: %v, want %s", id, base, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	id, st := a2aSendNow(t, a, "c1", "hi")
	if st != "working" {
		t.Errorf("the task answered at once is %v", st)
	}
	<-up.started
	if got := a2aRPC(t, b, "tasks/get", taskQuery(id, "u1")); taskField(got, "result", "status", "state") != "working" ||
		taskField(got, "result", "contextId") != "c1" {
		t.Errorf("tasks/get on B while it runs on A: %v", got)
	}
	if got := a2aRPC(t, b, "tasks/get", taskQuery(id, "u2")); taskField(got, "error", "code") != float64(-32001) {
		t.Errorf("another user's task on B: %v", got)
	}
	up.release <- struct{}{}
	done := waitState(b, id, "completed")
	if arts, _ := taskField(done, "result", "artifacts").([]any); len(arts) != 1 || taskText(arts[0]) != "ab" {
		t.Errorf("the completed task on B: %v", done)
	}

	// A task running on A, canceled on B.
	id, _ = a2aSendNow(t, a, "c2", "long")
	<-up.started
	if got := a2aRPC(t, b, "tasks/cancel", taskQuery(id, "u1")); taskField(got, "result", "status", "state") != "canceled" {
		t.Errorf("tasks/cancel on B of a task running on A: %v", got)
	}
	select {
	case <-up.aborted:
	case <-time.After(30 * time.Second):
		t.Fatal("A's upstream call was not aborted")
	}
	if got := a2aRPC(t, a, "tasks/get", taskQuery(id, "u1")); taskField(got, "result", "status", "state") != "canceled" {
		t.Errorf("the canceled task on A: %v", got)
	}
	if got := a2aRPC(t, b, "tasks/cancel", taskQuery(id, "u1")); taskField(got, "error", "code") != float64(-32002) {
		t.Errorf("canceling it again on B: %v", got)
	}

	// A task waiting in its session's line on A, canceled on B.
	first, _ := a2aSendNow(t, a, "c3", "one")
	<-up.started
	queued, st := a2aSendNow(t, a, "c3", "two")
	if st != "submitted" {
		t.Errorf("the task sent while its context is busy is %v", st)
	}
	if got := a2aRPC(t, b, "tasks/get", taskQuery(queued, "u1")); taskField(got, "result", "status", "state") != "submitted" {
		t.Errorf("the queued task on B: %v", got)
	}
	if got := a2aRPC(t, b, "tasks/cancel", taskQuery(queued, "u1")); taskField(got, "result", "status", "state") != "canceled" {
		t.Errorf("tasks/cancel on B of a task queued on A: %v", got)
	}
	up.release <- struct{}{}
	waitState(b, first, "completed")
	waitRuns(t, b, "c3", func(list []listedRun) bool {
		return len(list) == 2 && list[0] == listedRun{first, "completed"} && list[1] == listedRun{queued, "cancelled"}
	})
	up.mu.Lock()
	n := len(up.calls)
	up.mu.Unlock()
	if n != 3 {
		t.Errorf("the upstream was called %d times, want 3 (the canceled queued task never ran)", n)
	}
}

// taskText is the text of an artifact's (or message's) first part.
func taskText(v any) string {
	parts, _ := taskField(v, "parts").([]any)
	if len(parts) == 0 {
		return ""
	}
	text, _ := taskField(parts[0], "text").(string)
	return text
}
