package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDockerfileContract checks, without a container engine, what the
// image relies on: the Dockerfile builds a static binary from ./cmd/gateway
// with its version stamped, copies it and the default config to where
// ENTRYPOINT and AGENTGATE_CONFIG point, and runs as a non-root user; that
// binary, built the same way, starts from an empty working directory on
// the copied config alone (distroless has no shell and no files of ours
// beside those two), answers offline, and stops with 0 on SIGTERM.
func TestDockerfileContract(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	find := func(re string) []string {
		t.Helper()
		m := regexp.MustCompile(`(?m)` + re).FindStringSubmatch(df)
		if m == nil {
			t.Fatalf("the Dockerfile has no line matching %s", re)
		}
		return m
	}
	find(`^ENV .*\bCGO_ENABLED=0\b`)
	build := find(`go build -ldflags "-s -w -X (main\.version)=\$\{VERSION\}" -o (\S+) (\./cmd/gateway)$`)
	binCopy := find(`^COPY --from=build ` + regexp.QuoteMeta(build[2]) + ` (\S+)$`)
	find(`^ENTRYPOINT \["` + regexp.QuoteMeta(binCopy[1]) + `"\]$`)
	cfgCopy := find(`^COPY --from=build /src/config\.yaml (\S+)$`)
	find(`^ENV AGENTGATE_CONFIG=` + regexp.QuoteMeta(cfgCopy[1]) + `$`)
	if user := find(`^USER (\S+)$`)[1]; strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("the image runs as %s", user)
	}

	if build[1] != "main.version" || build[3] != "./cmd/gateway" {
		t.Fatalf("the Dockerfile builds %s stamping %s; buildLikeImage builds ./cmd/gateway stamping main.version", build[3], build[1])
	}
	dir := t.TempDir()
	bin := buildLikeImage(t, dir, "docker-test")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	libs, _ := f.ImportedLibraries()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary needs an ELF interpreter: it is not static")
		}
	}
	f.Close()
	if len(libs) > 0 {
		t.Errorf("the binary links %v", libs)
	}

	// The config where the image has it, relative to a root of our own.
	cfg := filepath.Join(dir, "root", cfgCopy[1])
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, src, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	run := exec.Command(bin)
	run.Dir = empty
	run.Env = []string{"AGENTGATE_CONFIG=" + cfg, "AGENTGATE_ADDR=127.0.0.1:0"}
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run.Process.Kill() })
	ready := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "agentgate listening" {
				ready <- rec
			}
		}
	}()
	var rec map[string]any
	select {
	case rec = <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("did not start: %s", stderr.String())
	}
	if rec["version"] != "docker-test" {
		t.Errorf("version %v: -X main.version did not stamp it", rec["version"])
	}
	base := "http://" + rec["addr"].(string)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	resp, err = http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"support-desk","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("chat completion on the default config: %d", resp.StatusCode)
	}
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	if entries, _ := os.ReadDir(empty); len(entries) > 0 {
		t.Errorf("the gateway wrote %d files into its working directory", len(entries))
	}
}
