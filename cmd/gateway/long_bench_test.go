package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/agentgate/internal/benchenv"
)

// A user turn on a long session, through the public routes, with
// compaction on: the session is imported with POST .../sessions, the turn
// is POST /run. Run with
//
//	go test -run '^$' -bench 'LongSession' -benchtime=20x -benchmem ./cmd/gateway/

// longConfig serves the model "desk" on the scripted provider with
// compaction every 10 user turns; %s is the sessions section.
const longConfig = `
server: {max_body_bytes: 67108864, watch_config: false}
log: {level: warn}
%s
providers:
  - name: demo
    type: scripted
    rules:
      - {agent: desk, reply: "Noted: {last}. Anything else I can help you with today?"}
  - {name: summaries, type: scripted, default: "The customer asked about an order; every question was answered."}
agents:
  - {name: desk, model: demo/desk-v1, instruction: "Help the customer."}
models:
  - id: desk
    agent: desk
    compaction: {interval: 10, overlap: 2, model: summaries/summarizer-v1}
`

// longEvents is the JSON body of POST .../sessions that imports a session
// of n events (~450 bytes of JSON each; user and agent in turns) whose
// latest compaction event is the 9th from the end, as a compacted session
// is between two compactions: a turn reads that event and the 8 after it,
// 4 user turns, and its own makes 5, short of the interval.
func longEvents(id string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"sessionId":%q,"events":[`, id)
	t0 := float64(time.Now().Add(-time.Hour).Unix())
	text := strings.Repeat("a sentence of the long conversation, ", 9)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		ts := t0 + float64(i)/1000
		switch {
		case i == n-9:
			fmt.Fprintf(&b, `{"id":"c%d","invocationId":"c-%d","author":"user","timestamp":%.3f,"actions":{"compaction":`+
				`{"startTimestamp":%.3f,"endTimestamp":%.3f,"compactedContent":{"role":"model","parts":[{"text":%q}]}}}}`,
				i, i, ts, t0, ts-0.001, strings.Repeat("summary ", 40))
		case i%2 == 0:
			fmt.Fprintf(&b, `{"id":"e%d","invocationId":"e-%d","author":"user","timestamp":%.3f,`+
				`"content":{"role":"user","parts":[{"text":"question %d: %s"}]}}`, i, i/2, ts, i, text)
		default:
			fmt.Fprintf(&b, `{"id":"e%d","invocationId":"e-%d","author":"desk","timestamp":%.3f,`+
				`"content":{"role":"model","parts":[{"text":"answer %d: %s"}]}}`, i, i/2, ts, i, text)
		}
	}
	b.WriteString("]}")
	return b.Bytes()
}

// longGateway is the gateway of a long-session benchmark, with a private
// redis-server when its sessions are in Redis (info reads its counters;
// nil in memory).
type longGateway struct {
	*testGateway
	client *http.Client
	info   *redisInfo
}

func startLongGateway(b *testing.B, store string) *longGateway {
	b.Helper()
	sessionsCfg, env := "sessions: {backend: memory}", map[string]string(nil)
	var info *redisInfo
	if store == "redis" {
		url, _ := startRedis(b)
		sessionsCfg, env = "sessions: {backend: redis}", map[string]string{"REDIS_URL": url}
		info = dialRedisInfo(b, url)
	}
	return &longGateway{testGateway: runConfig(b, fmt.Sprintf(longConfig, sessionsCfg), env), client: &http.Client{}, info: info}
}

// longSession is a benchmark's session of the model "desk" of user u1.
type longSession struct {
	gw        *longGateway
	id        string
	seed, run []byte
	seeded    bool
}

func (gw *longGateway) session(id string, n int) *longSession {
	return &longSession{gw: gw, id: id, seed: longEvents(id, n), run: []byte(`{"appName":"desk","userId":"u1","sessionId":"` + id +
		`","newMessage":{"role":"user","parts":[{"text":"and one more question about my order"}]}}`)}
}

// reset makes the session hold its seed events only: it deletes it (after
// the first time) and imports them again.
func (s *longSession) reset(tb testing.TB) {
	tb.Helper()
	url := s.gw.base + "/apps/desk/users/u1/sessions"
	if s.seeded {
		s.gw.send(tb, http.MethodDelete, url+"/"+s.id, nil)
	}
	s.gw.send(tb, http.MethodPost, url, s.seed)
	s.seeded = true
}

// delete deletes the session, so that the next benchmark does not run
// with it in the store.
func (s *longSession) delete(tb testing.TB) {
	tb.Helper()
	s.gw.send(tb, http.MethodDelete, s.gw.base+"/apps/desk/users/u1/sessions/"+s.id, nil)
}

// turn runs one user turn through POST /run.
func (s *longSession) turn(tb testing.TB) {
	tb.Helper()
	s.gw.send(tb, http.MethodPost, s.gw.base+"/run", s.run)
}

// send makes a request and fails the benchmark unless it answers 200.
func (gw *longGateway) send(tb testing.TB, method, url string, body []byte) {
	tb.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := gw.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
}

// redisInfo reads Redis's INFO stats on a connection of its own (the
// gateway's pool is not touched).
type redisInfo struct {
	c net.Conn
	r *bufio.Reader
	// cost is what one INFO reply adds to total_net_output_bytes.
	cost int64
}

func dialRedisInfo(tb testing.TB, url string) *redisInfo {
	tb.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	ri := &redisInfo{c: c, r: bufio.NewReader(c)}
	a := ri.netOut(tb)
	ri.cost = ri.netOut(tb) - a
	return ri
}

// do sends a command (inline: its words on one line) and fails unless
// Redis answers want.
func (ri *redisInfo) do(tb testing.TB, want, line string) {
	tb.Helper()
	if _, err := ri.c.Write([]byte(line + "\r\n")); err != nil {
		tb.Fatal(err)
	}
	if got, err := ri.r.ReadString('\n'); err != nil || got != want+"\r\n" {
		tb.Fatalf("%s: %q %v, want %q", line, got, err, want)
	}
}

// settle has Redis collect the garbage of the scripts run so far (those
// of an import hold every event of the session; Redis would collect it in
// steps during the scripts that follow).
func (ri *redisInfo) settle(tb testing.TB) {
	tb.Helper()
	ri.do(tb, ":1", `EVAL "collectgarbage('collect') return 1" 0`)
}

// netOut is total_net_output_bytes: what Redis has sent its clients.
func (ri *redisInfo) netOut(tb testing.TB) int64 {
	tb.Helper()
	if _, err := ri.c.Write([]byte("INFO stats\r\n")); err != nil {
		tb.Fatal(err)
	}
	head, err := ri.r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		tb.Fatalf("INFO: %q %v", head, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		tb.Fatal(err)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(ri.r, body); err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			out, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return out
		}
	}
	tb.Fatal("no total_net_output_bytes in INFO")
	return 0
}

// longSizes are the sessions' sizes: those of issue 19 and the CONTRACT's
// 2,000.
var longSizes = []int{10, 100, 1000, 2000, 10000}

// BenchmarkLongSessionTurn measures one user turn on a session of exactly
// 10, 100, 1,000 and 10,000 stored events, in memory and in Redis. Before
// each turn, with the timer stopped, the session is deleted and imported
// again (its events in one append), and what that leaves behind is
// cleared, so that the turn does not pay for it: the process settles
// (benchenv.Settle: garbage collected, memory returned, caches evicted);
// Redis collects its scripts' garbage (the import's script held every
// event; Redis would collect it in steps during the next scripts) and
// frees memory without a background thread (jemalloc-bg-thread no: the
// thread's purge of the deleted session ran during the next turns); then
// three turns on another, short session warm the code and what turns
// share (the pools the collection emptied). Reported
// besides time and allocations: the process's CPU time during the turn
// (cpu-ns/op, every thread, the client's side of the request included),
// the medians of the turns' time and CPU time (p50-ns/op, p50-cpu-ns/op),
// and, in Redis, the bytes Redis sent during it (redis-bytes/op).
func BenchmarkLongSessionTurn(b *testing.B) {
	for _, store := range []string{"memory", "redis"} {
		b.Run("store="+store, func(b *testing.B) {
			gw := startLongGateway(b, store)
			if gw.info != nil {
				gw.info.do(b, "+OK", "CONFIG SET jemalloc-bg-thread no")
			}
			runs := 0
			for _, n := range longSizes {
				b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
					runs++ // each -count runs it again on the same gateway
					long := gw.session(fmt.Sprintf("long-%d-%d", n, runs), n)
					short := gw.session(fmt.Sprintf("short-%d-%d", n, runs), 10)
					var ops benchenv.Ops
					var sent int64
					for b.Loop() {
						b.StopTimer()
						long.reset(b)
						short.reset(b)
						if gw.info != nil {
							gw.info.settle(b)
						}
						benchenv.Settle()
						for range 3 {
							short.turn(b)
						}
						var before int64
						if gw.info != nil {
							before = gw.info.netOut(b)
						}
						b.StartTimer()
						ops.Start()
						long.turn(b)
						ops.Stop()
						b.StopTimer()
						if gw.info != nil {
							sent += gw.info.netOut(b) - before - gw.info.cost
						}
						b.StartTimer()
					}
					b.StopTimer()
					long.delete(b)
					short.delete(b)
					ops.Report(b)
					if gw.info != nil {
						b.ReportMetric(float64(sent)/float64(b.N), "redis-bytes/op")
					}
				})
			}
		})
	}
}

// BenchmarkLongSessionTurns measures user turns sent back to back on one
// session imported with 10, 100, 1,000 and 10,000 events, in memory and
// in Redis, while compaction runs as configured: every 10 user turns a
// summary is made and stored in the background, during the next turns
// (each op is one turn; the session grows by 2 events a turn, and every
// 10 turns by a compaction event). Its CPU time and the bytes Redis sends
// are the process's and Redis's over the whole run: the compactions'
// share included.
func BenchmarkLongSessionTurns(b *testing.B) {
	for _, store := range []string{"memory", "redis"} {
		b.Run("store="+store, func(b *testing.B) {
			gw := startLongGateway(b, store)
			runs := 0
			for _, n := range longSizes {
				b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
					runs++
					long := gw.session(fmt.Sprintf("long-%d-%d", n, runs), n)
					long.reset(b)
					runtime.GC()
					var before int64
					if gw.info != nil {
						before = gw.info.netOut(b)
					}
					cpu0 := benchenv.CPU()
					for b.Loop() {
						long.turn(b)
					}
					b.ReportMetric(float64(benchenv.CPU()-cpu0)/float64(b.N), "cpu-ns/op")
					if gw.info != nil {
						b.ReportMetric(float64(gw.info.netOut(b)-before-gw.info.cost)/float64(b.N), "redis-bytes/op")
					}
					b.StopTimer()
					long.delete(b)
				})
			}
		})
	}
}
