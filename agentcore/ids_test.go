package agentcore_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/agentcore"
)

func TestParseInvocationID(t *testing.T) {
	for _, tc := range []struct {
		id        string
		wantRoot  string
		wantChain []string
		wantOK    bool
	}{
		{"e-1", "e-1", nil, true},
		{"e-1.sub.picker", "e-1", []string{"picker"}, true},
		{"e-1.sub.outer.sub.inner", "e-1", []string{"outer", "inner"}, true},
		{"e-1.subtle", "e-1.subtle", nil, true},
		{agentcore.SubInvocationID(agentcore.SubInvocationID("e-9", "a_b"), "c-d"), "e-9", []string{"a_b", "c-d"}, true},
		// Malformed: no id SubInvocationID builds looks like these.
		{"", "", nil, false},
		{".sub.picker", "", nil, false},
		{"e-1.sub.", "", nil, false},
		{"e-1.sub.outer.sub.", "", nil, false},
		{"e-1.sub.a.b", "", nil, false},
		{"e-1.sub.a..sub.b", "", nil, false},
		{"e-1.sub.9lives", "", nil, false},
		{"e-1.sub.has space", "", nil, false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			root, chain, ok := agentcore.ParseInvocationID(tc.id)
			if root != tc.wantRoot || ok != tc.wantOK {
				t.Errorf("ParseInvocationID(%q) = %q, %v, %v; want %q, %v, %v", tc.id, root, chain, ok, tc.wantRoot, tc.wantChain, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantChain, chain); diff != "" {
				t.Errorf("chain (-want +got):\n%s", diff)
			}
		})
	}
}

// The ids the runtime gives sub-conversations are the ones the parser
// reads back (see TestOpenCallsThroughAgentTools for one from a real run).
func TestSubInvocationIDRoundTrip(t *testing.T) {
	id := "e-1"
	chain := []string{"outer", "middle", "inner"}
	for _, a := range chain {
		id = agentcore.SubInvocationID(id, a)
	}
	if id != "e-1.sub.outer.sub.middle.sub.inner" {
		t.Errorf("SubInvocationID nests as %q", id)
	}
	root, got, ok := agentcore.ParseInvocationID(id)
	if !ok || root != "e-1" {
		t.Errorf("ParseInvocationID(%q) = %q, %v", id, root, ok)
	}
	if diff := cmp.Diff(chain, got); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
}
