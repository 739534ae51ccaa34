package agentcore_test

import (
	"context"
	"errors"
	"fmt"
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
	h.runner.WaitCompactions()
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
	in := render(reqs[0].Contents)
	want := []string{"user: Conversation:\n[user] said: one\n[helper] said: re: one\n[user] said: two\n[helper] said: re: two\n"}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("first summarization request (-want +got):\n%s", diff)
	}
	all := h.session("s1").Events
	cs := compactions(all)
	if len(cs) != 1 || all[len(all)-1].Author != "user" || !all[len(all)-1].IsCompaction() {
		t.Fatalf("session events after 2 turns: %v", authors(all))
	}
	if !cs[0].StartTimestamp.Equal(all[0].Timestamp) || !cs[0].EndTimestamp.Equal(all[3].Timestamp) || cs[0].CompactedContent.Parts[0].Text != "SUMMARY-1" {
		t.Errorf("compaction = %+v, want [%v, %v] SUMMARY-1", cs[0], all[0].Timestamp, all[3].Timestamp)
	}

	h.turn("three")
	last := m.requests()[len(m.requests())-1]
	if diff := cmp.Diff([]string{"user: " + agentcore.SummaryPreamble + "SUMMARY-1", "user: three"}, render(last.Contents)); diff != "" {
		t.Errorf("request after the compaction (-want +got):\n%s", diff)
	}
	h.turn("four")
	reqs = sum.requests()
	if len(reqs) != 2 {
		t.Fatalf("summarizer calls = %d, want 2", len(reqs))
	}
	want = []string{"user: Previous summary:\nSUMMARY-1\n\nConversation:\n[user] said: three\n[helper] said: re: three\n[user] said: four\n[helper] said: re: four\n"}
	if diff := cmp.Diff(want, render(reqs[1].Contents)); diff != "" {
		t.Errorf("second summarization request (-want +got):\n%s", diff)
	}
	h.turn("five")
	last = m.requests()[len(m.requests())-1]
	if diff := cmp.Diff([]string{"user: " + agentcore.SummaryPreamble + "SUMMARY-2", "user: five"}, render(last.Contents)); diff != "" {
		t.Errorf("request after the second compaction (-want +got):\n%s", diff)
	}
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
	want := []string{"user: Previous summary:\nSUMMARY-1\n\nConversation:\n[user] said: two\n[helper] said: re: two\n[user] said: three\n[helper] said: re: three\n[user] said: four\n[helper] said: re: four\n"}
	if diff := cmp.Diff(want, render(reqs[1].Contents)); diff != "" {
		t.Errorf("summarization with overlap 1 (-want +got):\n%s", diff)
	}
}

// A failed summarization does not touch the turn; it is counted, and the
// next turn retries it.
func TestCompactionFailureRetried(t *testing.T) {
	fail := true
	sum, obs := summarizer(&fail), &transferLog{}
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: echo()}), withCompaction(1, 0, sum, obs))
	evs := h.mustRun("s1", userText("one"), agentcore.RunConfig{})
	h.runner.WaitCompactions()
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
	h.runner.WaitCompactions()
	reqs := sum.requests()
	if len(reqs) != 1 {
		t.Fatalf("summarizer calls after the resume = %d, want 1", len(reqs))
	}
	in := render(reqs[0].Contents)[0]
	if !strings.Contains(in, "called tool `open_url`") || !strings.Contains(in, "`open_url` tool returned result") {
		t.Errorf("summarized without the call and its response:\n%s", in)
	}
	h.turn("again")
	last := m.requests()[len(m.requests())-1]
	if diff := cmp.Diff([]string{"user: " + agentcore.SummaryPreamble + "SUMMARY-1", "user: again"}, render(last.Contents)); diff != "" {
		t.Errorf("request after compaction (-want +got):\n%s", diff)
	}
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
	if diff := cmp.Diff([]string{"user: " + agentcore.SummaryPreamble + "SUMMARY-1", "user: hi again"}, render(gr[1].Contents)); diff != "" {
		t.Errorf("greeter's request after compaction (-want +got):\n%s", diff)
	}
}

// include_contents none shows neither the history nor its summary.
func TestCompactionIncludeNone(t *testing.T) {
	m := echo()
	h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, IncludeContents: agentcore.IncludeNone}),
		withCompaction(1, 0, summarizer(nil), nil))
	h.turn("one")
	h.turn("two")
	last := m.requests()[len(m.requests())-1]
	if diff := cmp.Diff([]string{"user: two"}, render(last.Contents)); diff != "" {
		t.Errorf("include_contents none after compaction (-want +got):\n%s", diff)
	}
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
