package redis

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// recentRead is how long after a connection last read a reply go-redis's
// health check of it is skipped (see recentConns).
const recentRead = time.Second

// recentConns spares a connection read from moments ago go-redis's health
// check: before each command the pool peeks at the socket of the
// connection it hands out (a non-blocking recvfrom, a system call per
// command beside the command's write and reads), for a server that closed
// it or bytes it did not ask for.
// go-redis v9 has no option to skip it (ConnMaxIdleTime only closes idle
// connections); it peeks only at a connection that exposes its socket
// (syscall.Conn, so never under TLS), through SyscallConn, which
// recentConns answers. A connection that read within recentRead is not
// peeked at: a server that closed it since is found by the command's write
// or read, which go-redis retries on another connection as it does when
// the server goes between the peek and the command. Once any connection's
// read failed, every connection is peeked at again for recentRead: after
// a restart or a failover the rest of the pool is found stale at the
// peek, not one command each. A connection idle for recentRead or more
// (the server's idle timeout is in seconds) is peeked at as before.
type recentConns struct {
	// failedAt is when a read last failed, on monoNow's clock (0: never).
	failedAt atomic.Int64
}

var _ goredis.Hook = (*recentConns)(nil)

// install adds r to c's connections (on Cluster, to each node's).
func (r *recentConns) install(c goredis.UniversalClient) {
	if cc, ok := c.(*goredis.ClusterClient); ok {
		cc.OnNewNode(func(node *goredis.Client) { node.AddHook(r) })
		return
	}
	c.AddHook(r)
}

// DialHook wraps each connection that exposes its socket.
func (r *recentConns) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		sc, ok := c.(syscall.Conn)
		if err != nil || !ok {
			return c, err
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		rc := &recentConn{Conn: c, r: r}
		rc.raw = recentRaw{RawConn: raw, c: rc}
		return rc, nil
	}
}

// ProcessHook and ProcessPipelineHook leave commands as they are (the hook
// chain keeps next itself: no call is added).
func (r *recentConns) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (r *recentConns) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// recentConn is a connection that knows when it last read.
type recentConn struct {
	net.Conn
	r *recentConns
	// readAt is when a read last returned bytes, on monoNow's clock.
	readAt atomic.Int64
	raw    recentRaw
}

func (c *recentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	switch {
	case err != nil:
		c.r.failedAt.Store(monoNow())
	case n > 0:
		c.readAt.Store(monoNow())
	}
	return n, err
}

// SyscallConn implements syscall.Conn: the socket's, whose Read skips the
// peek while the connection is recent.
func (c *recentConn) SyscallConn() (syscall.RawConn, error) { return &c.raw, nil }

// recent reports whether c read within recentRead and no read failed
// since recentRead ago.
func (c *recentConn) recent() bool {
	now := monoNow()
	failed := c.r.failedAt.Load()
	return now-c.readAt.Load() < int64(recentRead) && (failed == 0 || now-failed >= int64(recentRead))
}

// recentRaw is a connection's socket; Read, which go-redis calls only to
// peek at it, does not call f while the connection is recent (the peek
// then finds nothing to report).
type recentRaw struct {
	syscall.RawConn
	c *recentConn
}

func (r *recentRaw) Read(f func(fd uintptr) bool) error {
	if r.c.recent() {
		return nil
	}
	return r.RawConn.Read(f)
}

// monoNow is the monotonic clock in ns since the process's start (one
// clock read, no wall time).
func monoNow() int64 { return int64(time.Since(processStart)) }

var processStart = time.Now()
