package openai

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// The default transport keeps its connections to the upstream: concurrent
// calls in later rounds reuse the connections of the first round instead
// of dialing new ones (net/http's default keeps only 2 idle per host).
func TestConnectionsReused(t *testing.T) {
	const concurrent, rounds = 16, 3
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,`+
			`"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p, err := New(Config{Name: "up", BaseURL: srv.URL + "/v1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model("m")
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
	for range rounds {
		var wg sync.WaitGroup
		for range concurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, err := range m.GenerateContent(context.Background(), req, false) {
					if err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
	}
	// A connection goes back to the pool just after its caller read the
	// answer's end, so a call of the next round can dial once or twice
	// before it is back; with net/http's default of two idle connections
	// per host it would be 16 + 2*14.
	if n, limit := dials.Load(), int64(concurrent+concurrent/2); n > limit {
		t.Errorf("%d connections dialed for %d rounds of %d concurrent calls; want at most %d", n, rounds, concurrent, limit)
	}
}

// streamUpstream answers every call with a streamed "ok" and "[DONE]",
// each flushed, then runs after (the handler's end sends the chunked
// body's end); it counts the connections dialed to it.
func streamUpstream(t *testing.T, after func(r *http.Request)) (*Provider, *atomic.Int64) {
	t.Helper()
	var dials atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sse(w, chunk(content("ok"), ""), chunk(`{}`, "stop"))
		w.(http.Flusher).Flush()
		after(r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p, err := New(Config{Name: "up", BaseURL: srv.URL + "/v1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.up.client.CloseIdleConnections)
	return p, &dials
}

// A streamed answer's connection goes back to the pool once "[DONE]" is
// read, even when the body's end comes after it: the stream reads that
// end before closing the body (closed before it, the body takes its
// connection with it, and every call dialed again).
func TestStreamConnectionReused(t *testing.T) {
	// The handler's end (the chunked body's end) comes a moment after
	// "[DONE]", as from a server that flushes each event.
	p, dials := streamUpstream(t, func(*http.Request) { time.Sleep(2 * time.Millisecond) })
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
	const calls = 5
	for range calls {
		res := run(t, context.Background(), p.Model("m"), req, true)
		if res.err != nil || res.final == nil || text(res.final) != "ok" {
			t.Fatalf("got %+v; want the answer ok", res)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections dialed for %d streamed calls one after the other; want 1", n, calls)
	}
}

// An upstream that holds its body open after "[DONE]" does not hold the
// call: the stream waits for the body's end a moment only, then ends the
// attempt (the connection is not reused).
func TestStreamHeldOpenAfterDone(t *testing.T) {
	p, _ := streamUpstream(t, func(r *http.Request) { <-r.Context().Done() })
	req := &model.Request{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}
	done := make(chan result, 1)
	go func() {
		var res result
		for r, err := range p.Model("m").GenerateContent(context.Background(), req, true) {
			if err != nil {
				res.err = err
			} else if !r.Partial {
				res.final = r
			}
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res.err != nil || res.final == nil || text(res.final) != "ok" {
			t.Fatalf("got %+v; want the answer ok", res)
		}
	case <-time.After(30 * time.Second): // the attempt's timeout is 10 minutes
		t.Fatal("the call still runs 30 s after the upstream's [DONE]")
	}
}
