package agentcore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
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
	// it is shared).
	Locker sessions.Locker
	// Timeout bounds one compaction, the summarizer's call included
	// (default 2 minutes).
	Timeout time.Duration
}

// CompactionObserver is implemented by Observers that count compactions.
// outcome is "stored", "failed" (the summarizer or the store failed; the
// next turn retries) or "skipped" (another compaction of the session was
// running, had just stored it, or the session was deleted).
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

// compactor runs the compactions of one runner's sessions, on the
// runner's Background.
type compactor struct {
	cfg Compaction
	app string
	svc *services
	bg  *Background
}

func newCompactor(cfg *Compaction, app string, svc *services, bg *Background) (*compactor, error) {
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
	c := &compactor{cfg: *cfg, app: app, svc: svc, bg: bg}
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

// due reports whether evs (a session read since its latest compaction, as
// a turn reads it) has Interval user turns that compaction does not cover
// and none of their calls is waiting for an answer (a paused turn is
// compacted once it is over, so that no call is covered without its
// response).
func (c *compactor) due(evs []*sessions.Event) bool {
	rest, _ := uncovered(evs)
	return userTurns(rest) >= c.cfg.Interval && len(openCalls("", rest, "")) == 0
}

// start compacts sess in the background when it is due (c: the runner's
// compactor, not nil). The caller's turn is over; nothing here reaches its
// client.
func (c *compactor) start(ctx context.Context, sess *sessions.Session) {
	if !c.due(sess.Events) {
		return
	}
	c.bg.Go(ctx, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		outcome, err := c.compact(ctx, sess.AppName, sess.UserID, sess.ID)
		switch {
		case err != nil && errors.Is(context.Cause(ctx), errStopped):
			c.svc.logger.WarnContext(ctx, "compaction stopped by the shutdown; the next turn runs it again", "app", c.app, "session_id", sess.ID)
		case err != nil:
			c.svc.logger.ErrorContext(ctx, "compaction failed; the next turn retries", "app", c.app, "session_id", sess.ID, "err", err)
		}
		if o, ok := c.svc.observer.(CompactionObserver); ok {
			o.Compaction(c.app, outcome)
		}
	})
}

// compact summarizes the session's turns that its latest compaction does
// not cover and appends the compaction event. The session's run lease is
// not taken: a turn never waits for a compaction, nor a compaction for a
// turn. The event covers the events read here, up to the last one's
// timestamp; those a turn stores meanwhile, before or after it, have later
// timestamps and stay uncovered (see sessions.CompactionStart).
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
	if errors.Is(err, sessions.ErrNotFound) {
		return CompactionSkipped, nil
	}
	if err != nil {
		return CompactionFailed, err
	}
	if !c.due(sess.Events) {
		return CompactionSkipped, nil // compacted meanwhile (by another replica, or before this turn's end)
	}
	covered, prev := uncovered(sess.Events)
	last := covered[len(covered)-1]
	if c.cfg.Overlap > 0 && prev != nil {
		if covered, err = c.withOverlap(ctx, sess, covered); err != nil {
			return CompactionFailed, err
		}
	}
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
	if ev.Timestamp.Before(last.Timestamp) {
		ev.Timestamp = last.Timestamp
	}
	if agent := lastAgent(sess.Events); agent != "" {
		ev.CustomMetadata = map[string]any{metaAgent: agent}
	}
	// One append: the event is stored whole or not at all.
	err = store.AppendEvent(ctx, &sessions.Session{ID: id, AppName: app, UserID: user, State: map[string]any{}}, ev)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return CompactionSkipped, nil
	case err != nil:
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

// lastAgent is the agent that spoke last in evs: see speakers.
func lastAgent(evs []*sessions.Event) string {
	for a := range speakers(evs) {
		return a
	}
	return ""
}

// speakers yields the agents that spoke in evs, in the order that decides
// where the next turn goes: the authors of the agents' events, latest
// first, then the agent the latest compaction event recorded (the last to
// speak in what it covers, which a read since that compaction does not
// hold). A compaction event is passed over where it stands: it may have
// been stored after events it does not cover.
func speakers(evs []*sessions.Event) iter.Seq[string] {
	return func(yield func(string) bool) {
		latest := -1
		for i := len(evs) - 1; i >= 0; i-- {
			ev := evs[i]
			switch {
			case ev.IsCompaction():
				if latest < 0 {
					latest = i
				}
			case ev.Author != "user":
				if !yield(ev.Author) {
					return
				}
			}
		}
		if latest >= 0 {
			if a, _ := evs[latest].CustomMetadata[metaAgent].(string); a != "" {
				yield(a)
			}
		}
	}
}

// WaitCompactions waits until no compaction runs on the runner's
// Background (those of every runner sharing it), or until ctx ends: then
// it returns ctx's error and they go on.
func (r *Runner) WaitCompactions(ctx context.Context) error { return r.bg.Wait(ctx) }
