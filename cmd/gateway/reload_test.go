package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const remoteAnalystConfig = `
providers: [{name: rs, type: scripted, rules: [{reply: "analysis from %s of [{last}]"}]}]
agents: [{name: analyst, model: rs/a, description: Analyses.}]
models: [{id: analyst, agent: analyst}]
`

const frontConfig = `
server:
  watch_config: %[2]t
  watch_interval: 20ms
  cors_origins: [%[3]q]
providers:
  - name: fs
    type: scripted
    rules:
      - {agent: front, after_tool: analyst, reply: "front got: {response.text}{response.error}"}
      - {agent: front, call: {name: analyst, args: {request: "{last}"}}}
agents:
  - {name: front, model: fs/front, agent_tools: [analyst]}
  - {name: analyst, description: The remote analyst., endpoint: {a2a: "%[1]s/a2a/analyst", timeout: 10s}}
models: [{id: front, agent: front}]
`

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write beside and rename, as editors and Kubernetes do.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startFront runs two remote analysts (A and B) and a front whose config
// file (at path) points its analyst at A.
func startFront(t *testing.T, watch bool) (front, a, b *testGateway, path string) {
	t.Helper()
	a = runConfig(t, fmt.Sprintf(remoteAnalystConfig, "A"), nil)
	b = runConfig(t, fmt.Sprintf(remoteAnalystConfig, "B"), nil)
	path = filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, fmt.Sprintf(frontConfig, a.base, watch, "https://one.example"))
	return runGateway(t, []string{"-config", path, "-addr", "127.0.0.1:0"}, nil), a, b, path
}

// The config file is watched: a new endpoint for a remote agent applies to
// the next call; a bad file is refused with its problems logged, and the
// previous config keeps serving.
func TestConfigWatchSwitchesRemoteEndpoint(t *testing.T) {
	front, a, b, path := startFront(t, true)

	// One conversation: the delegate call after the reload goes to the
	// new endpoint.
	if got := toolsChat(t, front.base, "front", "conv", "hi", nil); got != "front got: analysis from A of [hi]" {
		t.Fatalf("before: %q", got)
	}
	writeFile(t, path, fmt.Sprintf(frontConfig, b.base, true, "https://two.example"))
	eventually(t, "the new endpoint", func() bool {
		return toolsChat(t, front.base, "front", "conv", "hi", nil) == "front got: analysis from B of [hi]"
	})
	eventually(t, "the restart-only warning", func() bool {
		return strings.Contains(front.stdout.String(), "take effect on a restart") && strings.Contains(front.stdout.String(), `"sections":["server"]`)
	})

	writeFile(t, path, strings.Replace(fmt.Sprintf(frontConfig, a.base, true, "https://two.example"), "agent_tools: [analyst]", "agent_tools: [analyzt]", 1))
	eventually(t, "the refusal", func() bool {
		return strings.Contains(front.stdout.String(), `configuration refused: agents[0].agent_tools: unknown agent \"analyzt\"`)
	})
	if got := toolsChat(t, front.base, "front", "", "still", nil); got != "front got: analysis from B of [still]" {
		t.Errorf("after a refused config: %q", got)
	}
}

// SIGHUP reloads even with the watch turned off.
func TestSIGHUPReloads(t *testing.T) {
	front, _, b, path := startFront(t, false)
	writeFile(t, path, fmt.Sprintf(frontConfig, b.base, false, "https://one.example"))
	time.Sleep(100 * time.Millisecond) // five watch intervals: no watch is on
	if got := toolsChat(t, front.base, "front", "", "hi", nil); got != "front got: analysis from A of [hi]" {
		t.Fatalf("without a signal: %q", got)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload", func() bool {
		return toolsChat(t, front.base, "front", "", "hi", nil) == "front got: analysis from B of [hi]"
	})
	eventually(t, "the SIGHUP reload's log line", func() bool { // the logs go out in batches
		return strings.Contains(front.stdout.String(), `"reason":"SIGHUP"`)
	})
}
