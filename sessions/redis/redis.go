// Package redis stores sessions in Redis (single node, Sentinel or Cluster)
// and serialises runs on them with a lease lock. It is the only package of
// agentgate that imports go-redis.
//
// A Store is a sessions.Service, a sessions.BatchAppender (and
// sessions.ReleasingAppender), a sessions.Locker (and
// sessions.LockingGetter), a sessions.Refs and a sessions.Pinger. All keys of one user in one app share the hash tag
// {app|user}, so every operation on a session, its sub-conversations, the
// user's index and the user: scope runs as one Lua script on one node, also
// on Redis Cluster. The data model is described in docs/sessions.md.
package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// Defaults for zero Config fields.
const (
	DefaultURL       = "redis://127.0.0.1:6379/0"
	DefaultKeyPrefix = "agentgate:"
	DefaultLockTTL   = 30 * time.Second
)

// Config configures a Store. Zero fields mean the defaults.
type Config struct {
	// URL selects the server and the client kind:
	//   - redis://[user:pass@]host:port/db?opts (rediss:// for TLS, unix:///path):
	//     a single node;
	//   - the same with one or more addr=host:port parameters, or the scheme
	//     redis+cluster:// (rediss+cluster://): a Cluster, seeded from every
	//     address given;
	//   - the same with master_name=NAME: Sentinel, host:port and the addr=
	//     parameters being the sentinels.
	// Query parameters are go-redis option names (dial_timeout, max_retries,
	// pool_size, ...). Default DefaultURL. Set URL or Options, not both.
	URL string
	// Options configures the universal client directly (single node, Sentinel
	// or Cluster, as redis.NewUniversalClient chooses) when URL is empty.
	Options *goredis.UniversalOptions
	// KeyPrefix starts every key (default DefaultKeyPrefix); it must not
	// contain '{' or '}'.
	KeyPrefix string
	// TTL expires sessions idle for that long; every write renews it for the
	// whole session tree, the user's index and user: state. 0 keeps sessions.
	TTL time.Duration
	// LockTTL is the lease of a run lock (default DefaultLockTTL). The holder
	// renews it every LockTTL/3; a holder that dies frees it after LockTTL.
	LockTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NewID generates session ids (default: a random UUID).
	NewID func() string
}

// Store keeps sessions in Redis. It is safe for concurrent use; Close
// releases its connections.
type Store struct {
	client  goredis.UniversalClient
	prefix  string
	ttl     time.Duration
	lockTTL time.Duration
	// ttlArg and lockTTLArg are ttl and lockTTL in ms as the scripts take
	// them, boxed once rather than at each call.
	ttlArg, lockTTLArg any
	now                func() time.Time
	newID              func() string
	// oneNode: not Cluster, so a script may touch keys of any hash slot
	// (the app: hash with a session's keys, a run's index entry with its
	// log's).
	oneNode bool
	// bell wakes waiters in a session's line (see lineBell); bellPoll is
	// how often a waiter it can wake polls all the same (0: the default).
	bell     lineBell
	bellPoll time.Duration
	// recent spares connections read from moments ago go-redis's health
	// check (see recentConns).
	recent recentConns
}

var (
	_ sessions.Service           = (*Store)(nil)
	_ sessions.Locker            = (*Store)(nil)
	_ sessions.Pinger            = (*Store)(nil)
	_ sessions.BatchAppender     = (*Store)(nil)
	_ sessions.LockingGetter     = (*Store)(nil)
	_ sessions.ReleasingAppender = (*Store)(nil)
	_ sessions.Refs              = (*Store)(nil)
)

// New validates cfg and returns a Store. It does not connect: a server that
// is down at start makes operations (and Ping) fail with an error wrapping
// sessions.ErrUnavailable until it comes up.
func New(cfg Config) (*Store, error) {
	if cfg.URL != "" && cfg.Options != nil {
		return nil, configError("set URL or Options, not both")
	}
	if cfg.TTL < 0 {
		return nil, configError("TTL must not be negative")
	}
	if cfg.LockTTL < 0 {
		return nil, configError("LockTTL must not be negative")
	}
	s := &Store{prefix: cfg.KeyPrefix, ttl: cfg.TTL, lockTTL: cfg.LockTTL, now: cfg.Now, newID: cfg.NewID}
	if s.prefix == "" {
		s.prefix = DefaultKeyPrefix
	}
	if strings.ContainsAny(s.prefix, "{}") {
		return nil, configError("KeyPrefix must not contain '{' or '}'")
	}
	if s.lockTTL == 0 {
		s.lockTTL = DefaultLockTTL
	}
	if s.lockTTL < 10*time.Millisecond {
		return nil, configError("LockTTL must be at least 10ms")
	}
	s.ttlArg, s.lockTTLArg = s.ttl.Milliseconds(), s.lockTTL.Milliseconds()
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = uuid.NewString
	}
	if cfg.Options != nil {
		opts := *cfg.Options
		s.client = goredis.NewUniversalClient(&opts)
	} else {
		c, err := clientFromURL(cmp.Or(cfg.URL, DefaultURL))
		if err != nil {
			return nil, err
		}
		s.client = c
	}
	s.recent.install(s.client)
	_, cluster := s.client.(*goredis.ClusterClient)
	s.oneNode = !cluster
	s.bell.client = s.client
	return s, nil
}

// clientFromURL builds a single-node, Cluster or Sentinel client from url.
func clientFromURL(url string) (goredis.UniversalClient, error) {
	for _, scheme := range []string{"redis+cluster://", "rediss+cluster://"} {
		if rest, ok := strings.CutPrefix(url, scheme); ok {
			opts, err := goredis.ParseClusterURL(strings.TrimSuffix(scheme, "+cluster://") + "://" + rest)
			if err != nil {
				return nil, configError("URL: " + err.Error())
			}
			connBuffers(&opts.ReadBufferSize, &opts.WriteBufferSize, &opts.PipelineReadBufferSize, &opts.PipelineWriteBufferSize)
			return goredis.NewClusterClient(opts), nil
		}
	}
	switch {
	case strings.Contains(url, "master_name="):
		opts, err := goredis.ParseFailoverURL(url)
		if err != nil {
			return nil, configError("URL: " + err.Error())
		}
		connBuffers(&opts.ReadBufferSize, &opts.WriteBufferSize, &opts.PipelineReadBufferSize, &opts.PipelineWriteBufferSize)
		return goredis.NewFailoverClient(opts), nil
	case strings.Contains(url, "addr="):
		opts, err := goredis.ParseClusterURL(url)
		if err != nil {
			return nil, configError("URL: " + err.Error())
		}
		connBuffers(&opts.ReadBufferSize, &opts.WriteBufferSize, &opts.PipelineReadBufferSize, &opts.PipelineWriteBufferSize)
		return goredis.NewClusterClient(opts), nil
	default:
		opts, err := goredis.ParseURL(url)
		if err != nil {
			return nil, configError("URL: " + err.Error())
		}
		connBuffers(&opts.ReadBufferSize, &opts.WriteBufferSize, &opts.PipelineReadBufferSize, &opts.PipelineWriteBufferSize)
		return goredis.NewClient(opts), nil
	}
}

// ConnBufferSize is the read and the write buffer of each connection of a
// client built from a URL, pipeline connections included, unless the URL
// sets pipeline_read_buffer_size or pipeline_write_buffer_size. go-redis
// sizes them for bulk traffic (32 KiB, and 128 KiB on its pipeline pool):
// with its default pools, up to 3.75 MiB of buffers on 2 CPUs, for a store
// whose requests and replies are a session's events, most a few KiB. A
// longer reply (a long conversation's events) takes a few more reads.
const ConnBufferSize = 16 << 10

// connBuffers sets each buffer size left at zero to ConnBufferSize.
func connBuffers(sizes ...*int) {
	for _, p := range sizes {
		if *p == 0 {
			*p = ConnBufferSize
		}
	}
}

func configError(msg string) error {
	return fmt.Errorf("%w: sessions/redis config: %s", sessions.ErrInvalid, msg)
}

// Close releases the Store's connections. Leases still held are not
// released; they expire after LockTTL.
func (s *Store) Close() error {
	s.bell.close()
	return s.client.Close()
}

// Ping implements sessions.Pinger: it reports whether Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return s.fail(ctx, "ping", err)
	}
	return nil
}

// unavailableReplies are server replies that mean "not now" rather than
// "wrong request".
var unavailableReplies = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY", "NOREPLICAS"}

// fail wraps an error from go-redis: the caller's cancellation stays a
// context error, a server reply other than a transient one is an internal
// error, and everything else (connection refused or lost, timeouts, a closed
// client) wraps sessions.ErrUnavailable.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sessions/redis: %s: %w", op, cerr)
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		transient := false
		for _, p := range unavailableReplies {
			transient = transient || goredis.HasErrorPrefix(err, p)
		}
		if !transient {
			return fmt.Errorf("sessions/redis: %s: %w", op, err)
		}
	}
	return fmt.Errorf("%w: redis %s: %w", sessions.ErrUnavailable, op, err)
}
