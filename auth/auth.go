// Package auth verifies the bearer tokens (JWTs) callers present and turns
// them into a Principal: whose sessions these are, which models the token
// may use, and the trusted conversation parameters its claims carry.
//
// The accepted algorithms follow from the configured keys: a shared secret
// admits HS256/384/512 only, an RSA key RS* and PS*, an ECDSA key the one
// ES* of its curve, an Ed25519 key EdDSA. "none" is never accepted, and a
// public key is never used as an HMAC secret. Nothing here knows about HTTP
// frameworks: the gateway calls Authenticate with the Authorization header.
package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentgate/agentgate/agentcore/model"
)

// paramNameRE is what a parameter name looks like (as agents declare them).
var paramNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// minSecretBytes is the shortest HMAC secret accepted (RFC 7518 §3.2 asks
// for at least the hash size; 32 bytes fits HS256).
const minSecretBytes = 32

// Config configures a Verifier. At least one key source is required.
type Config struct {
	// Issuer and Audience are checked when set.
	Issuer   string
	Audience string
	// HMACSecret verifies HS256, HS384 and HS512 tokens.
	HMACSecret model.Secret
	// PublicKeyFiles are PEM files holding RSA, ECDSA or Ed25519 public
	// keys (or certificates).
	PublicKeyFiles []string
	// JWKSFile is a JWKS document on disk; its keys are chosen by kid.
	JWKSFile string
	// JWKSURL is a JWKS document served over http(s), fetched by New (a
	// failure is an error), then again every JWKSRefresh (default 15m) in
	// the background, and when a token names a kid it lacks, at most once
	// per JWKSMinRefresh (default 30s). Close stops the refreshing.
	JWKSURL        string
	JWKSRefresh    time.Duration
	JWKSMinRefresh time.Duration
	// HTTPClient fetches JWKSURL (default: a client of the verifier's own,
	// whose idle connections Close closes); each fetch is bounded to 10s.
	HTTPClient *http.Client
	// Logger receives failed background refreshes (default: discarded).
	Logger *slog.Logger
	// Leeway is the clock skew tolerated on exp, nbf and iat.
	Leeway time.Duration
	// UserClaim names the claim holding the user id (default "sub").
	UserClaim string
	// ModelsClaim, when set, names a claim listing the models the token may
	// use (an array of strings, or one space-separated string).
	ModelsClaim string
	// Parameters map claims to trusted conversation parameters.
	Parameters []ClaimParameter
	// Now replaces the clock (tests).
	Now func() time.Time
}

// ClaimParameter maps a claim to a trusted conversation parameter.
type ClaimParameter struct {
	Claim string
	Name  string
	// SendToModel false hides the value from every model.
	SendToModel bool
}

// Param is a trusted parameter value taken from a claim.
type Param struct {
	Value       any
	SendToModel bool
}

// Principal is a verified caller.
type Principal struct {
	// User owns the sessions the caller uses.
	User string
	// Models lists the models the token may use; nil when the verifier has
	// no models claim configured (every model is allowed).
	Models []string
	// Params are trusted conversation parameters, by name.
	Params map[string]Param
}

// CanUse reports whether the principal may use the model.
func (p *Principal) CanUse(modelID string) bool {
	return p.Models == nil || slices.Contains(p.Models, modelID)
}

// Reason says why a token was refused. Reasons are safe to log; they never
// carry the token.
type Reason string

// Reasons for refusing a token.
const (
	ReasonMissing      Reason = "missing"       // no Authorization header
	ReasonScheme       Reason = "scheme"        // not "Bearer <token>"
	ReasonMalformed    Reason = "malformed"     // not a JWS compact token
	ReasonAlgorithm    Reason = "algorithm"     // an algorithm no configured key admits
	ReasonUnknownKey   Reason = "unknown_key"   // no configured key fits (kid, type)
	ReasonSignature    Reason = "signature"     // the signature does not verify
	ReasonExpired      Reason = "expired"       // exp has passed, or is missing
	ReasonNotYetValid  Reason = "not_yet_valid" // nbf is in the future
	ReasonIssuedAt     Reason = "issued_at"     // iat is in the future
	ReasonIssuer       Reason = "issuer"        // iss differs from the configured one
	ReasonAudience     Reason = "audience"      // aud does not hold the configured one
	ReasonClaims       Reason = "claims"        // a claim has the wrong type
	ReasonUserClaim    Reason = "user_claim"    // the user claim is missing or empty
	ReasonModelsClaim  Reason = "models_claim"  // the models claim is not a list of strings
	ReasonCritical     Reason = "critical"      // a crit header: extensions are not processed (RFC 7515 §4.1.11)
	ReasonInvalidToken Reason = "invalid"       // anything else
)

// ErrUnauthenticated is matched (errors.Is) by every *Error.
var ErrUnauthenticated = errors.New("auth: unauthenticated")

// Error is a refused token. Its message names the reason and never quotes
// the token.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return "auth: " + string(e.Reason) + ": " + e.Err.Error()
	}
	return "auth: " + string(e.Reason)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches ErrUnauthenticated.
func (e *Error) Is(target error) bool { return target == ErrUnauthenticated }

// Verifier checks tokens. It is safe for concurrent use; its keys change
// only by refreshes of Config.JWKSURL. Close releases it.
type Verifier struct {
	cfg    Config
	keys   []key
	algs   []string
	parser *jwt.Parser
	// remote is the JWKS of Config.JWKSURL (nil without one).
	remote    *remoteKeys
	closeOnce sync.Once
}

// New loads the keys and returns a verifier. Every problem found is
// reported, one per line, each naming the setting at fault relative to
// auth.jwt ("public_key_files[1]: ...").
func New(cfg Config) (*Verifier, error) {
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Leeway < 0 {
		return nil, errors.New("auth: leeway must not be negative")
	}
	v := &Verifier{cfg: cfg}
	var errs []error
	if s := cfg.HMACSecret.Reveal(); s != "" {
		if len(s) < minSecretBytes {
			errs = append(errs, fmt.Errorf("hs256_secret: needs at least %d bytes", minSecretBytes))
		} else {
			v.keys = append(v.keys, key{material: []byte(s), algs: hmacAlgs})
		}
	}
	for i, f := range cfg.PublicKeyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("public_key_files[%d]: %w", i, err))
			continue
		}
		ks, err := parsePEM(data)
		if err != nil {
			errs = append(errs, fmt.Errorf("public_key_files[%d]: %s: %w", i, f, err))
			continue
		}
		v.keys = append(v.keys, ks...)
	}
	if cfg.JWKSFile != "" {
		data, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("jwks_file: %w", err))
		} else if ks, err := parseJWKS(data); err != nil {
			errs = append(errs, fmt.Errorf("jwks_file: %s: %w", cfg.JWKSFile, err))
		} else {
			v.keys = append(v.keys, ks...)
		}
	}
	seen := map[string]bool{}
	for i, p := range cfg.Parameters {
		switch {
		case p.Claim == "":
			errs = append(errs, fmt.Errorf("parameters[%d].claim: required", i))
		case !paramNameRE.MatchString(p.Name):
			errs = append(errs, fmt.Errorf("parameters[%d].name: must match %s, got %q", i, paramNameRE, p.Name))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("parameters[%d].name: duplicate parameter %q", i, p.Name))
		}
		seen[p.Name] = true
	}
	if cfg.JWKSURL != "" {
		if u, err := url.Parse(cfg.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("jwks_url: must be an absolute http(s) URL"))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(v.keys) == 0 && cfg.JWKSURL == "" {
		return nil, errors.New("auth: no key configured (hs256_secret, public_key_files, jwks_file or jwks_url)")
	}
	algKeys := v.keys
	if cfg.JWKSURL != "" {
		if err := v.openRemote(); err != nil {
			return nil, err
		}
		// The algorithms are those of the keys at start-up plus every
		// algorithm of the key types a JWKS may hold: a rotated key may be
		// of another type than the one it replaces. Each key still
		// verifies only its own algorithms (keyFor).
		algKeys = append(slices.Clone(v.keys), v.remote.current()...)
		algKeys = append(algKeys, key{algs: rsaAlgs}, key{algs: []string{"ES256", "ES384", "ES512"}}, key{algs: ed25519Algs})
	}
	for _, k := range algKeys {
		for _, a := range k.algs {
			if !slices.Contains(v.algs, a) {
				v.algs = append(v.algs, a)
			}
		}
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(v.algs), jwt.WithLeeway(cfg.Leeway), jwt.WithTimeFunc(cfg.Now),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithJSONNumber()}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// openRemote fetches Config.JWKSURL and starts its refreshing.
func (v *Verifier) openRemote() error {
	cfg := v.cfg
	if cfg.JWKSRefresh <= 0 {
		cfg.JWKSRefresh = DefaultJWKSRefresh
	}
	if cfg.JWKSMinRefresh <= 0 {
		cfg.JWKSMinRefresh = DefaultJWKSMinRefresh
	}
	owned := cfg.HTTPClient == nil
	if owned {
		cfg.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r, err := newRemoteKeys(cfg.JWKSURL, cfg.HTTPClient, cfg.JWKSRefresh, cfg.JWKSMinRefresh, cfg.Now, cfg.Logger)
	if err != nil {
		return fmt.Errorf("jwks_url: %w", err)
	}
	r.ownsClient = owned
	v.remote = r
	return nil
}

// Close stops the background refresh of Config.JWKSURL; tokens are still
// verified with the keys fetched last. It is safe to call more than once
// and on a verifier without a JWKS URL.
func (v *Verifier) Close() error {
	if v.remote != nil {
		v.closeOnce.Do(v.remote.close)
	}
	return nil
}

// Algorithms lists the algorithms the configured keys admit.
func (v *Verifier) Algorithms() []string { return slices.Clone(v.algs) }

// BoundParameters lists the parameter names the token binds: callers may
// never supply values for them, whether or not a given token carries the
// claim.
func (v *Verifier) BoundParameters() []string {
	out := make([]string, 0, len(v.cfg.Parameters))
	for _, p := range v.cfg.Parameters {
		out = append(out, p.Name)
	}
	return out
}

// Authenticate verifies the value of an Authorization header
// ("Bearer <token>").
func (v *Verifier) Authenticate(header string) (*Principal, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return nil, &Error{Reason: ReasonMissing}
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, &Error{Reason: ReasonScheme, Err: errors.New("want \"Bearer <token>\"")}
	}
	return v.Verify(strings.TrimSpace(token))
}

// maxTokenBytes bounds the tokens parsed.
const maxTokenBytes = 16 << 10

// Verify checks a compact JWS token and returns its principal.
func (v *Verifier) Verify(token string) (*Principal, error) {
	if token == "" || len(token) > maxTokenBytes || strings.Count(token, ".") != 2 {
		return nil, &Error{Reason: ReasonMalformed, Err: errors.New("not a compact JWS")}
	}
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, v.keyFor)
	if err != nil {
		return nil, classify(err)
	}
	p := &Principal{}
	user, ok := claims[v.cfg.UserClaim]
	if s := claimString(user); ok && s != "" {
		p.User = s
	} else {
		return nil, &Error{Reason: ReasonUserClaim, Err: fmt.Errorf("claim %q is missing or not a non-empty string", v.cfg.UserClaim)}
	}
	if v.cfg.ModelsClaim != "" {
		models, err := stringList(claims[v.cfg.ModelsClaim])
		if err != nil {
			return nil, &Error{Reason: ReasonModelsClaim, Err: fmt.Errorf("claim %q: %w", v.cfg.ModelsClaim, err)}
		}
		p.Models = models
	}
	for _, cp := range v.cfg.Parameters {
		val, ok := claims[cp.Claim]
		if !ok || val == nil {
			continue
		}
		if p.Params == nil {
			p.Params = map[string]Param{}
		}
		p.Params[cp.Name] = Param{Value: plain(val), SendToModel: cp.SendToModel}
	}
	return p, nil
}

// keyFor picks the verification keys for a token: the JWKS key its kid
// names, else the keys without a kid (PEM files, the shared secret). Only
// keys admitting the token's algorithm are considered.
//
// A token with a crit header is refused: crit lists extensions the
// recipient must understand and process (RFC 7515 §4.1.11), and agentgate
// processes none. A kid found in no JWKS refreshes the JWKS URL's document
// (rate-limited) before the other keys are tried.
func (v *Verifier) keyFor(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, &Error{Reason: ReasonCritical, Err: errors.New("the crit header lists extensions this verifier does not process")}
	}
	alg := t.Method.Alg()
	kid, _ := t.Header["kid"].(string)
	var set jwt.VerificationKeySet
	if kid != "" {
		k, ok := v.jwksKey(kid)
		if !ok && v.remote != nil {
			v.remote.refreshForKid()
			k, ok = v.jwksKey(kid)
		}
		if ok {
			if !slices.Contains(k.algs, alg) {
				return nil, &Error{Reason: ReasonUnknownKey, Err: fmt.Errorf("key %q does not admit %s", kid, alg)}
			}
			return k.material, nil
		}
	}
	for _, k := range v.keys {
		if !k.fromJWKS && slices.Contains(k.algs, alg) {
			set.Keys = append(set.Keys, k.material)
		}
	}
	if len(set.Keys) == 0 {
		if kid != "" {
			return nil, &Error{Reason: ReasonUnknownKey, Err: fmt.Errorf("no key with kid %q", kid)}
		}
		return nil, &Error{Reason: ReasonUnknownKey, Err: fmt.Errorf("no key for %s without a kid", alg)}
	}
	if len(set.Keys) == 1 {
		return set.Keys[0], nil
	}
	return set, nil
}

// jwksKey finds the key a kid names in the JWKS file or the JWKS URL's
// document.
func (v *Verifier) jwksKey(kid string) (key, bool) {
	for _, k := range v.keys {
		if k.fromJWKS && k.kid == kid {
			return k, true
		}
	}
	if v.remote != nil {
		for _, k := range v.remote.current() {
			if k.kid == kid {
				return k, true
			}
		}
	}
	return key{}, false
}

// classify turns jwt's errors into an *Error with a reason.
func classify(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	r := ReasonInvalidToken
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		r = ReasonMalformed
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		r = ReasonSignature
		if strings.Contains(err.Error(), "signing method") {
			r = ReasonAlgorithm
		}
	case errors.Is(err, jwt.ErrTokenExpired):
		r = ReasonExpired
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		// jwt names the missing claim only in its message.
		switch msg := err.Error(); {
		case strings.Contains(msg, "exp claim"):
			r = ReasonExpired
		case strings.Contains(msg, "iss claim"):
			r = ReasonIssuer
		case strings.Contains(msg, "aud claim"):
			r = ReasonAudience
		default:
			r = ReasonClaims
		}
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		r = ReasonNotYetValid
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		r = ReasonIssuedAt
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		r = ReasonIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		r = ReasonAudience
	case errors.Is(err, jwt.ErrInvalidType), errors.Is(err, jwt.ErrTokenInvalidClaims):
		r = ReasonClaims
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		r = ReasonUnknownKey
		if strings.Contains(err.Error(), "signing method") {
			r = ReasonAlgorithm
		}
	}
	return &Error{Reason: r, Err: err}
}

// claimString reads a claim as a string; numbers are accepted in their
// decimal form (some issuers send numeric subjects).
func claimString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case interface{ String() string }: // json.Number
		return t.String()
	}
	return ""
}

// stringList reads a list-of-strings claim: a JSON array of strings, or a
// space-separated string (as OAuth scopes are sent). A missing claim is an
// empty list: the token may use nothing.
func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return []string{}, nil
	case string:
		return append([]string{}, strings.Fields(t)...), nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, errors.New("not a list of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, errors.New("not a list of strings")
}

// plain turns json.Number claim values into int64 or float64, recursively,
// so parameter values are ordinary JSON values.
func plain(v any) any {
	switch t := v.(type) {
	case interface {
		Int64() (int64, error)
		Float64() (float64, error)
		String() string
	}:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(t.String(), 64); err == nil {
			return f
		}
		return t.String()
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

// String describes the verifier without its keys.
func (v *Verifier) String() string {
	n := len(v.keys)
	if v.remote != nil {
		n += len(v.remote.current())
	}
	return fmt.Sprintf("auth.Verifier{keys: %d, algorithms: %s}", n, strings.Join(v.algs, ","))
}

// GoString is String, so %#v prints no key either.
func (v *Verifier) GoString() string { return v.String() }

// LogValue keeps the key material out of logs.
func (v *Verifier) LogValue() slog.Value { return slog.StringValue(v.String()) }
