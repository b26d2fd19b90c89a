package taskstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// ErrBadPageToken is returned by List for a page token it did not issue. It
// matches a2a.ErrInvalidParams under errors.Is.
var ErrBadPageToken = a2a.NewError(a2a.TokenInvalidParams, "invalid page token")

// Memory is a Store in memory. Its zero value is not usable; call NewMemory.
// Records are copied in and out, so callers never share memory with the
// store. A context lookup costs the size of the context, not of the store.
type Memory struct {
	mu       sync.Mutex
	tasks    map[string]Record
	contexts map[string]*memContext
	now      func() time.Time
}

// memContext indexes one context: its tasks oldest first (by Created, then
// id) and the latest Updated time among them.
type memContext struct {
	taskIDs    []string
	lastActive time.Time
}

// NewMemory returns an empty in-memory store. now may be nil (time.Now).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{tasks: map[string]Record{}, contexts: map[string]*memContext{}, now: now}
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
	// The store keeps a copy; the caller keeps r.
	m.tasks[r.Task.ID] = clone(r)
	if id := r.Task.ContextID; id != "" {
		c := m.contexts[id]
		if c == nil {
			c = &memContext{}
			m.contexts[id] = c
		}
		// Tasks are mostly created in clock order: the insertion point is
		// almost always the end.
		i := len(c.taskIDs)
		for i > 0 && m.after(c.taskIDs[i-1], r) {
			i--
		}
		c.taskIDs = slices.Insert(c.taskIDs, i, r.Task.ID)
		if t.After(c.lastActive) {
			c.lastActive = t
		}
	}
	return r, nil
}

// after reports whether the stored task id sorts after r in a context's
// order (Created, then id).
func (m *Memory) after(id string, r Record) bool {
	o := m.tasks[id]
	if !o.Created.Equal(r.Created) {
		return o.Created.After(r.Created)
	}
	return o.Task.ID > r.Task.ID
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
	old, ok := m.tasks[id]
	if !ok {
		return Record{}, ErrNotFound
	}
	r := clone(old)
	if err := fn(&r); err != nil {
		return Record{}, err
	}
	if r.Task.ID != id {
		return Record{}, errors.New("taskstore: Update may not change the task id")
	}
	if r.Task.ContextID != old.Task.ContextID {
		return Record{}, errors.New("taskstore: Update may not change the context id")
	}
	r.Updated = m.now()
	m.tasks[id] = clone(r)
	if c := m.contexts[r.Task.ContextID]; c != nil && r.Updated.After(c.lastActive) {
		c.lastActive = r.Updated
	}
	return r, nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, f Filter) (Page, error) {
	m.mu.Lock()
	var all []Record
	if f.ContextID != "" {
		if c := m.contexts[f.ContextID]; c != nil {
			all = make([]Record, 0, len(c.taskIDs))
			for _, id := range c.taskIDs {
				all = append(all, m.tasks[id])
			}
		}
	} else {
		all = make([]Record, 0, len(m.tasks))
		for _, r := range m.tasks {
			all = append(all, r)
		}
	}
	m.mu.Unlock()
	p, err := page(all, f)
	if err != nil {
		return Page{}, err
	}
	// Only the records of the page are copied out.
	for i := range p.Records {
		p.Records[i] = clone(p.Records[i])
	}
	return p, nil
}

// Close implements Store; a Memory store keeps working after it.
func (m *Memory) Close() error { return nil }

// Context implements Store.
func (m *Memory) Context(_ context.Context, id string) (ContextInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.contexts[id]
	if id == "" || c == nil {
		return ContextInfo{}, ErrNotFound
	}
	return ContextInfo{ID: id, TaskIDs: slices.Clone(c.taskIDs), LastActive: c.lastActive}, nil
}
