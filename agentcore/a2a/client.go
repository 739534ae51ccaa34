package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/agentgate/agentcore/model"
)

// ClientConfig configures a Client. Zero fields mean the defaults.
type ClientConfig struct {
	// HTTPClient makes the requests (default: one without an overall
	// timeout; every call is bounded by its context). One without a
	// redirect policy gets the client's own.
	HTTPClient *http.Client
	// CardTTL is how long a fetched agent card is reused (default 5m).
	CardTTL time.Duration
	// Now replaces the clock (tests).
	Now func() time.Time
	// UserAgent is sent with every request (default "agentgate").
	UserAgent string
}

// DefaultCardTTL is how long agent cards are cached by default.
const DefaultCardTTL = 5 * time.Minute

// maxBody bounds what is read of one response or stream frame.
const maxBody = 16 << 20

// ErrInsecureToken is returned instead of sending a bearer token over plain
// http to a host that is not the loopback interface.
var ErrInsecureToken = errors.New("a2a: refusing to send a bearer token over plain http to a non-loopback host")

// HTTPError is a non-2xx answer that was not a JSON-RPC error.
type HTTPError struct {
	Status int
	// Body is the start of the response body.
	Body string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("a2a: remote answered HTTP %d", e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Client calls A2A agents over JSON-RPC. It caches agent cards by endpoint
// and is safe for concurrent use; one Client serves every remote agent of
// a process.
type Client struct {
	hc    *http.Client
	ttl   time.Duration
	now   func() time.Time
	ua    string
	reqID atomic.Int64

	mu    sync.Mutex
	cards map[string]cardEntry
}

type cardEntry struct {
	target  Target
	fetched time.Time
}

// NewClient returns a client.
func NewClient(cfg ClientConfig) *Client {
	c := &Client{hc: cfg.HTTPClient, ttl: cfg.CardTTL, now: cfg.Now, ua: cfg.UserAgent, cards: map[string]cardEntry{}}
	if c.hc == nil {
		c.hc = &http.Client{CheckRedirect: checkRedirect}
	} else if c.hc.CheckRedirect == nil {
		hc := *c.hc
		hc.CheckRedirect = checkRedirect
		c.hc = &hc
	}
	if c.ttl <= 0 {
		c.ttl = DefaultCardTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.ua == "" {
		c.ua = "agentgate"
	}
	return c
}

// checkRedirect follows at most 10 redirects and never one that would carry
// the bearer token over plain http to a host that is not the loopback
// interface (Go drops the header itself on a redirect to another host).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("a2a: stopped after 10 redirects")
	}
	if req.Header.Get("Authorization") != "" && !TokenAllowed(req.URL.String()) {
		return ErrInsecureToken
	}
	return nil
}

// Target is a resolved remote agent: where its JSON-RPC interface is, in
// which version, and the credentials to present.
type Target struct {
	// URL is the JSON-RPC endpoint.
	URL     string
	Version Version
	// Card is the agent's card; nil when the server publishes none.
	Card  *AgentCard
	token model.Secret
}

// Streams reports whether the agent's card says it streams.
func (t *Target) Streams() bool { return t.Card != nil && t.Card.Streams() }

// TokenAllowed reports whether a bearer token may be sent to rawURL: over
// https, or over http to the loopback interface only.
func TokenAllowed(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return isLoopback(u.Hostname())
	}
	return false
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Resolve finds the JSON-RPC interface of the agent at endpoint: it fetches
// (or reuses) the agent card from <endpoint>/.well-known/agent-card.json,
// then agent.json, then the same two at the endpoint's origin (endpoint may
// also be the card's own URL). A server that publishes no card is called at
// endpoint itself, in v0.3. The card's URL is used when it is on the
// endpoint's origin (or endpoint named the card); otherwise the endpoint.
func (c *Client) Resolve(ctx context.Context, endpoint string, token model.Secret) (*Target, error) {
	endpoint = strings.TrimRight(endpoint, "/")
	key := endpoint + "\x00" + strconv.FormatBool(token != "")
	c.mu.Lock()
	e, ok := c.cards[key]
	c.mu.Unlock()
	if ok && c.now().Sub(e.fetched) < c.ttl {
		t := e.target
		t.token = token
		return &t, nil
	}
	t, err := c.fetchTarget(ctx, endpoint, token)
	if err != nil {
		if ok && ctx.Err() == nil {
			// A stale card beats none while its server hiccups.
			t := e.target
			t.token = token
			return &t, nil
		}
		return nil, err
	}
	c.mu.Lock()
	c.cards[key] = cardEntry{target: *t, fetched: c.now()}
	c.mu.Unlock()
	t.token = token
	return t, nil
}

func (c *Client) fetchTarget(ctx context.Context, endpoint string, token model.Secret) (*Target, error) {
	eu, err := url.Parse(endpoint)
	if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return nil, fmt.Errorf("a2a: endpoint %q is not an absolute http(s) URL", endpoint)
	}
	var candidates []string
	isCard := strings.HasSuffix(eu.Path, ".json")
	if isCard {
		candidates = []string{endpoint}
	} else {
		candidates = []string{endpoint + "/.well-known/agent-card.json", endpoint + "/.well-known/agent.json"}
		if strings.Trim(eu.Path, "/") != "" {
			origin := eu.Scheme + "://" + eu.Host
			candidates = append(candidates, origin+"/.well-known/agent-card.json", origin+"/.well-known/agent.json")
		}
	}
	for _, cu := range candidates {
		card, err := c.fetchCard(ctx, cu, token)
		if err != nil {
			var he *HTTPError
			if errors.As(err, &he) && he.Status == http.StatusNotFound {
				continue
			}
			return nil, err
		}
		rpcURL, v, ok := card.JSONRPC()
		if !ok {
			return nil, fmt.Errorf("a2a: the agent card at %s offers no JSON-RPC interface", cu)
		}
		ru, err := eu.Parse(rpcURL)
		if err != nil {
			return nil, fmt.Errorf("a2a: the agent card at %s has a bad url %q", cu, rpcURL)
		}
		if !isCard && (ru.Scheme != eu.Scheme || ru.Host != eu.Host) {
			// The card names another origin (its public address, seen
			// from elsewhere): call the endpoint we were configured with.
			ru = eu
		}
		return &Target{URL: ru.String(), Version: v, Card: card}, nil
	}
	if isCard {
		return nil, fmt.Errorf("a2a: no agent card at %s", endpoint)
	}
	return &Target{URL: endpoint, Version: V03}, nil
}

func (c *Client) fetchCard(ctx context.Context, cardURL string, token model.Secret) (*AgentCard, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cardURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if token != "" && TokenAllowed(cardURL) {
		req.Header.Set("Authorization", "Bearer "+token.Reveal())
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: fetching agent card: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("a2a: reading agent card: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPError{Status: resp.StatusCode, Body: snippet(body)}
	}
	var card AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("a2a: agent card at %s: %w", cardURL, err)
	}
	return &card, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// post sends one JSON-RPC request and returns the HTTP response; the
// caller closes its body.
func (c *Client) post(ctx context.Context, t *Target, m Method, params any, stream bool) (*http.Response, error) {
	if t.token != "" && !TokenAllowed(t.URL) {
		return nil, ErrInsecureToken
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id, _ := json.Marshal(c.reqID.Add(1))
	body, err := json.Marshal(Request{JSONRPC: "2.0", ID: id, Method: MethodName(m, t.Version), Params: p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if t.Version == V1 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token.Reveal())
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: %s: %w", MethodName(m, t.Version), err)
	}
	return resp, nil
}

// call makes a unary JSON-RPC call and returns its raw result.
func (c *Client) call(ctx context.Context, t *Target, m Method, params any) (json.RawMessage, error) {
	resp, err := c.post(ctx, t, m, params, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("a2a: reading response: %w", err)
	}
	return decodeRPC(resp.StatusCode, body)
}

func decodeRPC(status int, body []byte) (json.RawMessage, error) {
	var r rawResponse
	if err := json.Unmarshal(body, &r); err != nil || (r.Error == nil && len(r.Result) == 0) {
		if status/100 != 2 {
			return nil, &HTTPError{Status: status, Body: snippet(body)}
		}
		return nil, fmt.Errorf("a2a: the answer is not a JSON-RPC response: %s", snippet(body))
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}

// SendMessage sends a message (message/send) and returns the task or the
// message the agent answered with.
func (c *Client) SendMessage(ctx context.Context, t *Target, p SendParams) (Event, error) {
	raw, err := c.call(ctx, t, MethodSend, EncodeSendParams(p, t.Version))
	if err != nil {
		return Event{}, err
	}
	e, err := DecodeEvent(raw)
	if err != nil {
		return Event{}, err
	}
	if e.Task == nil && e.Message == nil {
		return Event{}, errors.New("a2a: message/send answered with neither a task nor a message")
	}
	return e, nil
}

// GetTask reads a task (tasks/get).
func (c *Client) GetTask(ctx context.Context, t *Target, id string) (*Task, error) {
	raw, err := c.call(ctx, t, MethodGetTask, EncodeTaskQuery(TaskQuery{ID: id}))
	if err != nil {
		return nil, err
	}
	return DecodeTask(raw)
}

// CancelTask asks the agent to cancel a task (tasks/cancel).
func (c *Client) CancelTask(ctx context.Context, t *Target, id string) (*Task, error) {
	raw, err := c.call(ctx, t, MethodCancelTask, EncodeTaskQuery(TaskQuery{ID: id}))
	if err != nil {
		return nil, err
	}
	return DecodeTask(raw)
}

// StreamMessage sends a message over message/stream and yields the events
// as they arrive. A server that answers with plain JSON instead of an event
// stream yields its one result. The stream ends when the server closes it.
func (c *Client) StreamMessage(ctx context.Context, t *Target, p SendParams) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		resp, err := c.post(ctx, t, MethodStream, EncodeSendParams(p, t.Version), true)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer resp.Body.Close()
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if mt != "text/event-stream" {
			body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
			if err != nil {
				yield(Event{}, fmt.Errorf("a2a: reading response: %w", err))
				return
			}
			raw, err := decodeRPC(resp.StatusCode, body)
			if err != nil {
				yield(Event{}, err)
				return
			}
			e, err := DecodeEvent(raw)
			yield(e, err)
			return
		}
		for data, err := range sseData(resp.Body) {
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				yield(Event{}, fmt.Errorf("a2a: reading stream: %w", err))
				return
			}
			raw, err := decodeRPC(http.StatusOK, data)
			if err != nil {
				yield(Event{}, err)
				return
			}
			e, err := DecodeEvent(raw)
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// sseData yields the data of each server-sent event of r.
func sseData(r io.Reader) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), maxBody)
		var data []byte
		has := false
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if has {
					if !yield(data, nil) {
						return
					}
				}
				data, has = nil, false
			case line[0] == ':':
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				if string(field) != "data" {
					continue
				}
				value = bytes.TrimPrefix(value, []byte(" "))
				if has {
					data = append(data, '\n')
				}
				data = append(data, value...)
				has = true
			}
		}
		if err := sc.Err(); err != nil {
			yield(nil, err)
			return
		}
		if has {
			yield(data, nil)
		}
	}
}
