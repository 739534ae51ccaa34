package agentcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// Compaction configures the compaction of a runner's sessions: every
// Interval user turns, a summary of the previous summary and of those turns
// (and Overlap turns before them) is appended to the session as a
// compaction event, and later model requests carry it in place of the
// events it covers (see compacted).
type Compaction struct {
	// Interval is how many user turns (turns started by a user message;
	// state patches, resumed calls and sub-conversations do not count)
	// pass between compactions. At least 1.
	Interval int
	// Overlap is how many user turns before those are summarized again.
	Overlap int
	// Model writes the summaries.
	Model model.LLM
	// Locker serialises compactions of one session (across replicas when
	// it is shared) and guards the compaction's write with the session's
	// run lease.
	Locker sessions.Locker
	// Timeout bounds one compaction, the summarizer's call included
	// (default 2 minutes).
	Timeout time.Duration
}

// CompactionObserver is implemented by Observers that count compactions.
// outcome is "stored", "failed" (the summarizer or the store failed; the
// next turn retries) or "skipped" (another compaction of the session was
// running, or the session moved on while summarizing).
type CompactionObserver interface {
	Compaction(app, outcome string)
}

// Compaction outcomes.
const (
	CompactionStored  = "stored"
	CompactionFailed  = "failed"
	CompactionSkipped = "skipped"
)

// compactionMark is the suffix of the id whose run lease marks a running
// compaction of a session: at most one at a time per session.
const compactionMark = "/~compaction"

// metaAgent is the compaction event's custom metadata key naming the
// agent that spoke last in the turns it covers, so that the next turn is
// routed as if they were read.
const metaAgent = "agentgate.agent"

const summarizerInstruction = `You condense a conversation between a user and AI agents into a summary from which the conversation can go on without the original messages. Keep every fact, name, number, decision, preference, open question and tool result that later turns may need, and who said what when it matters. Fold the previous summary, when there is one, into the new one. Answer with the summary only.`

// compactor runs the compactions of one runner's sessions.
type compactor struct {
	cfg     Compaction
	app     string
	svc     *services
	running sync.WaitGroup
}

func newCompactor(cfg *Compaction, app string, svc *services) (*compactor, error) {
	if cfg == nil {
		return nil, nil
	}
	switch {
	case cfg.Interval < 1:
		return nil, errors.New("compaction: interval must be at least 1")
	case cfg.Overlap < 0:
		return nil, errors.New("compaction: overlap must not be negative")
	case cfg.Model == nil:
		return nil, errors.New("compaction: no model")
	case cfg.Locker == nil:
		return nil, errors.New("compaction: no locker")
	}
	c := &compactor{cfg: *cfg, app: app, svc: svc}
	if c.cfg.Timeout <= 0 {
		c.cfg.Timeout = 2 * time.Minute
	}
	return c, nil
}

// userTurns counts the user turns among evs: invocations started by a
// user's message (not a state patch, not function responses).
func userTurns(evs []*sessions.Event) int {
	n, last := 0, ""
	for _, ev := range evs {
		if ev.Author != "user" || ev.Content == nil || ev.InvocationID == last || len(ev.FunctionResponses()) > 0 {
			continue
		}
		if ev.Text() == "" && !hasData(ev.Content) {
			continue
		}
		n++
		last = ev.InvocationID
	}
	return n
}

func hasData(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p != nil && (p.InlineData != nil || p.FileData != nil) {
			return true
		}
	}
	return false
}

// due reports whether sess (read since its latest compaction, as a turn
// reads it) has Interval user turns since that compaction and none of its
// calls is waiting for an answer (a paused turn is compacted once it is
// over, so that no call is covered without its response).
func (c *compactor) due(evs []*sessions.Event) bool {
	since := evs[sessions.LastCompaction(evs)+1:]
	return userTurns(since) >= c.cfg.Interval && len(openCalls("", since, "")) == 0
}

// start compacts sess in the background when it is due. The caller's turn
// is over; nothing here reaches its client.
func (c *compactor) start(ctx context.Context, sess *sessions.Session) {
	if c == nil || !c.due(sess.Events) {
		return
	}
	c.running.Add(1)
	go func() {
		defer c.running.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.Timeout)
		defer cancel()
		outcome, err := c.compact(ctx, sess.AppName, sess.UserID, sess.ID)
		if err != nil {
			c.svc.logger.ErrorContext(ctx, "compaction failed; the next turn retries", "app", c.app, "session_id", sess.ID, "err", err)
		}
		if o, ok := c.svc.observer.(CompactionObserver); ok {
			o.Compaction(c.app, outcome)
		}
	}()
}

// compact summarizes the session's turns since its latest compaction and
// appends the compaction event. The summarizer is called without the
// session's run lease (a next turn never waits for it); the write takes
// the lease and happens only when the session has not moved on meanwhile.
func (c *compactor) compact(ctx context.Context, app, user, id string) (outcome string, err error) {
	defer func() {
		if p := recover(); p != nil {
			outcome, err = CompactionFailed, fmt.Errorf("panic: %v", p)
		}
	}()
	mark, err := c.cfg.Locker.Acquire(ctx, app, user, id+compactionMark, 0)
	if errors.Is(err, sessions.ErrConflict) {
		return CompactionSkipped, nil
	}
	if err != nil {
		return CompactionFailed, err
	}
	defer mark.Release()
	store := c.svc.sessions
	sess, err := store.Get(ctx, sessions.GetRequest{AppName: app, UserID: user, SessionID: id, Window: sessions.Window{SinceCompaction: true}})
	if err != nil {
		return CompactionFailed, err
	}
	if !c.due(sess.Events) {
		return CompactionSkipped, nil // compacted by another replica meanwhile
	}
	evs := sess.Events
	ci := sessions.LastCompaction(evs)
	var prev *sessions.EventCompaction
	if ci >= 0 {
		prev = evs[ci].Actions.Compaction
	}
	covered := evs[ci+1:]
	if c.cfg.Overlap > 0 && ci >= 0 {
		if covered, err = c.withOverlap(ctx, sess, covered); err != nil {
			return CompactionFailed, err
		}
	}
	last := evs[len(evs)-1]
	summary, err := c.summarize(ctx, prev, covered)
	if err != nil {
		return CompactionFailed, err
	}
	start := firstTimestamp(covered)
	if prev != nil && !prev.StartTimestamp.IsZero() {
		start = prev.StartTimestamp
	}
	ev := &sessions.Event{ID: c.svc.newID(), InvocationID: "c-" + c.svc.newID(), Author: "user", Timestamp: c.svc.now(),
		Actions: sessions.EventActions{Compaction: &sessions.EventCompaction{StartTimestamp: start, EndTimestamp: last.Timestamp,
			CompactedContent: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: summary}}}}}}
	if agent := lastAgent(evs); agent != "" {
		ev.CustomMetadata = map[string]any{metaAgent: agent}
	}
	return c.store(ctx, app, user, id, last.ID, ev)
}

// store appends ev under the session's run lease, only while lastID is
// still the session's last event.
func (c *compactor) store(ctx context.Context, app, user, id, lastID string, ev *sessions.Event) (string, error) {
	req := sessions.GetRequest{AppName: app, UserID: user, SessionID: id, Window: sessions.Window{NumRecentEvents: 1}}
	lease, err := c.cfg.Locker.Acquire(ctx, app, user, id, 0)
	var sess *sessions.Session
	if err == nil {
		defer lease.Release()
		sess, err = c.svc.sessions.Get(ctx, req)
	}
	switch {
	case errors.Is(err, sessions.ErrConflict):
		return CompactionSkipped, nil // a turn is running: the summary is redone after it
	case err != nil:
		return CompactionFailed, err
	case len(sess.Events) != 1 || sess.Events[0].ID != lastID:
		return CompactionSkipped, nil // the session moved on
	}
	if ev.Timestamp.Before(sess.Events[0].Timestamp) {
		ev.Timestamp = sess.Events[0].Timestamp
	}
	// The write releases the lease with it when the store can (one round
	// trip on Redis); the deferred Release then costs nothing.
	if ra, ok := c.svc.sessions.(sessions.ReleasingAppender); ok {
		err = ra.AppendEventsRelease(ctx, sess, []*sessions.Event{ev}, lease)
	} else {
		err = c.svc.sessions.AppendEvent(ctx, sess, ev)
	}
	if err != nil {
		return CompactionFailed, err
	}
	return CompactionStored, nil
}

// withOverlap prepends to covered the Overlap user turns before the latest
// compaction, read with windows of the latest events that double until
// they reach far enough back (never the whole session when it is long).
func (c *compactor) withOverlap(ctx context.Context, sess *sessions.Session, covered []*sessions.Event) ([]*sessions.Event, error) {
	n := len(sess.Events) + 16
	for {
		got, err := c.svc.sessions.Get(ctx, sessions.GetRequest{AppName: sess.AppName, UserID: sess.UserID, SessionID: sess.ID,
			Window: sessions.Window{NumRecentEvents: n}})
		if err != nil {
			return nil, err
		}
		before := got.Events[:max(len(got.Events)-len(sess.Events), 0)]
		// The overlap turns start at the Overlap-th user message before the
		// compaction, counted back over the events that are not compactions.
		turns, start := 0, -1
		last := ""
		for i := len(before) - 1; i >= 0; i-- {
			ev := before[i]
			if ev.Author == "user" && ev.Content != nil && len(ev.FunctionResponses()) == 0 && ev.InvocationID != last && !ev.IsCompaction() {
				turns++
				last = ev.InvocationID
				if turns == c.cfg.Overlap {
					start = i
					break
				}
			}
		}
		if start >= 0 || len(got.Events) < n {
			if start < 0 {
				start = 0
			}
			var out []*sessions.Event
			for _, ev := range before[start:] {
				if !ev.IsCompaction() {
					out = append(out, ev)
				}
			}
			return append(out, covered...), nil
		}
		n *= 2
	}
}

// summarize asks the summarizer for the new summary.
func (c *compactor) summarize(ctx context.Context, prev *sessions.EventCompaction, evs []*sessions.Event) (string, error) {
	var b strings.Builder
	if prev != nil && prev.CompactedContent != nil {
		b.WriteString("Previous summary:\n")
		for _, p := range prev.CompactedContent.Parts {
			if p != nil && !p.Thought {
				b.WriteString(p.Text)
			}
		}
		b.WriteString("\n\n")
	}
	b.WriteString("Conversation:\n")
	for _, ev := range evs {
		if ev.Partial || ev.Content == nil || ev.IsCompaction() {
			continue
		}
		for _, line := range contextLines(ev) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	req := &model.Request{Model: c.cfg.Model.Name(), Agent: "compaction", Config: &genai.GenerateContentConfig{
		SystemInstruction: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: summarizerInstruction}}}},
		Contents: []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{{Text: b.String()}}}}}
	var text strings.Builder
	for resp, err := range c.cfg.Model.GenerateContent(ctx, req, false) {
		if err != nil {
			return "", fmt.Errorf("summarizer %s: %w", c.cfg.Model.Name(), err)
		}
		if resp.Partial || resp.Content == nil {
			continue
		}
		for _, p := range resp.Content.Parts {
			if p != nil && !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	if strings.TrimSpace(text.String()) == "" {
		return "", fmt.Errorf("summarizer %s: empty summary", c.cfg.Model.Name())
	}
	return text.String(), nil
}

func firstTimestamp(evs []*sessions.Event) time.Time {
	for _, ev := range evs {
		if !ev.Timestamp.IsZero() {
			return ev.Timestamp
		}
	}
	return time.Time{}
}

// lastAgent is the author of the last agent event in evs (a compaction
// event's recorded agent counts).
func lastAgent(evs []*sessions.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if a := speaker(evs[i]); a != "" {
			return a
		}
	}
	return ""
}

// speaker is the agent an event stands for when routing the next turn:
// its author, or for a compaction event the agent it recorded; "" for the
// user's events.
func speaker(ev *sessions.Event) string {
	if ev.IsCompaction() {
		a, _ := ev.CustomMetadata[metaAgent].(string)
		return a
	}
	if ev.Author == "user" {
		return ""
	}
	return ev.Author
}

// WaitCompactions waits for the compactions the runner started to end
// (tests, and shutdown after the last turn).
func (r *Runner) WaitCompactions() {
	if r.compactor != nil {
		r.compactor.running.Wait()
	}
}
