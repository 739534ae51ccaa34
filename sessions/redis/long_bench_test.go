package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model/scripted"
	"github.com/agentgate/agentgate/internal/benchenv"
	"github.com/agentgate/agentgate/sessions"
)

// longSession seeds a session of n events (~450 bytes of JSON each) whose
// latest compaction event is the 9th from the end, as a compacted session
// is between two compactions; it returns the session's id.
func longSession(b *testing.B, svc sessions.Service, id string, n int) string {
	b.Helper()
	ctx := context.Background()
	sess, err := svc.Create(ctx, sessions.CreateRequest{AppName: "bench", UserID: "u", SessionID: id})
	if err != nil {
		b.Fatal(err)
	}
	evs := make([]*sessions.Event, 0, 500)
	flush := func() {
		if err := svc.(sessions.BatchAppender).AppendEvents(ctx, &sessions.Session{ID: sess.ID, AppName: "bench", UserID: "u"}, evs); err != nil {
			b.Fatal(err)
		}
		evs = evs[:0]
	}
	for i := range n {
		ev := benchEvent(i)
		if i == n-9 {
			ev = &sessions.Event{ID: fmt.Sprintf("c%d", i), Author: "user", Timestamp: ev.Timestamp,
				Actions: sessions.EventActions{Compaction: &sessions.EventCompaction{StartTimestamp: ev.Timestamp, EndTimestamp: ev.Timestamp,
					CompactedContent: genai.NewContentFromText(strings.Repeat("summary ", 50), genai.RoleModel)}}}
		}
		if evs = append(evs, ev); len(evs) == cap(evs) {
			flush()
		}
	}
	if len(evs) > 0 {
		flush()
	}
	return sess.ID
}

// windowTurn runs one turn as the gateway does, reading the session with
// w: the lease and the read in one round trip on Redis, else the locker's
// lease and a read.
func windowTurn(ctx context.Context, svc sessions.Service, locker sessions.Locker, r *agentcore.Runner, id string, w sessions.Window) error {
	req := sessions.CreateRequest{AppName: "bench", UserID: "u", SessionID: id, Window: w}
	var sess *sessions.Session
	var lease sessions.Lease
	var err error
	if lg, ok := svc.(sessions.LockingGetter); ok {
		sess, lease, err = lg.AcquireGetOrCreate(ctx, req, 0)
	} else if lease, err = locker.Acquire(ctx, "bench", "u", id, 0); err == nil {
		sess, err = sessions.GetOrCreate(ctx, svc, req)
	}
	if lease != nil {
		defer lease.Release()
	}
	if err != nil {
		return err
	}
	for _, err := range r.Run(ctx, agentcore.RunRequest{UserID: "u", SessionID: id, Session: sess, Lease: lease,
		NewMessage: genai.NewContentFromText("hello", genai.RoleUser)}).Events() {
		if err != nil {
			return err
		}
	}
	return nil
}

// netOut is the bytes Redis has sent to its clients so far.
func netOut(b *testing.B, s *Store) int64 {
	info, err := s.client.Info(context.Background(), "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no total_net_output_bytes in INFO")
	return 0
}

// BenchmarkLongSession measures a whole turn (lease and read, the transfer
// turn of turnTree on the scripted model, write) on sessions of 10, 100,
// 1,000, 2,000 and 10,000 stored events, in memory and in Redis, with
// compaction on (the turn reads its session since the latest compaction, 9
// events from the end) and, for comparison, off (the turn reads every
// event). Every turn runs on a session of the stated size: before it, with
// the timer stopped, the memory store's session is deleted and seeded
// again, and the Redis list of events cut back to its n events; then the
// process settles (benchenv.Settle) and a turn on another, short session
// warms the code. Reported: the turn's CPU time (cpu-ns/op, the process's,
// every thread), the medians of its time and CPU time (p50-ns/op,
// p50-cpu-ns/op) and, on Redis, the bytes Redis sent during it
// (redis-bytes/op: INFO's total_net_output_bytes less the INFO call's own
// reply).
func BenchmarkLongSession(b *testing.B) {
	srv := startServer(b)
	redisStore := newStore(b, Config{URL: srv.URL(""), TTL: time.Hour})
	summarizer, err := scripted.New("summarizer", scripted.Config{Rules: []scripted.Rule{{Reply: "a summary"}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, store := range []string{"memory", "redis"} {
		for _, compaction := range []bool{true, false} {
			for _, n := range []int{10, 100, 1000, 2000, 10000} {
				name := fmt.Sprintf("%s/compaction=%v/events=%d", store, compaction, n)
				b.Run(name, func(b *testing.B) {
					var svc sessions.Service = redisStore
					var locker sessions.Locker = redisStore
					if store == "memory" {
						svc, locker = sessions.NewMemoryService(sessions.MemoryConfig{}), sessions.NewMemoryLocker()
					}
					cfg := agentcore.RunnerConfig{AppName: "bench", Agent: turnTree(b), Sessions: svc, RouteToRoot: true}
					w := sessions.Window{}
					if compaction {
						// On, with an interval the benchmark's turns never reach:
						// what is measured is the turn, not the summarizer.
						cfg.Compaction = &agentcore.Compaction{Interval: 1 << 20, Model: summarizer, Locker: locker}
						w.SinceCompaction = true
					}
					r, err := agentcore.NewRunner(cfg)
					if err != nil {
						b.Fatal(err)
					}
					ctx := context.Background()
					id := longSession(b, svc, fmt.Sprintf("long-%d", benchSessions.Add(1)), n)
					warm := longSession(b, svc, fmt.Sprintf("warm-%d", benchSessions.Add(1)), 10)
					events := redisStore.keys("bench", "u", id).events
					// reset gives the session its n events again.
					reset := func() {
						if store == "redis" {
							// The latest compaction stays the 9th from the end.
							if err := redisStore.client.LTrim(ctx, events, 0, int64(n)-1).Err(); err != nil {
								b.Fatal(err)
							}
							return
						}
						if err := svc.Delete(ctx, sessions.DeleteRequest{AppName: "bench", UserID: "u", SessionID: id}); err != nil {
							b.Fatal(err)
						}
						longSession(b, svc, id, n)
					}
					var infoCost int64
					if store == "redis" {
						// The seeding's scripts held every event: their garbage is
						// not the turns'.
						if err := redisStore.client.Eval(ctx, "collectgarbage('collect') return 1", nil).Err(); err != nil {
							b.Fatal(err)
						}
						a := netOut(b, redisStore)
						infoCost = netOut(b, redisStore) - a
					}
					var ops benchenv.Ops
					var bytes int64
					for b.Loop() {
						b.StopTimer()
						reset()
						benchenv.Settle()
						if err := windowTurn(ctx, svc, locker, r, warm, w); err != nil {
							b.Fatal(err)
						}
						var before int64
						if store == "redis" {
							before = netOut(b, redisStore)
						}
						b.StartTimer()
						ops.Start()
						if err := windowTurn(ctx, svc, locker, r, id, w); err != nil {
							b.Fatal(err)
						}
						ops.Stop()
						b.StopTimer()
						if store == "redis" {
							bytes += netOut(b, redisStore) - before - infoCost
						}
						b.StartTimer()
					}
					ops.Report(b)
					if store == "redis" {
						b.ReportMetric(float64(bytes)/float64(b.N), "redis-bytes/op")
					}
				})
			}
		}
	}
}
