package model

import "net/http"

// MaxIdleConnsPerHost is how many idle keep-alive connections a provider
// keeps to its upstream. net/http's default (2) is meant for clients that
// talk to many hosts; a gateway sends all its traffic to one or two, and
// with the default every request beyond two concurrent ones dials a new
// connection and then closes it.
const MaxIdleConnsPerHost = 512

// Upstream HTTP/1.1 connections keep a read and a write buffer for as long
// as they live, and a streamed answer holds its connection (and so both
// buffers) for the whole stream: net/http's default of 4 KiB each was 8 KiB
// of every open stream. With 1 KiB each, a request whose headers and body
// pass 1 KiB goes out in two writes (the buffer full, then the rest past
// it) where 4 KiB would take one up to that size, and a large unstreamed
// answer takes at most a few more reads (a body read into a slice at least
// as large as the buffer bypasses it). HTTP/2 connections
// are multiplexed and keep buffers of their own; these do not apply to them.
// Measured in docs/benchmarks-memory.md.
const (
	upstreamReadBufferSize  = 1 << 10
	upstreamWriteBufferSize = 1 << 10
)

// NewTransport returns the HTTP transport providers use by default:
// http.DefaultTransport's settings (proxy from the environment, timeouts,
// HTTP/2) with MaxIdleConnsPerHost idle connections kept per upstream host
// and 1 KiB read and write buffers per HTTP/1.1 connection. Each call
// returns a new transport; the caller owns it.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no global cap: the per-host cap bounds it
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	t.ReadBufferSize = upstreamReadBufferSize
	t.WriteBufferSize = upstreamWriteBufferSize
	return t
}
