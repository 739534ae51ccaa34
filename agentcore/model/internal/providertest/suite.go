package providertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/agentgate/agentgate/agentcore/model"
)

// ProviderName is the name a Harness gives its provider; errors must carry
// it.
const ProviderName = "test"

// guard bounds waits that only fail a broken test; no assertion depends on
// it.
const guard = 10 * time.Second

// Harness is what the shared tests need of one provider: how to build it
// and how its upstream speaks.
type Harness struct {
	// Key is the API key the provider is built with; no error may show it.
	Key string
	// Model is the model id the tests call; errors must carry it.
	Model string
	// New returns the model Model of a provider named ProviderName, built
	// with Key and s, that sends its requests to up.
	New func(t *testing.T, up *Upstream, s Settings) model.LLM
	// Partial starts a streamed answer: it writes the headers and one chunk
	// with the given text and flushes, but neither finishes the turn nor
	// ends the stream.
	Partial func(w http.ResponseWriter, text string)
	// Answer writes a whole streamed answer with the given text.
	Answer func(w http.ResponseWriter, text string)
	// ErrorBody is the body of an upstream error answer with the given
	// message (the status is the HTTP answer's).
	ErrorBody func(msg string) string
	// MaxRetryDelay, when not 0, says that the provider sleeps between
	// retries through Upstream.Wait, never longer than this; Retries then
	// checks the delays.
	MaxRetryDelay time.Duration
}

// Settings are the provider settings a shared test chooses.
type Settings struct {
	// Timeout bounds one attempt; 0 means the provider's default.
	Timeout time.Duration
	// MaxRetries is how often a failed call is tried again; 0 means never.
	MaxRetries int
}

// Cancellation checks that when the caller's context ends (or the caller
// stops iterating), the upstream request is aborted at once: the fake
// upstream's handler sees its request context close. Nothing is left
// running.
func Cancellation(t *testing.T, h Harness) {
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
			up := NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.headers {
					h.Partial(w, "Hel")
				}
				close(received)
				<-r.Context().Done()
				close(closed)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			llm := h.New(t, up, Settings{})

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

// ErrorCase is an upstream error answer and the error it must become.
type ErrorCase struct {
	Name   string
	Status int
	Header map[string]string
	Body   string
	// Want is the error, without Provider and Model.
	Want model.Error
	// MinWait and MaxWait, when MaxWait is not 0, bound Want.RetryAfter
	// instead (for a Retry-After that is a date).
	MinWait, MaxWait time.Duration
}

// UpstreamErrors checks that each case, streamed or not, becomes its
// *model.Error, free of the key, with no partials before it.
func UpstreamErrors(t *testing.T, h Harness, cases []ErrorCase) {
	for _, tc := range cases {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.Name, stream), func(t *testing.T) {
				up := NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tc.Header {
						w.Header().Set(k, v)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.Status)
					_, _ = w.Write([]byte(tc.Body))
				})
				res := Run(t, context.Background(), h.New(t, up, Settings{}), &model.Request{}, stream)
				me, ok := model.AsError(res.Err)
				if !ok {
					t.Fatalf("err = %v, want a *model.Error", res.Err)
				}
				AssertNoKey(t, res.Err, h.Key)
				want := tc.Want
				want.Provider, want.Model = ProviderName, h.Model
				if tc.MaxWait > 0 {
					if me.RetryAfter < tc.MinWait || me.RetryAfter > tc.MaxWait {
						t.Errorf("RetryAfter = %v, want between %v and %v", me.RetryAfter, tc.MinWait, tc.MaxWait)
					}
					want.RetryAfter = me.RetryAfter
				}
				if diff := cmp.Diff(&want, me, cmpopts.IgnoreFields(model.Error{}, "Err")); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if len(res.Partials) != 0 {
					t.Errorf("%d partials before the error", len(res.Partials))
				}
			})
		}
	}
}

// NetworkFailure checks that a call to an upstream that no longer listens
// fails with a retryable "network" error that wraps the cause.
func NetworkFailure(t *testing.T, h Harness) {
	up := NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	llm := h.New(t, up, Settings{})
	up.Server.Close() // nothing listens any more
	res := Run(t, context.Background(), llm, &model.Request{}, true)
	me, ok := model.AsError(res.Err)
	if !ok || me.Code != "network" || me.Status != 0 || !me.Retryable || me.Err == nil {
		t.Fatalf("err = %#v, want a retryable network *model.Error wrapping the cause", res.Err)
	}
	AssertNoKey(t, res.Err, h.Key)
}

// Timeout checks that a stream that outlives the provider's timeout fails
// with a retryable "timeout" error, and is not sent again.
func Timeout(t *testing.T, h Harness) {
	up := NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		h.Partial(w, "slow")
		<-r.Context().Done()
	})
	res := Run(t, context.Background(), h.New(t, up, Settings{Timeout: 50 * time.Millisecond, MaxRetries: 2}), &model.Request{}, true)
	me, ok := model.AsError(res.Err)
	if !ok || me.Code != "timeout" || !me.Retryable {
		t.Fatalf("err = %#v, want a retryable timeout *model.Error", res.Err)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("a timed-out call was sent %d times, want 1", n)
	}
}

// RetryCase is a sequence of upstream answers to one call made with two
// retries, and its outcome.
type RetryCase struct {
	Name string
	// Attempts are the upstream's answers in turn: "ok" (Harness.Answer
	// with "ok"), "cut" (Harness.Partial, then the end of the stream) or an
	// HTTP status (with Header, and Body or Harness.ErrorBody).
	Attempts []string
	Header   map[string]string
	Body     string
	WantReqs int
	// WantWaits are the delays before each retry, -1 for any backoff delay;
	// checked when Harness.MaxRetryDelay is set.
	WantWaits []time.Duration
	// WantErr is the error's Code; "" means the answer "ok".
	WantErr string
}

// Retries checks that failures before any output are retried, and what is
// waited in between.
func Retries(t *testing.T, h Harness, cases []RetryCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			attempt := 0
			up := NewUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				a := tc.Attempts[attempt]
				attempt++
				switch a {
				case "ok":
					h.Answer(w, "ok")
				case "cut":
					h.Partial(w, "o")
				default:
					status, err := strconv.Atoi(a)
					if err != nil {
						panic(fmt.Sprintf("attempt %q", a))
					}
					for k, v := range tc.Header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(status)
					body := tc.Body
					if body == "" {
						body = h.ErrorBody("no")
					}
					_, _ = w.Write([]byte(body))
				}
			})
			res := Run(t, context.Background(), h.New(t, up, Settings{MaxRetries: 2}), &model.Request{}, true)
			if n := len(up.Requests()); n != tc.WantReqs {
				t.Errorf("upstream got %d requests, want %d", n, tc.WantReqs)
			}
			if h.MaxRetryDelay > 0 {
				waits := up.Waits()
				if len(waits) != len(tc.WantWaits) {
					t.Errorf("waited %v, want %d waits", waits, len(tc.WantWaits))
				}
				for i, w := range tc.WantWaits {
					if i >= len(waits) {
						break
					}
					if got := waits[i]; (w >= 0 && got != w) || (w < 0 && (got <= 0 || got > h.MaxRetryDelay)) {
						t.Errorf("wait %d = %v, want %v", i, got, w)
					}
				}
			}
			if tc.WantErr == "" {
				if res.Err != nil || Text(res.Final) != "ok" {
					t.Fatalf("got %v / %q, want the answer ok", res.Err, Text(res.Final))
				}
				return
			}
			if me, ok := model.AsError(res.Err); !ok || me.Code != tc.WantErr {
				t.Fatalf("err = %v, want code %q", res.Err, tc.WantErr)
			}
		})
	}
}

// BrokenCase is a stream that breaks off after some output.
type BrokenCase struct {
	Name    string
	Handler http.HandlerFunc
	// Code and Status are the error's; it is retryable.
	Code   string
	Status int
	// Partials is how many partials come before the error.
	Partials int
}

// StreamBroken checks that a stream that stops early is an error, never a
// short final answer; what was already streamed stays streamed, and a
// started stream is not sent again.
func StreamBroken(t *testing.T, h Harness, cases []BrokenCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			up := NewUpstream(t, tc.Handler)
			res := Run(t, context.Background(), h.New(t, up, Settings{MaxRetries: 2}), &model.Request{}, true)
			me, ok := model.AsError(res.Err)
			if !ok {
				t.Fatalf("err = %v, want a *model.Error", res.Err)
			}
			if me.Code != tc.Code || !me.Retryable || me.Status != tc.Status || me.Provider != ProviderName || me.Model != h.Model {
				t.Errorf("error = %+v, want code %q, retryable, status %d", me, tc.Code, tc.Status)
			}
			if len(res.Partials) != tc.Partials {
				t.Errorf("%d partials before the error, want %d", len(res.Partials), tc.Partials)
			}
			if n := len(up.Requests()); n != 1 {
				t.Errorf("a started stream was sent %d times, want 1", n)
			}
		})
	}
}
