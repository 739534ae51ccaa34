package agentcore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/artifact"
	"github.com/agentgate/agentgate/agentcore/model"
)

// withArtifacts gives the runner an artifact store.
func withArtifacts(store artifact.Service) harnessOpt {
	return func(c *agentcore.RunnerConfig) { c.Artifacts = store }
}

// seedArtifacts stores named parts for session s1 of u1.
func seedArtifacts(t *testing.T, parts map[string]*genai.Part) *artifact.InMemory {
	t.Helper()
	store := artifact.NewInMemory()
	for name, p := range parts {
		if _, err := store.Save(context.Background(), artifact.Key{App: "app", User: "u1", Session: "s1", Name: name}, p); err != nil {
			t.Fatal(err)
		}
	}
	return store
}

func TestInstructionTemplating(t *testing.T) {
	state := map[string]any{
		"name": "Ada", "count": 3, "prefs": map[string]any{"lang": "go"},
		"app:brand": "Acme", "user:tier": "gold", "temp:mood": "calm",
	}
	store := seedArtifacts(t, map[string]*genai.Part{
		"notes": {Text: "remember the milk"},
		"blob":  {InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{1, 2}}},
	})
	for _, tc := range []struct {
		name        string
		instruction string
		want        string
		wantMissing string // the key a MissingStateError names
		wantErr     bool
	}{
		{name: "session key", instruction: "Hello {name}.", want: "Hello Ada."},
		{name: "non-string values as JSON", instruction: "{count} {prefs}", want: `3 {"lang":"go"}`},
		{name: "missing key fails", instruction: "Hello {nobody}.", wantMissing: "nobody"},
		{name: "optional missing key", instruction: "Hello {nobody?}.", want: "Hello ."},
		{name: "optional present key", instruction: "Hello {name?}.", want: "Hello Ada."},
		{name: "app scope", instruction: "Brand {app:brand}", want: "Brand Acme"},
		{name: "user scope", instruction: "Tier {user:tier}", want: "Tier gold"},
		{name: "user scope optional missing", instruction: "Tier [{user:nothing?}]", want: "Tier []"},
		{name: "temp scope", instruction: "Mood {temp:mood}", want: "Mood calm"},
		{name: "missing temp key fails", instruction: "{temp:other}", wantMissing: "temp:other"},
		{name: "artifact text", instruction: "Notes: {artifact.notes}", want: "Notes: remember the milk"},
		{name: "artifact non-text as JSON", instruction: "{artifact.blob}", want: `{"inlineData":{"data":"AQI=","mimeType":"image/png"}}`},
		{name: "optional missing artifact", instruction: "Notes: [{artifact.gone?}]", want: "Notes: []"},
		{name: "missing artifact fails", instruction: "{artifact.gone}", wantErr: true},
		{name: "JSON object untouched", instruction: `Reply as {"a": 1} please`, want: `Reply as {"a": 1} please`},
		{name: "set literal untouched", instruction: "The set {1, 2} and {name}", want: "The set {1, 2} and Ada"},
		{name: "blank braces untouched", instruction: "Empty { } stays", want: "Empty { } stays"},
		{name: "unknown prefix untouched", instruction: "{other:key} and {a.b}", want: "{other:key} and {a.b}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(textResp("ok"))
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: tc.instruction}), withArtifacts(store))
			_, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s1", NewMessage: userText("hi"), StateDelta: state})
			var missing *agentcore.MissingStateError
			switch {
			case tc.wantMissing != "":
				if !errors.As(err, &missing) || missing.Key != tc.wantMissing {
					t.Fatalf("err = %v, want a MissingStateError for %q", err, tc.wantMissing)
				}
				if n := len(m.requests()); n != 0 {
					t.Errorf("the model was called %d times after a templating error", n)
				}
				return
			case tc.wantErr:
				if err == nil {
					t.Fatal("run succeeded, want a templating error")
				}
				return
			case err != nil:
				t.Fatalf("run: %v", err)
			}
			if diff := cmp.Diff(tc.want, sysText(m.lastRequest(t))); diff != "" {
				t.Errorf("system instruction (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArtifactPlaceholderWithoutService(t *testing.T) {
	for _, tc := range []struct {
		instruction string
		want        string
		wantErr     bool
	}{
		{instruction: "[{artifact.notes?}]", want: "[]"},
		{instruction: "{artifact.notes}", wantErr: true},
	} {
		t.Run(tc.instruction, func(t *testing.T) {
			m := replies(textResp("ok"))
			h := newHarness(t, mustLlm(t, agentcore.LlmConfig{Name: "helper", Model: m, Instruction: tc.instruction}))
			_, err := h.run("s1", userText("hi"), agentcore.RunConfig{})
			if tc.wantErr {
				if err == nil {
					t.Fatal("run succeeded without an artifact service")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, sysText(m.lastRequest(t))); diff != "" {
				t.Errorf("system instruction (-want +got):\n%s", diff)
			}
		})
	}
}

// The instruction provider and the static instruction are used verbatim;
// the global instruction is templated and prefixed with a blank line.
func TestInstructionKinds(t *testing.T) {
	provider := func(_ context.Context, rc *agentcore.ReadonlyContext) (string, error) {
		v, _ := rc.State("name")
		return "Provided for " + v.(string) + " {name} {missing}", nil
	}
	for _, tc := range []struct {
		name       string
		cfg        agentcore.LlmConfig
		wantSystem string
		wantTail   string // the last content, where the dynamic part rides with a static instruction
	}{
		{name: "global prefixed with a blank line",
			cfg:        agentcore.LlmConfig{GlobalInstruction: "Be kind to {name}.", Instruction: "Answer {name}."},
			wantSystem: "Be kind to Ada.\n\nAnswer Ada."},
		{name: "global alone", cfg: agentcore.LlmConfig{GlobalInstruction: "Only {name}."}, wantSystem: "Only Ada."},
		{name: "provider never templated", cfg: agentcore.LlmConfig{InstructionProvider: provider, Instruction: "ignored {nobody}"},
			wantSystem: "Provided for Ada {name} {missing}"},
		{name: "static never templated; dynamic rides in contents",
			cfg:        agentcore.LlmConfig{StaticInstruction: "Static {name} {missing}", Instruction: "Dynamic {name}."},
			wantSystem: "Static {name} {missing}", wantTail: "user: Dynamic Ada."},
		{name: "static with global and provider",
			cfg:        agentcore.LlmConfig{StaticInstruction: "S", GlobalInstruction: "G {name}", InstructionProvider: provider},
			wantSystem: "S", wantTail: "user: G Ada\n\nProvided for Ada {name} {missing}"},
		{name: "static alone", cfg: agentcore.LlmConfig{StaticInstruction: "S"}, wantSystem: "S", wantTail: "user: hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := replies(textResp("ok"))
			cfg := tc.cfg
			cfg.Name, cfg.Model = "helper", m
			h := newHarness(t, mustLlm(t, cfg))
			if _, err := h.runReq(context.Background(), agentcore.RunRequest{SessionID: "s1", NewMessage: userText("hi"),
				StateDelta: map[string]any{"name": "Ada"}}); err != nil {
				t.Fatal(err)
			}
			req := m.lastRequest(t)
			if diff := cmp.Diff(tc.wantSystem, sysText(req)); diff != "" {
				t.Errorf("system instruction (-want +got):\n%s", diff)
			}
			if tc.wantTail != "" {
				lines := render(req.Contents)
				if diff := cmp.Diff(tc.wantTail, lines[len(lines)-1]); diff != "" {
					t.Errorf("last content (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// A root's global instruction applies to the agents of its tree that have
// none of their own.
func TestGlobalInstructionInheritedFromRoot(t *testing.T) {
	for _, tc := range []struct {
		name, childGlobal, want string
	}{
		{"inherited", "", "Global rules.\n\nChild instruction."},
		{"own global wins", "Own rules.", "Own rules.\n\nChild instruction."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := perAgent(map[string][]*model.Response{"root": {transferResp("t1", "child")}, "child": {textResp("hi")}})
			child := mustLlm(t, agentcore.LlmConfig{Name: "child", Model: m, GlobalInstruction: tc.childGlobal, Instruction: "Child instruction.", DisableTransfer: true})
			root := mustLlm(t, agentcore.LlmConfig{Name: "root", Model: m, GlobalInstruction: "Global rules.", Instruction: "Root instruction.",
				SubAgents: []agentcore.Agent{child}})
			newHarness(t, root).mustRun("s1", userText("hi"), agentcore.RunConfig{})
			reqs := m.requestsBy("child")
			if len(reqs) != 1 {
				t.Fatalf("child made %d requests, want 1", len(reqs))
			}
			if diff := cmp.Diff(tc.want, sysText(reqs[0])); diff != "" {
				t.Errorf("child system instruction (-want +got):\n%s", diff)
			}
		})
	}
}
