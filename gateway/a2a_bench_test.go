package gateway_test

import (
	"testing"

	"github.com/agentgate/agentgate/gateway"
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
			postTurns(b, gw, "/a2a/pass", body, []byte(`"state":"completed"`))
		})
	}
}
