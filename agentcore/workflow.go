package agentcore

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/agentgate/agentgate/sessions"
)

// WorkflowConfig configures a workflow agent.
type WorkflowConfig struct {
	Name        string
	Description string
	SubAgents   []Agent
	// MaxIterations bounds a LoopAgent (0: until a child escalates).
	MaxIterations int
}

func (c WorkflowConfig) validate(kind string) error {
	if c.Name == "" {
		return fmt.Errorf("%s agent: empty name", kind)
	}
	if len(c.SubAgents) == 0 {
		return fmt.Errorf("%s agent %q: no sub-agents", kind, c.Name)
	}
	for _, s := range c.SubAgents {
		if s == nil {
			return fmt.Errorf("%s agent %q: nil sub-agent", kind, c.Name)
		}
	}
	if c.MaxIterations < 0 {
		return fmt.Errorf("%s agent %q: max_iterations must not be negative", kind, c.Name)
	}
	return nil
}

type workflowBase struct{ cfg WorkflowConfig }

func (w *workflowBase) Name() string        { return w.cfg.Name }
func (w *workflowBase) Description() string { return w.cfg.Description }
func (w *workflowBase) SubAgents() []Agent  { return w.cfg.SubAgents }

// SequentialAgent runs its sub-agents one after another in the same
// invocation; a child's output_key is readable downstream as {key}.
type SequentialAgent struct{ workflowBase }

// NewSequentialAgent validates cfg and returns the agent.
func NewSequentialAgent(cfg WorkflowConfig) (*SequentialAgent, error) {
	if err := cfg.validate("sequential"); err != nil {
		return nil, err
	}
	return &SequentialAgent{workflowBase{cfg}}, nil
}

// Run implements Agent.
func (s *SequentialAgent) Run(ctx context.Context, inv *Invocation) iter.Seq2[*sessions.Event, error] {
	return func(yield func(*sessions.Event, error) bool) {
		for _, child := range s.cfg.SubAgents {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			for ev, err := range runAgent(ctx, child, inv.withAgent(child)) {
				if !yield(ev, err) || err != nil {
					return
				}
			}
		}
	}
}

// LoopAgent runs its sub-agents in order, repeatedly, until one escalates
// (exit_loop) or MaxIterations rounds have run.
type LoopAgent struct{ workflowBase }

// NewLoopAgent validates cfg and returns the agent.
func NewLoopAgent(cfg WorkflowConfig) (*LoopAgent, error) {
	if err := cfg.validate("loop"); err != nil {
		return nil, err
	}
	return &LoopAgent{workflowBase{cfg}}, nil
}

// Run implements Agent.
func (l *LoopAgent) Run(ctx context.Context, inv *Invocation) iter.Seq2[*sessions.Event, error] {
	return func(yield func(*sessions.Event, error) bool) {
		for round := 0; l.cfg.MaxIterations == 0 || round < l.cfg.MaxIterations; round++ {
			for _, child := range l.cfg.SubAgents {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				escalated := false
				for ev, err := range runAgent(ctx, child, inv.withAgent(child)) {
					if !yield(ev, err) || err != nil {
						return
					}
					if ev.Actions.Escalate && !ev.Partial {
						escalated = true
					}
				}
				if escalated {
					return
				}
			}
		}
	}
}

// ParallelAgent runs its sub-agents concurrently, each on its own branch
// "<branch>.<child>" (so they do not see each other's events), and merges
// their events as they arrive. A child waits until its event has been
// consumed (and stored) before it goes on. When the consumer stops or a
// child fails, the others are cancelled and drained before Run returns.
type ParallelAgent struct{ workflowBase }

// NewParallelAgent validates cfg and returns the agent.
func NewParallelAgent(cfg WorkflowConfig) (*ParallelAgent, error) {
	if err := cfg.validate("parallel"); err != nil {
		return nil, err
	}
	return &ParallelAgent{workflowBase{cfg}}, nil
}

type branchItem struct {
	ev   *sessions.Event
	err  error
	done chan struct{}
}

// Run implements Agent.
func (p *ParallelAgent) Run(ctx context.Context, inv *Invocation) iter.Seq2[*sessions.Event, error] {
	return func(yield func(*sessions.Event, error) bool) {
		parent := ctx
		ctx, cancel := context.WithCancel(ctx)
		items := make(chan branchItem)
		var wg sync.WaitGroup
		for _, child := range p.cfg.SubAgents {
			branch := p.cfg.Name + "." + child.Name()
			if inv.branch != "" {
				branch = inv.branch + "." + child.Name()
			}
			cinv := inv.withBranch(child, branch)
			wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						select {
						case items <- branchItem{err: fmt.Errorf("agent %s panicked: %v", child.Name(), r), done: make(chan struct{})}:
						case <-ctx.Done():
						}
					}
				}()
				for ev, err := range runAgent(ctx, child, cinv) {
					it := branchItem{ev: ev, err: err, done: make(chan struct{})}
					select {
					case items <- it:
					case <-ctx.Done():
						return
					}
					select {
					case <-it.done:
					case <-ctx.Done():
						return
					}
					if err != nil {
						return
					}
				}
			})
		}
		go func() { wg.Wait(); close(items) }()
		defer func() {
			cancel()
			for range items {
			}
		}()
		for it := range items {
			// The first failure ends the fan-out.
			if it.err != nil {
				yield(nil, it.err)
				return
			}
			if !yield(it.ev, nil) {
				return
			}
			close(it.done)
		}
		// Branches stopped by the caller's cancellation may end without
		// reporting it (they give up sending once ctx is done); the caller
		// must still learn that the fan-out did not finish.
		if err := parent.Err(); err != nil {
			yield(nil, err)
		}
	}
}
