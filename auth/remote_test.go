package auth_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/goleak"

	"github.com/agentgate/agentgate/auth"
)

// verifyNoLeaks checks, once the test and its cleanups are done, that no
// goroutine outlives it (the refresher, the JWKS client's connections).
func verifyNoLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

func TestCritHeaderIsRefused(t *testing.T) {
	v := verifier(t, nil)
	signWith := func(header map[string]any) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
		for k, val := range header {
			tok.Header[k] = val
		}
		s, err := tok.SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := v.Verify(signWith(nil)); err != nil {
		t.Fatalf("the same token without crit: %v", err)
	}
	for name, header := range map[string]map[string]any{
		"unknown extension":       {"crit": []string{"http://example.invalid/ext"}, "http://example.invalid/ext": true},
		"b64 (RFC 7797)":          {"crit": []string{"b64"}, "b64": true},
		"names a registered name": {"crit": []string{"exp"}},
		"empty list":              {"crit": []string{}},
		"not a list":              {"crit": "b64"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(signWith(header))
			var ae *auth.Error
			if !errors.As(err, &ae) || ae.Reason != auth.ReasonCritical {
				t.Errorf("err = %v, want reason %q", err, auth.ReasonCritical)
			}
		})
	}
}

// jwksServer serves a JWKS document the test replaces, and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     []byte
	status  int
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T, keys ...jwksKey) *jwksServer {
	t.Helper()
	s := &jwksServer{status: http.StatusOK}
	s.serve(keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(s.status)
		_, _ = w.Write(s.doc)
	}))
	t.Cleanup(s.Close)
	return s
}

// jwksKey is a P-256 signing key published under kid.
type jwksKey struct {
	kid  string
	priv *ecdsa.PrivateKey
}

func newJWKSKey(t *testing.T, kid string) jwksKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return jwksKey{kid: kid, priv: k}
}

// serve publishes exactly keys from now on.
func (s *jwksServer) serve(keys ...jwksKey) {
	b64 := base64.RawURLEncoding.EncodeToString
	var list []map[string]any
	for _, k := range keys {
		list = append(list, map[string]any{"kty": "EC", "kid": k.kid, "use": "sig", "alg": "ES256", "crv": "P-256",
			"x": b64(pad(k.priv.X.Bytes(), 32)), "y": b64(pad(k.priv.Y.Bytes(), 32))})
	}
	doc, _ := json.Marshal(map[string]any{"keys": list})
	s.mu.Lock()
	s.doc, s.status = doc, http.StatusOK
	s.mu.Unlock()
}

func (s *jwksServer) fail() {
	s.mu.Lock()
	s.doc, s.status = []byte(`{"error":"down"}`), http.StatusInternalServerError
	s.mu.Unlock()
}

// clock is a test clock the test moves.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newClock(at time.Time) *clock       { c := &clock{}; c.ns.Store(at.UnixNano()); return c }
func (k jwksKey) token(t *testing.T) string {
	return sign(t, jwt.SigningMethodES256, k.priv, k.kid, claims(nil))
}

func reason(err error) auth.Reason {
	var ae *auth.Error
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return ""
}

// TestJWKSURLRotatedKeysWorkWithoutRestart rotates the keys of a JWKS
// server: a token signed with the new key is accepted once it arrives (the
// unknown kid refreshes the document), the removed key stops working, and
// refreshes on unknown kids are rate-limited.
func TestJWKSURLRotatedKeysWorkWithoutRestart(t *testing.T) {
	verifyNoLeaks(t)
	a, b := newJWKSKey(t, "a"), newJWKSKey(t, "b")
	srv := newJWKSServer(t, a)
	clk := newClock(now)
	v, err := auth.New(auth.Config{Issuer: "https://idp.example", Audience: "agentgate", JWKSURL: srv.URL, Leeway: 30 * time.Second,
		JWKSRefresh: time.Hour, JWKSMinRefresh: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Verify(a.token(t)); err != nil {
		t.Fatalf("key a: %v", err)
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches at start-up, want 1", n)
	}

	srv.serve(b) // rotation: a is gone, b is new
	if _, err := v.Verify(b.token(t)); err != nil {
		t.Fatalf("key b after rotation: %v", err)
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2: the unknown kid b refreshes", n)
	}
	if _, err := v.Verify(a.token(t)); reason(err) != auth.ReasonUnknownKey {
		t.Errorf("removed key a: %v, want unknown_key", err)
	}
	madeUp := sign(t, jwt.SigningMethodES256, b.priv, "made-up", claims(nil))
	for range 20 { // a flood of made-up kids within the interval fetches nothing
		if _, err := v.Verify(madeUp); reason(err) != auth.ReasonUnknownKey {
			t.Fatalf("made-up kid: %v", err)
		}
	}
	if n := srv.fetches.Load(); n != 2 {
		t.Errorf("%d fetches after a flood of unknown kids, want 2 (rate-limited)", n)
	}
	clk.advance(time.Minute)
	if _, err := v.Verify(madeUp); reason(err) != auth.ReasonUnknownKey {
		t.Fatalf("made-up kid: %v", err)
	}
	if n := srv.fetches.Load(); n != 3 {
		t.Errorf("%d fetches, want 3: an unknown kid once the interval has passed refreshes again", n)
	}
	// A token whose signature does not match its kid's key is still refused.
	forged := sign(t, jwt.SigningMethodES256, a.priv, "b", claims(nil))
	if _, err := v.Verify(forged); reason(err) != auth.ReasonSignature {
		t.Errorf("key a under kid b: %v, want signature", err)
	}
}

// TestJWKSURLBackgroundRefresh: the document is fetched again on its own;
// a failed refresh keeps the keys fetched before.
func TestJWKSURLBackgroundRefresh(t *testing.T) {
	verifyNoLeaks(t)
	a, c := newJWKSKey(t, "a"), newJWKSKey(t, "c")
	srv := newJWKSServer(t, a)
	// The clock stands still: after one refresh for an unknown kid
	// (below) none is due, so only the background refresh can bring c.
	v, err := auth.New(auth.Config{JWKSURL: srv.URL, JWKSRefresh: 5 * time.Millisecond, JWKSMinRefresh: time.Hour,
		Now: newClock(now).now})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tokA := sign(t, jwt.SigningMethodES256, a.priv, "a", jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()})
	tokC := sign(t, jwt.SigningMethodES256, c.priv, "c", jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()})

	if _, err := v.Verify(sign(t, jwt.SigningMethodES256, c.priv, "c", jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()})); reason(err) != auth.ReasonUnknownKey {
		t.Fatalf("key c before it is published: %v", err)
	}
	srv.fail()
	for start := srv.fetches.Load(); srv.fetches.Load() < start+2; {
		time.Sleep(time.Millisecond)
	}
	if _, err := v.Verify(tokA); err != nil {
		t.Errorf("key a after failed refreshes: %v", err)
	}
	srv.serve(a, c)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := v.Verify(tokC)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("key c never arrived by background refresh: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	stopped := srv.fetches.Load()
	time.Sleep(30 * time.Millisecond)
	if n := srv.fetches.Load(); n != stopped {
		t.Errorf("%d fetches after Close, want none", n-stopped)
	}
}

func TestJWKSURLStartupErrors(t *testing.T) {
	srv := newJWKSServer(t)
	srv.fail()
	for name, url := range map[string]string{"server error": srv.URL, "not http": "file:///etc/jwks.json", "no host": "https://"} {
		t.Run(name, func(t *testing.T) {
			_, err := auth.New(auth.Config{JWKSURL: url})
			if err == nil || !strings.HasPrefix(err.Error(), "jwks_url: ") {
				t.Errorf("err = %v, want one naming jwks_url", err)
			}
		})
	}
}
