package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/internal/benchenv"
	sessionsredis "github.com/agentgate/agentgate/sessions/redis"
)

// BenchmarkA2ATurn is a blocking A2A message/send (a new context each) on
// BenchmarkChatTurn's gateway and canned upstream, with sessions, run log
// and run index in Redis, with the task records written there too
// (cmd/gateway's wiring: two writes a task) or not (per process):
//
//	go test -run '^$' -bench A2ATurn -benchmem ./gateway/
func BenchmarkA2ATurn(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(map[bool]string{false: "redis/notasks", true: "redis/tasks"}[shared], func(b *testing.B) {
			redis := redisSessions(b, true)
			gw := newBenchGateway(b, func(c *gateway.Config) {
				redis(c)
				if shared {
					c.Tasks = c.Sessions.(*sessionsredis.Store).TaskStore()
				}
			})
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m1","role":"user","parts":[{"kind":"text","text":"Hello, how are you?"}]}}}`)
			want := []byte(`"state":"completed"`)
			b.ReportAllocs()
			cpu0 := benchenv.CPU()
			for b.Loop() {
				req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/a2a/pass", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				w := newConnRecorder()
				gw.ServeHTTP(w, req)
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), want) {
					b.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
				}
			}
			b.ReportMetric(float64(benchenv.CPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
