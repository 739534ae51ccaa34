package metrics_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
	"github.com/agentgate/agentgate/agentcore/spec"
	"github.com/agentgate/agentgate/gateway/metrics"
)

// series lists the label sets recorded for one metric family.
func series(t *testing.T, m *metrics.Metrics, family string) []map[string]string {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out = append(out, l)
		}
	}
	return out
}

func has(all []map[string]string, want map[string]string) bool {
	for _, l := range all {
		ok := true
		for k, v := range want {
			ok = ok && l[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// Label values outside the configuration are "other"; SetSpec (a reload)
// admits the new names.
func TestClosedLabelSetsAndReload(t *testing.T) {
	m, err := metrics.New(metrics.Config{Spec: spec.Set{
		Agents: []spec.Agent{{Name: "desk", Model: "oa/gpt", Tools: []spec.Tool{{Name: "lookup", Kind: "http"}}}},
		Models: []spec.VirtualModel{{ID: "support", Agent: "desk"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveFirstToken("/v1/chat/completions", "support", time.Millisecond)
	m.ObserveFirstToken("/v1/chat/completions", "made-up", time.Millisecond)
	m.ModelCall("desk", "gpt", time.Millisecond, nil, &model.Error{Code: "rate_limited"})
	m.ModelCall("intruder", "x", time.Millisecond, nil, errors.New("boom"))
	m.ToolCall("desk", "lookup", time.Millisecond, nil)
	m.ToolCall("desk", "invented_by_model", time.Millisecond, errors.New("not found"))
	m.Transfer("desk", "nobody")
	m.ObserveRequest("BREW", "", 418, time.Millisecond)

	for _, c := range []struct {
		family string
		labels map[string]string
	}{
		{"agentgate_time_to_first_token_seconds", map[string]string{"model": "support"}},
		{"agentgate_time_to_first_token_seconds", map[string]string{"model": "other"}},
		{"agentgate_model_calls_total", map[string]string{"provider": "oa", "model": "gpt", "outcome": "rate_limited"}},
		{"agentgate_model_calls_total", map[string]string{"provider": "other", "model": "other", "outcome": "error"}},
		{"agentgate_tool_calls_total", map[string]string{"tool": "lookup", "outcome": "ok"}},
		{"agentgate_tool_calls_total", map[string]string{"tool": "other", "outcome": "error"}},
		{"agentgate_transfers_total", map[string]string{"from": "desk", "to": "other"}},
		{"agentgate_http_requests_total", map[string]string{"method": "other", "route": "unmatched", "status": "4xx"}},
	} {
		if !has(series(t, m, c.family), c.labels) {
			t.Errorf("%s has no series %v: %v", c.family, c.labels, series(t, m, c.family))
		}
	}

	m.SetSpec(spec.Set{Models: []spec.VirtualModel{{ID: "made-up"}}})
	m.ObserveFirstToken("/v1/chat/completions", "made-up", time.Millisecond)
	if !has(series(t, m, "agentgate_time_to_first_token_seconds"), map[string]string{"model": "made-up"}) {
		t.Error("a model added by a reload is still other")
	}
}

// Each run whose frames the shared log could not write counts once.
func TestRunLogFailures(t *testing.T) {
	m, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.RunLogFailed()
	m.RunLogFailed()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "agentgate_run_log_failures_total" {
			if got := mf.GetMetric()[0].GetCounter().GetValue(); got != 2 {
				t.Errorf("agentgate_run_log_failures_total = %v, want 2", got)
			}
			return
		}
	}
	t.Error("no agentgate_run_log_failures_total")
}

// value is the counter of family with exactly labels' values among its
// labels (0 when there is none).
func value(t *testing.T, m *metrics.Metrics, family string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
	next:
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return mt.GetCounter().GetValue()
		}
	}
	return 0
}

// A configured agent's successful calls and tokens, kept as handles, count
// into the same series as those counted otherwise, across a reload; an
// agent outside the configuration, and a failed call, count as before.
func TestModelCallCounts(t *testing.T) {
	set := spec.Set{Agents: []spec.Agent{{Name: "desk", Model: "oa/gpt"}}}
	m, err := metrics.New(metrics.Config{Spec: set})
	if err != nil {
		t.Fatal(err)
	}
	usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 2}
	for range 2 {
		m.ModelCall("desk", "gpt", time.Millisecond, usage, nil)
		m.ModelCall("intruder", "x", time.Millisecond, usage, nil)
	}
	m.SetSpec(set)
	m.ModelCall("desk", "gpt", time.Millisecond, usage, nil)
	m.ModelCall("desk", "gpt", time.Millisecond, nil, errors.New("boom"))
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"agentgate_model_calls_total", map[string]string{"provider": "oa", "model": "gpt", "outcome": "ok"}, 3},
		{"agentgate_model_calls_total", map[string]string{"provider": "oa", "model": "gpt", "outcome": "error"}, 1},
		{"agentgate_model_calls_total", map[string]string{"provider": "other", "model": "other", "outcome": "ok"}, 2},
		{"agentgate_tokens_total", map[string]string{"agent": "desk", "kind": "prompt"}, 9},
		{"agentgate_tokens_total", map[string]string{"agent": "desk", "kind": "completion"}, 6},
		{"agentgate_tokens_total", map[string]string{"agent": "other", "kind": "prompt"}, 6},
		{"agentgate_tokens_total", map[string]string{"agent": "other", "kind": "completion"}, 4},
	} {
		if got := value(t, m, c.family, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.family, c.labels, got, c.want)
		}
	}
	if has(series(t, m, "agentgate_tokens_total"), map[string]string{"kind": "reasoning"}) {
		t.Error("a kind of token never reported has a series")
	}
}

// Requests count by method, route template and status class, each in its
// own series, whatever order they arrive in; durations by method and
// route.
func TestRequestCounts(t *testing.T) {
	m, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const chat = "/v1/chat/completions"
	for _, r := range []struct {
		method, route string
		status        int
	}{
		{"POST", chat, 200}, {"POST", chat, 201}, {"POST", chat, 404}, {"GET", chat, 200}, {"PROPFIND", chat, 503},
		{"POST", "/v1/responses", 200}, {"GET", "", 404}, {"OPTIONS", chat, 101}, {"HEAD", chat, 302},
	} {
		m.ObserveRequest(r.method, r.route, r.status, time.Millisecond)
	}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"method": "POST", "route": chat, "status": "2xx"}, 2},
		{map[string]string{"method": "POST", "route": chat, "status": "4xx"}, 1},
		{map[string]string{"method": "GET", "route": chat, "status": "2xx"}, 1},
		{map[string]string{"method": "other", "route": chat, "status": "5xx"}, 1},
		{map[string]string{"method": "POST", "route": "/v1/responses", "status": "2xx"}, 1},
		{map[string]string{"method": "GET", "route": "unmatched", "status": "4xx"}, 1},
		{map[string]string{"method": "OPTIONS", "route": chat, "status": "1xx"}, 1},
		{map[string]string{"method": "HEAD", "route": chat, "status": "3xx"}, 1},
		{map[string]string{"method": "DELETE", "route": chat, "status": "2xx"}, 0},
	} {
		if got := value(t, m, "agentgate_http_requests_total", c.labels); got != c.want {
			t.Errorf("agentgate_http_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if n := len(series(t, m, "agentgate_http_request_duration_seconds")); n != 7 {
		t.Errorf("agentgate_http_request_duration_seconds has %d series, want 7 (by method and route)", n)
	}
}
