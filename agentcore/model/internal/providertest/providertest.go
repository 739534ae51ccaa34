// Package providertest is what the tests of the model providers share: a
// fake upstream that records every request, a driver that checks
// model.LLM's contract, golden request files, and the tests every provider
// runs against its own wire format (see Harness): cancellation, upstream
// error statuses, network failures, timeouts, retries, broken streams and an
// agent tree end to end.
//
// Only the providers' tests import it.
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Main runs a provider package's tests (call it from TestMain) and fails
// the package if any test leaves a goroutine behind. The one ignored is
// started by an init function of a genai dependency.
func Main(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// Request is one request the fake upstream received.
type Request struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// Upstream is an httptest server that records every request before handing
// it to the test's handler (which can still read the body). It also stands
// in for a provider's sleep between retries: see Wait.
type Upstream struct {
	// Server is the fake upstream; closing it early makes every call a
	// network failure.
	Server *httptest.Server
	// Client is the HTTP client to give the provider; its idle connections
	// are closed with the server when the test ends.
	Client *http.Client

	mu    sync.Mutex
	reqs  []Request
	waits []time.Duration
}

// NewUpstream starts an Upstream serving h until the test ends.
func NewUpstream(t *testing.T, h http.HandlerFunc) *Upstream {
	t.Helper()
	u := &Upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.reqs = append(u.reqs, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	u.Client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		u.Client.CloseIdleConnections()
		u.Server.Close()
	})
	return u
}

// Requests returns the requests received so far, oldest first.
func (u *Upstream) Requests() []Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]Request(nil), u.reqs...)
}

// Bodies decodes the JSON body of every request up received so far, oldest
// first.
func Bodies[T any](t *testing.T, up *Upstream) []T {
	t.Helper()
	reqs := up.Requests()
	out := make([]T, len(reqs))
	for i, r := range reqs {
		if err := json.Unmarshal(r.Body, &out[i]); err != nil {
			t.Fatalf("request %d: %v\n%s", i, err, r.Body)
		}
	}
	return out
}

// Wait replaces a provider's sleep between retries: it records d and
// returns at once (ctx's error if ctx has ended).
func (u *Upstream) Wait(ctx context.Context, d time.Duration) error {
	u.mu.Lock()
	u.waits = append(u.waits, d)
	u.mu.Unlock()
	return ctx.Err()
}

// Waits returns the delays passed to Wait so far.
func (u *Upstream) Waits() []time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]time.Duration(nil), u.waits...)
}

// Result is everything one GenerateContent call produced.
type Result struct {
	Partials []*model.Response
	Final    *model.Response
	Err      error
}

// Run drains one call and checks the LLM contract: partials first, then at
// most one final response, and nothing after an error.
func Run(t *testing.T, ctx context.Context, llm model.LLM, req *model.Request, stream bool) Result {
	t.Helper()
	var res Result
	for r, err := range llm.GenerateContent(ctx, req, stream) {
		if res.Err != nil || res.Final != nil {
			t.Fatalf("item after the end of the sequence: %+v, %v", r, err)
		}
		switch {
		case err != nil:
			res.Err = err
		case r.Partial:
			res.Partials = append(res.Partials, r)
		default:
			res.Final = r
		}
	}
	if res.Err == nil && res.Final == nil {
		t.Fatalf("the sequence ended without a final response or an error")
	}
	return res
}

// PartialTexts returns the text of every part of the partials, thoughts
// prefixed "thought:", and checks that the final response is complete and
// not partial.
func (res Result) PartialTexts(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range res.Partials {
		for _, part := range p.Content.Parts {
			if part.Thought {
				out = append(out, "thought:"+part.Text)
			} else {
				out = append(out, part.Text)
			}
		}
	}
	if f := res.Final; !f.TurnComplete || f.Partial {
		t.Errorf("final response: TurnComplete=%v Partial=%v", f.TurnComplete, f.Partial)
	}
	return out
}

// LoadRequest reads testdata/<name>.json: {"contents": [...], "config": {...}}.
func LoadRequest(t *testing.T, name string) *model.Request {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Contents []*genai.Content             `json:"contents"`
		Config   *genai.GenerateContentConfig `json:"config"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &model.Request{Contents: in.Contents, Config: in.Config}
}

// CheckGolden compares got (JSON) with testdata/<name>.golden.json as
// decoded values; -update rewrites the file.
func CheckGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.json")
	var gotV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if *update {
		pretty, _ := json.MarshalIndent(gotV, "", "  ")
		if err := os.WriteFile(path, append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
	}
}

// Text joins the text parts of r (thoughts excluded).
func Text(r *model.Response) string {
	if r == nil || r.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range r.Content.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// AssertNoKey fails if key shows in any rendering of err or of the errors
// it wraps.
func AssertNoKey(t *testing.T, err error, key string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, key) {
				t.Errorf("the API key leaks in an error: %s", s)
			}
		}
	}
}

// AssertHidden fails if any of secrets shows when values are printed
// (%v, %+v, %#v, %s; values that format themselves, a fmt.Formatter or
// fmt.Stringer, also %q and %x), logged with slog or encoded as JSON.
func AssertHidden(t *testing.T, secrets []string, values ...any) {
	t.Helper()
	var logged bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logged, nil))
	var out strings.Builder
	for i, v := range values {
		// %s of a value that does not format itself prints it whole,
		// pointers followed, as %v at the top level does.
		fmt.Fprintf(&out, "%v %+v %#v %s\n", v, v, v, v)
		switch v.(type) {
		case fmt.Formatter, fmt.Stringer:
			fmt.Fprintf(&out, "%q %x\n", v, v)
		}
		logger.Info("value", fmt.Sprint("v", i), v)
		encoded, _ := json.Marshal(v)
		out.Write(encoded)
		out.WriteByte('\n')
	}
	out.Write(logged.Bytes())
	for _, s := range secrets {
		if strings.Contains(out.String(), s) {
			t.Errorf("%q leaks:\n%s", s, out.String())
		}
	}
}
