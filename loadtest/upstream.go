package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// UpstreamConfig shapes the mock upstream's answers.
type UpstreamConfig struct {
	// Latency passes before the first byte of every answer.
	Latency time.Duration
	// Chunks is the number of content deltas of a streamed text answer
	// (and the number of words of a non-streamed one).
	Chunks int
	// Interval passes between two streamed deltas.
	Interval time.Duration
}

// Upstream is a mock OpenAI-compatible server (POST /v1/chat/completions,
// streamed and not). What it answers depends on the request's model:
//
//	router  calls transfer_to_agent {"agent_name": "worker"}
//	caller  calls the agent tool helper {"request": ...}; once the last
//	        message is a tool result, answers with text
//	hold    streams one delta, then holds the stream open until Release
//	other   answers with text (pass, worker, helper)
//
// Each content delta of a streamed answer carries the time it was sent
// (see stampedWord), for the client to measure what a path adds to each.
// It listens on loopback only.
type Upstream struct {
	cfg UpstreamConfig
	srv *http.Server
	ln  net.Listener

	holdMu  sync.Mutex
	release chan struct{}

	words []string
}

// StartUpstream listens on a free loopback port and serves.
func StartUpstream(cfg UpstreamConfig) (*Upstream, error) {
	if cfg.Chunks <= 0 {
		cfg.Chunks = 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &Upstream{cfg: cfg, ln: ln, release: make(chan struct{})}
	for i := range cfg.Chunks {
		u.words = append(u.words, "tok"+strconv.Itoa(i)+" ")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", u.chat)
	u.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

// BaseURL is the API root ("http://127.0.0.1:port/v1").
func (u *Upstream) BaseURL() string { return "http://" + u.ln.Addr().String() + "/v1" }

// Release ends every held stream and starts holding anew.
func (u *Upstream) Release() {
	u.holdMu.Lock()
	close(u.release)
	u.release = make(chan struct{})
	u.holdMu.Unlock()
}

// Close stops the server.
func (u *Upstream) Close() {
	u.Release()
	_ = u.srv.Close()
}

// upstreamRequest is the part of a chat completion request the mock reads.
type upstreamRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

var callSeq atomic.Int64

func (u *Upstream) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req upstreamRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	lastTool := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool"
	var call *toolCall
	switch {
	case req.Model == "router" && !lastTool:
		call = &toolCall{name: "transfer_to_agent", args: `{"agent_name":"worker"}`}
	case req.Model == "caller" && !lastTool:
		call = &toolCall{name: "helper", args: `{"request":"look this up"}`}
	}
	if u.cfg.Latency > 0 {
		time.Sleep(u.cfg.Latency)
	}
	if call != nil {
		call.id = "call_" + strconv.FormatInt(callSeq.Add(1), 10)
	}
	if !req.Stream {
		u.complete(w, req.Model, call)
		return
	}
	u.stream(w, r, req.Model, call)
}

type toolCall struct{ id, name, args string }

// epoch is the origin of the send times stamped into streamed deltas. The
// mock upstream and the client share this process, hence this monotonic
// clock: a client reads a delta's age as time.Since(epoch) minus its stamp.
var epoch = time.Now()

// stampDigits is the width of a delta's stamp: nanoseconds since epoch,
// zero-padded, so that every delta's content has the same size (16 digits
// last 115 days).
const stampDigits = 16

// stampMark starts a stamp in a delta's content.
const stampMark = '@'

// stampedWord is word i of a streamed answer, stamped with the time at
// (since epoch) it is sent: "tok<i>@<nanoseconds since epoch> ".
func stampedWord(i int, at time.Duration) string {
	b := make([]byte, 0, 8+stampDigits)
	b = append(b, "tok"...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, stampMark)
	ns := strconv.FormatInt(int64(at), 10)
	for range stampDigits - len(ns) {
		b = append(b, '0')
	}
	b = append(b, ns...)
	return string(append(b, ' '))
}

const usageJSON = `{"prompt_tokens":12,"completion_tokens":8,"total_tokens":20}`

func (u *Upstream) complete(w http.ResponseWriter, model string, call *toolCall) {
	var b strings.Builder
	b.WriteString(`{"id":"chatcmpl-mock","object":"chat.completion","created":1700000000,"model":`)
	b.WriteString(strconv.Quote(model))
	b.WriteString(`,"choices":[{"index":0,"message":{"role":"assistant",`)
	if call != nil {
		b.WriteString(`"content":null,"tool_calls":[{"id":"` + call.id + `","type":"function","function":{"name":"` + call.name +
			`","arguments":` + strconv.Quote(call.args) + `}}]},"finish_reason":"tool_calls"}]`)
	} else {
		b.WriteString(`"content":"` + strings.Join(u.words, "") + `"},"finish_reason":"stop"}]`)
	}
	b.WriteString(`,"usage":` + usageJSON + `}`)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, b.String())
}

func (u *Upstream) stream(w http.ResponseWriter, r *http.Request, model string, call *toolCall) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	head := `data: {"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":` + strconv.Quote(model) + `,"choices":`
	send := func(choices string) bool {
		if _, err := io.WriteString(w, head+choices+"}\n\n"); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if call != nil {
		if !send(`[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"` + call.id + `","type":"function","function":{"name":"` +
			call.name + `","arguments":` + strconv.Quote(call.args) + `}}]},"finish_reason":null}]`) {
			return
		}
		if !send(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`) {
			return
		}
	} else {
		// A held stream waits for the Release after its first delta. The
		// channel that Release will close is taken before that delta is
		// sent: a client may see the delta and call Release before this
		// goroutine runs again, and a channel read after the send would be
		// the next one, closed by no one.
		var release chan struct{}
		if model == "hold" {
			u.holdMu.Lock()
			release = u.release
			u.holdMu.Unlock()
		}
		if !send(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`) {
			return
		}
		for i := range u.words {
			if i > 0 && u.cfg.Interval > 0 {
				time.Sleep(u.cfg.Interval)
			}
			if !send(`[{"index":0,"delta":{"content":"` + stampedWord(i, time.Since(epoch)) + `"},"finish_reason":null}]`) {
				return
			}
			if i == 0 && release != nil {
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		if !send(`[{"index":0,"delta":{},"finish_reason":"stop"}]`) {
			return
		}
	}
	if !send(`[],"usage":` + usageJSON) {
		return
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}
