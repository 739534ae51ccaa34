package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"
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

// deadlines bounds the request body's arrival time and size
// (MaxBodyBytes) and the response's write time.
func (s *Server) deadlines(c *gin.Context) {
	d := &requestDeadlines{w: deadlineWriter{ResponseWriter: c.Writer, timeout: s.cfg.WriteTimeout}}
	c.Writer = &d.w
	if r := c.Request; r.Body != nil {
		if r.Body != http.NoBody && r.ContentLength != 0 {
			_ = http.NewResponseController(d.w.ResponseWriter).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
			d.body = timedBody{ReadCloser: r.Body, w: c.Writer}
			r.Body = &d.body
		}
		r.Body = http.MaxBytesReader(c.Writer, r.Body, s.cfg.MaxBodyBytes)
	}
	if s.cfg.Metrics != nil {
		s.instrument(c, &d.m)
		return
	}
	c.Next()
}

// requestDeadlines is a request's writer and body, and its metered writer
// (see instrument) when the server has metrics, in one allocation.
type requestDeadlines struct {
	w    deadlineWriter
	body timedBody
	m    meteredWriter
}

// timedBody clears the connection's read deadline once the body has been
// read to its end, and reports a deadline that passed as errBodyTimeout.
type timedBody struct {
	io.ReadCloser
	w    http.ResponseWriter // the controller is made when needed: one allocation less per request
	done bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return n, errBodyTimeout
		}
		_ = http.NewResponseController(b.w).SetReadDeadline(time.Time{})
	}
	return n, err
}

// deadlineWriter sets the connection's write deadline when the response
// starts being written, unless the handler set one of its own.
type deadlineWriter struct {
	gin.ResponseWriter
	timeout time.Duration
	set     bool // a deadline is set: by the first write, or by the handler
}

func (w *deadlineWriter) start() {
	if !w.set {
		w.set = true
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) WriteString(s string) (int, error) {
	w.start()
	return w.ResponseWriter.WriteString(s)
}

func (w *deadlineWriter) WriteHeaderNow() {
	w.start()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *deadlineWriter) Flush() {
	w.start()
	w.ResponseWriter.Flush()
}

// SetWriteDeadline is the handler's own deadline (http.ResponseController
// finds it); the zero time means none, as an event stream wants, and is
// what the connection has already when no deadline was set yet (a request
// starts with none).
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	first := !w.set
	w.set = true
	if t.IsZero() && first {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
