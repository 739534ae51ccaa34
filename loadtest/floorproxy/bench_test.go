package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentgate/agentgate/internal/benchenv"
)

// cannedUpstream answers every request with complete, as the load test's
// mock upstream answers a non-streamed chat completion.
// waiting, when set, runs as each request arrives (BenchmarkProxyTurnColdWaited).
type cannedUpstream struct {
	complete []byte
	waiting  func()
}

func (u cannedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if u.waiting != nil {
		u.waiting()
	}
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(u.complete)),
		ContentLength: int64(len(u.complete)), Request: r}, nil
}

// BenchmarkProxyTurnCold is gateway's BenchmarkChatTurnCold through the
// floor proxy: one non-streamed chat completion per turn, with the
// processor's caches emptied before each (untimed), on an upstream that
// answers from memory. Under cachegrind (testing/cachegrind-turn.sh floor)
// it counts the instructions and cache lines the floor's turn fetches, to
// set beside the gateway's.
func BenchmarkProxyTurnCold(b *testing.B) { proxyTurnCold(b, nil) }

// BenchmarkProxyTurnColdWaited is BenchmarkProxyTurnCold with the caches
// emptied a second time, untimed, while the upstream answers: gateway's
// BenchmarkChatTurnColdWaited through the floor proxy
// (testing/cachegrind-turn.sh floor-waited).
func BenchmarkProxyTurnColdWaited(b *testing.B) {
	proxyTurnCold(b, func() { benchenv.EvictCachesUntimed(b) })
}

// proxyTurnCold runs the cold turns, waiting (when not nil) as each
// request reaches the upstream.
func proxyTurnCold(b *testing.B, waiting func()) {
	const complete = `{"id":"chatcmpl-mock","object":"chat.completion","created":1700000000,"model":"pass","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7 tok8 tok9 tok10 tok11 tok12 tok13 tok14 tok15 tok16 tok17 tok18 tok19 "},` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}}`
	h := newHandler("http://mock.invalid/v1", &http.Client{Transport: cannedUpstream{[]byte(complete), waiting}})
	body := []byte(`{"model":"pass","stream":false,"messages":[{"role":"user","content":"Hello, how are you?"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		benchenv.EvictCachesUntimed(b)
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"finish_reason":"stop"`)) {
			b.Fatalf("status %d: %s", w.Code, w.Body.Bytes())
		}
	}
}
