package taskstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// ErrBadPageToken is returned by List for a page token it did not issue. It
// matches a2a.ErrInvalidParams under errors.Is.
var ErrBadPageToken = a2a.NewError(a2a.TokenInvalidParams, "invalid page token")

// Memory is a Store in memory. Its zero value is not usable; call NewMemory.
type Memory struct {
	mu    sync.Mutex
	tasks map[string]Record
	now   func() time.Time
}

// NewMemory returns an empty in-memory store. now may be nil (time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{tasks: map[string]Record{}, now: now}
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, r Record) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.tasks[r.Task.ID]; ok {
		return clone(old), ErrExists
	}
	t := m.now()
	r.Created, r.Updated = t, t
	r = clone(r)
	m.tasks[r.Task.ID] = r
	return clone(r), nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.tasks[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	return clone(r), nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, id string, fn func(*Record) error) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.tasks[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	r = clone(r)
	if err := fn(&r); err != nil {
		return Record{}, err
	}
	if r.Task.ID != id {
		return Record{}, errors.New("taskstore: Update may not change the task id")
	}
	if r.Task.ContextID != m.tasks[id].Task.ContextID {
		return Record{}, errors.New("taskstore: Update may not change the context id")
	}
	r.Updated = m.now()
	m.tasks[id] = clone(r)
	return r, nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, f Filter) (Page, error) {
	m.mu.Lock()
	all := make([]Record, 0, len(m.tasks))
	for _, r := range m.tasks {
		all = append(all, clone(r))
	}
	m.mu.Unlock()
	return page(all, f)
}

// Close implements Store; a Memory store keeps working after it.
func (m *Memory) Close() error { return nil }

// Context implements Store.
func (m *Memory) Context(_ context.Context, id string) (ContextInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var in []Record
	for _, r := range m.tasks {
		if r.Task.ContextID == id {
			in = append(in, r)
		}
	}
	return contextOf(id, in)
}
