package wire

import "net/http"

// HeaderCopier returns a function that makes a new copy of h, one value a
// name, with Accept added: a map and one slice that holds every value.
// Each request gets a copy of its own, so nothing a transport does to one
// request's headers reaches another's.
func HeaderCopier(h http.Header) func(accept string) http.Header {
	h = h.Clone()
	h.Del("Accept")
	return func(accept string) http.Header {
		out := make(http.Header, len(h)+1)
		values := make([]string, len(h)+1)
		i := 0
		for k, v := range h {
			values[i] = v[0]
			out[k] = values[i : i+1 : i+1] // an append to one copies
			i++
		}
		values[i] = accept
		out["Accept"] = values[i:]
		return out
	}
}

// ProviderHeader returns the copier of the headers every request of a
// provider carries: a JSON body, its user agent, its credentials (auth,
// which may be nil), then the headers config sets, which win.
func ProviderHeader(userAgent string, auth http.Header, configured map[string]string) func(accept string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	for k, v := range auth {
		h[k] = v
	}
	for k, v := range configured {
		h.Set(k, v)
	}
	return HeaderCopier(h)
}
