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
