package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/internal/benchenv"
	"github.com/agentgate/agentgate/runs"
	"github.com/agentgate/agentgate/sessions"
)

// BenchmarkRunLogTurn is what a streamed turn's run costs the process
// that runs it, without the turn: a run started, named by an id just made,
// 21 text deltas and the final event appended, and finished, with the
// store's run log and index ("log", "log-json": with JSON frames) or its
// index only ("nolog"). busy-cpu-ns/op is the process's CPU per run.
func BenchmarkRunLogTurn(b *testing.B) {
	srv := startServer(b)
	st := newStore(b, Config{URL: srv.URL("")})
	ctx := context.Background()
	deltas := make([]*sessions.Event, 21)
	for i := range deltas {
		deltas[i] = &sessions.Event{ID: "3f7df883-4197-488a-b69c-dd201d235246", InvocationID: "e-b38fa3ae-52c0-47fa-9fd1-01781af5a7aa",
			Author: "pass", Partial: true, Timestamp: time.Now(),
			Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: fmt.Sprintf("tok%d ", i)}}}}
	}
	final := &sessions.Event{ID: "3f7df883-4197-488a-b69c-dd201d235246", InvocationID: "e-b38fa3ae-52c0-47fa-9fd1-01781af5a7aa",
		Author: "pass", Timestamp: time.Now(),
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: strings.Repeat("tok00 ", 21)}}}}
	for _, tc := range []struct {
		name string
		log  runs.EventLog
	}{
		{"log", st.RunLog(RunLogConfig{})},
		{"log-json", st.RunLog(RunLogConfig{JSONFrames: true})},
		{"nolog", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			reg := runs.NewRegistry(runs.Config{Log: tc.log, Index: st.RunIndex()})
			defer reg.Close()
			turn := func(i int) {
				run, _, err := reg.Start(ctx, runs.Spec{App: "app", User: "u", Session: "s", Retention: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				if err := run.SetNewID(ctx, fmt.Sprint("e-", tc.name, "-", i)); err != nil {
					b.Fatal(err)
				}
				for _, ev := range deltas {
					_, _ = run.Append(ctx, runs.Frame{Event: ev})
				}
				_, _ = run.Append(ctx, runs.Frame{Event: final})
				run.Finish(ctx, nil)
			}
			for i := range 10 { // scripts loaded, connections open
				turn(-1 - i)
			}
			cpu0, idle0 := benchenv.CPU(), benchenv.IdleGC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				turn(i)
			}
			cpu, idle := benchenv.CPU()-cpu0, benchenv.IdleGC()-idle0
			b.ReportMetric(float64(cpu-idle)/float64(b.N), "busy-cpu-ns/op")
		})
	}
}
