package taskstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// ErrBadPageToken is returned by List for a page token it did not issue. It
// matches a2a.ErrInvalidParams under errors.Is.
var ErrBadPageToken = a2a.NewError(a2a.TokenInvalidParams, "invalid page token")

// Memory is a Store in memory. Its zero value is not usable; call NewMemory.
// It keeps each task in its wire form, so callers never share memory with
// the store, a large store costs the garbage collector little, and a task
// must encode as JSON as it must for any store. Encoding and decoding
// happen outside the store's lock, and updates of different tasks do not
// wait for each other. A context lookup costs the size of the context, not
// of the store.
type Memory struct {
	mu       sync.Mutex // guards tasks, contexts, finished and every memTask.rec
	tasks    map[string]*memTask
	contexts map[string]*memContext
	now      func() time.Time
	// keepFinished is how long a finished task is kept (0: forever);
	// finished lists the tasks that reached a final state, in that order.
	keepFinished time.Duration
	finished     []finishedTask
}

// finishedTask is a task that reached a final state at a time.
type finishedTask struct {
	id string
	at time.Time
}

// MemoryOption configures a Memory store.
type MemoryOption func(*Memory)

// KeepFinishedFor drops a task once it has been in a final state
// (COMPLETED, FAILED, CANCELED, REJECTED) for longer than d, so that the
// memory of a long-running agent follows its recent work, not its whole
// history. A dropped task is unknown from then on: GetTask answers
// task_not_found, and a message naming its id starts a new task, so d must
// be well beyond the requesters' retry window (a few minutes for the
// default MQTT profile). Zero or less keeps tasks forever, as NewMemory does
// without options.
func KeepFinishedFor(d time.Duration) MemoryOption {
	return func(m *Memory) { m.keepFinished = max(d, 0) }
}

// memTask is one stored task. rec is never changed in place: an update
// replaces it, so a reader may decode it after reading it under Memory.mu.
type memTask struct {
	update sync.Mutex // serialises the updates of this task
	rec    packed
}

// memContext indexes one context: its tasks oldest first (by Created, then
// id) and the latest Updated time among them.
type memContext struct {
	taskIDs    []string
	lastActive time.Time
}

// NewMemory returns an empty in-memory store. now may be nil (time.Now).
func NewMemory(now func() time.Time, opts ...MemoryOption) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{tasks: map[string]*memTask{}, contexts: map[string]*memContext{}, now: now}
	for _, o := range opts {
		o(m)
	}
	return m
}

// noteFinished records that a task reached a final state at t, and drops
// the tasks finished for longer than the retention. Called with m.mu held.
func (m *Memory) noteFinished(was, now packed) {
	if m.keepFinished <= 0 {
		return
	}
	if final(now.state) && !final(was.state) {
		m.finished = append(m.finished, finishedTask{id: now.id, at: now.updated})
	}
	m.expire(now.updated)
}

// expire drops the tasks finished before now minus the retention. Called
// with m.mu held.
func (m *Memory) expire(now time.Time) {
	cut := now.Add(-m.keepFinished)
	n := 0
	for n < len(m.finished) && m.finished[n].at.Before(cut) {
		// A store does not enforce the lifecycle: drop only a task that
		// is still final and has not changed since.
		if t, ok := m.tasks[m.finished[n].id]; ok && final(t.rec.state) && t.rec.updated.Before(cut) {
			m.drop(m.finished[n].id)
		}
		n++
	}
	if n > 0 {
		clear(m.finished[:n])
		m.finished = m.finished[n:]
	}
}

// drop removes a task and its place in its context. Called with m.mu held.
func (m *Memory) drop(id string) {
	t, ok := m.tasks[id]
	if !ok {
		return
	}
	delete(m.tasks, id)
	c := m.contexts[t.rec.contextID]
	if c == nil {
		return
	}
	if i := slices.Index(c.taskIDs, id); i >= 0 {
		c.taskIDs = slices.Delete(c.taskIDs, i, i+1)
	}
	if len(c.taskIDs) == 0 {
		delete(m.contexts, t.rec.contextID)
	}
}

// final reports whether a task state is terminal.
func final(s a2a.TaskState) bool {
	st, err := tasklife.StateOf(s)
	return err == nil && st.Terminal()
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, r Record) (Record, error) {
	t := m.now()
	r.Created, r.Updated = t, t
	// The store keeps an encoded copy; the caller keeps r.
	p, err := pack(r)
	if err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	if old, ok := m.tasks[r.Task.ID]; ok {
		rec := old.rec
		m.mu.Unlock()
		out, err := rec.unpack()
		if err != nil {
			return Record{}, err
		}
		return out, ErrExists
	}
	m.tasks[r.Task.ID] = &memTask{rec: p}
	m.noteFinished(packed{}, p)
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
	m.mu.Unlock()
	return r, nil
}

// after reports whether the stored task id sorts after r in a context's
// order (Created, then id). Called with m.mu held.
func (m *Memory) after(id string, r Record) bool {
	o := &m.tasks[id].rec
	if !o.created.Equal(r.Created) {
		return o.created.After(r.Created)
	}
	return o.id > r.Task.ID
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	t, ok := m.tasks[id]
	var p packed
	if ok {
		p = t.rec
	}
	m.mu.Unlock()
	if !ok {
		return Record{}, ErrNotFound
	}
	return p.unpack()
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, id string, fn func(*Record) error) (Record, error) {
	var r Record
	err := m.change(id, func(old packed) (packed, error) {
		var err error
		if r, err = old.unpack(); err != nil {
			return packed{}, err
		}
		if err := fn(&r); err != nil {
			return packed{}, err
		}
		if r.Task.ID != id {
			return packed{}, errors.New("taskstore: Update may not change the task id")
		}
		if r.Task.ContextID != old.contextID {
			return packed{}, errors.New("taskstore: Update may not change the context id")
		}
		r.Updated = m.now()
		return pack(r)
	})
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// ReplaceTask implements Replacer: the new task is encoded, the old one is
// not decoded.
func (m *Memory) ReplaceTask(_ context.Context, task a2a.Task) error {
	return m.change(task.ID, func(old packed) (packed, error) {
		if task.ContextID != old.contextID {
			return packed{}, errors.New("taskstore: ReplaceTask may not change the context id")
		}
		p, err := pack(Record{Task: task, Owner: old.owner, Created: old.created, Updated: m.now()})
		p.messageIDs = old.messageIDs // never changed in place
		return p, err
	})
}

// change replaces the stored record of a task with what fn makes of it.
// Changes of one task are serialised; fn runs outside the store's lock.
func (m *Memory) change(id string, fn func(old packed) (packed, error)) error {
	m.mu.Lock()
	t, ok := m.tasks[id]
	m.mu.Unlock()
	if !ok {
		return ErrNotFound
	}
	t.update.Lock()
	defer t.update.Unlock()
	m.mu.Lock()
	old := t.rec
	m.mu.Unlock()
	p, err := fn(old)
	if err != nil {
		return err
	}
	m.mu.Lock()
	t.rec = p
	if c := m.contexts[p.contextID]; c != nil && p.updated.After(c.lastActive) {
		c.lastActive = p.updated
	}
	m.noteFinished(old, p)
	m.mu.Unlock()
	return nil
}

// List implements Store. Tasks are filtered and sorted by what the store
// keeps beside them; only the page is decoded.
func (m *Memory) List(_ context.Context, f Filter) (Page, error) {
	m.mu.Lock()
	var heads []Record
	byID := map[string]packed{}
	add := func(t *memTask) {
		heads = append(heads, t.rec.head())
		byID[t.rec.id] = t.rec
	}
	if f.ContextID != "" {
		if c := m.contexts[f.ContextID]; c != nil {
			for _, id := range c.taskIDs {
				add(m.tasks[id])
			}
		}
	} else {
		for _, t := range m.tasks {
			add(t)
		}
	}
	m.mu.Unlock()
	pg, err := page(heads, f)
	if err != nil {
		return Page{}, err
	}
	for i := range pg.Records {
		p := byID[pg.Records[i].Task.ID]
		if pg.Records[i], err = p.unpack(); err != nil {
			return Page{}, err
		}
	}
	return pg, nil
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

var (
	_ Store    = (*Memory)(nil)
	_ Replacer = (*Memory)(nil)
	_ Store    = (*Bolt)(nil)
)
