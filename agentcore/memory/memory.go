// Package memory defines long-term memory across sessions (what load_memory
// and preload_memory search) and an in-memory implementation.
package memory

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// Entry is one remembered piece of a conversation.
type Entry struct {
	Author    string         `json:"author,omitempty"`
	Content   *genai.Content `json:"content"`
	Timestamp time.Time      `json:"timestamp"`
}

// Service stores and searches memories per (app, user).
type Service interface {
	// AddSession remembers the text events of a session.
	AddSession(ctx context.Context, s *sessions.Session) error
	// Search returns the entries relevant to query, best first.
	Search(ctx context.Context, app, user, query string) ([]Entry, error)
}

// InMemory is a Service that matches query words against remembered text.
// It is safe for concurrent use.
type InMemory struct {
	mu      sync.Mutex
	entries map[[2]string][]Entry
}

var _ Service = (*InMemory)(nil)

// NewInMemory returns an empty memory.
func NewInMemory() *InMemory { return &InMemory{entries: map[[2]string][]Entry{}} }

// AddSession implements Service.
func (m *InMemory) AddSession(ctx context.Context, s *sessions.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{s.AppName, s.UserID}
	for _, ev := range s.Events {
		if ev.Partial || ev.Text() == "" {
			continue
		}
		m.entries[k] = append(m.entries[k], Entry{Author: ev.Author, Content: ev.Content, Timestamp: ev.Timestamp})
	}
	return nil
}

// Search implements Service: an entry matches when it shares a word of at
// least three letters with the query; entries sharing more words rank first.
func (m *InMemory) Search(ctx context.Context, app, user, query string) ([]Entry, error) {
	q := words(query)
	m.mu.Lock()
	defer m.mu.Unlock()
	type scored struct {
		e Entry
		n int
	}
	var hits []scored
	for _, e := range m.entries[[2]string{app, user}] {
		n := 0
		for w := range words(text(e.Content)) {
			if q[w] {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, scored{e, n})
		}
	}
	// Stable insertion sort by score: lists are small.
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].n > hits[j-1].n; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	out := make([]Entry, len(hits))
	for i, h := range hits {
		out[i] = h.e
	}
	return out, nil
}

func text(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if p != nil {
			b.WriteString(p.Text)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) >= 3 {
			out[w] = true
		}
	}
	return out
}
