package gateway

// Task records every replica reads. With a TaskStore (Redis sessions),
// each change of a task that tasks/get shows is written there as well as
// kept in the task's run (a few writes a task: submitted when it waits in
// its session's line, working when a run of it begins and a client has its
// id (a2aTask.shown), its end; never a streamed delta), so that tasks/get
// and tasks/cancel find it on any replica. Without one (memory sessions)
// tasks are this process's alone.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentgate/agentgate/agentcore/a2a"
	"github.com/agentgate/agentgate/sessions"
)

// TaskStore keeps the A2A task records every replica reads, each of one
// user in one model, as bytes the gateway encodes. sessions/redis's
// TaskStore is one.
type TaskStore interface {
	// PutTask stores task id's record, kept for retention after this
	// write.
	PutTask(ctx context.Context, app, user, id string, record []byte, retention time.Duration) error
	// GetTask returns the record of task id; sessions.ErrNotFound when
	// there is none (never written, another user's, or expired).
	GetTask(ctx context.Context, app, user, id string) ([]byte, error)
}

// storedTaskWait bounds how long tasks/cancel of a task another replica
// runs waits for that replica to record its end; storedTaskPoll is the
// first interval between two reads of the record meanwhile, doubled up
// to storedTaskPollMax.
const (
	storedTaskWait    = 5 * time.Second
	storedTaskPoll    = 20 * time.Millisecond
	storedTaskPollMax = 250 * time.Millisecond
)

// storedTask is a task's record in a TaskStore: its v0.3 wire form (what
// tasks/get answers, history whole), and whether a run of it goes on or
// waits in its session's line.
type storedTask struct {
	Running bool            `json:"running,omitempty"`
	Task    json.RawMessage `json:"task"`
}

// record encodes the task for a TaskStore.
func (t *a2aTask) record() ([]byte, error) {
	t.mu.Lock()
	task, running := t.snapshotLocked(nil), t.running
	t.mu.Unlock()
	// One pass: the task's wire form written in place (storedTask's
	// Task, which reads it back).
	return json.Marshal(struct {
		Running bool `json:"running,omitempty"`
		Task    any  `json:"task"`
	}{running, a2a.EncodeTask(task, a2a.V03)})
}

// decodeStoredTask reads task id's record (of app and user); data that
// is not one is an error.
func decodeStoredTask(app, user, id string, b []byte) (*a2aTask, error) {
	var st storedTask
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("a2a task record %s: %w", id, err)
	}
	task, err := a2a.DecodeTask(st.Task)
	if err != nil {
		return nil, fmt.Errorf("a2a task record %s: %w", id, err)
	}
	updated, err := time.Parse(time.RFC3339Nano, task.Status.Timestamp)
	if err != nil || task.ID != id {
		return nil, fmt.Errorf("a2a task record %s: not a task this gateway wrote", id)
	}
	return &a2aTask{id: id, contextID: task.ContextID, app: app, user: user, stored: true,
		state: task.Status.State, status: task.Status.Message, artifacts: task.Artifacts, history: task.History,
		updated: updated, running: st.Running}, nil
}

// saveTask writes t's record to the task store, if there is one. A write
// that fails is logged; the task goes on (tasks/get on this replica still
// answers it).
func (s *Server) saveTask(ctx context.Context, t *a2aTask) {
	if s.cfg.Tasks == nil {
		return
	}
	b, err := t.record()
	if err == nil {
		err = s.cfg.Tasks.PutTask(context.WithoutCancel(ctx), t.app, t.user, t.id, b, taskRetention)
	}
	if err != nil {
		s.log.WarnContext(ctx, "a2a task record not written: other replicas show it as it was", "task_id", t.id, "err", err)
	}
}

// a2aFindTask returns task id of app and user; nil when it is not known.
// A task this process runs is its own record; any other is the task
// store's, when there is one (the task may have gone on on another
// replica since this one ran it: resumed, or canceled), else this
// process's (the store could not be read, or its write failed).
func (s *Server) a2aFindTask(ctx context.Context, app, user, id string) (*a2aTask, error) {
	local := s.a2aTaskByID(ctx, id)
	if local != nil && (local.app != app || local.user != user) {
		local = nil
	}
	if s.cfg.Tasks == nil || local != nil && local.isRunning() {
		return local, nil
	}
	stored, err := s.loadTask(ctx, app, user, id)
	if err != nil && (local != nil || errors.Is(err, sessions.ErrNotFound)) {
		return local, nil
	}
	return stored, err
}

func (s *Server) loadTask(ctx context.Context, app, user, id string) (*a2aTask, error) {
	b, err := s.cfg.Tasks.GetTask(ctx, app, user, id)
	if err != nil {
		return nil, err
	}
	return decodeStoredTask(app, user, id, b)
}

// awaitStoredEnd reads t's record until it is no longer running (another
// replica recorded its end) or storedTaskWait passed, and returns the
// last read; ctx's error when it ends first.
func (s *Server) awaitStoredEnd(ctx context.Context, t *a2aTask) (*a2aTask, error) {
	deadline := time.NewTimer(storedTaskWait)
	defer deadline.Stop()
	poll := storedTaskPoll
	for t.isRunning() {
		wait := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			wait.Stop()
			return nil, context.Cause(ctx)
		case <-deadline.C:
			wait.Stop()
			return t, nil
		case <-wait.C:
		}
		poll = min(2*poll, storedTaskPollMax)
		next, err := s.loadTask(ctx, t.app, t.user, t.id)
		if err != nil {
			return nil, err
		}
		t = next
	}
	return t, nil
}
