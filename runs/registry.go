// Package runs owns running turns: a Registry of the runs of one process
// (id, session, status, cancel, done) and the EventLog a run's events are
// kept in, so that clients attach to a run rather than own it. A run is
// started by whoever has a turn ready (a surface, after taking the
// session's lock); it ends when its driver finishes it; anyone who knows its
// id can look it up, cancel it or attach to its log meanwhile. The package
// knows nothing of HTTP or of a particular store: a shared EventLog (Redis
// Streams) implements the same interface.
package runs

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgate/agentgate/sessions"
)

// Status is where a run stands.
type Status string

// The statuses of a run. Queued and Running are live; the others are
// final.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Final reports whether the run has ended.
func (s Status) Final() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Errors callers branch on.
var (
	// ErrNotFound: no run (or no log) with that id, or it expired.
	ErrNotFound = errors.New("runs: not found")
	// ErrShutdown: the registry is closed; it starts no run, and it
	// ended those it had with this cause.
	ErrShutdown = errors.New("the server is shutting down")
	// ErrNoLog: the registry keeps no event log, so there is nothing to
	// attach to.
	ErrNoLog = errors.New("runs: no event log")
)

// Info is what is known of a run, by value.
type Info struct {
	// ID is the run's invocation id; empty until it is known (see
	// Run.SetID).
	ID                 string
	App, User, Session string
	Status             Status
	// Started is when the run was registered, Updated when its status last
	// changed, Ended when it reached a final status (zero before).
	Started, Updated, Ended time.Time
}

// Spec describes a run to start.
type Spec struct {
	// ID is the run's invocation id when it is known before the run
	// starts; otherwise the driver names it with SetID once it is. The
	// latest run of an id is the one found by it: a resumed invocation
	// replaces the run that paused it (the session's lock keeps two runs
	// of one invocation from going on at once).
	ID                 string
	App, User, Session string
	// Queued starts the run as queued (waiting for its turn); Begin moves
	// it to running. Otherwise it starts running.
	Queued bool
	// Ticket is the run's place in its session's line, when it waited in
	// one (sessions.Ticket.Seq; zero when it did not): CancelSession spares
	// the runs that joined the line after a given ticket.
	Ticket int64
	// Retention is how long the registry keeps the run once it ended, for
	// lookups by id; zero forgets it at once. The index keeps it as long.
	Retention time.Duration
	// Unreachable says no one can look the run up by id once it ended (a
	// run on a session no client can name): the registry forgets it at
	// its end whatever Retention says, which the index still keeps it
	// for, rather than hold its record in the heap for nobody.
	Unreachable bool
	// Value is the starter's own record of the run, returned by
	// Run.Value; the registry never reads it. It lives in this process
	// only.
	Value any
}

// Config configures a Registry. Zero fields mean the defaults.
type Config struct {
	// Log, when set, keeps every run's events (see Run.Append and
	// Registry.Attach); without one runs keep none.
	Log EventLog
	// Index, when set, records every run's status for every replica and
	// brings the cancels other replicas ask for (see Index).
	Index Index
	// MaxEnded bounds the ended runs kept for their retention (default
	// 10,000); beyond it the oldest go first.
	MaxEnded int
	// Now replaces the clock (tests).
	Now func() time.Time
}

// Registry is the set of runs of one process. Its methods may be called
// from any goroutine.
type Registry struct {
	cfg Config

	mu      sync.Mutex
	closing bool
	// live lists every run not yet finished, named or not (linked through
	// Run.prev and Run.next; nLive of them); byID holds every run with an
	// id, live or kept after its end.
	live  *Run
	nLive int
	byID  map[string]*Run
	ended []keptRun // kept runs in the order they ended
	// fresh and ender are Log as a FreshOpener and as an IndexEnder, when
	// it is one.
	fresh FreshOpener
	ender IndexEnder
	// stopListening ends the listener of the index's cancels, which
	// closes listening when it returned.
	stopListening context.CancelFunc
	listening     chan struct{}
}

// NewRegistry returns an empty registry.
func NewRegistry(cfg Config) *Registry {
	if cfg.MaxEnded <= 0 {
		cfg.MaxEnded = 10000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Registry{cfg: cfg, byID: map[string]*Run{}}
	r.fresh, _ = cfg.Log.(FreshOpener)
	r.ender, _ = cfg.Log.(IndexEnder)
	if cfg.Index != nil {
		var ctx context.Context
		ctx, r.stopListening = context.WithCancel(context.Background())
		r.listening = make(chan struct{})
		go r.listenCancels(ctx)
	}
	return r
}

// Start registers a run and returns it with the context to run it under:
// ctx, ended also when the run is cancelled or the registry closes. The
// run belongs to no request: ctx decides what else ends it (a request's
// context ends it with the request; context.WithoutCancel detaches it).
// The caller drives the run and must call Finish once it is over.
func (r *Registry) Start(ctx context.Context, spec Spec) (*Run, context.Context, error) {
	now := r.cfg.Now()
	st := StatusRunning
	if spec.Queued {
		st = StatusQueued
	}
	run := &Run{reg: r, retention: spec.Retention, unreachable: spec.Unreachable, value: spec.Value, ticket: spec.Ticket,
		info: Info{ID: spec.ID, App: spec.App, User: spec.User, Session: spec.Session, Status: st, Started: now, Updated: now}}
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil, nil, ErrShutdown
	}
	if spec.ID != "" {
		r.byID[spec.ID] = run
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	run.cancel = cancel
	if run.next = r.live; run.next != nil {
		run.next.prev = run
	}
	r.live = run
	r.nLive++
	r.mu.Unlock()
	if spec.ID == "" {
		return run, runCtx, nil
	}
	if err := r.openLog(ctx, spec.ID, false); err != nil {
		run.Finish(ctx, err)
		return nil, nil, err
	}
	run.put(ctx)
	return run, runCtx, nil
}

// openLog starts the log of a run that got its id; fresh: an id just
// made (see FreshOpener).
func (r *Registry) openLog(ctx context.Context, id string, fresh bool) error {
	switch {
	case r.cfg.Log == nil:
		return nil
	case fresh && r.fresh != nil:
		r.fresh.OpenFresh(id)
		return nil
	}
	return r.cfg.Log.Open(ctx, id)
}

// Get returns the run with that id, live or kept after its end.
func (r *Registry) Get(ctx context.Context, id string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(r.cfg.Now())
	if run, ok := r.byID[id]; ok {
		return run, nil
	}
	return nil, ErrNotFound
}

// List returns what is known of the named runs of one session (live and
// kept, this registry's and, with an index, every replica's), in the order
// they started (then by id).
func (r *Registry) List(ctx context.Context, app, user, session string) ([]Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []Info
	if r.cfg.Index != nil {
		var err error
		if out, err = r.cfg.Index.List(ctx, app, user, session); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.sweepLocked(r.cfg.Now())
	var runs []*Run
	for _, run := range r.byID {
		runs = append(runs, run)
	}
	r.mu.Unlock()
	for _, run := range runs {
		in := run.Info()
		if in.App != app || in.User != user || in.Session != session {
			continue
		}
		// This registry's record of its own runs is the freshest.
		if i := slices.IndexFunc(out, func(o Info) bool { return o.ID == in.ID }); i >= 0 {
			out[i] = in
		} else {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.ID, b.ID)) })
	return out, nil
}

// Cancel cancels the live run with that id with cause (nil means
// context.Canceled). It returns at once; wait on the run's Done to see it
// end. ErrNotFound when there is no such run, nil when it already ended.
func (r *Registry) Cancel(ctx context.Context, id string, cause error) error {
	run, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	run.Cancel(cause)
	return nil
}

// Attach follows a run's events after cursor (-1 for all of them): those
// already logged, then the rest as they come, until the run's log ends or
// ctx is done. ErrNoLog when the registry keeps no log.
func (r *Registry) Attach(ctx context.Context, id string, after int64) (iter.Seq2[Frame, error], error) {
	if r.cfg.Log == nil {
		return nil, ErrNoLog
	}
	if _, err := r.Get(ctx, id); err != nil {
		return nil, err
	}
	return r.cfg.Log.Follow(ctx, id, after), nil
}

// Close starts no more runs, stops listening to the index's cancels and
// cancels the live runs with ErrShutdown. It does not wait for them (see
// Shutdown).
func (r *Registry) Close() {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	if r.stopListening != nil {
		r.stopListening()
		<-r.listening
	}
	for _, run := range r.liveRuns() {
		run.Cancel(ErrShutdown)
	}
}

// Shutdown closes the registry and waits until every live run finished
// or ctx is done.
func (r *Registry) Shutdown(ctx context.Context) error {
	r.Close()
	return r.Wait(ctx)
}

// Wait waits until the registry has no live run, runs started meanwhile
// included, or ctx is done (its error then). It neither closes the
// registry nor cancels a run: with Close after it, a stopping process
// gives its runs a grace to finish, then ends the rest.
func (r *Registry) Wait(ctx context.Context) error {
	for {
		live := r.liveRuns()
		if len(live) == 0 {
			return nil
		}
		for _, run := range live {
			select {
			case <-run.Done():
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

func (r *Registry) liveRuns() []*Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	live := make([]*Run, 0, r.nLive)
	for run := r.live; run != nil; run = run.next {
		live = append(live, run)
	}
	return live
}

// Live is the number of runs not yet finished.
func (r *Registry) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nLive
}

// keptRun is a run kept after its end in Registry.ended, until expires
// (its end and its retention).
type keptRun struct {
	run     *Run
	expires time.Time
}

// finished moves run, named id (empty when it is not), from the live runs
// to the kept ones (or forgets it): it ended at ended, and finished at
// now. Then it closes the run's Done, last: whoever waits on it sees the
// log ended and the registry no longer counting the run as live.
func (r *Registry) finished(run *Run, id string, ended, now time.Time) {
	r.mu.Lock()
	if run.prev != nil {
		run.prev.next = run.next
	} else {
		r.live = run.next
	}
	if run.next != nil {
		run.next.prev = run.prev
	}
	run.prev, run.next = nil, nil
	r.nLive--
	switch {
	case id == "":
	case run.retention <= 0 || run.unreachable:
		if r.byID[id] == run {
			delete(r.byID, id)
		}
	default:
		r.ended = append(r.ended, keptRun{run: run, expires: ended.Add(run.retention)})
	}
	r.sweepLocked(now)
	run.mu.Lock() // after r.mu, as in setID
	run.closed = true
	if run.done != nil {
		close(run.done)
	}
	run.mu.Unlock()
	r.mu.Unlock()
}

// sweepLocked forgets kept runs past their retention at now, and the
// oldest beyond MaxEnded. Most calls (every Finish) find nothing to
// forget: they read the oldest run's expiry and the bound, and call
// nothing.
func (r *Registry) sweepLocked(now time.Time) {
	if len(r.ended) > 0 && (len(r.ended) > r.cfg.MaxEnded || now.After(r.ended[0].expires)) {
		r.forgetLocked(now)
	}
}

// forgetLocked is sweepLocked's forgetting, once some is due.
func (r *Registry) forgetLocked(now time.Time) {
	n := 0
	for n < len(r.ended) {
		k := r.ended[n]
		if len(r.ended)-n <= r.cfg.MaxEnded && !now.After(k.expires) {
			break
		}
		if id := k.run.id(); r.byID[id] == k.run {
			delete(r.byID, id)
		}
		r.ended[n] = keptRun{}
		n++
	}
	if n > 0 {
		r.ended = r.ended[n:]
	}
}

// endedCancel is an ended run's cancel function: its context is ended
// already.
func endedCancel(error) {}

// Run is one registered run. Its methods may be called from any goroutine.
type Run struct {
	reg *Registry
	// prev and next link the registry's live runs (Registry.live), under
	// its lock.
	prev, next  *Run
	retention   time.Duration
	unreachable bool
	value       any
	ticket      int64

	mu sync.Mutex
	// cancel ends the run's context: the one Start made, then Begin's.
	cancel    context.CancelCauseFunc
	info      Info
	cancelled error // the cause given to Cancel, if any
	err       error
	done      chan struct{} // made when first asked for
	// over: the status is final (Finish has begun, or the run's end was
	// written by a session store's write, see Ending); finishing: Finish
	// has begun; written: the log's end and the final index entry were
	// written (Ending.Written), so that Finish does not write them.
	over, finishing, written bool
	closed                   bool // Finish has ended: done is (to be) closed
	// endTaken: Ending made the run's end; no late put is made after it.
	endTaken bool
	// putDelay is how long after it is named the index learns of the
	// run (see PutLater); putTimer is that put, once scheduled.
	putDelay time.Duration
	putTimer *time.Timer
	// putMu orders a late put before the end's (see putLate).
	putMu sync.Mutex
}

// ID returns the run's id; empty until it is known.
func (run *Run) ID() string { return run.id() }

func (run *Run) id() string {
	run.mu.Lock()
	id := run.info.ID
	run.mu.Unlock()
	return id
}

// Info returns what is known of the run now.
func (run *Run) Info() Info {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.info
}

// Value returns the starter's record of the run (Spec.Value).
func (run *Run) Value() any { return run.value }

// SetID names a run started without an id, once its invocation id is
// known (and starts its log); a run that already has one keeps it.
func (run *Run) SetID(ctx context.Context, id string) error { return run.setID(ctx, id, false) }

// SetNewID is SetID for an invocation id the run has just made, under
// which nothing can have been logged (agentcore.Run.NewInvocation): a log
// that is a FreshOpener starts it without a round trip to its store.
func (run *Run) SetNewID(ctx context.Context, id string) error { return run.setID(ctx, id, true) }

func (run *Run) setID(ctx context.Context, id string, fresh bool) error {
	if id == "" {
		return nil
	}
	r := run.reg
	r.mu.Lock()
	run.mu.Lock()
	named := run.info.ID != ""
	if !named {
		run.info.ID = id
	}
	run.mu.Unlock()
	if named {
		r.mu.Unlock()
		return nil
	}
	r.byID[id] = run
	r.mu.Unlock()
	if err := r.openLog(ctx, id, fresh); err != nil || r.cfg.Index == nil {
		return err // without an index there is nothing to put
	}
	run.mu.Lock()
	late := run.putDelay > 0
	if late && !run.over {
		run.putTimer = time.AfterFunc(run.putDelay, run.putLate)
	}
	run.mu.Unlock()
	if !late {
		run.put(ctx)
	}
	return nil
}

// PutLater has the index learn of the run d after it is named (SetID,
// SetNewID) rather than at once; a run that ends sooner is put once, at
// its end. It is for a run whose id no client learns before it ends (an
// answer given whole at the end): other replicas list it running that
// much later, and a short one costs the index one write rather than two.
// Call it before the run is named.
func (run *Run) PutLater(d time.Duration) {
	if run.reg.cfg.Index == nil {
		return // nothing is put
	}
	run.mu.Lock()
	run.putDelay = d
	run.mu.Unlock()
}

// putLate is the put PutLater scheduled, unless the run has ended
// meanwhile (or its end was made, see Ending): Finish, which puts the end, waits for one under way (putMu),
// so that the index never goes back from the end to running.
func (run *Run) putLate() {
	run.putMu.Lock()
	defer run.putMu.Unlock()
	run.mu.Lock()
	over := run.over || run.endTaken
	run.mu.Unlock()
	if !over {
		run.put(context.Background())
	}
}

// Begin moves a queued run to running, and returns the context to run it
// under from now on: ctx, ended also when the run is cancelled or the
// registry closes (at once when that happened already). It ends the
// context Start returned, which the run waited with: what ends a run
// while it waits (its request, say) need not be what ends it once it runs
// (a run that goes on without its client).
func (run *Run) Begin(ctx context.Context) context.Context {
	runCtx, cancel := context.WithCancelCause(ctx)
	run.mu.Lock()
	waited := run.cancel
	run.cancel = cancel
	cancelled := run.cancelled
	if run.over {
		cancelled = context.Canceled
	}
	began := run.info.Status == StatusQueued && !run.over
	if began {
		run.info.Status, run.info.Updated = StatusRunning, run.reg.cfg.Now()
	}
	run.mu.Unlock()
	waited(nil)
	if cancelled != nil {
		cancel(cancelled)
	}
	if began {
		run.put(context.Background())
	}
	return runCtx
}

// cancelWith ends the run's context with cause.
func (run *Run) cancelWith(cause error) {
	run.mu.Lock()
	cancel := run.cancel
	run.mu.Unlock()
	cancel(cause)
}

// Cancel ends the run's context with cause (nil means context.Canceled);
// the run is then reported cancelled when it finishes with an error.
// Cancelling a finished run does nothing.
func (run *Run) Cancel(cause error) {
	run.mu.Lock()
	if run.over {
		run.mu.Unlock()
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	if run.cancelled == nil {
		run.cancelled = cause
	}
	cancel := run.cancel
	run.mu.Unlock()
	cancel(cause)
}

// Stop ends the run's context without marking it cancelled: its driver
// stops it (a consumer that went away, or one done with it).
func (run *Run) Stop() { run.cancelWith(nil) }

// Append adds a frame (its JSON, or the event: see EventLog.Append) to the
// run's log and returns its number in it (-1 and ErrNoLog when the
// registry keeps none). The run must have its id (Spec.ID or SetID): its
// events may carry the ids of sub-invocations.
func (run *Run) Append(ctx context.Context, f Frame) (int64, error) {
	log := run.reg.cfg.Log
	if log == nil {
		return -1, ErrNoLog
	}
	id := run.id()
	if id == "" {
		return -1, errors.New("runs: an event before the run has an id")
	}
	return log.Append(ctx, id, f)
}

// Finish records the end of the run, err being what it ended with: nil is
// completed; an error after Cancel, or one that is context.Canceled, is
// cancelled (but failed when the cause was ErrShutdown: the run did not
// choose to stop); any other failed. It ends the run's context, closes Done and
// ends the run's log; only the first call counts.
//
// A run whose end was written already (Ending) completed: Finish then
// only ends it in this process (its context, the registry's count, Done),
// whatever err says.
func (run *Run) Finish(ctx context.Context, err error) {
	now := run.reg.cfg.Now()
	run.mu.Lock()
	if run.finishing {
		run.mu.Unlock()
		return
	}
	run.finishing = true
	if !run.written {
		run.over = true
		run.info.Status = StatusCompleted
		if err != nil {
			run.info.Status = failedStatus(err, run.cancelled)
		}
		run.err = err
		run.info.Updated, run.info.Ended = now, now
	}
	id, written, ended := run.info.ID, run.written, run.info.Ended
	cancel, late := run.cancel, run.putTimer
	// The cancel function is not kept with the ended run: it holds the
	// run's context, and with it whatever the context it was started
	// under holds (its request's values), for as long as the run is
	// kept for its retention. Nor is the late put.
	run.cancel, run.putTimer = endedCancel, nil
	run.mu.Unlock()
	cancel(nil)
	if late != nil {
		run.stopLatePut(late)
	}
	// The index says it ended before the log does (or in the same
	// step): whoever waits for the log's end reads the final status.
	r := run.reg
	switch {
	case written || id == "":
	case r.cfg.Index != nil:
		run.endIndexed(ctx, id)
	case r.cfg.Log != nil:
		_ = r.cfg.Log.End(ctx, id)
	}
	r.finished(run, id, ended, now)
}

// failedStatus is the final status of a run that ended with err (not
// nil), cancelled with cause cancelled (nil when it was not): cancelled
// after Cancel, or when err is context.Canceled, but failed when the
// cause was ErrShutdown (the run did not choose to stop); otherwise
// failed.
func failedStatus(err, cancelled error) Status {
	switch {
	case errors.Is(cancelled, ErrShutdown) || errors.Is(err, ErrShutdown):
		return StatusFailed
	case cancelled != nil || errors.Is(err, context.Canceled):
		return StatusCancelled
	}
	return StatusFailed
}

// endIndexed records the end of the run, named id, in the index, then
// ends its log; in one step when the log is an IndexEnder.
func (run *Run) endIndexed(ctx context.Context, id string) {
	r := run.reg
	if r.ender != nil {
		_ = r.ender.PutEnd(ctx, r.cfg.Index, run.Info(), run.retention)
		return
	}
	run.put(ctx)
	if r.cfg.Log != nil {
		_ = r.cfg.Log.End(ctx, id)
	}
}

// stopLatePut stops late, the put PutLater scheduled (taken from
// run.putTimer, which is not kept with the ended run), once the run's end
// is decided (its status final, or its end about to be written): one
// under way lands first, so that the index never goes back from the end
// to running (putLate puts nothing once the run is over).
func (run *Run) stopLatePut(late *time.Timer) {
	if late != nil && !late.Stop() {
		run.putMu.Lock() // the late put, under way, lands first
		run.putMu.Unlock()
	}
}

// An Ending is the end of a completed run, written by the write that
// stores its turn's session events rather than by Finish: a session
// store that can (sessions.EndingAppender: the Redis store, with the run
// log and index of its own single node) ends the run's log and records
// Info in the index with that write, in the same step, and tells it so
// (Written). Finish then ends the run in this process only. An Ending
// that was not written leaves everything to Finish, as before.
type Ending struct {
	// Info is the run's final record: completed, ended when the Ending
	// was made.
	Info Info
	// Retention is how long the index keeps it (Spec.Retention).
	Retention time.Duration
	run       *Run
}

// Ending returns the end of the run as completed now, for its driver to
// hand to the write that stores its turn's last events, once the turn
// ended well and nothing that follows may fail it (the run's end is then
// what Finish with a nil error would write). It is nil when the run keeps
// no log or no index, has no id yet, or is over. The put PutLater
// scheduled, if any, is not made after it (one under way lands first).
func (run *Run) Ending() *Ending {
	cfg := run.reg.cfg
	now := cfg.Now()
	run.mu.Lock()
	if cfg.Log == nil || cfg.Index == nil || run.info.ID == "" || run.over {
		run.mu.Unlock()
		return nil
	}
	in, late := run.info, run.putTimer
	run.endTaken, run.putTimer = true, nil
	run.mu.Unlock()
	run.stopLatePut(late)
	in.Status, in.Updated, in.Ended = StatusCompleted, now, now
	return &Ending{Info: in, Retention: run.retention, run: run}
}

// Log is the log the run's end is to end (Config.Log).
func (e *Ending) Log() EventLog { return e.run.reg.cfg.Log }

// Index is the index that is to record Info (Config.Index).
func (e *Ending) Index() Index { return e.run.reg.cfg.Index }

// Written records that the run's log was ended, and Info recorded in the
// index: the run is over from then on (its status Info's; a Cancel does
// nothing), and Finish ends it in this process only. It implements
// sessions.RunEnd, the store calling it once the write went through.
func (e *Ending) Written() {
	run := e.run
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.over {
		return
	}
	run.over, run.written = true, true
	run.info.Status, run.info.Updated, run.info.Ended = e.Info.Status, e.Info.Updated, e.Info.Ended
}

var _ sessions.RunEnd = (*Ending)(nil)

// Err is what the run ended with (nil while it runs, or when it
// completed).
func (run *Run) Err() error {
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.err
}

// Done is closed when the run has finished.
func (run *Run) Done() <-chan struct{} {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.done == nil {
		run.done = make(chan struct{})
		if run.closed {
			close(run.done)
		}
	}
	return run.done
}
