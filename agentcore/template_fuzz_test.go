package agentcore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/sessions"
)

// FuzzInjectState templates any instruction against a fixed state and
// artifact store: no panic; a template without "{" comes back unchanged;
// a failure is a missing key or artifact, never anything else; and the
// output holds no placeholder of a present key.
func FuzzInjectState(f *testing.F) {
	for _, s := range []string{"Hello {name}.", "{name?} {nobody?}", "{app:brand} {user:tier} {temp:mood}", `{"a": 1} {1, 2} { }`,
		"{{name}}", "{artifact.notes} {artifact.none?}", "{artifact.}", "{nobody}", "{ name }", "{name?}}", "{{{", "}}}{", "{temp:}",
		"{artifact.blob}", "plain text"} {
		f.Add(s)
	}
	ctx := context.Background()
	store := sessions.NewMemoryService(sessions.MemoryConfig{})
	sess, err := store.Create(ctx, sessions.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1",
		State: map[string]any{"name": "Ada", "count": 3, "prefs": map[string]any{"lang": "go"}, "app:brand": "Acme", "user:tier": "gold"}})
	if err != nil {
		f.Fatal(err)
	}
	arts := artifact.NewInMemory()
	if _, err := arts.Save(ctx, artifact.Key{App: "app", User: "u1", Session: "s1", Name: "notes"}, &genai.Part{Text: "milk"}); err != nil {
		f.Fatal(err)
	}
	live := &liveSession{}
	live.init(sess, new(writesOf(store)))
	inv := &Invocation{sh: &invShared{svc: &services{sessions: store, artifacts: arts, appName: "app"}, sess: live,
		temp: map[string]any{"temp:mood": "calm"}}}
	f.Fuzz(func(t *testing.T, tmpl string) {
		out, err := InjectState(ctx, newCallbackContext(inv), tmpl)
		if !strings.Contains(tmpl, "{") {
			if err != nil || out != tmpl {
				t.Fatalf("a template without braces changed: %q -> %q, %v", tmpl, out, err)
			}
			return
		}
		if err != nil {
			var missing *MissingStateError
			if !errors.As(err, &missing) && !strings.Contains(err.Error(), "instruction references artifact") {
				t.Fatalf("InjectState(%q): unexpected error %v", tmpl, err)
			}
			return
		}
		for _, p := range []string{"{name}", "{app:brand}", "{user:tier}", "{temp:mood}"} {
			if tmpl == p && strings.Contains(out, p) {
				t.Fatalf("InjectState(%q) kept the placeholder: %q", tmpl, out)
			}
		}
	})
}
