package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// sessions.ttl applies to the in-memory store too: a session nobody writes
// to for that long is gone, through the native API as through the store.
func TestMemorySessionsExpireAfterTTL(t *testing.T) {
	gw := runConfig(t, `
sessions: {backend: memory, ttl: 300ms}
providers:
  - {name: demo, type: scripted, rules: [{agent: helper, reply: "hi"}]}
agents:
  - {name: helper, model: demo/helper-v1}
models:
  - {id: helper, agent: helper}
`, nil)
	url := gw.base + "/apps/helper/users/u1/sessions/s1"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create: status %d", resp.StatusCode)
	}
	status := func() int {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status(); s != http.StatusOK {
		t.Fatalf("read at once: status %d", s)
	}
	time.Sleep(400 * time.Millisecond)
	if s := status(); s != http.StatusNotFound {
		t.Fatalf("read after the TTL: status %d, want 404", s)
	}
}
