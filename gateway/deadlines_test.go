package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/gateway"
)

// dialRaw opens a connection to srv; it fails the test rather than hang:
// every read and write must be done within 20 s.
func dialRaw(t *testing.T, srv *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn
}

// secondRead counts the request bodies whose second Read has started: the
// gateway holds its buffer for the body and waits for more bytes.
type secondRead struct {
	io.ReadCloser
	reads   int
	waiting *atomic.Int32
}

func (b *secondRead) Read(p []byte) (int, error) {
	if b.reads++; b.reads == 2 {
		b.waiting.Add(1)
	}
	return b.ReadCloser.Read(p)
}

// TestAnnouncedBodyLengthReservesNoMemory opens many connections that each
// announce a large body and send one byte of it: the gateway's heap grows
// with the bytes that arrived, not with what the clients announced.
func TestAnnouncedBodyLengthReservesNoMemory(t *testing.T) {
	const conns, announced = 200, 1 << 20
	f := newFixture(t, nil, func(c *gateway.Config) { c.MaxBodyBytes = announced })
	var waiting atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &secondRead{ReadCloser: r.Body, waiting: &waiting}
		f.gw.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the connections below closed

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range conns {
		conn := dialRaw(t, srv)
		if _, err := io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"+
			"Content-Length: 1048576\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every body read to wait for its second byte", func() bool { return waiting.Load() == conns })
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	// Reserving the announced length would be 200 MiB; what arrived, plus
	// each connection's buffers and first body buffer, is a few MiB.
	if limit := int64(conns * announced / 8); grown > limit {
		t.Errorf("heap grew by %d MiB for %d connections that sent one byte each (limit %d MiB)", grown>>20, conns, limit>>20)
	}
	t.Logf("heap grew by %d KiB", grown>>10)
}

// TestLargeBodyIsReadWhole checks bodies read in several buffer steps, of
// a length known and unknown (chunked), arrive whole.
func TestLargeBodyIsReadWhole(t *testing.T) {
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		text := req.Contents[len(req.Contents)-1].Parts[0].Text
		yield(textFinal(strings.Repeat("!", len(text))), nil)
	})
	long := strings.Repeat("y", 300_000)
	body := `{"model":"fake","messages":[{"role":"user","content":"` + long + `"}]}`
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // hides the length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/chat/completions", r)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		m := decode(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("chunked=%v: status %d: %v", chunked, resp.StatusCode, m)
		}
		got := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
		if len(got) != len(long) {
			t.Errorf("chunked=%v: the model got %d bytes of text, want %d", chunked, len(got), len(long))
		}
	}
}

// TestSlowBodyIsCutOff sends part of a body and then nothing: after
// BodyReadTimeout the gateway answers 408 in the surface's format and
// closes the connection.
func TestSlowBodyIsCutOff(t *testing.T) {
	verifyNoLeaks(t)
	f := newFixture(t, nil, func(c *gateway.Config) { c.BodyReadTimeout = 50 * time.Millisecond })
	for _, tc := range []struct{ path, want string }{
		{"/v1/chat/completions", `"code":"request_timeout"`},
		{"/run", `{"error":"The request body did not arrive in time."}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			conn := dialRaw(t, f.srv)
			if _, err := io.WriteString(conn, "POST "+tc.path+" HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"+
				"Content-Length: 100\r\n\r\n{\"model\":"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), tc.want) {
				t.Errorf("status %d body %s; want 408 with %s", resp.StatusCode, b, tc.want)
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				t.Errorf("after the 408 the connection is still open (read: %v)", err)
			}
		})
	}
}

// TestStreamsAndLongTurnsOutliveTheTimeouts checks the write and body
// deadlines bound only what they name: a turn that runs longer than both,
// streamed or not, still gets its whole answer.
func TestStreamsAndLongTurnsOutliveTheTimeouts(t *testing.T) {
	verifyNoLeaks(t)
	for _, stream := range []string{"true", "false"} {
		t.Run("stream="+stream, func(t *testing.T) {
			release := make(chan struct{})
			f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
				partial := func(s string) *model.Response {
					return &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s}}}}
				}
				if stream && !yield(partial("wait "), nil) {
					return
				}
				select {
				case <-release:
				case <-ctx.Done():
					return
				}
				if stream && !yield(partial("done"), nil) {
					return
				}
				yield(textFinal("wait done"), nil)
			}, func(c *gateway.Config) { c.BodyReadTimeout, c.WriteTimeout = 20*time.Millisecond, 20*time.Millisecond })
			go func() {
				// Both deadlines would have passed before the model answers.
				time.Sleep(200 * time.Millisecond)
				close(release)
			}()
			resp := f.post("/v1/chat/completions", `{"model":"fake","stream":`+stream+`,"messages":[{"role":"user","content":"x"}]}`)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"done"`) && !strings.Contains(string(b), `"wait done"`) {
				t.Errorf("status %d err %v body %s", resp.StatusCode, err, b)
			}
		})
	}
}

// TestNoDeadlineCarriesOverAConnection checks a request starts without the
// write deadline of the one before it on the same connection: the first
// answer's deadline passes while the connection is idle, and the second
// request still gets its "100 Continue" (written before any answer) and,
// streamed, outlives the write timeout.
func TestNoDeadlineCarriesOverAConnection(t *testing.T) {
	verifyNoLeaks(t)
	f := newFixture(t, func(ctx context.Context, req *model.Request, stream bool, yield func(*model.Response, error) bool) {
		if !stream {
			yield(textFinal("at once"), nil)
			return
		}
		partial := func(s string) *model.Response {
			return &model.Response{Partial: true, Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: s}}}}
		}
		if !yield(partial("wait "), nil) {
			return
		}
		select {
		case <-time.After(100 * time.Millisecond): // the write timeout would have passed
		case <-ctx.Done():
			return
		}
		if yield(partial("done"), nil) {
			yield(textFinal("wait done"), nil)
		}
	}, func(c *gateway.Config) { c.WriteTimeout = 20 * time.Millisecond })
	conn := dialRaw(t, f.srv)
	br := bufio.NewReader(conn)
	const head = "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
	first := `{"model":"fake","messages":[{"role":"user","content":"x"}]}`
	if _, err := io.WriteString(conn, head+"Content-Length: "+strconv.Itoa(len(first))+"\r\n\r\n"+first); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "at once") {
		t.Fatalf("first answer: status %d body %s", resp.StatusCode, b)
	}
	time.Sleep(100 * time.Millisecond) // the first answer's write deadline passes

	second := `{"model":"fake","stream":true,"messages":[{"role":"user","content":"x"}]}`
	if _, err := io.WriteString(conn, head+"Expect: 100-continue\r\nContent-Length: "+strconv.Itoa(len(second))+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err = http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue, got %v (%v)", resp, err)
	}
	if _, err := io.WriteString(conn, second); err != nil {
		t.Fatal(err)
	}
	if resp, err = http.ReadResponse(br, nil); err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"done"`) || !strings.Contains(string(b), "[DONE]") {
		t.Errorf("second answer: status %d err %v body %s", resp.StatusCode, err, b)
	}
}

// TestBodyLimitsWrapTheServersRequest checks that the body's limits wrap
// the body of the request net/http gave the handler, not only of the
// gateway's copy: net/http's response looks at that request's body when
// the answer is written (whether to read what is left of it, or close the
// connection), and has done so through the gateway's wrapper.
func TestBodyLimitsWrapTheServersRequest(t *testing.T) {
	f := newFixture(t, nil)
	body := io.NopCloser(strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	req.Body, req.ContentLength = body, -1
	f.gw.ServeHTTP(httptest.NewRecorder(), req)
	if req.Body == body {
		t.Fatal("the server's request kept its own body")
	}
}
