package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// statuses are the statuses of a runs list, in its order.
func statuses(list []listedRun) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = r.Status
	}
	return out
}

// are is a waitRuns condition: the runs have these statuses, in order.
func are(want ...string) func([]listedRun) bool {
	return func(list []listedRun) bool { return slices.Equal(statuses(list), want) }
}

// queuedTurn posts a streamed run that waits for its session, and gives
// its status and frames once it ended.
type queuedTurn struct {
	status int
	frames []string
}

func sendQueued(t *testing.T, base, body string) <-chan queuedTurn {
	t.Helper()
	out := make(chan queuedTurn, 1)
	go func() {
		resp, err := do(t, http.MethodPost, base+"/run_sse", body)
		if err != nil {
			out <- queuedTurn{}
			return
		}
		defer resp.Body.Close()
		out <- queuedTurn{status: resp.StatusCode, frames: sseFrames(t, bufio.NewReader(resp.Body), 0)}
	}()
	return out
}

func (u *heldUpstream) lastCall() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[len(u.calls)-1]
}

// enqueue makes the replicas' model desk multitask enqueue.
func (r replicas) enqueue(t *testing.T) {
	t.Helper()
	conf, err := os.ReadFile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	conf = []byte(strings.Replace(string(conf), "{id: desk, agent: desk}", "{id: desk, agent: desk, multitask: enqueue}", 1))
	if err := os.WriteFile(r.cfg, conf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two gateway binaries on one private Redis, the model's multitask
// enqueue (config): turns sent on either replica while one runs wait in
// the session's line, listed queued by both, and run in the order they
// came, each seeing the turns before it (the upstream is sent them); a
// turn with multitaskStrategy interrupt on B stops the run going on A (its
// upstream call aborted, its client told, its log ending CANCELLED with
// its user message kept), then runs.
func TestReplicasMultitask(t *testing.T) {
	r := heldReplicas(t, "")
	r.enqueue(t)
	up, a, b := r.up, r.start(t), r.start(t)

	t.Run("enqueue", func(t *testing.T) {
		mustRead(t, http.MethodPost, a+"/apps/desk/users/u1/sessions", `{"sessionId":"q"}`, 200)
		resp, br, _ := startTurn(t, a, turnBody("q", "x1", ""))
		defer resp.Body.Close()
		<-up.started
		second := sendQueued(t, b, turnBody("q", "x2", ""))
		waitRuns(t, a, "q", are("running", "queued"))
		third := sendQueued(t, a, turnBody("q", "x3", `,"multitaskStrategy":"enqueue"`))
		list := waitRuns(t, b, "q", are("running", "queued", "queued"))
		up.release <- struct{}{}
		if rest := sseFrames(t, br, 0); len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"text":"ab"`) {
			t.Errorf("the first turn's last frames %q", rest)
		}
		<-up.started
		if got, want := up.lastCall(), []string{"user:x1", "assistant:ab", "user:x2"}; !slices.Equal(got, want) {
			t.Errorf("the second turn's call was sent %q, want %q", got, want)
		}
		up.release <- struct{}{}
		<-up.started
		if got, want := up.lastCall(), []string{"user:x1", "assistant:ab", "user:x2", "assistant:ab", "user:x3"}; !slices.Equal(got, want) {
			t.Errorf("the third turn's call was sent %q, want %q", got, want)
		}
		up.release <- struct{}{}
		for i, c := range []<-chan queuedTurn{second, third} {
			r := <-c
			if r.status != http.StatusOK || len(r.frames) == 0 || !strings.HasPrefix(r.frames[0], list[i+1].InvocationID+":0 ") ||
				!strings.Contains(r.frames[len(r.frames)-1], `"text":"ab"`) {
				t.Errorf("turn %d (%s): %d %q", i+2, list[i+1].InvocationID, r.status, r.frames)
			}
		}
		waitRuns(t, a, "q", are("completed", "completed", "completed"))
	})

	// A background response created on A while B's run holds the session
	// is answered queued, waits in the session's line (listed queued by
	// both), and runs on A once B's run ended, seeing it; both replicas
	// then read it completed.
	t.Run("background", func(t *testing.T) {
		mustRead(t, http.MethodPost, b+"/apps/desk/users/u1/sessions", `{"sessionId":"bg"}`, 200)
		resp, br, _ := startTurn(t, b, turnBody("bg", "x1", ""))
		defer resp.Body.Close()
		<-up.started
		var created struct{ ID, Status string }
		body := `{"model":"desk","user":"u1","conversation":"bg","input":"r2","background":true}`
		if err := json.Unmarshal([]byte(mustRead(t, http.MethodPost, a+"/v1/responses", body, 200)), &created); err != nil || created.Status != "queued" {
			t.Fatalf("the background response on a busy session: %+v %v", created, err)
		}
		waitRuns(t, b, "bg", are("running", "queued"))
		if st := responseStatus(t, b, created.ID); st != "queued" {
			t.Errorf("B polls the waiting response %s", st)
		}
		up.release <- struct{}{}
		if rest := sseFrames(t, br, 0); len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"text":"ab"`) {
			t.Errorf("B's turn's last frames %q", rest)
		}
		<-up.started
		if got, want := up.lastCall(), []string{"user:x1", "assistant:ab", "user:r2"}; !slices.Equal(got, want) {
			t.Errorf("the background response's call was sent %q, want %q", got, want)
		}
		up.release <- struct{}{}
		deadline := time.Now().Add(30 * time.Second)
		for responseStatus(t, b, created.ID) != "completed" {
			if time.Now().After(deadline) {
				t.Fatalf("the background response on B: %s", responseStatus(t, b, created.ID))
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, base := range []string{a, b} {
			if got := mustRead(t, http.MethodGet, base+"/v1/responses/"+created.ID, "", 200); !strings.Contains(got, `"text":"ab"`) {
				t.Errorf("the completed response on %s: %s", base, got)
			}
		}
		waitRuns(t, a, "bg", are("completed", "completed"))
	})

	t.Run("interrupt", func(t *testing.T) {
		mustRead(t, http.MethodPost, a+"/apps/desk/users/u1/sessions", `{"sessionId":"i"}`, 200)
		resp, br, inv := startTurn(t, a, turnBody("i", "x1", ""))
		defer resp.Body.Close()
		<-up.started
		second := sendQueued(t, b, turnBody("i", "x2", `,"multitaskStrategy":"interrupt"`))
		select {
		case <-up.aborted:
		case <-time.After(30 * time.Second):
			t.Fatal("A's upstream call was not aborted")
		}
		if rest := sseFrames(t, br, 0); len(rest) == 0 || !strings.Contains(rest[len(rest)-1], `"error"`) {
			t.Errorf("A's client after the interrupt: %q", rest)
		}
		<-up.started
		if got, want := up.lastCall(), []string{"user:x1", "user:x2"}; !slices.Equal(got, want) {
			t.Errorf("the interrupting turn's call was sent %q, want %q", got, want)
		}
		up.release <- struct{}{}
		if r := <-second; r.status != http.StatusOK || len(r.frames) == 0 || !strings.Contains(r.frames[len(r.frames)-1], `"text":"ab"`) {
			t.Errorf("the interrupting turn on B: %d %q", r.status, r.frames)
		}
		list := waitRuns(t, b, "i", are("cancelled", "completed"))
		if list[0].InvocationID != inv {
			t.Errorf("runs %v, the first should be %s", list, inv)
		}
		ev, err := do(t, http.MethodGet, b+"/apps/desk/users/u1/sessions/i/runs/"+inv+"/events", "")
		if err != nil {
			t.Fatal(err)
		}
		frames := sseFrames(t, bufio.NewReader(ev.Body), 0)
		ev.Body.Close()
		if len(frames) != 2 || !strings.Contains(frames[1], `"errorCode":"CANCELLED"`) {
			t.Errorf("the interrupted run's frames on B: %q", frames)
		}
	})
}
