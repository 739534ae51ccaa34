package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentgate/agentgate/sessions"
)

// TaskStore keeps the A2A task records every replica reads (a
// gateway.TaskStore): task <id> of a user in an app is the STRING
// "<prefix>{app|user}:task:<id>", the record as the gateway encoded it,
// expiring the retention of its latest write later. See docs/sessions.md.
type TaskStore struct{ s *Store }

// TaskStore returns the store's task records, on its client and key
// prefix.
func (s *Store) TaskStore() *TaskStore { return &TaskStore{s: s} }

func (x *TaskStore) key(app, user, id string) string {
	return x.s.userBase(app, user) + "task:" + id
}

// PutTask stores task id's record, kept for retention (at least a second)
// after this write.
func (x *TaskStore) PutTask(ctx context.Context, app, user, id string, record []byte, retention time.Duration) error {
	if err := x.s.client.Set(ctx, x.key(app, user, id), record, max(retention, time.Second)).Err(); err != nil {
		return x.s.fail(ctx, "task store", err)
	}
	return nil
}

// GetTask returns task id's record; sessions.ErrNotFound when there is
// none.
func (x *TaskStore) GetTask(ctx context.Context, app, user, id string) ([]byte, error) {
	b, err := x.s.client.Get(ctx, x.key(app, user, id)).Bytes()
	switch {
	case errors.Is(err, goredis.Nil):
		return nil, sessions.ErrNotFound
	case err != nil:
		return nil, x.s.fail(ctx, "task store", err)
	}
	return b, nil
}
