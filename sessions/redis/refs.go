package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// refKey is the key of one ref: a STRING under the user's hash tag, so that
// refs live on the node of the user's sessions and a batch of them is one
// round trip also on Cluster.
func (s *Store) refKey(app, user, key string) string {
	return s.userBase(app, user) + "ref:" + key
}

// refTTL is the expiry of refs put with ttl: the store's TTL for zero or
// less, and 0 (none) when the store keeps sessions forever.
func (s *Store) refTTL(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return s.ttl
	}
	return ttl
}

// PutRefs implements sessions.Refs: one SET (with PX when the refs expire)
// per ref, in one pipeline.
func (s *Store) PutRefs(ctx context.Context, app, user string, refs map[string]sessions.Ref, ttl time.Duration) error {
	if err := sessions.ValidateKeys(app, user); err != nil {
		return err
	}
	vals := make(map[string][]byte, len(refs))
	for key, ref := range refs {
		if err := sessions.ValidateRefs(app, user, key); err != nil {
			return err
		}
		b, err := json.Marshal(ref)
		if err != nil {
			return fmt.Errorf("%w: ref %s: %v", sessions.ErrInvalid, key, err)
		}
		vals[s.refKey(app, user, key)] = b
	}
	if len(vals) == 0 {
		return nil
	}
	ttl = s.refTTL(ttl)
	return s.pipeline(ctx, "put refs", func(p goredis.Pipeliner, _ bool) {
		for k, v := range vals {
			p.Set(ctx, k, v, ttl)
		}
	})
}

// GetRef implements sessions.Refs: one GET.
func (s *Store) GetRef(ctx context.Context, app, user, key string) (sessions.Ref, error) {
	if err := sessions.ValidateRefs(app, user, key); err != nil {
		return sessions.Ref{}, err
	}
	b, err := s.client.Get(ctx, s.refKey(app, user, key)).Bytes()
	if errors.Is(err, goredis.Nil) {
		return sessions.Ref{}, fmt.Errorf("%w: ref %s", sessions.ErrNotFound, key)
	}
	if err != nil {
		return sessions.Ref{}, s.fail(ctx, "get ref", err)
	}
	var ref sessions.Ref
	if err := json.Unmarshal(b, &ref); err != nil {
		return sessions.Ref{}, corrupt("ref " + key + ": " + err.Error())
	}
	return ref, nil
}

// DeleteRefs implements sessions.Refs: one DEL of every key (they share the
// user's hash slot).
func (s *Store) DeleteRefs(ctx context.Context, app, user string, keys ...string) error {
	if err := sessions.ValidateRefs(app, user, keys...); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = s.refKey(app, user, k)
	}
	if err := s.client.Del(ctx, ks...).Err(); err != nil {
		return s.fail(ctx, "delete refs", err)
	}
	return nil
}
