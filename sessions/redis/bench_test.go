package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/internal/benchenv"
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

// benchSessions numbers the sessions of benchSession: a sub-benchmark runs
// once per -count on the same server.
var benchSessions atomic.Int64

// benchSession creates a session holding n events, its id starting with id.
func benchSession(b *testing.B, s *Store, id string, n int) *sessions.Session {
	b.Helper()
	ctx := b.Context()
	id = fmt.Sprintf("%s-%d", id, benchSessions.Add(1))
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
			sess := benchSession(b, s, fmt.Sprintf("get-%d", n), n)
			req := sessions.GetRequest{AppName: "bench", UserID: "u", SessionID: sess.ID}
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

// BenchmarkAppendTurn measures storing a turn's 4 events (the user's
// message, a transfer call and its response, the answer) on a session that
// already holds 10, 100 or 1,000 events: in one AppendEvents (one round
// trip) and, for comparison, with one AppendEvent per event.
func BenchmarkAppendTurn(b *testing.B) {
	srv := startServer(b)
	s := newStore(b, Config{URL: srv.URL(""), TTL: time.Hour})
	for _, n := range []int{10, 100, 1000} {
		for _, mode := range []string{"batch", "per-event"} {
			b.Run(fmt.Sprintf("events=%d/%s", n, mode), func(b *testing.B) {
				sess := benchSession(b, s, fmt.Sprintf("turn-%d-%s", n, mode), n)
				i := n
				for b.Loop() {
					cp := &sessions.Session{ID: sess.ID, AppName: sess.AppName, UserID: sess.UserID, State: map[string]any{}}
					evs := []*sessions.Event{benchEvent(i), benchEvent(i + 1), benchEvent(i + 2), benchEvent(i + 3)}
					i += len(evs)
					if mode == "batch" {
						if err := s.AppendEvents(b.Context(), cp, evs); err != nil {
							b.Fatal(err)
						}
						continue
					}
					for _, ev := range evs {
						if err := s.AppendEvent(b.Context(), cp, ev); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// unbatched hides the Store's AppendEvents, so the runner stores each
// event with its own AppendEvent (the runtime's path for stores that
// cannot batch).
type unbatched struct{ sessions.Service }

// BenchmarkTurn measures whole gateway-style turns (run lock, load, the
// transfer turn of turnTree on the scripted model, write, unlock) on a
// session holding 10, 100 or 1,000 events, and reports the Redis round
// trips per turn: with the turn written in one batch, and with one append
// per event. The session is cut back to its size after each turn, outside
// the measured time.
func BenchmarkTurn(b *testing.B) {
	srv := startServer(b)
	s := newStore(b, Config{URL: srv.URL(""), TTL: time.Hour})
	rt := &roundTrips{}
	s.client.AddHook(rt)
	for _, n := range []int{10, 100, 1000} {
		for _, mode := range []string{"batch", "per-event"} {
			b.Run(fmt.Sprintf("events=%d/%s", n, mode), func(b *testing.B) {
				var store sessions.Service = s
				if mode == "per-event" {
					store = unbatched{s}
				}
				r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "bench", Agent: turnTree(b), Sessions: store, RouteToRoot: true})
				if err != nil {
					b.Fatal(err)
				}
				id := benchSession(b, s, fmt.Sprintf("run-%d-%s", n, mode), n).ID
				events := s.keys("bench", "u", id).events
				ctx := b.Context()
				if _, err := gatewayTurn(ctx, s, r, "bench", id, "hello"); err != nil { // load the scripts
					b.Fatal(err)
				}
				var trips int64
				for b.Loop() {
					before := rt.n.Load()
					if _, err := gatewayTurn(ctx, s, r, "bench", id, "hello"); err != nil {
						b.Fatal(err)
					}
					trips += rt.n.Load() - before
					b.StopTimer()
					if err := s.client.LTrim(ctx, events, 0, int64(n)-1).Err(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(trips)/float64(b.N), "round-trips/turn")
			})
		}
	}
}

// netBytes is what Redis has received from and sent to its clients so far
// (INFO's total_net_input_bytes and total_net_output_bytes).
func netBytes(b *testing.B, s *Store) (in, out int64) {
	info, err := s.client.Info(context.Background(), "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		switch name {
		case "total_net_input_bytes":
			in, err = strconv.ParseInt(v, 10, 64)
		case "total_net_output_bytes":
			out, err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return in, out
}

// BenchmarkNewSessionTurn measures what the store does for a gateway turn
// on a session the client names before it exists, a pass-through turn's
// store calls: the lease, the create and the read (AcquireGetOrCreate,
// reading since the latest compaction as the gateway does), then the
// user's message and the model's answer stored with the lease's release
// (AppendEventsRelease), then Release (a no-op once the write released
// it). It reports the process's CPU time, the round trips and the bytes
// sent to and received from Redis per turn (on its own server: INFO
// before and after the loop, its own cost taken off).
func BenchmarkNewSessionTurn(b *testing.B) {
	srv := startServer(b)
	s := newStore(b, Config{URL: srv.URL(""), TTL: time.Hour})
	rt := &roundTrips{}
	s.client.AddHook(rt)
	ctx := context.Background()
	turn := func(id string) {
		sess, lease, err := s.AcquireGetOrCreate(ctx, sessions.CreateRequest{AppName: "bench", UserID: "u", SessionID: id,
			Window: sessions.Window{SinceCompaction: true}}, 0)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		evs := []*sessions.Event{
			{ID: id + "-q", InvocationID: "e-" + id, Author: "user", Timestamp: now,
				Content: genai.NewContentFromText("Hello, how are you?", genai.RoleUser)},
			{ID: id + "-a", InvocationID: "e-" + id, Author: "pass", Timestamp: now, TurnComplete: true, FinishReason: genai.FinishReasonStop,
				Content:       genai.NewContentFromText("tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7 tok8 tok9 tok10 tok11 tok12", genai.RoleModel),
				UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 8, TotalTokenCount: 20}},
		}
		if err := s.AppendEventsRelease(ctx, sess, evs, lease); err != nil {
			b.Fatal(err)
		}
		lease.Release()
	}
	turn(fmt.Sprintf("new-warm-%d", benchSessions.Add(1))) // load the scripts
	in0, out0 := netBytes(b, s)
	in1, out1 := netBytes(b, s)
	infoIn, infoOut := in1-in0, out1-out0
	t0 := rt.n.Load()
	cpu0 := benchenv.CPU()
	for b.Loop() {
		turn(fmt.Sprintf("new-%d", benchSessions.Add(1)))
	}
	cpu := benchenv.CPU() - cpu0
	trips := rt.n.Load() - t0
	in2, out2 := netBytes(b, s)
	n := float64(b.N)
	b.ReportMetric(float64(cpu)/n, "cpu-ns/turn")
	b.ReportMetric(float64(trips)/n, "round-trips/turn")
	b.ReportMetric(float64(in2-in1-infoIn)/n, "bytes-to-redis/turn")
	b.ReportMetric(float64(out2-out1-infoOut)/n, "bytes-from-redis/turn")
}
