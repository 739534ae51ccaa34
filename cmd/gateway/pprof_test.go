package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// -pprof serves Go's profiles on their own listener; the API's listener
// does not serve them.
func TestPprofOnItsOwnListener(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"-config", "../../config.yaml", "-addr", "127.0.0.1:0", "-pprof", pprofAddr}, lookupFrom(nil), &stdout, &stderr, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exited %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	for url, want := range map[string]int{
		"http://" + pprofAddr + "/debug/pprof/cmdline": http.StatusOK,
		"http://" + addr + "/debug/pprof/cmdline":      http.StatusNotFound,
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", url, resp.StatusCode, want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
