package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/agentcore/model/openai"
	"github.com/agentgate/agentgate/agentcore/spec"
)

// The guard for the rules that keep a held stream small, which otherwise
// live only in comments (docs/benchmarks-memory.md): the frames that stay
// on the request goroutine's stack under a stream are thin, and what runs
// before and after them is out of line (//go:noinline), so that the
// deepest point, the first flush of the response on top of the provider's
// frames, fits the goroutine's 16 KiB stack with room for what a transfer
// and an agent tool add; buffers are borrowed from pools per write, not
// kept per stream. TestHeldStreamsMemory holds heldStreams chat-completion
// streams open through the real handler on an httptest server, against an
// upstream that sent a first delta and holds, and bounds the goroutine
// stacks, the live heap and the goroutines each stream adds.
//
// It measures what the load test's open-streams phase does, in-process:
// the clients and the upstream are raw connections served from the test's
// own goroutine, so every goroutine and stack the streams add is the
// gateway's (the request's, the server's background reader, the upstream
// connection's read and write loops). Figures come from runtime.MemStats
// after two collections and do not depend on the machine's load; the only
// times here are deadlines against a hang.
const heldStreams = 200

// A stack only grows by doubling, so a stack bound alone would pass until
// the deepest point crossed 16 KiB, whatever the room left. The handler
// therefore runs below padFrames frames of padFrame bytes (padStack), which
// put the deepest point stackMargin short of the request goroutine's stack
// size: the test fails once the path to the first flush deepens by about
// that much. Calibrated at 3d33415 with go1.26.8 (linux/amd64) by raising
// the padding until the stack doubled: without -race the request
// goroutine's 16 KiB overflowed at 15 frames, so with 8 frames (2 KiB,
// what a transfer and an agent tool add) the margin was about 1.9 KiB; the
// race detector's instrumented frames are larger (unpadded, the path was
// within half a KiB of 16 KiB at 2adae07; 32 KiB overflowed at 57 frames),
// so under -race the padding takes the deepest point short of 32 KiB
// instead. At a62353b the path is two frames deeper (overflows at 14 and
// 55 frames): about 1.6 KiB of margin is left in both. When a change makes
// the path shallower, nothing fails; when it must make it deeper, measure the
// overflow again (raise padFrames until the stacks figure jumps) and say
// why in the commit.
const padFrame = 256 // bytes of padStack's array; its frame is a little larger

// The bounds, per held stream, and what they were when calibrated at
// a62353b (the stack bounds, maxStackPerStream, are in race_test.go and
// norace_test.go). Stacks: 25.4-25.8 KiB (the request's 16, the upstream
// read and write loops' 4 each, the background reader's 2 or 4),
// 48.0-48.2 KiB under -race with its padding (the request's 32); a request
// goroutine at the next size adds 16 (32 under -race). Live heap:
// 46.9-47.2 KiB, with and without -race (45.2-45.7 at 3d33415, 46.3-46.5
// after the one turn lifecycle); a stream that kept its own frame buffer
// instead of borrowing the pool's measured 2.3 KiB more. Goroutines: 4.00.
const (
	maxHeapPerStream       = 48.5 * 1024
	maxGoroutinesPerStream = 4.5
)

// firstDelta is the text of the upstream's first delta: 2 KiB, so that a
// buffer a stream kept instead of borrowing it per write shows.
var firstDelta = "held " + strings.Repeat("and streamed ", 150) + "until released"

// heldUpstream is a raw TCP listener speaking just enough HTTP/1.1 to
// answer a streamed chat completion: headers and a first delta, then
// nothing until released.
type heldUpstream struct {
	t  *testing.T
	ln *net.TCPListener
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &heldUpstream{t: t, ln: ln.(*net.TCPListener)}
}

// accept takes the next upstream request and answers its first delta.
func (u *heldUpstream) accept(scratch []byte) net.Conn {
	u.t.Helper()
	_ = u.ln.SetDeadline(time.Now().Add(time.Minute))
	c, err := u.ln.Accept()
	if err != nil {
		u.t.Fatalf("upstream accept: %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	// The request: headers, then Content-Length bytes of body.
	got := scratch[:0]
	for {
		head, body, ok := bytes.Cut(got, []byte("\r\n\r\n"))
		if ok {
			n := contentLength(head)
			if n < 0 {
				u.t.Fatalf("upstream request without Content-Length:\n%s", head)
			}
			if len(body) >= n {
				break
			}
		}
		got = readMore(u.t, c, got)
	}
	first := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"hold","choices":[{"index":0,"delta":{"role":"assistant","content":"` + firstDelta + `"},"finish_reason":null}]}` + "\n\n"
	writeAll(u.t, c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+chunk(first))
	return c
}

// release ends a held upstream response.
func (u *heldUpstream) release(c net.Conn) {
	const rest = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"hold","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	writeAll(u.t, c, chunk(rest)+"0\r\n\r\n")
	c.Close()
}

func chunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

func contentLength(head []byte) int {
	for _, line := range strings.Split(string(head), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err == nil {
				return n
			}
		}
	}
	return -1
}

func readMore(t *testing.T, c net.Conn, buf []byte) []byte {
	t.Helper()
	if len(buf) == cap(buf) {
		buf = append(buf, 0)[:len(buf)]
	}
	n, err := c.Read(buf[len(buf):cap(buf)])
	if err != nil {
		t.Fatalf("read: %v (so far: %q)", err, buf)
	}
	return buf[:len(buf)+n]
}

func writeAll(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// readUntil reads c until what it sent holds want.
func readUntil(t *testing.T, c net.Conn, scratch []byte, want string) {
	t.Helper()
	got := scratch[:0]
	for !bytes.Contains(got, []byte(want)) {
		got = readMore(t, c, got)
	}
}

func newHeldGateway(t *testing.T, upstream string, padFrames int) *httptest.Server {
	t.Helper()
	// As cmd/gateway builds it: the provider's own client and transport.
	gw := newProviderGateway(t, spec.Agent{Name: "hold", Description: "Streams slowly.", Instruction: "Stream."},
		openai.Config{BaseURL: upstream + "/v1"}, nil)
	var h http.Handler = gw
	if padFrames > 0 {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			padStack(padFrames, func() { gw.ServeHTTP(w, r) })
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// padStack calls next below frames frames of padFrame bytes each.
//
//go:noinline
func padStack(frames int, next func()) byte {
	var pad [padFrame]byte
	pad[frames%padFrame] = byte(frames)
	if frames > 0 {
		return padStack(frames-1, next) + pad[(frames*7)%padFrame]
	}
	next()
	return pad[0]
}

// heldStream is one open stream: the client's connection and the
// upstream's.
type heldStream struct{ client, upstream net.Conn }

// openHeld opens n streams, each up to its first delta, one at a time.
func openHeld(t *testing.T, srv *httptest.Server, up *heldUpstream, n int, phase string, scratch []byte) []heldStream {
	t.Helper()
	addr := strings.TrimPrefix(srv.URL, "http://")
	const body = `{"model":"hold","stream":true,"messages":[{"role":"user","content":"Hello, how are you?"}]}`
	out := make([]heldStream, 0, n)
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		writeAll(t, c, fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"X-Session-Id: held-%s-%d\r\nContent-Length: %d\r\n\r\n%s", addr, phase, i, len(body), body))
		u := up.accept(scratch)
		readUntil(t, c, scratch, firstDelta[len(firstDelta)-20:]+`"`)
		out = append(out, heldStream{client: c, upstream: u})
	}
	return out
}

// releaseHeld ends the streams and reads each to its end.
func releaseHeld(t *testing.T, up *heldUpstream, streams []heldStream, scratch []byte) {
	t.Helper()
	for _, s := range streams {
		up.release(s.upstream)
		readUntil(t, s.client, scratch, "data: [DONE]")
		s.client.Close()
	}
}

// settled is the memory in use after two collections (the second frees
// what the first's finalizers and pools let go).
func settled() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms
}

// heldStreamsChild marks the process that measures: see
// TestHeldStreamsMemory.
const heldStreamsChild = "AGENTGATE_TEST_HELD_STREAMS"

// TestHeldStreamsMemory measures in a process of its own (this test binary
// again, running this test only): a new goroutine's stack starts at the
// average size the runtime has seen, so in the process that ran the
// package's other tests the figures would depend on them. The child also
// turns that average off (GODEBUG adaptivestackstart=0), so that every
// new goroutine starts at 2 KiB and grows to what it needs.
func TestHeldStreamsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("holds many streams")
	}
	if os.Getenv(heldStreamsChild) != "" {
		measureHeldStreams(t)
		return
	}
	godebug := "adaptivestackstart=0"
	if prev := os.Getenv("GODEBUG"); prev != "" {
		godebug = prev + "," + godebug
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHeldStreamsMemory$", "-test.count=1", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), heldStreamsChild+"=1", "GODEBUG="+godebug)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the measuring process failed: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "per held stream") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

func measureHeldStreams(t *testing.T) {
	verifyNoLeaks(t)
	up := newHeldUpstream(t)
	srv := newHeldGateway(t, "http://"+up.ln.Addr().String(), padFrames)
	scratch := make([]byte, 0, 16<<10)

	// Warm up (pools, code paths, the session store's maps), then take the
	// baseline with no stream open.
	releaseHeld(t, up, openHeld(t, srv, up, 20, "warm", scratch), scratch)
	before := settled()
	g0 := runtime.NumGoroutine()

	streams := openHeld(t, srv, up, heldStreams, "held", scratch)
	during := settled()
	g1 := runtime.NumGoroutine()
	releaseHeld(t, up, streams, scratch)

	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / heldStreams }
	stack := per(before.StackInuse, during.StackInuse)
	heap := per(before.HeapAlloc, during.HeapAlloc)
	goroutines := float64(g1-g0) / heldStreams
	t.Logf("per held stream (%d, race %v, %d frames of padding): stacks %.1f KiB, live heap %.1f KiB, goroutines %.2f",
		heldStreams, raceEnabled, padFrames, stack/1024, heap/1024, goroutines)

	if stack > maxStackPerStream {
		t.Errorf("goroutine stacks: %.1f KiB per held stream, bound %d KiB: the request goroutine's stack doubled, the path to "+
			"the first flush is deeper than it was by about %d KiB or more (a frame under the stream holds more, a //go:noinline "+
			"dropped, a deep call such as a reflective encoder on the request goroutine); see padFrames", stack/1024, maxStackPerStream>>10, stackMargin>>10)
	}
	if heap > maxHeapPerStream {
		t.Errorf("live heap: %.1f KiB per held stream, bound %.1f KiB: a held stream keeps more (a buffer kept instead of borrowed from its pool?)",
			heap/1024, maxHeapPerStream/1024)
	}
	if goroutines > maxGoroutinesPerStream {
		t.Errorf("%.2f goroutines per held stream, bound %.1f", goroutines, maxGoroutinesPerStream)
	}
}
