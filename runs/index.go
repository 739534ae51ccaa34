package runs

import (
	"context"
	"errors"
	"iter"
	"time"
)

// ErrCancelled is the cause of a run cancelled by id (Registry.Cancel, or
// a cancel another replica asked for through the Index).
var ErrCancelled = errors.New("the run was cancelled")

// Index is a record of runs shared by every replica (the Redis one): what
// each session's runs are and where they stand, and a way to ask the
// replica running one to cancel it. A registry with an index records in it
// every change of its runs' status, and cancels its runs others ask it to.
type Index interface {
	// Put records what is known of a named run (in.ID, of in.App,
	// in.User and in.Session), kept for retention after its last Put.
	Put(ctx context.Context, in Info, retention time.Duration) error
	// Get returns run id of a session; ErrNotFound when there is none.
	Get(ctx context.Context, app, user, session, id string) (Info, error)
	// List returns a session's runs, in no particular order.
	List(ctx context.Context, app, user, session string) ([]Info, error)
	// Cancel asks whichever replicas run the runs req names to cancel
	// them (every replica listening to Cancels hears it).
	Cancel(ctx context.Context, req CancelRequest) error
	// Cancels yields the cancels some replica asked for, until ctx is
	// done.
	Cancels(ctx context.Context) iter.Seq[CancelRequest]
}

// CancelRequest names the runs a cancel is for: the run ID, or, without
// one, the live runs of a session (App, User, Session) ahead of the turn
// holding ticket Before in the session's line (see Registry.CancelSession).
type CancelRequest struct {
	ID                 string
	App, User, Session string
	Before             int64
}

// listenCancels cancels the live runs others ask to, until ctx is done.
func (r *Registry) listenCancels(ctx context.Context) {
	defer close(r.listening)
	for req := range r.cfg.Index.Cancels(ctx) {
		r.cancelHere(req)
	}
}

// cancelHere cancels this registry's live runs that req names.
func (r *Registry) cancelHere(req CancelRequest) {
	var doomed []*Run
	r.mu.Lock()
	if req.ID != "" {
		if run := r.byID[req.ID]; run != nil {
			doomed = append(doomed, run)
		}
	} else {
		for run := r.live; run != nil; run = run.next {
			in := run.Info()
			if in.App == req.App && in.User == req.User && in.Session == req.Session && run.ahead(req.Before) {
				doomed = append(doomed, run)
			}
		}
	}
	r.mu.Unlock()
	for _, run := range doomed {
		run.Cancel(ErrCancelled)
	}
}

// ahead reports whether the run is ahead of the turn holding ticket
// before in its session's line: it did not wait in the line, or it joined
// it earlier (before <= 0: every run is).
func (run *Run) ahead(before int64) bool {
	return before <= 0 || run.ticket == 0 || run.ticket < before
}

// CancelSession cancels the live runs of a session that are ahead of the
// turn holding ticket before in the session's line (before <= 0: all of
// them): those running, also when they did not wait in the line, and those
// queued that joined it earlier. They end as Cancel ends a run, with
// ErrCancelled. With an index, every replica cancels its own; an unnamed
// run (see Spec.ID) is found too. It returns once it asked, without
// waiting for them to stop.
func (r *Registry) CancelSession(ctx context.Context, app, user, session string, before int64) error {
	req := CancelRequest{App: app, User: user, Session: session, Before: before}
	r.cancelHere(req)
	if r.cfg.Index == nil {
		return nil
	}
	return r.cfg.Index.Cancel(ctx, req)
}

// put records the run's info in the index, if any (best effort: a replica
// that cannot reach it still runs its runs).
func (run *Run) put(ctx context.Context) {
	idx := run.reg.cfg.Index
	if idx == nil {
		return
	}
	in := run.Info()
	if in.ID == "" {
		return
	}
	_ = idx.Put(context.WithoutCancel(ctx), in, run.retention)
}

// Lookup returns what is known of run id of a session: from this
// registry (with the run), else from the index (run nil: it runs, or
// ran, on another replica). ErrNotFound when neither knows it.
func (r *Registry) Lookup(ctx context.Context, app, user, session, id string) (Info, *Run, error) {
	run, err := r.Get(ctx, id)
	if err == nil {
		if in := run.Info(); in.App == app && in.User == user && in.Session == session {
			return in, run, nil
		}
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Info{}, nil, err
	}
	if r.cfg.Index == nil {
		return Info{}, nil, ErrNotFound
	}
	in, err := r.cfg.Index.Get(ctx, app, user, session, id)
	return in, nil, err
}

// CancelElsewhere asks the replica running id to cancel it, through the
// index; ErrNotFound without one.
func (r *Registry) CancelElsewhere(ctx context.Context, id string) error {
	if r.cfg.Index == nil {
		return ErrNotFound
	}
	return r.cfg.Index.Cancel(ctx, CancelRequest{ID: id})
}
