// Package artifact defines versioned, named binary or text artifacts attached
// to a session, and an in-memory implementation.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/genai"
)

// ErrNotFound is returned when an artifact or version does not exist.
var ErrNotFound = errors.New("artifact: not found")

// Key names an artifact of a session.
type Key struct {
	App, User, Session, Name string
}

// Service stores artifact versions. Versions start at 1.
type Service interface {
	// Save stores a new version and returns its number.
	Save(ctx context.Context, k Key, part *genai.Part) (int64, error)
	// Load returns a version; 0 means the latest.
	Load(ctx context.Context, k Key, version int64) (*genai.Part, error)
	// List returns the names of a session's artifacts, sorted.
	List(ctx context.Context, app, user, session string) ([]string, error)
	// Versions returns the version numbers of an artifact, ascending.
	Versions(ctx context.Context, k Key) ([]int64, error)
	// Delete removes every version of an artifact.
	Delete(ctx context.Context, k Key) error
}

// InMemory is a process-local Service, safe for concurrent use.
type InMemory struct {
	mu   sync.Mutex
	data map[Key][]*genai.Part
}

var _ Service = (*InMemory)(nil)

// NewInMemory returns an empty store.
func NewInMemory() *InMemory { return &InMemory{data: map[Key][]*genai.Part{}} }

// Save implements Service.
func (m *InMemory) Save(ctx context.Context, k Key, part *genai.Part) (int64, error) {
	if k.Name == "" || part == nil {
		return 0, fmt.Errorf("artifact: name and part are required")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[k] = append(m.data[k], part)
	return int64(len(m.data[k])), nil
}

// Load implements Service.
func (m *InMemory) Load(ctx context.Context, k Key, version int64) (*genai.Part, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.data[k]
	if len(vs) == 0 || version < 0 || version > int64(len(vs)) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, k.Name)
	}
	if version == 0 {
		version = int64(len(vs))
	}
	return vs[version-1], nil
}

// List implements Service.
func (m *InMemory) List(ctx context.Context, app, user, session string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.data {
		if k.App == app && k.User == user && k.Session == session {
			out = append(out, k.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Versions implements Service.
func (m *InMemory) Versions(ctx context.Context, k Key) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.data[k])
	if n == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, k.Name)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out, nil
}

// Delete implements Service.
func (m *InMemory) Delete(ctx context.Context, k Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.data[k]) == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, k.Name)
	}
	delete(m.data, k)
	return nil
}
