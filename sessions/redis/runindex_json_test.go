package redis

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentgate/agentgate/runs"
)

// indexedRun.appendJSON writes what json.Marshal writes, whatever the
// status (escapes included) and times.
func TestIndexedRunJSON(t *testing.T) {
	statuses := []runs.Status{runs.StatusQueued, runs.StatusRunning, runs.StatusCompleted, runs.StatusFailed,
		runs.StatusCancelled, "", `"<&>\`, "\u2028é\x00\xff"}
	times := []int64{0, 1, -1, 1700000000000000, 1 << 62, -1 << 63}
	for _, st := range statuses {
		for _, started := range times {
			for _, ended := range times {
				checkIndexedRunJSON(t, indexedRun{Status: st, Started: started, Updated: started + 5, Ended: ended})
			}
		}
	}
}

func FuzzIndexedRunJSON(f *testing.F) {
	f.Add("completed", int64(1), int64(2), int64(0))
	f.Add("<\u2028>\xff", int64(-1), int64(0), int64(3))
	f.Fuzz(func(t *testing.T, status string, started, updated, ended int64) {
		checkIndexedRunJSON(t, indexedRun{Status: runs.Status(status), Started: started, Updated: updated, Ended: ended})
	})
}

func checkIndexedRunJSON(t *testing.T, v indexedRun) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.appendJSON([]byte("x")); string(got[1:]) != string(want) || got[0] != 'x' {
		t.Errorf("%+v: appendJSON %s, json.Marshal %s", v, got[1:], want)
	}
}

// BenchmarkRunIndexPut measures what a run's index entry costs to make
// (RunIndex.put: its key and its JSON).
func BenchmarkRunIndexPut(b *testing.B) {
	x := (&Store{prefix: "agentgate:"}).RunIndex()
	now := time.Now()
	in := runs.Info{ID: "e-0123456789abcdef", App: "app", User: "user", Session: "session", Status: runs.StatusCompleted,
		Started: now, Updated: now, Ended: now}
	b.ReportAllocs()
	for b.Loop() {
		_ = x.put(in, time.Hour)
	}
}
