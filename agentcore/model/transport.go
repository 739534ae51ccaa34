package model

import "net/http"

// MaxIdleConnsPerHost is how many idle keep-alive connections a provider
// keeps to its upstream. net/http's default (2) is meant for clients that
// talk to many hosts; a gateway sends all its traffic to one or two, and
// with the default every request beyond two concurrent ones dials a new
// connection and then closes it.
const MaxIdleConnsPerHost = 512

// NewTransport returns the HTTP transport providers use by default:
// http.DefaultTransport's settings (proxy from the environment, timeouts,
// HTTP/2) with MaxIdleConnsPerHost idle connections kept per upstream host.
// Each call returns a new transport; the caller owns it.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no global cap: the per-host cap bounds it
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return t
}
