package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shutdownConfig serves two streaming models on a slow scripted provider:
// "quick" finishes its reply well within the grace period, "slow" does not.
var shutdownConfig = `
server: {shutdown_grace: 2s, keepalive_interval: 1h}
log: {level: info}
providers:
  - name: demo
    type: scripted
    chunk_size: 4
    chunk_delay: 25ms
    rules:
      - {agent: quick, reply: "a short reply."}
      - {agent: slow, reply: "` + slowReply + `"}
agents:
  - {name: quick, model: demo/quick-v1}
  - {name: slow, model: demo/slow-v1}
models:
  - {id: quick, agent: quick}
  - {id: slow, agent: slow}
`

// slowReply streams for about 10 s (400 chunks of 4 characters, 25 ms apart).
var slowReply = strings.Repeat("slow", 400)

// TestSIGTERM runs the real binary: on SIGTERM it stops accepting, lets a
// running stream finish within server.shutdown_grace, ends the stream still
// open after the grace with an error frame, and exits 0.
func TestSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildLikeImage(t, dir, "test")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(shutdownConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfg, "-addr", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	// An io.Pipe rather than StdoutPipe: Wait then waits for every line to
	// be copied instead of closing the pipe under the reader.
	stdout, stdoutW := io.Pipe()
	cmd.Stdout = stdoutW
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The first log line names the address; the rest are kept.
	logs := make(chan map[string]any, 1024)
	addrCh := make(chan string, 1)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			if rec["msg"] == "agentgate listening" {
				addrCh <- rec["addr"].(string)
			}
			logs <- rec
		}
	}()
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(30 * time.Second):
		t.Fatalf("gateway did not start: %s", stderr.String())
	}
	base := "http://" + addr

	quick, slow := openStream(t, base, "quick"), openStream(t, base, "slow")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		stdoutW.Close()
		exited <- err
	}()

	// The listener closes at once: new connections are refused while the
	// streams still run.
	refused := false
	for i := 0; i < 250 && !refused; i++ {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			refused = true
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	if !refused {
		t.Error("new connections still accepted after SIGTERM")
	}

	q := quick.rest(t)
	if !strings.Contains(q.text, "a short reply.") || q.last != "[DONE]" || q.err != "" {
		t.Errorf("quick stream did not finish normally: text %q, error %q, last %q", q.text, q.err, q.last)
	}
	s := slow.rest(t)
	if !strings.Contains(s.err, `"code":"shutting_down"`) || s.last != "[DONE]" {
		t.Errorf("slow stream not ended with an error frame then [DONE]: error %q, last %q", s.err, s.last)
	}
	if len(s.text) == 0 || len(s.text) >= len(slowReply) {
		t.Errorf("slow stream sent %d of %d characters; want part of it", len(s.text), len(slowReply))
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v (want status 0); stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gateway did not exit")
	}
	var msgs []string
	for rec := range logs {
		msgs = append(msgs, rec["msg"].(string))
	}
	if !containsInOrder(msgs, "agentgate listening", "shutting down", "stopped") {
		t.Errorf("log messages %q", msgs)
	}
}

// sseStream is a streaming chat completion being read.
type sseStream struct {
	resp *http.Response
	sc   *bufio.Scanner
	text string
}

type streamEnd struct{ text, err, last string }

// openStream starts a streaming completion and reads until its first
// content delta, so the stream is known to be running.
func openStream(t *testing.T, base, model string) *sseStream {
	t.Helper()
	body := `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"go"}]}`
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", model, resp.StatusCode, b)
	}
	s := &sseStream{resp: resp, sc: bufio.NewScanner(resp.Body)}
	s.sc.Buffer(make([]byte, 1<<20), 1<<20)
	for s.sc.Scan() {
		if d, ok := strings.CutPrefix(s.sc.Text(), "data: "); ok && s.add(d) != "" {
			return s
		}
	}
	t.Fatalf("%s: stream ended before any content", model)
	return nil
}

// add records a data frame; it returns the frame's content delta.
func (s *sseStream) add(data string) string {
	var chunk struct {
		Choices []struct {
			Delta struct{ Content string } `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal([]byte(data), &chunk) != nil || len(chunk.Choices) == 0 {
		return ""
	}
	s.text += chunk.Choices[0].Delta.Content
	return chunk.Choices[0].Delta.Content
}

// rest reads the stream to its end.
func (s *sseStream) rest(t *testing.T) streamEnd {
	t.Helper()
	var end streamEnd
	for s.sc.Scan() {
		d, ok := strings.CutPrefix(s.sc.Text(), "data: ")
		if !ok {
			continue
		}
		end.last = d
		if strings.HasPrefix(d, `{"error"`) {
			end.err = d
			continue
		}
		s.add(d)
	}
	end.text = s.text
	return end
}

func containsInOrder(have []string, want ...string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && h == want[i] {
			i++
		}
	}
	return i == len(want)
}
