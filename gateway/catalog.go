package gateway

import (
	"errors"
	"fmt"

	"github.com/agentgate/agentgate/agentcore"
	"github.com/agentgate/agentgate/agentcore/spec"
)

// snapshot is one generation of what the server serves: the catalog and a
// runner per virtual model. It is never changed once stored; Reload stores
// a new one, and a request keeps the generation it looked up.
type snapshot struct {
	catalog *spec.Catalog
	apps    map[string]*app
}

// newSnapshot builds the runners of a catalog.
func (s *Server) newSnapshot(cat *spec.Catalog) (*snapshot, error) {
	if cat == nil {
		return nil, errors.New("gateway: no catalog")
	}
	snap := &snapshot{catalog: cat, apps: make(map[string]*app, len(cat.Apps))}
	for _, a := range cat.Apps {
		var comp *agentcore.Compaction
		if a.Compaction != nil {
			c := *a.Compaction
			c.Locker = s.cfg.Locker
			comp = &c
		}
		r, err := agentcore.NewRunner(agentcore.RunnerConfig{AppName: a.ID, Agent: a.Root, Sessions: s.cfg.Sessions,
			Artifacts: s.cfg.Artifacts, Memory: s.cfg.Memory, RouteToRoot: a.RouteToRoot, Now: s.cfg.Now, NewID: s.cfg.NewID,
			Observer: s.cfg.Observer, Tracer: s.tracer(), Logger: s.log, Compaction: comp, Background: &s.background})
		if err != nil {
			return nil, fmt.Errorf("gateway: model %s: %w", a.ID, err)
		}
		names := map[string]string{}
		for shown, act := range a.ClientActions {
			names[act.Name] = shown
		}
		snap.apps[a.ID] = &app{App: a, runner: r, clientNames: names, encoderTools: encoderTools(names)}
	}
	return snap, nil
}

// Reload serves cat from now on. Requests that start after it returns use
// the new trees; runs already going finish on the trees they started with
// (a paused invocation resumes on the new tree, by agent name). A catalog
// whose runners cannot be built is refused and the current one stays.
func (s *Server) Reload(cat *spec.Catalog) error {
	snap, err := s.newSnapshot(cat)
	if err != nil {
		return err
	}
	s.snap.Store(snap)
	return nil
}

// appByID returns the virtual model with that id in the current catalog.
func (s *Server) appByID(id string) (*app, bool) {
	a, ok := s.snap.Load().apps[id]
	return a, ok
}

// catalog is the catalog served now.
func (s *Server) catalog() *spec.Catalog { return s.snap.Load().catalog }
