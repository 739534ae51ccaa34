package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPassesStreamAsItComes checks that the proxy forwards the body to the
// upstream's chat completions and hands each streamed event on before the
// upstream sends the next one.
func TestPassesStreamAsItComes(t *testing.T) {
	next := make(chan struct{})
	var got string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "wrong request: "+r.URL.Path, http.StatusNotFound)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"data: one\n\n", "data: two\n\n"} {
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
			<-next
		}
	}))
	defer up.Close()
	proxy := httptest.NewServer(newHandler(up.URL+"/v1", up.Client()))
	defer proxy.Close()

	resp, err := http.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	r := bufio.NewReader(resp.Body)
	for _, want := range []string{"data: one\n", "\n", "data: two\n", "\n"} {
		line, err := r.ReadString('\n')
		if err != nil || line != want {
			t.Fatalf("read %q, %v; want %q", line, err, want)
		}
		if want == "\n" {
			next <- struct{}{} // the upstream sends the next event only now
		}
	}
	if got != `{"model":"m"}` {
		t.Errorf("upstream got body %q", got)
	}
}

func TestUpstreamDownIsBadGateway(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	url := up.URL
	up.Close()
	proxy := httptest.NewServer(newHandler(url+"/v1", http.DefaultClient))
	defer proxy.Close()
	resp, err := http.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
}

func TestEchoesLines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveEcho(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, line := range []string{"ping\n", "a longer line\n"} {
		if _, err := io.WriteString(c, line); err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadString('\n'); err != nil || got != line {
			t.Fatalf("echo %q, %v; want %q", got, err, line)
		}
	}
}
