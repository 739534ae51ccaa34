package gateway_test

import (
	"net/http"
	"testing"

	"github.com/agentgate/agentgate/agentcore/spec"
)

// Reload swaps the served catalog for requests that start afterwards; a
// catalog that cannot be served is refused and the old one stays.
func TestReloadSwapsTheCatalog(t *testing.T) {
	p := newPeer(t, remoteSet(), nil)
	models := func() []any {
		resp, err := http.Get(p.srv.URL + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ids []any
		for _, m := range decode(t, resp.Body)["data"].([]any) {
			ids = append(ids, m.(map[string]any)["id"])
		}
		return ids
	}
	if got := models(); len(got) != 4 {
		t.Fatalf("models before %v", got)
	}
	if err := p.gw.Reload(nil); err == nil {
		t.Error("a nil catalog was accepted")
	}
	set := remoteSet()
	set.Models = []spec.VirtualModel{{ID: "only", Agent: "analyst"}}
	p.reload(set, nil)
	if got := models(); len(got) != 1 || got[0] != "only" {
		t.Errorf("models after %v", got)
	}
	body, _ := p.chat("only", "", user("hi"))
	if c, _ := choice(t, body); c != "analysis of [hi]" {
		t.Errorf("the new model answered %q", c)
	}
	resp := p.post(t.Context(), "/v1/chat/completions", `{"model": "analyst", "messages": [{"role": "user", "content": "x"}]}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a model the reload removed: status %d", resp.StatusCode)
	}
}
