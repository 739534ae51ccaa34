package redis

import (
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestRecentConnsSkipHealthCheck checks when go-redis's health check of a
// pooled connection runs (recentConns): not for one that read within
// recentRead (a server that closed it is found by the command itself,
// here without retries), again for every connection once a read failed,
// and for one idle for recentRead: with no retries, a command on a
// connection the server closed fails unless the check found it closed.
func TestRecentConnsSkipHealthCheck(t *testing.T) {
	srv := startServer(t)
	s := newStore(t, Config{URL: srv.URL("pool_size=1&max_retries=-1")})
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := t.Context()
	// kill closes the store's connection on the server's side and gives
	// the close time to reach the client.
	kill := func() {
		t.Helper()
		if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	kill()
	if err := s.Ping(ctx); err == nil {
		t.Fatal("a command on a connection that read moments ago, closed since, succeeded without a retry: was it checked?")
	}

	// The failed read has every connection checked for recentRead.
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	kill()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("after a failed read, a closed connection was not checked: %v", err)
	}

	// A connection idle for recentRead is checked.
	time.Sleep(recentRead + 100*time.Millisecond)
	kill()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("an idle closed connection was not checked: %v", err)
	}
}
