package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Scenario is one workload: a turn sent to a virtual model of the gateway,
// and the upstream calls that the same turn makes, which the direct path
// sends itself, one after the other.
type Scenario struct {
	Key    string
	Name   string
	Model  string
	Stream bool
	Direct []string
	// Whole names the upstream calls the gateway asks for whole answers
	// even in a streamed turn (an agent called as a tool, whose deltas
	// nobody sees); the direct path asks for them whole too.
	Whole []string
}

var scenarios = []Scenario{
	{Key: "nonstream", Name: "non-streaming pass-through", Model: "pass", Stream: false, Direct: []string{"pass"}},
	{Key: "stream", Name: "streaming pass-through", Model: "pass", Stream: true, Direct: []string{"pass"}},
	{Key: "transfer", Name: "transfer tree", Model: "transfer", Stream: true, Direct: []string{"router", "worker"}},
	{Key: "agenttool", Name: "agent tool", Model: "agent-tool", Stream: true, Direct: []string{"caller", "helper", "caller"}, Whole: []string{"helper"}},
}

// Sample is one measured turn.
type Sample struct {
	Lat, TTFT time.Duration
	// Delta is the median, over the turn's streamed content deltas, of the
	// time from the mock upstream's write of a delta to the client's read
	// of it; Deltas is how many there were (0: not a streamed turn).
	Delta  time.Duration
	Deltas int
	Err    error
}

// Result summarises one phase.
type Result struct {
	N, Errors int
	FirstErr  error
	Elapsed   time.Duration   // how long the turns took to start
	Lat, TTFT []time.Duration // sorted
	// Delta is the streamed turns' Sample.Delta, sorted.
	Delta []time.Duration
}

// Throughput is turns completed without error per second of schedule.
func (r Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.N-r.Errors) / r.Elapsed.Seconds()
}

// add folds the turns of o (a later block of the same phase) into r.
func (r *Result) add(o Result) {
	r.N += o.N
	r.Errors += o.Errors
	if r.FirstErr == nil {
		r.FirstErr = o.FirstErr
	}
	r.Elapsed += o.Elapsed
	r.Lat = append(r.Lat, o.Lat...)
	r.TTFT = append(r.TTFT, o.TTFT...)
	r.Delta = append(r.Delta, o.Delta...)
	slices.Sort(r.Lat)
	slices.Sort(r.TTFT)
	slices.Sort(r.Delta)
}

// Pct returns the p-th percentile (0-100) of sorted durations.
func Pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// runLoad starts n turns at rate per second (an open loop: a turn starts
// when it is due, whether or not earlier ones have finished), at most
// maxInFlight at once, and waits for all of them.
func runLoad(ctx context.Context, rate, n, maxInFlight int, do turnFunc) Result {
	samples := make([]Sample, n)
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			samples[i] = do(ctx, i)
		}()
	}
	// Elapsed is the schedule's length (it stretches when turns cannot
	// start on time), not the wait for the last turns to end: blocks of
	// streamed turns would otherwise count each block's tail.
	elapsed := time.Since(start) + interval
	wg.Wait()
	return summarize(samples, elapsed)
}

// runSerial sends turns one after the other (a closed loop of one: c=1)
// until d has passed, at least one.
func runSerial(ctx context.Context, d time.Duration, do turnFunc) Result {
	var samples []Sample
	start := time.Now()
	for i := 0; (i == 0 || time.Since(start) < d) && ctx.Err() == nil; i++ {
		samples = append(samples, do(ctx, i))
	}
	return summarize(samples, time.Since(start))
}

// summarize makes the Result of samples, turns that took elapsed to start.
func summarize(samples []Sample, elapsed time.Duration) Result {
	r := Result{N: len(samples), Elapsed: elapsed}
	for _, s := range samples {
		if s.Err != nil {
			r.Errors++
			if r.FirstErr == nil {
				r.FirstErr = s.Err
			}
			continue
		}
		r.Lat = append(r.Lat, s.Lat)
		if s.TTFT > 0 {
			r.TTFT = append(r.TTFT, s.TTFT)
		}
		if s.Deltas > 0 {
			r.Delta = append(r.Delta, s.Delta)
		}
	}
	slices.Sort(r.Lat)
	slices.Sort(r.TTFT)
	slices.Sort(r.Delta)
	return r
}

// Client sends chat completions over keep-alive loopback connections.
type Client struct{ hc *http.Client }

func newClient() *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Client{hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// call posts one chat completion and reads it whole. For a stream it
// returns the time to the first non-empty content delta (0 if none),
// appends the age of each stamped delta to ages (see readStream), and
// fails on an error frame or a stream without [DONE].
func (c *Client) call(ctx context.Context, url string, body []byte, session string, stream bool, ages *[]time.Duration) (time.Duration, error) {
	start := time.Now()
	resp, err := c.post(ctx, url, body, session)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if !stream {
		_, err := io.Copy(io.Discard, resp.Body)
		return 0, err
	}
	var ttft time.Duration
	err = readStream(resp.Body, func() { ttft = time.Since(start) }, ages)
	return ttft, err
}

// post sends one chat completion on session (empty: none) and returns the
// response of a 200; other statuses are errors.
func (c *Client) post(ctx context.Context, url string, body []byte, session string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Session-Id", session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp, nil
}

// readStream reads an SSE chat completion to its [DONE], by lines (a proxy
// may pass an event on in pieces), and calls firstContent at the first
// non-empty content delta. An error frame, or an end without [DONE], is an
// error.
//
// When ages is not nil, it appends, for each send time the mock upstream
// stamped into a content delta (stampedWord), the time from that stamp to
// the read of the line that carries it. A stamp no later than one already
// read (a path that repeats text it has passed on) is not counted again.
func readStream(r io.Reader, firstContent func(), ages *[]time.Duration) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := false
	var last time.Duration
	for sc.Scan() {
		if ages != nil {
			last = readStamps(sc.Bytes(), time.Since(epoch), last, ages)
		}
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		switch {
		case !ok:
		case bytes.Equal(data, []byte("[DONE]")):
			_, _ = io.Copy(io.Discard, r)
			return nil
		case bytes.HasPrefix(data, []byte(`{"error"`)):
			return fmt.Errorf("error frame: %s", data)
		case !seen && hasContent(data):
			seen = true
			firstContent()
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return errors.New("stream ended without [DONE]")
}

// readStamps appends to ages now minus each stamp in line later than last,
// and returns the latest stamp read.
func readStamps(line []byte, now, last time.Duration, ages *[]time.Duration) time.Duration {
	for {
		i := bytes.IndexByte(line, stampMark)
		if i < 0 {
			return last
		}
		line = line[i+1:]
		if len(line) < stampDigits {
			return last
		}
		var ns int64
		digits := true
		for _, c := range line[:stampDigits] {
			if c < '0' || c > '9' {
				digits = false
				break
			}
			ns = ns*10 + int64(c-'0')
		}
		if !digits {
			continue
		}
		line = line[stampDigits:]
		if t := time.Duration(ns); t > last {
			*ages = append(*ages, now-t)
			last = t
		}
	}
}

// medianAge is the Sample fields of a turn's delta ages.
func medianAge(ages []time.Duration) (median time.Duration, n int) {
	slices.Sort(ages)
	return Pct(ages, 50), len(ages)
}

var contentKey = []byte(`"content":"`)

// hasContent reports a chunk with a non-empty content delta.
func hasContent(chunk []byte) bool {
	i := bytes.Index(chunk, contentKey)
	return i >= 0 && i+len(contentKey) < len(chunk) && chunk[i+len(contentKey)] != '"'
}

func userBody(model string, stream bool) []byte {
	return []byte(`{"model":"` + model + `","stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"user","content":"hello, please answer"}]}`)
}

// toolResultBody is the caller's second call: its tool call and the result.
func toolResultBody(model string, stream bool) []byte {
	return []byte(`{"model":"` + model + `","stream":` + strconv.FormatBool(stream) +
		`,"messages":[{"role":"user","content":"hello, please answer"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"helper","arguments":"{\"request\":\"look this up\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"{\"text\":\"found it\"}"}]}`)
}

// direct sends a scenario's upstream calls straight to the mock upstream.
// Latency is the whole sequence; time to first token is measured to the
// first content of the last call, as through the gateway.
func (c *Client) direct(ctx context.Context, upstream string, sc Scenario) Sample {
	start := time.Now()
	var ttft time.Duration
	var ages []time.Duration
	for j, m := range sc.Direct {
		stream := sc.Stream && !slices.Contains(sc.Whole, m)
		body := userBody(m, stream)
		if j > 0 && m == sc.Direct[0] {
			body = toolResultBody(m, stream)
		}
		callStart := time.Now()
		t, err := c.call(ctx, upstream+"/chat/completions", body, "", stream, &ages)
		if err != nil {
			return Sample{Err: err}
		}
		if j == len(sc.Direct)-1 && t > 0 {
			ttft = callStart.Sub(start) + t
		}
	}
	s := Sample{Lat: time.Since(start), TTFT: ttft}
	s.Delta, s.Deltas = medianAge(ages)
	return s
}

// viaGateway sends a scenario's turn to the gateway, on session (empty:
// stateless).
func (c *Client) viaGateway(ctx context.Context, base string, sc Scenario, session string) Sample {
	start := time.Now()
	var ages []time.Duration
	t, err := c.call(ctx, base+"/v1/chat/completions", userBody(sc.Model, sc.Stream), session, sc.Stream, &ages)
	if err != nil {
		return Sample{Err: err}
	}
	if sc.Stream && t == 0 {
		return Sample{Err: errors.New("stream without content")}
	}
	if sc.Stream && len(ages) == 0 {
		return Sample{Err: errors.New("stream without the upstream's send times in its deltas")}
	}
	s := Sample{Lat: time.Since(start), TTFT: t}
	s.Delta, s.Deltas = medianAge(ages)
	return s
}
