package redis

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/sessions"
)

// benchEvent is a model turn of typical size: ~400 bytes of text and a
// small state delta.
func benchEvent(i int) *sessions.Event {
	return &sessions.Event{
		ID: fmt.Sprintf("e%d", i), InvocationID: "inv", Author: "assistant",
		Timestamp: time.Now().Truncate(time.Microsecond).UTC(),
		Content:   genai.NewContentFromText(strings.Repeat("lorem ipsum ", 32), genai.RoleModel),
		Actions:   sessions.EventActions{StateDelta: map[string]any{"turn": float64(i), "user:last": float64(i)}},
	}
}

// benchSession creates a session holding n events.
func benchSession(b *testing.B, s *Store, id string, n int) *sessions.Session {
	b.Helper()
	ctx := b.Context()
	sess, err := s.Create(ctx, sessions.CreateRequest{AppName: "bench", UserID: "u", SessionID: id})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := s.AppendEvent(ctx, sess, benchEvent(i)); err != nil {
			b.Fatal(err)
		}
	}
	return sess
}

// BenchmarkAppend measures AppendEvent (one script, one round trip) on a
// session that already holds 10, 100 or 1,000 events.
func BenchmarkAppend(b *testing.B) {
	srv := startServer(b)
	s := newStore(b, Config{URL: srv.URL(""), TTL: time.Hour})
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			sess := benchSession(b, s, fmt.Sprintf("append-%d", n), n)
			b.ResetTimer()
			i := n
			for b.Loop() {
				// A fresh copy each time, so the caller's slice does not grow.
				cp := &sessions.Session{ID: sess.ID, AppName: sess.AppName, UserID: sess.UserID, State: map[string]any{}}
				if err := s.AppendEvent(b.Context(), cp, benchEvent(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkGet measures loading a session with its events and scoped state
// (one round trip) at 10, 100 and 1,000 events.
func BenchmarkGet(b *testing.B) {
	srv := startServer(b)
	s := newStore(b, Config{URL: srv.URL(""), TTL: time.Hour})
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			id := fmt.Sprintf("get-%d", n)
			benchSession(b, s, id, n)
			req := sessions.GetRequest{AppName: "bench", UserID: "u", SessionID: id}
			b.ResetTimer()
			for b.Loop() {
				got, err := s.Get(b.Context(), req)
				if err != nil {
					b.Fatal(err)
				}
				if len(got.Events) != n {
					b.Fatalf("got %d events, want %d", len(got.Events), n)
				}
			}
		})
	}
}
