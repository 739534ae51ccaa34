package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/gateway/openaiwire/responsescheck"
)

// responseEvents reads n server-sent events (all of them when n is 0, up
// to the end of the body) off a Responses API stream.
func responseEvents(t *testing.T, br *bufio.Reader, n int) []responsescheck.Frame {
	t.Helper()
	var out []responsescheck.Frame
	var block bytes.Buffer
	for n == 0 || len(out) < n {
		line, err := br.ReadBytes('\n')
		block.Write(line)
		if err != nil || len(bytes.TrimRight(line, "\r\n")) == 0 {
			out = append(out, responsescheck.Frames(block.Bytes())...)
			block.Reset()
		}
		if err != nil {
			break
		}
	}
	return out
}

// backgroundOn creates a background response on base and returns its id.
func backgroundOn(t *testing.T, base, input string) string {
	t.Helper()
	var r struct{ ID, Status string }
	body := fmt.Sprintf(`{"model":"desk","input":%q,"background":true}`, input)
	if err := json.Unmarshal([]byte(mustRead(t, http.MethodPost, base+"/v1/responses", body, 200)), &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "queued" && r.Status != "in_progress" {
		t.Fatalf("background create: status %q", r.Status)
	}
	return r.ID
}

// responseStatus is the status of response id as base answers it.
func responseStatus(t *testing.T, base, id string) string {
	t.Helper()
	var r struct{ Status string }
	_ = json.Unmarshal([]byte(mustRead(t, http.MethodGet, base+"/v1/responses/"+id, "", 200)), &r)
	return r.Status
}

// Two gateway binaries on one private Redis: a background response runs on
// A; B replays it after a sequence number (exactly the events after it,
// then the rest live as A's run goes on, then the ending) and cancels
// another one, which stops A's run (its upstream call aborted) and leaves
// it cancelled for both replicas.
//
// The run log keeps its frames packed (runs.pack_frames, on by default):
// the replays on both replicas are built from frames read back from their
// packed form.
func TestReplicasShareBackgroundResponses(t *testing.T) {
	r := heldReplicas(t, "")
	up, a, b := r.up, r.start(t), r.start(t)

	// Replay on B while A runs: created (0) and in_progress (1) are
	// before the cursor; the item, its part and the delta "a" so far
	// come at once, the rest once A's upstream goes on.
	id := backgroundOn(t, a, "hi")
	<-up.started
	resp, err := do(t, http.MethodGet, b+"/v1/responses/"+id+"?stream=true&starting_after=1", "")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("replay on B: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	sofar := responseEvents(t, br, 3)
	if len(sofar) != 3 || sofar[2].Event != "response.output_text.delta" {
		t.Fatalf("replay on B before A's run went on: %v", sofar)
	}
	up.release <- struct{}{}
	onB := append(sofar, responseEvents(t, br, 0)...)
	if err := responsescheck.Events(onB, responsescheck.StreamOptions{After: 1}); err != nil {
		t.Errorf("B's replay against the specification: %v\n%s", err, onB)
	}
	whole := responseEvents(t, bufio.NewReader(strings.NewReader(mustRead(t, http.MethodGet, a+"/v1/responses/"+id+"?stream=true", "", 200))), 0)
	if err := responsescheck.Events(whole, responsescheck.StreamOptions{After: -1}); err != nil {
		t.Errorf("A's whole replay: %v", err)
	}
	if len(whole) != len(onB)+2 {
		t.Fatalf("B's replay after 1 has %d events, A's whole one %d", len(onB), len(whole))
	}
	for i, f := range onB {
		if !bytes.Equal(f.Data, whole[i+2].Data) {
			t.Errorf("event %d on B:\n%s\non A:\n%s", i+2, f.Data, whole[i+2].Data)
		}
	}
	if last := onB[len(onB)-1]; last.Event != "response.completed" || !bytes.Contains(last.Data, []byte(`"text":"ab"`)) {
		t.Errorf("B's replay ended with %s %s", last.Event, last.Data)
	}
	if st := responseStatus(t, b, id); st != "completed" {
		t.Errorf("B polls %s", st)
	}

	// Cancel on B a response running on A.
	id2 := backgroundOn(t, a, "again")
	<-up.started
	attached, err := do(t, http.MethodGet, a+"/v1/responses/"+id2+"?stream=true", "")
	if err != nil {
		t.Fatal(err)
	}
	defer attached.Body.Close()
	var cancelled struct{ Status string }
	if err := json.Unmarshal([]byte(mustRead(t, http.MethodPost, b+"/v1/responses/"+id2+"/cancel", "", 200)), &cancelled); err != nil || cancelled.Status != "cancelled" {
		t.Errorf("cancel on B: %+v %v", cancelled, err)
	}
	select {
	case <-up.aborted:
	case <-time.After(30 * time.Second):
		t.Fatal("A's upstream call was not aborted")
	}
	events := responseEvents(t, bufio.NewReader(attached.Body), 0)
	if err := responsescheck.Events(events, responsescheck.StreamOptions{After: -1}); err != nil {
		t.Errorf("the stream attached on A: %v", err)
	}
	if last := events[len(events)-1]; last.Event != "response.failed" || !bytes.Contains(last.Data, []byte(`"status":"cancelled"`)) {
		t.Errorf("the stream attached on A ended with %s %s", last.Event, last.Data)
	}
	for _, base := range []string{a, b} {
		if st := responseStatus(t, base, id2); st != "cancelled" {
			t.Errorf("%s polls %s after the cancel", base, st)
		}
	}
}

// With the session store stopped, no response that store true promised to
// keep is answered as if it were kept: a streamed one that was running
// ends with response.failed, a non-streamed one is a 503, and a
// background one is refused before anything runs.
func TestResponsesStoreStopped(t *testing.T) {
	r := heldReplicas(t, "")
	up, a := r.up, r.start(t)
	stream, err := do(t, http.MethodPost, a+"/v1/responses", `{"model":"desk","input":"hi","stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	br := bufio.NewReader(stream.Body)
	first := responseEvents(t, br, 5) // created, in_progress, the item, its part, "a"
	<-up.started
	plain := make(chan string, 1)
	go func() {
		resp, err := do(t, http.MethodPost, a+"/v1/responses", `{"model":"desk","input":"hi"}`)
		if err != nil {
			plain <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		plain <- fmt.Sprint(resp.StatusCode, " ", string(b))
	}()
	<-up.started
	r.stopRedis()
	up.release <- struct{}{}
	up.release <- struct{}{}

	events := append(first, responseEvents(t, br, 0)...)
	if err := responsescheck.Events(events, responsescheck.StreamOptions{After: -1}); err != nil {
		t.Errorf("the stream against the specification: %v", err)
	}
	if last := events[len(events)-1]; last.Event != "response.failed" || !bytes.Contains(last.Data, []byte(`"code":"session_store_unavailable"`)) {
		t.Errorf("the stream ended with %s %s", last.Event, last.Data)
	}
	if got := <-plain; !strings.HasPrefix(got, "503 ") || !strings.Contains(got, `"code":"session_store_unavailable"`) {
		t.Errorf("not streamed: %s", got)
	}
	resp, err := do(t, http.MethodPost, a+"/v1/responses", `{"model":"desk","input":"hi","background":true}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(b, []byte(`"code":"session_store_unavailable"`)) || len(up.started) != 0 {
		t.Errorf("background: %d %s, %d upstream calls", resp.StatusCode, b, len(up.started))
	}
}
