package gateway_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agentgate/agentgate/gateway"
	"github.com/agentgate/agentgate/sessions"
)

// releasingMemory is lockingMemory that can release a lease with a write,
// as the Redis store does, and records the sessions whose lease a write
// released.
type releasingMemory struct {
	*lockingMemory
	mu       sync.Mutex
	released []string
}

var _ sessions.ReleasingAppender = (*releasingMemory)(nil)

func (m *releasingMemory) AppendEventsRelease(ctx context.Context, sess *sessions.Session, evs []*sessions.Event, lease sessions.Lease) error {
	if err := m.AppendEvents(ctx, sess, evs); err != nil {
		return err
	}
	m.mu.Lock()
	m.released = append(m.released, sess.ID)
	m.mu.Unlock()
	lease.Release()
	return nil
}

// Every surface hands the turn's lease to the runner, whose final write
// releases it (one round trip on Redis instead of a write and an unlock).
func TestTurnWriteNamesTheLease(t *testing.T) {
	m := &releasingMemory{lockingMemory: &lockingMemory{sessions.NewMemoryService(sessions.MemoryConfig{})}}
	f := newObsFixture(t, nil, func(c *gateway.Config) { c.Sessions, c.Locker = m, m })
	for _, req := range []struct{ path, body, header string }{
		{"/v1/chat/completions", `{"model":"fake","messages":[{"role":"user","content":"x"}]}`, "s-chat"},
		{"/apps/fake/users/anonymous/sessions/s-native", `{}`, ""},
		{"/run", `{"appName":"fake","userId":"anonymous","sessionId":"s-native","newMessage":{"parts":[{"text":"x"}]}}`, ""},
		{"/a2a/fake", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m1","role":"user","contextId":"s-a2a","parts":[{"kind":"text","text":"x"}]}}}`, ""},
	} {
		var hdr []string
		if req.header != "" {
			hdr = []string{"X-Session-Id", req.header}
		}
		resp := f.post(req.path, req.body, hdr...)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: status %d", req.path, resp.StatusCode)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	slices.Sort(m.released)
	if want := []string{"s-a2a", "s-chat", "s-native"}; !slices.Equal(m.released, want) {
		t.Errorf("leases released with the turn's write on %v, want %v", m.released, want)
	}
}
