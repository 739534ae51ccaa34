package model

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The transport's buffers are smaller than what crosses them: a request
// header and body, a response header and streamed lines several times the
// buffers' size arrive whole, in order, over one kept-alive connection.
func TestNewTransportCarriesMoreThanItsBuffers(t *testing.T) {
	long := strings.Repeat("x", 5*upstreamReadBufferSize+7)
	var (
		mu    sync.Mutex
		conns = map[string]bool{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Long", r.Header.Get("X-Long"))
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range 3 {
			_, _ = io.WriteString(w, "data: "+string(body)+strings.Repeat("y", i)+"\n\n")
			_ = rc.Flush()
		}
	}))
	defer srv.Close()
	tr := NewTransport()
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	for range 2 {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(long))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Long", long)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("X-Long"); got != long {
			t.Errorf("response header: %d bytes, want %d", len(got), len(long))
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var lines []string
		for sc.Scan() {
			if sc.Text() != "" {
				lines = append(lines, sc.Text())
			}
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if len(lines) != 3 {
			t.Fatalf("got %d lines, want 3", len(lines))
		}
		for i, l := range lines {
			if want := "data: " + long + strings.Repeat("y", i); l != want {
				t.Errorf("line %d: %d bytes, want %d", i, len(l), len(want))
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("the two requests used %d connections, want 1 (kept alive)", len(conns))
	}
}
