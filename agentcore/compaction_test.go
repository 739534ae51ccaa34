package agentcore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/sessions"
)

// Compaction makes transferLog a CompactionObserver too.
func (o *transferLog) Compaction(app, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, app+":"+outcome)
}

func (o *transferLog) lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got...)
}

// summarizer answers "SUMMARY-<n>" to its n-th request, or fails while
// fail is set.
func summarizer(fail *bool) *fakeLLM {
	return &fakeLLM{name: "summarizer", fn: func(_ context.Context, _ *model.Request, _ bool, n int) ([]*model.Response, error) {
		if fail != nil && *fail {
			return nil, errors.New("upstream down")
		}
		return []*model.Response{textResp(fmt.Sprintf("SUMMARY-%d", n))}, nil
	}}
}

func withCompaction(interval, overlap int, sum model.LLM, obs agentcore.Observer) harnessOpt {
	return func(c *agentcore.RunnerConfig) {
		c.Compaction = &agentcore.Compaction{Interval: interval, Overlap: overlap, Model: sum, Locker: sessions.NewMemoryLocker()}
		c.Observer = obs
	}
}

// echo answers each user message with "re: <message>".
func echo() *fakeLLM {
	return &fakeLLM{name: "fake", fn: func(_ context.Context, req *model.Request, _ bool, _ int) ([]*model.Response, error) {
		last := req.Contents[len(req.Contents)-1]
		return []*model.Response{textResp("re: " + last.Parts[0].Text)}, nil
	}}
}

func (h *harness) turn(text string) {
	h.t.Helper()
	h.mustRun("s1", userText(text), agentcore.RunConfig{})
	h.runner.WaitCompactions(context.Background())
}

// wantContents checks a model request's contents, rendered.
func wantContents(t *testing.T, what string, req *model.Request, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, render(req.Contents)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// lastRequest is the latest request f received.
func lastRequest(f *fakeLLM) *model.Request {
	reqs := f.requests()
	return reqs[len(reqs)-1]
}

func compactions(evs []*sessions.Event) []*sessions.EventCompaction {
	var out []*sessions.EventCompaction
	for _, ev := range evs {
		if ev.IsCompaction() {
			out = append(out, ev.Actions.Compaction)
		}
	}
	return out
}

// Every interval user turns, the summarizer gets the previous summary and
// the turns since, the session gets a compaction event, and the next model
// request carries the summary instead of the covered turns.
func TestCompactionReplacesCoveredTurns(t *testing.T) {
	m, sum, obs := echo(), summarizer(nil), &transferLog{}
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m}), withCompaction(2, 0, sum, obs))
	h.turn("one")
	if n := len(sum.requests()); n != 0 {
		t.Fatalf("summarized after 1 turn of 2: %d calls", n)
	}
	h.turn("two")
	reqs := sum.requests()
	if len(reqs) != 1 {
		t.Fatalf("summarizer calls = %d, want 1", len(reqs))
	}
	wantContents(t, "first summarization request", reqs[0],
		"user: Conversation:\n[user] said: one\n[helper] said: re: one\n[user] said: two\n[helper] said: re: two\n")
	all := h.session("s1").Events
	cs := compactions(all)
	if len(cs) != 1 || all[len(all)-1].Author != "user" || !all[len(all)-1].IsCompaction() {
		t.Fatalf("session events after 2 turns: %v", authors(all))
	}
	if !cs[0].StartTimestamp.Equal(all[0].Timestamp) || !cs[0].EndTimestamp.Equal(all[3].Timestamp) || cs[0].CompactedContent.Parts[0].Text != "SUMMARY-1" {
		t.Errorf("compaction = %+v, want [%v, %v] SUMMARY-1", cs[0], all[0].Timestamp, all[3].Timestamp)
	}

	h.turn("three")
	wantContents(t, "request after the compaction", lastRequest(m), "user: "+agentcore.SummaryPreamble+"SUMMARY-1", "user: three")
	h.turn("four")
	reqs = sum.requests()
	if len(reqs) != 2 {
		t.Fatalf("summarizer calls = %d, want 2", len(reqs))
	}
	wantContents(t, "second summarization request", reqs[1],
		"user: Previous summary:\nSUMMARY-1\n\nConversation:\n[user] said: three\n[helper] said: re: three\n[user] said: four\n[helper] said: re: four\n")
	h.turn("five")
	wantContents(t, "request after the second compaction", lastRequest(m), "user: "+agentcore.SummaryPreamble+"SUMMARY-2", "user: five")
	all = h.session("s1").Events
	if n := len(compactions(all)); n != 2 || len(all) != 12 {
		t.Errorf("stored %d events with %d compactions, want every original event (10) and 2", len(all), n)
	}
	if cs := compactions(all); !cs[1].StartTimestamp.Equal(cs[0].StartTimestamp) {
		t.Errorf("a cumulative summary starts where the first did: %v, want %v", cs[1].StartTimestamp, cs[0].StartTimestamp)
	}
	if diff := cmp.Diff([]string{"app:stored", "app:stored"}, obs.lines()); diff != "" {
		t.Errorf("observed outcomes (-want +got):\n%s", diff)
	}
}

// overlap turns before the latest compaction are summarized again.
func TestCompactionOverlap(t *testing.T) {
	sum := summarizer(nil)
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: echo()}), withCompaction(2, 1, sum, nil))
	for _, s := range []string{"one", "two", "three", "four"} {
		h.turn(s)
	}
	reqs := sum.requests()
	if len(reqs) != 2 {
		t.Fatalf("summarizer calls = %d, want 2", len(reqs))
	}
	wantContents(t, "summarization with overlap 1", reqs[1],
		"user: Previous summary:\nSUMMARY-1\n\nConversation:\n[user] said: two\n[helper] said: re: two\n[user] said: three\n[helper] said: re: three\n[user] said: four\n[helper] said: re: four\n")
}

// A failed summarization does not touch the turn; it is counted, and the
// next turn retries it.
func TestCompactionFailureRetried(t *testing.T) {
	fail := true
	sum, obs := summarizer(&fail), &transferLog{}
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: echo()}), withCompaction(1, 0, sum, obs))
	evs := h.mustRun("s1", userText("one"), agentcore.RunConfig{})
	h.runner.WaitCompactions(context.Background())
	if diff := cmp.Diff([]string{"helper: re: one"}, texts(evs)); diff != "" {
		t.Errorf("turn with a failing summarizer (-want +got):\n%s", diff)
	}
	if n := len(compactions(h.session("s1").Events)); n != 0 {
		t.Fatalf("%d compactions stored after a failure", n)
	}
	fail = false
	h.turn("two")
	cs := compactions(h.session("s1").Events)
	if len(cs) != 1 || !strings.Contains(render(sum.requests()[1].Contents)[0], "[user] said: one") {
		t.Errorf("retry: %d compactions, request %v; want one covering the first turn too", len(cs), render(sum.requests()[1].Contents))
	}
	if diff := cmp.Diff([]string{"app:failed", "app:stored"}, obs.lines()); diff != "" {
		t.Errorf("observed outcomes (-want +got):\n%s", diff)
	}
}

// A paused turn is not compacted until its call is answered: a call and
// its response are never split, and the resume finds the call.
func TestCompactionWaitsForPausedCalls(t *testing.T) {
	sum := summarizer(nil)
	m := replies(callResp("c1", "open_url", map[string]any{"url": "https://example.com"}), textResp("opened"), textResp("later"))
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Tools: []agentcore.Tool{&agentcore.ClientTool{Decl: openURL}}}),
		withCompaction(1, 0, sum, nil))
	h.turn("open it")
	if n := len(sum.requests()); n != 0 {
		t.Fatalf("a paused turn was summarized (%d calls)", n)
	}
	if _, _, err := h.resume("c1", "open_url", map[string]any{"opened": true}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	h.runner.WaitCompactions(context.Background())
	reqs := sum.requests()
	if len(reqs) != 1 {
		t.Fatalf("summarizer calls after the resume = %d, want 1", len(reqs))
	}
	in := render(reqs[0].Contents)[0]
	if !strings.Contains(in, "called tool `open_url`") || !strings.Contains(in, "`open_url` tool returned result") {
		t.Errorf("summarized without the call and its response:\n%s", in)
	}
	h.turn("again")
	wantContents(t, "request after compaction", lastRequest(m), "user: "+agentcore.SummaryPreamble+"SUMMARY-1", "user: again")
}

// After a compaction the next turn still goes to the agent that spoke
// last, and its request carries the summary (not the transfer's context).
func TestCompactionKeepsRouting(t *testing.T) {
	m := perAgent(map[string][]*model.Response{
		"coordinator": {callResp("t1", agentcore.TransferToolName, map[string]any{"agent_name": "greeter"})},
		"greeter":     {textResp("hello"), textResp("hello again")},
	})
	greeter := mustLlm(t, agentcore.LlmConfig{Name: "greeter", Model: m})
	root := mustLlm(t, agentcore.LlmConfig{Name: "coordinator", Model: m, SubAgents: []agentcore.Agent{greeter}})
	h := newHarness(t, root, withCompaction(1, 0, summarizer(nil), nil))
	h.turn("hi")
	h.turn("hi again")
	if n := len(m.requestsBy("coordinator")); n != 1 {
		t.Errorf("coordinator ran %d times, want 1 (the second turn goes to the greeter)", n)
	}
	gr := m.requestsBy("greeter")
	if len(gr) != 2 {
		t.Fatalf("greeter ran %d times, want 2", len(gr))
	}
	wantContents(t, "greeter's request after compaction", gr[1], "user: "+agentcore.SummaryPreamble+"SUMMARY-1", "user: hi again")
}

// include_contents none shows neither the history nor its summary.
func TestCompactionIncludeNone(t *testing.T) {
	m := echo()
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, IncludeContents: agentcore.IncludeNone}),
		withCompaction(1, 0, summarizer(nil), nil))
	h.turn("one")
	h.turn("two")
	wantContents(t, "include_contents none after compaction", lastRequest(m), "user: two")
}

// Bad compaction settings are refused by NewRunner.
func TestCompactionConfigRefused(t *testing.T) {
	root := mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: echo()})
	for _, c := range []agentcore.Compaction{
		{Interval: 0, Model: echo(), Locker: sessions.NewMemoryLocker()},
		{Interval: 1, Overlap: -1, Model: echo(), Locker: sessions.NewMemoryLocker()},
		{Interval: 1, Locker: sessions.NewMemoryLocker()},
		{Interval: 1, Model: echo()},
	} {
		_, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: "app", Agent: root, Sessions: sessions.NewMemoryService(sessions.MemoryConfig{}),
			Compaction: &c})
		if err == nil {
			t.Errorf("NewRunner accepted %+v", c)
		}
	}
}

// A session whose turns follow each other while the summary is written is
// compacted all the same: the compaction event covers the turns it was
// asked about, whether the next turn was stored before it (the turn ended
// first) or after it (the summary came while the turn ran), and the turn
// after that carries the summary and that next turn, in order.
func TestCompactionOfABusySession(t *testing.T) {
	for _, tc := range []struct {
		name string
		// summaryDuringTurn: the summary is stored while turn "three"
		// runs; otherwise after it ended.
		summaryDuringTurn bool
	}{
		{"turn ends first", false},
		{"summary during the turn", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			summarizing, release := make(chan struct{}, 1), make(chan struct{})
			sum := &fakeLLM{name: "summarizer", fn: func(_ context.Context, _ *model.Request, _ bool, n int) ([]*model.Response, error) {
				if n == 1 {
					summarizing <- struct{}{}
					<-release
				}
				return []*model.Response{textResp(fmt.Sprintf("SUMMARY-%d", n))}, nil
			}}
			running, resume := make(chan struct{}, 1), make(chan struct{})
			m := &fakeLLM{name: "fake", fn: func(_ context.Context, req *model.Request, _ bool, _ int) ([]*model.Response, error) {
				last := req.Contents[len(req.Contents)-1].Parts[0].Text
				if last == "three" && tc.summaryDuringTurn {
					running <- struct{}{}
					<-resume
				}
				return []*model.Response{textResp("re: " + last)}, nil
			}}
			obs := &transferLog{}
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m}), withCompaction(2, 0, sum, obs))
			h.mustRun("s1", userText("one"), agentcore.RunConfig{})
			h.mustRun("s1", userText("two"), agentcore.RunConfig{})
			<-summarizing // of one and two
			if tc.summaryDuringTurn {
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.mustRun("s1", userText("three"), agentcore.RunConfig{})
				}()
				<-running
				close(release)
				h.runner.WaitCompactions(context.Background())
				close(resume)
				<-done
			} else {
				h.mustRun("s1", userText("three"), agentcore.RunConfig{})
				close(release)
			}
			h.runner.WaitCompactions(context.Background())
			if n := len(compactions(h.session("s1").Events)); n != 1 {
				t.Fatalf("%d compactions stored, want 1: %v", n, authors(h.session("s1").Events))
			}
			h.turn("four")
			wantContents(t, "request after the compaction", lastRequest(m),
				"user: "+agentcore.SummaryPreamble+"SUMMARY-1", "user: three", "model: re: three", "user: four")
			reqs := sum.requests()
			if len(reqs) != 2 {
				t.Fatalf("summarizer calls = %d, want 2 (one, two; then three, four)", len(reqs))
			}
			wantContents(t, "second summarization request", reqs[1],
				"user: Previous summary:\nSUMMARY-1\n\nConversation:\n[user] said: three\n[helper] said: re: three\n[user] said: four\n[helper] said: re: four\n")
			h.turn("five")
			wantContents(t, "request after the second compaction", lastRequest(m), "user: "+agentcore.SummaryPreamble+"SUMMARY-2", "user: five")
			// Turn three's end found the compaction running, or done:
			// skipped; no summary is lost or written twice.
			got := obs.lines()
			slices.Sort(got)
			if diff := cmp.Diff([]string{"app:skipped", "app:stored", "app:stored"}, got); diff != "" {
				t.Errorf("observed outcomes (-want +got):\n%s", diff)
			}
		})
	}
}
