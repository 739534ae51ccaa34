package sessions_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate/agentgate/sessions"
)

func TestStorable(t *testing.T) {
	ids := func(evs []*sessions.Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	event := func(id string, partial bool) *sessions.Event {
		return &sessions.Event{ID: id, Partial: partial,
			Actions: sessions.EventActions{StateDelta: map[string]any{"k": 1, "temp:t": 2}}}
	}

	t.Run("every event kept", func(t *testing.T) {
		evs := []*sessions.Event{event("a", false), event("b", false)}
		got, err := sessions.Storable(evs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a", "b"}, ids(got)); diff != "" {
			t.Errorf("ids (-want +got):\n%s", diff)
		}
		for _, ev := range got {
			if diff := cmp.Diff(map[string]any{"k": 1}, ev.Actions.StateDelta); diff != "" {
				t.Errorf("%s stateDelta (-want +got):\n%s", ev.ID, diff)
			}
		}
	})
	t.Run("partial events left out of a new slice", func(t *testing.T) {
		evs := []*sessions.Event{event("a", true), event("b", false), event("c", true), event("d", false)}
		got, err := sessions.Storable(evs)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"b", "d"}, ids(got)); diff != "" {
			t.Errorf("ids (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a", "b", "c", "d"}, ids(evs)); diff != "" {
			t.Errorf("the caller's slice changed (-want +got):\n%s", diff)
		}
	})
	t.Run("nil event", func(t *testing.T) {
		if _, err := sessions.Storable([]*sessions.Event{event("a", false), nil}); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("err = %v, want ErrInvalid", err)
		}
	})
}
