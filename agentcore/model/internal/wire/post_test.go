package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// reference is Post as it was: http.NewRequestWithContext and client.Do.
func reference(ctx context.Context, client *http.Client, raw string, header http.Header, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, raw, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header
	return client.Do(req)
}

// TestParseURL: a URL parsed once is the one http.NewRequest parses for
// every request.
func TestParseURL(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:8080/v1/chat/completions",
		"https://api.openai.com/v1/chat/completions",
		"http://localhost:/v1/chat/completions",
		"http://[::1]:/v1",
		"http://[::1]/v1",
		"http://user:pass@host:81/v1/chat/completions",
		"http://host/v1/chat/completions?api-version=2024-10-21",
		"http://host/v1%2Fx/models/a%20b:generateContent?alt=sse",
		"http://host/v1#frag",
	} {
		req, err := http.NewRequest(http.MethodPost, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := ParseURL(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !reflect.DeepEqual(req.URL, u) {
			t.Errorf("%s: ParseURL %#v, NewRequest %#v", raw, u, req.URL)
		}
		if u.Host != req.Host {
			t.Errorf("%s: host %q, NewRequest's Host %q", raw, u.Host, req.Host)
		}
	}
	for _, raw := range []string{"http://host/%zz", ":no-scheme", "http://[::1/x"} {
		_, want := http.NewRequest(http.MethodPost, raw, nil)
		_, err := ParseURL(raw)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%s: error %v, NewRequest's %v", raw, err, want)
		}
	}
}

// rawServer answers every request with "ok" and records each request's
// bytes as they came.
func rawServer(t *testing.T) (addr string, requests <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	out := make(chan []byte, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				r := bufio.NewReader(conn)
				for {
					var raw bytes.Buffer
					n := 0
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						raw.WriteString(line)
						if v, ok := strings.CutPrefix(strings.ToLower(line), "content-length: "); ok {
							n, _ = strconv.Atoi(strings.TrimSpace(v))
						}
						if line == "\r\n" {
							break
						}
					}
					if _, err := io.CopyN(&raw, r, int64(n)); err != nil {
						return
					}
					out <- raw.Bytes()
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	return ln.Addr().String(), out
}

// TestPostBytes: Post sends the bytes that a request made by
// http.NewRequestWithContext and sent by client.Do sends.
func TestPostBytes(t *testing.T) {
	addr, requests := rawServer(t)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"agentgate"},
		"Authorization": {"Bearer k"}, "Accept": {"text/event-stream"}, "X-Configured": {"yes"}}
	for _, tc := range []struct {
		raw    string
		header http.Header
		body   string
	}{
		{"http://" + addr + "/v1/chat/completions", header, `{"model":"m","messages":[]}`},
		{"http://" + addr + "/v1/chat/completions?api-version=1", header, `{}`},
		{"http://user:pass@" + addr + "/v1/chat/completions", http.Header{"Content-Type": {"application/json"}}, `{"a":1}`},
		{"http://" + addr + "/v1/models/a%2Fb:generateContent", header, strings.Repeat("x", 5000)},
		{"http://" + addr + "/v1/empty", header, ``},
	} {
		var got [2][]byte
		for i := range got {
			var resp *http.Response
			var err error
			if i == 0 {
				resp, err = reference(context.Background(), client, tc.raw, tc.header, []byte(tc.body))
			} else {
				var u *url.URL
				if u, err = ParseURL(tc.raw); err != nil {
					t.Fatal(err)
				}
				resp, err = Post(context.Background(), client, u, tc.header, []byte(tc.body), time.Minute)
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.raw, err)
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if string(b) != "ok" {
				t.Fatalf("%s: answer %q", tc.raw, b)
			}
			got[i] = <-requests
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Errorf("%s:\nNewRequest sent %q\nPost sent       %q", tc.raw, got[0], got[1])
		}
	}
}

// TestPostRedirects: a redirected call goes where, how and with what
// client.Do takes a request made by http.NewRequestWithContext: 307 and
// 308 again as a POST with its body, 301, 302 and 303 as a GET without,
// the same error past ten.
func TestPostRedirects(t *testing.T) {
	type seen struct{ Method, Path, Body, Auth, Referer string }
	var log []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		log = append(log, seen{r.Method, r.URL.Path, string(b), r.Header.Get("Authorization"), r.Header.Get("Referer")})
		if code, ok := strings.CutPrefix(r.URL.Path, "/r/"); ok {
			n, _ := strconv.Atoi(code)
			http.Redirect(w, r, "/done", n)
			return
		}
		if r.URL.Path == "/loop" {
			http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
			return
		}
		_, _ = io.WriteString(w, r.Method+" "+string(b))
	}))
	defer srv.Close()
	header := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}}
	for _, path := range []string{"/r/301", "/r/302", "/r/303", "/r/307", "/r/308", "/loop"} {
		var logs [2][]seen
		var answers, errs [2]string
		for i := range 2 {
			log = nil
			var resp *http.Response
			var err error
			if i == 0 {
				resp, err = reference(context.Background(), srv.Client(), srv.URL+path, header, []byte(`{"x":1}`))
			} else {
				u, _ := ParseURL(srv.URL + path)
				resp, err = Post(context.Background(), srv.Client(), u, header, []byte(`{"x":1}`), time.Minute)
				// The URL is the request's, not a copy: the redirects
				// leave it as it was (another request sends it next).
				if u.String() != srv.URL+path {
					t.Errorf("%s: after Post, the URL is %s", path, u)
				}
			}
			if err != nil {
				errs[i] = err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				answers[i] = strconv.Itoa(resp.StatusCode) + " " + string(b)
			}
			logs[i] = log
		}
		if diff := cmp.Diff(logs[0], logs[1]); diff != "" {
			t.Errorf("%s: requests (-NewRequest +Post):\n%s", path, diff)
		}
		if answers[0] != answers[1] || errs[0] != errs[1] {
			t.Errorf("%s: NewRequest %q %q, Post %q %q", path, answers[0], errs[0], answers[1], errs[1])
		}
		if len(logs[1]) < 2 {
			t.Errorf("%s: %d requests, want the redirect followed", path, len(logs[1]))
		}
	}
}

// TestPostTimeout: the attempt's timeout ends a call whose answer does not
// come, with the error client.Do gives for it, and a cancelled context
// ends it with its own.
func TestPostTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	u, _ := ParseURL(srv.URL + "/slow")
	_, err := Post(context.Background(), srv.Client(), u, http.Header{}, []byte(`{}`), 50*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline exceeded", err)
	}
	want := `Post "` + srv.URL + `/slow": context deadline exceeded`
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = Post(ctx, srv.Client(), u, http.Header{}, []byte(`{}`), time.Minute)
	if want := `Post "` + srv.URL + `/slow": context canceled`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// BenchmarkPost is one call to a local server, answered with a small body.
func BenchmarkPost(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	client := srv.Client()
	u, _ := ParseURL(srv.URL + "/v1/chat/completions")
	header := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"agentgate"}, "Accept": {"application/json"}}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"Hello, how are you?"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := Post(context.Background(), client, u, header, body, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// countingPacer counts its Waiting calls.
type countingPacer struct{ waits int }

func (p *countingPacer) Buffered(bool) {}
func (p *countingPacer) Waiting()      { p.waits++ }

// TestPacedBody: the body of Post's answer, paced, calls Waiting before
// each read, and Finish reads its rest without pacing it.
func TestPacedBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: [DONE]\n\ntrailing")
	}))
	defer srv.Close()
	u, err := ParseURL(srv.URL + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Post(context.Background(), srv.Client(), u, http.Header{}, []byte(`{}`), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if PacedBody(resp.Body, nil) != resp.Body {
		t.Error("a body paced by no pacer is not the body itself")
	}
	var p countingPacer
	body := PacedBody(resp.Body, &p)
	var b [4]byte
	for i := 1; i <= 2; i++ {
		if _, err := io.ReadFull(body, b[:]); err != nil {
			t.Fatal(err)
		}
		if p.waits < i {
			t.Fatalf("%d reads, %d waits", i, p.waits)
		}
	}
	waits := p.waits
	if err := Finish(body); err != nil {
		t.Fatal(err)
	}
	if p.waits != waits {
		t.Errorf("Finish paced %d reads", p.waits-waits)
	}
}
