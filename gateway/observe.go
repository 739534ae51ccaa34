package gateway

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
)

// Observability glue: the metrics middleware, the writer that spots event
// streams and their first frame, and the per-request log attributes.

// The metrics of a request (see serveRequest, which calls observe once
// the handler returned, also after a panic, so that they see the status the
// recovery wrote): count and latency by route template and status class;
// for event streams also the open-stream gauge and the time to the first
// event frame, which the request's writer watches (requestWriter, when
// the server has metrics): an event stream is one whose status goes out
// with Content-Type text/event-stream; its first frame is the first write
// that is not a comment (keepalive).

// observe records the request's metrics at now.
func (w *requestWriter) observe(c *gin.Context, now time.Time) {
	if w.stream {
		w.m.StreamClosed(c.FullPath())
	}
	w.m.ObserveRequest(c.Request.Method, c.FullPath(), w.Status(), now.Sub(w.start))
}

func (w *requestWriter) WriteHeader(code int) {
	// h["Content-Type"] is h.Get("Content-Type"): the key is canonical.
	if w.m != nil && !w.stream && code == http.StatusOK {
		if ct := w.Header()["Content-Type"]; len(ct) > 0 && ct[0] == "text/event-stream" {
			w.stream = true
			w.m.StreamOpened(w.c.FullPath())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *requestWriter) frame(isEvent bool) {
	if w.stream && !w.firstAt && isEvent {
		w.firstAt = true
		w.m.ObserveFirstToken(w.c.FullPath(), w.model, time.Since(w.start))
	}
}

// noteModel records the virtual model a request addresses, for the metrics
// (time to first token by model, when the request's writer watches the response) and
// the request's log records. It keeps it out of gin's Keys, a map made for
// the first key set.
func noteModel(c *gin.Context, id string) {
	if w, ok := c.Writer.(*requestWriter); ok {
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
