package redis

import (
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"URL and Options", Config{URL: "redis://127.0.0.1:1/0", Options: &goredis.UniversalOptions{}}},
		{"brace in prefix", Config{KeyPrefix: "a{b"}},
		{"negative TTL", Config{TTL: -time.Second}},
		{"negative LockTTL", Config{LockTTL: -time.Second}},
		{"tiny LockTTL", Config{LockTTL: time.Millisecond}},
		{"bad scheme", Config{URL: "http://127.0.0.1:1"}},
		{"bad db", Config{URL: "redis://127.0.0.1:1/x"}},
		{"unknown option", Config{URL: "redis://127.0.0.1:1/0?no_such_option=1"}},
		{"bad cluster URL", Config{URL: "redis+cluster://127.0.0.1:1/?no_such_option=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if !errors.Is(err, sessions.ErrInvalid) {
				if s != nil {
					_ = s.Close()
				}
				t.Fatalf("New: err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestNewPicksClientKind(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		cluster bool
	}{
		{"default URL", Config{}, false},
		{"single node", Config{URL: "redis://127.0.0.1:1/2?dial_timeout=1s"}, false},
		{"unix socket", Config{URL: "unix:///tmp/redis.sock"}, false},
		{"cluster scheme", Config{URL: "redis+cluster://127.0.0.1:1"}, true},
		{"cluster seeds", Config{URL: "redis://127.0.0.1:1?addr=127.0.0.1:2&addr=127.0.0.1:3"}, true},
		{"sentinel", Config{URL: "redis://127.0.0.1:26379?master_name=mymaster&addr=127.0.0.1:26380"}, false},
		{"options, one address", Config{Options: &goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}}}, false},
		{"options, cluster", Config{Options: &goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer s.Close()
			_, cluster := s.client.(*goredis.ClusterClient)
			if cluster != tt.cluster || s.oneNode == tt.cluster {
				t.Errorf("cluster client = %v (oneNode %v), want cluster %v", cluster, s.oneNode, tt.cluster)
			}
			if s.prefix != DefaultKeyPrefix || s.lockTTL != DefaultLockTTL {
				t.Errorf("defaults: prefix %q, lock TTL %v", s.prefix, s.lockTTL)
			}
		})
	}
}

func TestKeysShareTheUsersHashTag(t *testing.T) {
	s, err := New(Config{KeyPrefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		app, user, id string
		wantMeta      string
	}{
		{"app", "u", "s1", "p:{app|u}:meta:s1"},
		{"app", "u", "s1/agent/sub", "p:{app|u}:meta:s1/agent/sub"},
		{"a|b", "c}d", "x", "p:{a%7Cb|c%7Dd}:meta:x"},
		{"a{", "50%", "{y}", "p:{a%7B|50%25}:meta:{y}"},
	}
	for _, tt := range tests {
		k := s.keys(tt.app, tt.user, tt.id)
		if k.meta != tt.wantMeta {
			t.Errorf("meta key of (%q, %q, %q) = %q, want %q", tt.app, tt.user, tt.id, k.meta, tt.wantMeta)
		}
		tag := hashTag(k.meta)
		for _, key := range []string{k.state, k.events, k.index, k.user, k.tree, k.lock} {
			if got := hashTag(key); got != tag {
				t.Errorf("key %q has hash tag %q, want %q", key, got, tag)
			}
		}
	}
	if got := s.keys("app", "u", "s1/agent").tree; got != "p:{app|u}:tree:s1" {
		t.Errorf("tree key of a sub-conversation = %q, want its root's", got)
	}
}

// hashTag is what Redis Cluster hashes: the text between the first '{' and
// the first '}' after it.
func hashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					return key[i+1 : j]
				}
			}
			break
		}
	}
	return key
}

// A client built from a URL gets ConnBufferSize buffers on both of its
// pools, whatever its kind, unless the URL sizes the pipeline's; a client
// built from Options keeps what they say.
func TestURLClientsGetSmallBuffers(t *testing.T) {
	type sizes struct{ read, write, pipeRead, pipeWrite int }
	const n = ConnBufferSize
	tests := []struct {
		name string
		cfg  Config
		want sizes
	}{
		{"single node", Config{URL: "redis://127.0.0.1:1/2"}, sizes{n, n, n, n}},
		{"single node, pipeline sized", Config{URL: "redis://127.0.0.1:1/2?pipeline_read_buffer_size=65536&pipeline_write_buffer_size=32768"}, sizes{n, n, 65536, 32768}},
		{"cluster scheme", Config{URL: "redis+cluster://127.0.0.1:1"}, sizes{n, n, n, n}},
		{"cluster seeds", Config{URL: "redis://127.0.0.1:1?addr=127.0.0.1:2"}, sizes{n, n, n, n}},
		{"sentinel", Config{URL: "redis://127.0.0.1:26379?master_name=mymaster"}, sizes{n, n, n, n}},
		// go-redis's own defaults: 32 KiB, and 0 (its pipeline default) on
		// the pipeline pool.
		{"options", Config{Options: &goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, ReadBufferSize: 4096}}, sizes{4096, 32 << 10, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got sizes
			switch c := s.client.(type) {
			case *goredis.Client:
				o := c.Options()
				got = sizes{o.ReadBufferSize, o.WriteBufferSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize}
			case *goredis.ClusterClient:
				o := c.Options()
				got = sizes{o.ReadBufferSize, o.WriteBufferSize, o.PipelineReadBufferSize, o.PipelineWriteBufferSize}
			default:
				t.Fatalf("client %T", c)
			}
			if got != tt.want {
				t.Errorf("buffers %+v, want %+v", got, tt.want)
			}
		})
	}
}
