package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a JWKS fetched from a URL.
const (
	DefaultJWKSRefresh    = 15 * time.Minute
	DefaultJWKSMinRefresh = 30 * time.Second
	jwksFetchTimeout      = 10 * time.Second
	maxJWKSBytes          = 1 << 20
)

// remoteKeys is a JWKS document fetched from a URL: refreshed in the
// background every interval, and on demand when a token names a kid it
// lacks, at most once per minInterval (so tokens with made-up kids cannot
// make the gateway hammer the identity provider). A failed refresh keeps
// the keys it had. The first unknown kid after start-up refreshes at once:
// only refreshes on demand count against minInterval.
type remoteKeys struct {
	url         string
	client      *http.Client
	ownsClient  bool // close closes its idle connections
	minInterval time.Duration
	now         func() time.Time
	log         *slog.Logger

	keys atomic.Pointer[[]key]

	mu      sync.Mutex // one fetch at a time; guards lastKid
	lastKid time.Time  // of the latest refresh for an unknown kid

	stop context.CancelFunc
	done chan struct{}
}

// newRemoteKeys fetches the document once (an error stops start-up) and
// starts the background refresh; close stops it.
func newRemoteKeys(url string, client *http.Client, interval, minInterval time.Duration, now func() time.Time, log *slog.Logger) (*remoteKeys, error) {
	r := &remoteKeys{url: url, client: client, minInterval: minInterval, now: now, log: log, done: make(chan struct{})}
	ks, err := r.fetch(context.Background())
	if err != nil {
		return nil, err
	}
	r.keys.Store(&ks)
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go r.refreshEvery(ctx, interval)
	return r, nil
}

func (r *remoteKeys) refreshEvery(ctx context.Context, interval time.Duration) {
	defer close(r.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.mu.Lock()
			r.fetchLocked(ctx)
			r.mu.Unlock()
		}
	}
}

// current returns the keys fetched last.
func (r *remoteKeys) current() []key { return *r.keys.Load() }

// fetchLocked fetches the document and keeps its keys; r.mu is held.
func (r *remoteKeys) fetchLocked(ctx context.Context) {
	ks, err := r.fetch(ctx)
	if err != nil {
		r.log.Warn("jwks refresh failed; keeping the keys fetched before", "url", r.url, "error", err.Error())
		return
	}
	r.keys.Store(&ks)
}

// refreshForKid refreshes because a token named an unknown kid, unless the
// previous such refresh was less than minInterval ago. Callers that waited
// for another's refresh see its keys.
func (r *remoteKeys) refreshForKid() {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.now()
	if !r.lastKid.IsZero() && t.Sub(r.lastKid) < r.minInterval {
		return
	}
	r.lastKid = t
	r.fetchLocked(context.Background())
}

func (r *remoteKeys) fetch(ctx context.Context) ([]key, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", r.url, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKSBytes {
		return nil, errors.New("the JWKS document exceeds 1 MiB")
	}
	return parseJWKS(data)
}

func (r *remoteKeys) close() {
	r.stop()
	<-r.done
	if r.ownsClient {
		r.client.CloseIdleConnections()
	}
}
