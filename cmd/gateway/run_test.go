package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadConfigExitsTwoNamingEachKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := `
providers: [{name: demo, type: scripted, rules: [{reply: hi}]}]
agents:
  - {name: desk, model: demo/x, sub_agents: [billing]}
  - {name: billing, model: demo/x}
  - {name: other, model: demo/x, sub_agents: [biling]}
  - {name: broken, model: nowhere/x}
models: [{id: desk, agent: desk, multitask: queue}]
sessions: {max_queued: -2}
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{`sessions.max_queued: must not be negative`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	// The trees are checked once the file's sections are valid.
	if err := os.WriteFile(path, []byte(strings.Replace(bad, "sessions: {max_queued: -2}\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{`agents[2].sub_agents: unknown agent "biling"`, `agents[3].model: unknown provider "nowhere"`,
		`models[0].multitask: must be reject, enqueue or interrupt, not "queue"`} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	// Unknown keys are errors too.
	if err := os.WriteFile(path, []byte("servr: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"-config", path}, lookupFrom(nil), &stdout, &stderr, nil); code != 2 || !strings.Contains(stderr.String(), "servr") {
		t.Errorf("unknown key: exit %d, stderr %s", code, stderr.String())
	}
}

// The flag beats the environment, which beats the file; the default config
// serves offline; cancelling stops it with status 0.
func TestRunServesDefaultConfig(t *testing.T) {
	gw := runGateway(t, []string{"-addr", "127.0.0.1:0"}, map[string]string{"AGENTGATE_CONFIG": "../../config.yaml", "AGENTGATE_ADDR": "127.0.0.1:1"})
	resp, err := http.Post(gw.base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"support-desk","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
	gw.stop(t)
}
