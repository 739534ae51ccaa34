package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
)

// backgroundOn is a background response's request on s1 of u1, saying
// text.
func backgroundOn(text string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "fake", User: openai.String("u1"), Background: openai.Bool(true),
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String("s1")},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
}

// createAtOnce creates a background response, which must be answered
// while the run that holds its session still holds it (it is never let
// go here): a create that waited for its turn would not be.
func createAtOnce(t *testing.T, c openai.Client, params responses.ResponseNewParams, opts ...option.RequestOption) *responses.Response {
	t.Helper()
	type created struct {
		r   *responses.Response
		err error
	}
	out := make(chan created, 1)
	go func() {
		r, err := c.Responses.New(context.Background(), params, opts...)
		out <- created{r, err}
	}()
	select {
	case got := <-out:
		if got.err != nil {
			t.Fatal(got.err)
		}
		return got.r
	case <-time.After(10 * time.Second):
		t.Fatal("the create of a background response waited for the session")
		return nil
	}
}

// pollStatus waits until background response id has status want.
func pollStatus(t *testing.T, c openai.Client, id string, want responses.ResponseStatus) *responses.Response {
	t.Helper()
	var got *responses.Response
	waitFor(t, "response "+id+" "+string(want), func() bool {
		var err error
		got, err = c.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status == want
	})
	return got
}

// A background response on a busy session with enqueue is answered queued
// at once and waits in the session's line without its client, listed as
// a queued run named by the response id; polls show it queued, then
// in_progress once the run ahead ended, then completed, its model call
// seeing the turn before it.
func TestMultitaskBackgroundResponseWaitsInLine(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		c := f.client()
		r := createAtOnce(t, c, backgroundOn("r2"))
		if r.Status != responses.ResponseStatusQueued || !r.Background {
			t.Fatalf("created %s (background %v), want queued", r.Status, r.Background)
		}
		if ids := f.waitRuns("running", "queued"); ids[1] != r.ID {
			t.Errorf("the queued run is %s, want the response's id %s", ids[1], r.ID)
		}
		pollStatus(t, c, r.ID, responses.ResponseStatusQueued)
		// A stream attached while it waits follows it to its end.
		streamed := make(chan []byte, 1)
		go func() {
			_, body := f.getRaw("/v1/responses/" + r.ID + "?stream=true")
			streamed <- body
		}()
		m.release <- struct{}{}
		result(t, first)
		if got := next(t, m.started, "the queued response's call"); got != "r2" {
			t.Errorf("the call after the first answered %q", got)
		}
		pollStatus(t, c, r.ID, responses.ResponseStatusInProgress)
		m.release <- struct{}{}
		pollStatus(t, c, r.ID, responses.ResponseStatusCompleted)
		f.waitRuns("completed", "completed")
		select {
		case body := <-streamed:
			frames := responsescheck.Frames(body)
			if err := responsescheck.Stream(body); err != nil || len(frames) == 0 || frames[len(frames)-1].Event != "response.completed" {
				t.Errorf("the stream attached while queued: %v\n%s", err, body)
			}
		case <-time.After(10 * time.Second):
			t.Error("the stream attached while queued did not end")
		}
		if got, want := f.sessionTexts(), []string{"user:x1", "solo:re:x1", "user:r2", "solo:re:r2"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
		reqs := f.fakes["solo"].requests()
		if got := transcript(reqs[len(reqs)-1]); !slices.Equal(got, []string{"user:x1", "model:re:x1", "user:r2"}) {
			t.Errorf("the queued response's call was sent %q", got)
		}
	})
}

// A queued background response cancelled leaves the line: cancelled at
// once (the run ahead still going), its record ended before its run (the
// cancel, and a GET right after it, read it cancelled), its run cancelled
// with a CANCELLED frame, its input never in the session; the session is
// free when the run ahead ends.
func TestMultitaskBackgroundResponseCancelledInLine(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskEnqueue, store)
		c := f.client()
		r := createAtOnce(t, c, backgroundOn("r2"))
		f.waitRuns("running", "queued")
		got, err := c.Responses.Cancel(t.Context(), r.ID)
		if err != nil || got.Status != responses.ResponseStatusCancelled {
			t.Fatalf("cancel: %v %v", got, err)
		}
		if got, err := c.Responses.Get(t.Context(), r.ID, responses.ResponseGetParams{}); err != nil || got.Status != responses.ResponseStatusCancelled {
			t.Errorf("GET right after the cancel: %v %v", got, err)
		}
		f.waitRuns("running", "cancelled")
		if frames := f.runFrames(r.ID); len(frames) != 1 || !strings.Contains(frames[0], `"errorCode":"CANCELLED"`) {
			t.Errorf("the cancelled run's frames %v", frames)
		}
		m.release <- struct{}{}
		result(t, first)
		m.release <- struct{}{}
		if r := result(t, f.sendTurn(t.Context(), "x3", `"multitaskStrategy":"reject"`)); r.status != http.StatusOK {
			t.Errorf("a turn after the cancelled one: %d %s", r.status, r.body)
		}
		if got, want := f.sessionTexts(), []string{"user:x1", "solo:re:x1", "user:x3", "solo:re:x3"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
	})
}

// A background response that interrupts (X-Agentgate-Multitask) is
// answered queued at once too; the run going is cancelled, then the
// response runs.
func TestMultitaskBackgroundResponseInterrupts(t *testing.T) {
	onStores(t, func(t *testing.T, store fixtureOpt) {
		f, m, first := busySession(t, spec.MultitaskReject, store)
		c := f.client()
		r := createAtOnce(t, c, backgroundOn("r2"), option.WithHeader("X-Agentgate-Multitask", "interrupt"))
		if r.Status != responses.ResponseStatusQueued {
			t.Errorf("created %s, want queued", r.Status)
		}
		if got := next(t, m.aborted, "the first call's abort"); got != "x1" {
			t.Errorf("aborted the call of %q", got)
		}
		if r := result(t, first); !strings.Contains(r.lastFrame(), `"error"`) {
			t.Errorf("the interrupted turn: %v", r.frames)
		}
		next(t, m.started, "the response's call")
		m.release <- struct{}{}
		pollStatus(t, c, r.ID, responses.ResponseStatusCompleted)
		f.waitRuns("cancelled", "completed")
		if got, want := f.sessionTexts(), []string{"user:x1", "user:r2", "solo:re:r2"}; !slices.Equal(got, want) {
			t.Errorf("session %q, want %q", got, want)
		}
	})
}

// A shutdown ends a queued background response as it ends a running one:
// once the grace is over its run is failed with a SHUTDOWN frame, and the
// response failed with code shutting_down.
func TestMultitaskBackgroundResponseShutdown(t *testing.T) {
	f, m, first := busySession(t, spec.MultitaskEnqueue)
	r := createAtOnce(t, f.client(), backgroundOn("r2"))
	f.waitRuns("running", "queued")
	grace, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f.shutdown(grace)
	next(t, m.aborted, "the running call's abort")
	result(t, first)
	k := newRunKinds(f)
	resp := k.get(t, http.MethodGet, "/v1/responses/"+r.ID, "")["v"]
	if got := str(dig(resp, "status")) + " " + str(dig(resp, "error", "code")); got != "failed shutting_down" {
		t.Errorf("the queued response after the shutdown: %s", got)
	}
	list, _ := k.get(t, http.MethodGet, runsBase, "")["v"].([]any)
	var statuses []string
	for _, run := range list {
		statuses = append(statuses, str(dig(run, "status")))
	}
	if !slices.Equal(statuses, []string{"failed", "failed"}) {
		t.Errorf("runs after the shutdown %v", statuses)
	}
	if frames := strings.TrimSpace(k.serve(t, http.MethodGet, runsBase+"/"+r.ID+"/events", "")); !strings.Contains(frames, `"errorCode":"SHUTDOWN"`) {
		t.Errorf("the queued run's log: %s", frames)
	}
}
