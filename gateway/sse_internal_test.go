package gateway

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

// TestSSEHeaders: newSSE's headers are what h.Set gives them, the
// Content-Length dropped and other headers kept, and a later Set or Add of
// one of them leaves the shared values (and the next stream's) as they were.
func TestSSEHeaders(t *testing.T) {
	want := http.Header{}
	want.Set("Content-Type", "text/event-stream")
	want.Set("Cache-Control", "no-cache")
	want.Set("Connection", "keep-alive")
	want.Set("X-Accel-Buffering", "no")
	want.Set("X-Session-Id", "s1")
	for i := range 2 {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Length", "12")
		w.Header().Set("X-Session-Id", "s1")
		newSSE(w, nil)
		if got := w.Result().Header; !reflect.DeepEqual(got, want) {
			t.Fatalf("stream %d: headers %v, want %v", i, got, want)
		}
		h := w.Header()
		h.Add("Cache-Control", "no-store")
		h.Add("Connection", "close")
		h.Set("Content-Type", "text/plain")
		h.Del("X-Accel-Buffering")
	}
}

// nopWriter is a ResponseWriter that keeps its headers and discards the
// rest.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}
func (w *nopWriter) Flush()                      {}

// BenchmarkSSEStart: what a stream's start costs, its headers set and its
// writer made, and a frame written.
func BenchmarkSSEStart(b *testing.B) {
	frame := []byte("data: {}\n\n")
	b.ReportAllocs()
	for b.Loop() {
		w := &nopWriter{h: make(http.Header, 8)}
		if err := newSSE(w, nil).frame(frame); err != nil {
			b.Fatal(err)
		}
	}
}
