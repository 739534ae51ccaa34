package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// connsConfig serves the scripted demo with the given server keys.
const connsConfig = `
server:
%s
providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]
agents: [{name: desk, model: demo/x}]
models: [{id: desk, agent: desk}]
`

// getOn sends GET /healthz on conn (keep-alive) and reads the answer.
func getOn(t *testing.T, conn net.Conn, br *bufio.Reader) (int, error) {
	t.Helper()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// dialGateway opens a connection that fails rather than hangs the test.
func dialGateway(t *testing.T, gw *testGateway) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(gw.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	return conn, bufio.NewReader(conn)
}

// TestIdleKeepAliveConnectionIsClosed: a keep-alive connection that sends
// no further request is closed after server.idle_timeout.
func TestIdleKeepAliveConnectionIsClosed(t *testing.T) {
	gw := runConfig(t, strings.Replace(connsConfig, "%s", "  idle_timeout: 100ms", 1), nil)
	conn, br := dialGateway(t, gw)
	if status, err := getOn(t, conn, br); err != nil || status != http.StatusOK {
		t.Fatalf("first request: %d %v", status, err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("the idle connection was not closed by the gateway (read: %v)", err)
	}
}

// TestConnectionsAreCapped: with server.max_connections open, a further
// connection waits in the accept queue, and is served once one closes.
func TestConnectionsAreCapped(t *testing.T) {
	gw := runConfig(t, strings.Replace(connsConfig, "%s", "  max_connections: 2", 1), nil)
	first, br1 := dialGateway(t, gw)
	second, br2 := dialGateway(t, gw)
	for i, c := range []struct {
		conn net.Conn
		br   *bufio.Reader
	}{{first, br1}, {second, br2}} {
		if status, err := getOn(t, c.conn, c.br); err != nil || status != http.StatusOK {
			t.Fatalf("connection %d: %d %v", i+1, status, err)
		}
	}
	third, br3 := dialGateway(t, gw)
	if _, err := io.WriteString(third, "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// Not accepted: no answer comes while the two are open.
	_ = third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br3.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection was served past max_connections 2 (peek: %v)", err)
	}
	first.Close()
	_ = third.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br3, nil)
	if err != nil {
		t.Fatalf("the waiting connection was not served once one closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}
