package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/agentgate/config"
)

// recordingWriter keeps what is written to it, and counts the writes.
type recordingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *recordingWriter) state() (string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String(), w.writes
}

// TestLogWriterKeepsEveryLine: lines logged from many goroutines at once
// all reach the output whole, each goroutine's in its order, in fewer
// writes than lines; Close leaves none behind, and a line after Close goes
// out at once.
func TestLogWriterKeepsEveryLine(t *testing.T) {
	out := &recordingWriter{}
	l := newLogWriter(out)
	const goroutines, lines = 8, 2000 // 16,000 lines of ~40 bytes: the buffer fills several times
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				if _, err := fmt.Fprintf(l, "{\"g\":%d,\"i\":%d,\"pad\":\"%s\"}\n", g, i, strings.Repeat("x", 10)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, writes := out.state()
	next := make([]int, goroutines)
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		var g, i int
		if _, err := fmt.Sscanf(line, "{\"g\":%d,\"i\":%d,", &g, &i); err != nil || !strings.HasSuffix(line, `"}`) {
			t.Fatalf("line %d mangled: %q", n, line)
		}
		if i != next[g] {
			t.Fatalf("goroutine %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
		n++
	}
	if n != goroutines*lines {
		t.Fatalf("%d lines written, want %d", n, goroutines*lines)
	}
	if writes >= n/10 {
		t.Errorf("%d writes for %d lines: not batched", writes, n)
	}

	_, _ = l.Write([]byte("after close\n"))
	if got, _ := out.state(); !strings.HasSuffix(got, "after close\n") {
		t.Error("a line after Close was not written at once")
	}
}

// TestLogWriterFlushesUnasked: a line goes out without Flush or Close (the
// timer), and so does the next one, logged after the first went.
func TestLogWriterFlushesUnasked(t *testing.T) {
	out := &recordingWriter{}
	l := newLogWriter(out)
	t.Cleanup(func() { _ = l.Close() })
	for _, line := range []string{"one\n", "two\n"} {
		_, _ = l.Write([]byte(line))
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := out.state()
			if strings.HasSuffix(got, line) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q not written after 10 s: %q", line, got)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if got, writes := out.state(); got != "one\ntwo\n" || writes != 2 {
		t.Errorf("%q in %d writes", got, writes)
	}
}

// TestLogWarningsGoOutAtOnce: an info line waits for its batch, a warning
// goes out at once with the lines gathered before it, in their order, as
// does a logger derived with attributes or a group.
func TestLogWarningsGoOutAtOnce(t *testing.T) {
	out := &recordingWriter{}
	l := newLogWriter(out)
	defer l.Close()
	log := newLogger(l, config.Log{Level: "info"}, l.Flush)
	log.Info("first")
	if got, writes := out.state(); writes != 0 || got != "" {
		t.Fatalf("an info line was written at once: %d writes, %q", writes, got)
	}
	log.With("k", "v").WithGroup("g").Warn("second", "a", 1)
	got, writes := out.state()
	if writes != 1 {
		t.Fatalf("a warning: %d writes, want 1 (the batch it ends)", writes)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"msg":"first"`) ||
		!strings.Contains(lines[1], `"msg":"second"`) || !strings.Contains(lines[1], `"g":{"a":1}`) {
		t.Fatalf("lines = %q", lines)
	}
	log.Error("third")
	if _, writes := out.state(); writes != 2 {
		t.Fatalf("an error: %d writes in all, want 2", writes)
	}
}
