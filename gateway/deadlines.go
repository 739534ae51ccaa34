package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentgate/agentgate/gateway/metrics"
)

// Request limits: the body's size (MaxBodyBytes) and how long it may take
// to arrive (BodyReadTimeout), and how long a non-streamed response may
// take to be written (WriteTimeout).
//
// The deadlines are set per request through http.ResponseController rather
// than as http.Server's ReadTimeout and WriteTimeout, which run from the
// request's headers to the end of its response and so would cut event
// streams, which stay open as long as their turn runs (with keepalives),
// and long non-streamed turns too:
//
//   - the read deadline is set when a request has a body and cleared once
//     the body has been read to its end, so it bounds the body's arrival
//     only (net/http cancels a request whose connection read times out, so
//     it must not outlive the body);
//   - the write deadline is set when the response starts being written
//     (its first byte, the status included), so it bounds how long a client
//     takes to take the answer, not how long the turn ran; a handler that
//     sets a deadline of its own, as an event stream does (clearing it),
//     takes over. No deadline is left on the connection by an earlier
//     request: net/http clears the write deadline once each response is
//     done (an HTTP/2 stream's is its own), so a request starts with none
//     and nothing clears it again here.
//
// Idle keep-alive connections and the header read are bounded by
// http.Server (IdleTimeout, ReadHeaderTimeout), set where it is built.

// errBodyTimeout is a request body that did not arrive within
// BodyReadTimeout.
var errBodyTimeout = errors.New("gateway: the request body did not arrive in time")

// connDeadlines is what http.ResponseController sets a connection's
// deadlines through: net/http's response writers (HTTP/1 and HTTP/2) take
// both themselves.
type connDeadlines interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// connOf is the writer under w (gin's) that takes the connection's
// deadlines itself, found once for the request: what
// http.ResponseController would find behind w for each deadline, walking
// the writers' Unwrap chain with a type assertion or two per writer, on
// every call. It is nil when the controller would not find both at once
// beneath w (a writer that takes neither, or only one), and the
// controller is asked then, as before. w is taken as gin's Context holds
// it (c.Writer): as an http.ResponseWriter it would be converted first, a
// lookup in the runtime's table of interface implementations.
func connOf(w gin.ResponseWriter) connDeadlines {
	switch u := w.(type) {
	case interface{ SetReadDeadline(time.Time) error }, interface{ SetWriteDeadline(time.Time) error }:
		return nil // w takes one itself: the controller's way
	case interface{ Unwrap() http.ResponseWriter }:
		conn, _ := u.Unwrap().(connDeadlines)
		return conn
	}
	return nil
}

// limitBody bounds the arrival time (BodyReadTimeout, from now) and the
// size (MaxBodyBytes) of r's body, through rq's writer.
func (s *Server) limitBody(r *http.Request, rq *requestState, now time.Time) {
	if r.Body == nil {
		return
	}
	if r.Body != http.NoBody && r.ContentLength != 0 {
		_ = rq.w.setReadDeadline(now.Add(s.cfg.BodyReadTimeout))
		rq.body = timedBody{ReadCloser: r.Body, w: &rq.w}
		r.Body = &rq.body
	}
	r.Body = http.MaxBytesReader(&rq.w, r.Body, s.cfg.MaxBodyBytes)
}

// timedBody clears the connection's read deadline once the body has been
// read to its end, and reports a deadline that passed as errBodyTimeout.
type timedBody struct {
	io.ReadCloser
	w    *requestWriter
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, errBodyTimeout
		}
		_ = b.w.setReadDeadline(time.Time{})
	}
	return n, err
}

// requestWriter is a request's response writer (see serveRequest): it
// sets the connection's write deadline when the response starts being
// written, unless the handler set one of its own, and, when the server has
// metrics, watches the response for them (see observe.go).
type requestWriter struct {
	gin.ResponseWriter
	// conn takes the connection's deadlines (see connOf); nil: through
	// http.ResponseController over ResponseWriter.
	conn    connDeadlines
	timeout time.Duration
	set     bool // a write deadline is set: by the first write, or by the handler

	// What the metrics watch (m not nil).
	c       *gin.Context
	m       *metrics.Metrics
	start   time.Time // when the request arrived
	model   string    // the virtual model, once noteModel knows it
	stream  bool
	firstAt bool
}

func (w *requestWriter) setReadDeadline(t time.Time) error {
	if w.conn != nil {
		return w.conn.SetReadDeadline(t)
	}
	return http.NewResponseController(w.ResponseWriter).SetReadDeadline(t)
}

func (w *requestWriter) setWriteDeadline(t time.Time) error {
	if w.conn != nil {
		return w.conn.SetWriteDeadline(t)
	}
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

func (w *requestWriter) startWrite() {
	if !w.set {
		w.set = true
		_ = w.setWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *requestWriter) Write(b []byte) (int, error) {
	w.frame(len(b) > 0 && b[0] != ':')
	w.startWrite()
	return w.ResponseWriter.Write(b)
}

func (w *requestWriter) WriteString(s string) (int, error) {
	w.frame(len(s) > 0 && s[0] != ':')
	w.startWrite()
	return w.ResponseWriter.WriteString(s)
}

func (w *requestWriter) WriteHeaderNow() {
	w.startWrite()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *requestWriter) Flush() {
	w.startWrite()
	w.ResponseWriter.Flush()
}

// SetWriteDeadline is the handler's own deadline (http.ResponseController
// finds it); the zero time means none, as an event stream wants, and is
// what the connection has already when no deadline was set yet (a request
// starts with none).
func (w *requestWriter) SetWriteDeadline(t time.Time) error {
	first := !w.set
	w.set = true
	if t.IsZero() && first {
		return nil
	}
	return w.setWriteDeadline(t)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *requestWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
