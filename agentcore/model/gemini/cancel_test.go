package gemini

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentgate/agentgate/agentcore/model"
)

// guard bounds waits that only fail a broken test; no assertion depends on
// it.
const guard = 10 * time.Second

// TestCancellation: when the caller's context ends (or the caller stops
// iterating), the upstream request is aborted at once: the fake upstream's
// handler sees its request context close. Nothing is left running.
func TestCancellation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		// headers: the upstream answers before blocking; otherwise it
		// blocks before sending anything.
		headers bool
		// stop: the caller stops iterating instead of cancelling.
		stop bool
	}{
		{name: "cancel mid-stream", stream: true, headers: true},
		{name: "stop iterating mid-stream", stream: true, headers: true, stop: true},
		{name: "cancel while waiting for the stream's headers", stream: true},
		{name: "cancel a non-streamed call", stream: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Registered first, so it runs after the upstream is shut down.
			before := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, before) })
			received := make(chan struct{})
			closed := make(chan struct{})
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.headers {
					sse(w, chunk(`[{"text":"Hel"}]`, ""))
				}
				close(received)
				<-r.Context().Done()
				close(closed)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			llm := up.provider(t, Config{}).Model("gemini-test")

			go func() {
				if !tc.headers && !tc.stop {
					<-received
					cancel()
				}
			}()
			var partials int
			var err error
			for r, e := range llm.GenerateContent(ctx, &model.Request{}, tc.stream) {
				if e != nil {
					err = e
					break
				}
				if r.Partial {
					partials++
					if tc.stop {
						break
					}
					cancel()
				}
			}
			select {
			case <-closed:
			case <-time.After(guard):
				t.Fatal("the upstream request was not aborted")
			}
			if tc.stop {
				if err != nil || partials != 1 {
					t.Errorf("err = %v, partials = %d; want no error after stopping at the first partial", err, partials)
				}
				return
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
		})
	}
}
