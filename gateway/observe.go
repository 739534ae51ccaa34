package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/gateway/metrics"
)

// Observability glue: the metrics middleware, the writer that spots event
// streams and their first frame, and the per-request log attributes.

// instrument records every request: count and latency by route template
// and status class; for event streams also the open-stream gauge and the
// time to the first event frame, through w, the request's (see
// deadlines, which calls it). It runs before the other middleware, so it
// sees the status the recovery middleware writes.
func (s *Server) instrument(c *gin.Context, w *meteredWriter) {
	*w = meteredWriter{ResponseWriter: c.Writer, c: c, m: s.cfg.Metrics, start: time.Now()}
	c.Writer = w
	defer func() {
		c.Writer = w.ResponseWriter
		if w.stream {
			w.m.StreamClosed(c.FullPath())
		}
		s.cfg.Metrics.ObserveRequest(c.Request.Method, c.FullPath(), w.Status(), time.Since(w.start))
	}()
	c.Next()
}

// meteredWriter watches a response: an event stream is one whose status
// goes out with Content-Type text/event-stream; its first frame is the
// first write that is not a comment (keepalive).
type meteredWriter struct {
	gin.ResponseWriter
	c       *gin.Context
	m       *metrics.Metrics
	start   time.Time
	model   string // the virtual model, once noteModel knows it
	stream  bool
	firstAt bool
}

func (w *meteredWriter) WriteHeader(code int) {
	if !w.stream && code == http.StatusOK && w.Header().Get("Content-Type") == "text/event-stream" {
		w.stream = true
		w.m.StreamOpened(w.c.FullPath())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *meteredWriter) Write(b []byte) (int, error) {
	w.frame(len(b) > 0 && b[0] != ':')
	return w.ResponseWriter.Write(b)
}

func (w *meteredWriter) WriteString(s string) (int, error) {
	w.frame(len(s) > 0 && s[0] != ':')
	return w.ResponseWriter.WriteString(s)
}

func (w *meteredWriter) frame(isEvent bool) {
	if w.stream && !w.firstAt && isEvent {
		w.firstAt = true
		w.m.ObserveFirstToken(w.c.FullPath(), w.model, time.Since(w.start))
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *meteredWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteModel records the virtual model a request addresses, for the metrics
// (time to first token by model, when instrument watches the response) and
// the request's log records. It keeps it out of gin's Keys, a map made for
// the first key set.
func noteModel(c *gin.Context, id string) {
	if w, ok := c.Writer.(*meteredWriter); ok {
		w.model = id
	}
	annotate(c, slog.String("model", id))
}

// annotate adds attributes to every later log record of the request, the
// access log line included: to the request's attribute set (see
// requestID), else through a new context.
func annotate(c *gin.Context, attrs ...slog.Attr) {
	if set, ok := agentcore.LogAttrSetOf(c.Request.Context()); ok {
		set.Add(attrs...)
		return
	}
	c.Request = c.Request.WithContext(agentcore.WithLogAttrs(c.Request.Context(), attrs...))
}

// annotateRun adds a run's invocation id and first agent to the request's
// log records.
func annotateRun(c *gin.Context, run *agentcore.Run) {
	if run == nil {
		return // it never started
	}
	if id := run.InvocationID(); id != "" {
		annotate(c, slog.String("invocation_id", id), slog.String("agent", run.StartAgent()))
	}
}

// observers fans runtime notifications out to several observers.
type observers []agentcore.Observer

var _ agentcore.Observer = observers(nil)

func (o observers) ModelCall(agent, model string, d time.Duration, usage *genai.GenerateContentResponseUsageMetadata, err error) {
	for _, x := range o {
		x.ModelCall(agent, model, d, usage, err)
	}
}

func (o observers) ToolCall(agent, tool string, d time.Duration, err error) {
	for _, x := range o {
		x.ToolCall(agent, tool, d, err)
	}
}

func (o observers) Transfer(from, to string) {
	for _, x := range o {
		x.Transfer(from, to)
	}
}

// Compaction implements agentcore.CompactionObserver for the observers
// that count compactions.
func (o observers) Compaction(app, outcome string) {
	for _, x := range o {
		if c, ok := x.(agentcore.CompactionObserver); ok {
			c.Compaction(app, outcome)
		}
	}
}
