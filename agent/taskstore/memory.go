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
// must encode as JSON as it must for any store; a task's push-notification
// configs and delivery reports are kept beside it as copies, and a report
// is set without decoding the task (SetPushDelivery). Encoding and decoding
// happen outside the store's lock, and updates of different tasks do not
// wait for each other. A context lookup costs the size of the context, not
// of the store. It tells WatchDrops of the tasks it drops.
//
// It is bounded (MaxTasks, MaxBytes: finished tasks are evicted oldest
// first, and new tasks refused with ErrFull when none is left) and drops
// tasks left waiting for input (ExpireInterruptedAfter) and, with
// KeepFinishedFor, tasks finished long ago. Expiry happens as the store is
// used, against its clock: nothing runs in the background.
type Memory struct {
	mu       sync.Mutex // guards every field below and every memTask.rec, size and elem
	tasks    map[string]*memTask
	contexts map[string]memContext
	now      func() time.Time
	cfg      config
	// bytes is the sum of the tasks' sizes, finishedBytes that of the
	// finished ones.
	bytes, finishedBytes int64
	// finished holds the tasks in a final state, waiting those waiting
	// for input or authentication, each in the order of their last change.
	finished, waiting taskList
	// expired remembers when the most recent expired tasks and contexts
	// expired; expiredOrder lists them oldest first.
	expired      map[expiredID]time.Time
	expiredOrder []expiry
	// watch are the functions told of the tasks the store drops
	// (WatchDrops); dropped holds those dropped under the lock, told once
	// it is released (unlock).
	watch   Watchers
	dropped []Dropped
}

// unlock releases m.mu, then tells the watchers of the tasks dropped while
// it was held.
func (m *Memory) unlock() {
	ds := m.dropped
	m.dropped = nil
	m.mu.Unlock()
	m.watch.Tell(ds)
}

// WatchDrops implements DropWatcher.
func (m *Memory) WatchDrops(fn func(Dropped)) (stop func()) { return m.watch.Add(fn) }

// expiry is a task or context that expired at a time.
type expiry struct {
	key expiredID
	at  time.Time
}

// expiredID is an expired task (kind 't') or context ('c') in
// Memory.expired.
type expiredID struct {
	kind byte
	id   string
}

// expiredKey is the key of an expired task (kind 't') or context ('c') in
// a Bolt store's bucketExpired.
func expiredKey(kind byte, id string) string { return string(kind) + id }

// memTask is one stored task. rec is never changed in place: an update
// replaces it, so a reader may decode it after reading it under Memory.mu.
type memTask struct {
	update sync.Mutex // serialises the updates of this task
	rec    packed
	size   int64
	// in is the list the task is in, Memory.finished or Memory.waiting
	// (nil in neither); prev and next are its neighbours there.
	in         *taskList
	prev, next *memTask
	// firstOf holds the task's id as the list of the context it created
	// (memContext.taskIDs), until a second task joins the context: that
	// list, full, is then copied. While it is there the context holds
	// this task alone, so the list goes with the task.
	firstOf [1]string
}

// taskList is a list of tasks linked through the tasks themselves
// (memTask.prev, next): filing a task allocates nothing.
type taskList struct {
	front, back *memTask
	n           int
}

// Len returns how many tasks the list holds.
func (l *taskList) Len() int { return l.n }

// pushBack files t, in no list, at the end of l.
func (l *taskList) pushBack(t *memTask) {
	t.in, t.prev, t.next = l, l.back, nil
	if l.back != nil {
		l.back.next = t
	} else {
		l.front = t
	}
	l.back = t
	l.n++
}

// remove takes t out of l, which holds it.
func (l *taskList) remove(t *memTask) {
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		l.front = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		l.back = t.prev
	}
	t.in, t.prev, t.next = nil, nil, nil
	l.n--
}

// memContext indexes one context: its tasks oldest first (by Created, then
// id) and the latest Updated time among them.
type memContext struct {
	taskIDs    []string
	lastActive time.Time
}

// NewMemory returns an empty in-memory store. now may be nil (time.Now).
// Without options it keeps at most DefaultMaxTasks tasks and
// DefaultMaxBytes bytes, and expires tasks left waiting for input after
// DefaultIdleExpiry.
func NewMemory(now func() time.Time, opts ...Option) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{tasks: map[string]*memTask{}, contexts: map[string]memContext{}, now: now,
		cfg: newConfig(opts), expired: map[expiredID]time.Time{}}
}

// place files a task in the list of its state, at the end (its last
// change is the latest). Called with m.mu held, the task out of any list.
func (m *Memory) place(t *memTask) {
	switch {
	case final(t.rec.state):
		m.finished.pushBack(t)
		m.finishedBytes += t.size
	case interrupted(t.rec.state):
		m.waiting.pushBack(t)
	}
}

// unplace takes a task out of its list. Called with m.mu held.
func (m *Memory) unplace(t *memTask) {
	if t.in == nil {
		return
	}
	if t.in == &m.finished {
		m.finishedBytes -= t.size
	}
	t.in.remove(t)
}

// sweep drops the tasks whose time is up at now: those waiting unchanged
// for longer than the idle expiry (remembered as expired) and, with a
// retention, those finished for longer than it. Called with m.mu held.
func (m *Memory) sweep(now time.Time) {
	if m.cfg.idle > 0 {
		cut := now.Add(-m.cfg.idle)
		for t := m.waiting.front; t != nil; t = m.waiting.front {
			if !t.rec.updated.Before(cut) {
				break
			}
			at := t.rec.updated.Add(m.cfg.idle)
			m.remember(expiredID{'t', t.rec.id}, at)
			if m.drop(t) && t.rec.contextID != "" {
				// Its context is gone with it: a message to it is told
				// so too.
				m.remember(expiredID{'c', t.rec.contextID}, at)
			}
		}
	}
	if m.cfg.keepFinished > 0 {
		cut := now.Add(-m.cfg.keepFinished)
		for t := m.finished.front; t != nil; t = m.finished.front {
			if !t.rec.updated.Before(cut) {
				break
			}
			m.drop(t)
		}
	}
}

// remember records that a task or context expired at a time, forgetting
// the oldest expiry past RememberExpired. Called with m.mu held.
func (m *Memory) remember(key expiredID, at time.Time) {
	m.expired[key] = at
	m.expiredOrder = append(m.expiredOrder, expiry{key, at})
	for len(m.expiredOrder) > RememberExpired {
		old := m.expiredOrder[0]
		m.expiredOrder[0] = expiry{}
		m.expiredOrder = m.expiredOrder[1:]
		if at, ok := m.expired[old.key]; ok && at.Equal(old.at) {
			delete(m.expired, old.key)
		}
	}
}

// missing is the error for a task or context id ('t', 'c') the store does
// not hold. Called with m.mu held.
func (m *Memory) missing(kind byte, id string) error {
	if at, ok := m.expired[expiredID{kind, id}]; ok {
		return &ExpiredError{ID: id, Context: kind == 'c', At: at}
	}
	return ErrNotFound
}

// room reports whether evicting finished tasks other than keep can bring
// the store within its bounds once more tasks and moreBytes bytes are
// added. Called with m.mu held.
func (m *Memory) room(more int, moreBytes int64, keep *memTask) bool {
	n, b := m.finished.Len(), m.finishedBytes
	if keep != nil && keep.in == &m.finished {
		n, b = n-1, b-keep.size
	}
	return m.cfg.fits(len(m.tasks)+more-n, m.bytes+moreBytes-b)
}

// evict drops finished tasks other than keep, the least recently changed
// first, until the store is within its bounds once more tasks and
// moreBytes bytes are added, or no such task is left. Called with m.mu
// held.
func (m *Memory) evict(more int, moreBytes int64, keep *memTask) {
	t := m.finished.front
	for t != nil && !m.cfg.fits(len(m.tasks)+more, m.bytes+moreBytes) {
		next := t.next
		if t != keep {
			m.drop(t)
		}
		t = next
	}
}

// drop removes a task and its place in its context, and reports whether
// the context went with it. Called with m.mu held.
func (m *Memory) drop(t *memTask) bool {
	id := t.rec.id
	if m.tasks[id] != t {
		return false
	}
	delete(m.tasks, id)
	m.bytes -= t.size
	m.unplace(t)
	if m.watch.Active() {
		d := Dropped{TaskID: id, ContextID: t.rec.contextID}
		for i := range t.rec.configs {
			d.PushConfigIDs = append(d.PushConfigIDs, t.rec.configs[i].ID)
		}
		m.dropped = append(m.dropped, d)
	}
	c, ok := m.contexts[t.rec.contextID]
	if !ok {
		return false
	}
	if i := slices.Index(c.taskIDs, id); i >= 0 {
		c.taskIDs = slices.Delete(c.taskIDs, i, i+1)
	}
	if len(c.taskIDs) == 0 {
		delete(m.contexts, t.rec.contextID)
		return true
	}
	m.contexts[t.rec.contextID] = c
	return false
}

// final reports whether a task state is terminal.
func final(s a2a.TaskState) bool {
	st, err := tasklife.StateOf(s)
	return err == nil && st.Terminal()
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, r Record) (Record, error) {
	now := m.now()
	r.Created, r.Updated = now, now
	// The store keeps an encoded copy; the caller keeps r.
	p, err := pack(r)
	if err != nil {
		return Record{}, err
	}
	return m.create(r, p, now)
}

// CreateEncoded implements EncodedWriter: the store keeps enc as the
// task's encoding.
func (m *Memory) CreateEncoded(_ context.Context, r Record, enc []byte) (Record, error) {
	now := m.now()
	r.Created, r.Updated = now, now
	return m.create(r, packEncoded(r, enc), now)
}

// create files p, r packed, as a new task.
func (m *Memory) create(r Record, p packed, now time.Time) (Record, error) {
	m.mu.Lock()
	m.sweep(now)
	if old, ok := m.tasks[r.Task.ID]; ok {
		rec := old.rec
		m.unlock()
		out, err := rec.unpack()
		if err != nil {
			return Record{}, err
		}
		return out, ErrExists
	}
	size := p.size()
	if !m.room(1, size, nil) {
		err := m.cfg.full(len(m.tasks), m.bytes, 1, size)
		m.unlock()
		return Record{}, err
	}
	m.evict(1, size, nil)
	t := &memTask{rec: p, size: size}
	m.tasks[r.Task.ID] = t
	m.bytes += size
	m.place(t)
	if len(m.expired) > 0 {
		delete(m.expired, expiredID{'t', r.Task.ID})
		delete(m.expired, expiredID{'c', r.Task.ContextID})
	}
	if id := r.Task.ContextID; id != "" {
		c := m.contexts[id]
		// Tasks are mostly created in clock order: the insertion point is
		// almost always the end.
		i := len(c.taskIDs)
		for i > 0 && m.after(c.taskIDs[i-1], r) {
			i--
		}
		if i == 0 && len(c.taskIDs) == 0 {
			// The task's own slot: a context of one task allocates no list.
			t.firstOf[0] = r.Task.ID
			c.taskIDs = t.firstOf[:1:1]
		} else {
			c.taskIDs = slices.Insert(c.taskIDs, i, r.Task.ID)
		}
		if now.After(c.lastActive) {
			c.lastActive = now
		}
		m.contexts[id] = c
	}
	m.unlock()
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

// Get implements Store. A task that expired while waiting for input is
// answered with an *ExpiredError as long as the store remembers it.
func (m *Memory) Get(_ context.Context, id string) (Record, error) {
	p, err := m.packedTask(id)
	if err != nil {
		return Record{}, err
	}
	return p.unpack()
}

// packedTask returns the stored form of task id, after a sweep.
func (m *Memory) packedTask(id string) (packed, error) {
	now := m.now()
	m.mu.Lock()
	defer m.unlock()
	m.sweep(now)
	t, ok := m.tasks[id]
	if !ok {
		return packed{}, m.missing('t', id)
	}
	return t.rec, nil
}

// GetHead implements HeadReader: the task is not decoded.
func (m *Memory) GetHead(_ context.Context, id string) (Record, error) {
	p, err := m.packedTask(id)
	if err != nil {
		return Record{}, err
	}
	r := p.head()
	r.MessageIDs = append([]string(nil), p.messageIDs...)
	r.PushConfigs, r.PushDeliveries = cloneConfigs(p.configs), slices.Clone(p.deliveries)
	return r, nil
}

// Update implements Store. An update that grows the task is refused with
// ErrFull when evicting finished tasks cannot keep the store within
// MaxBytes.
func (m *Memory) Update(_ context.Context, id string, fn func(*Record) error) (Record, error) {
	var r Record
	err := m.change(id, true, func(old packed, now time.Time) (packed, error) {
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
		r.Updated = now
		return pack(r)
	})
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// ReplaceTask implements Replacer: the new task is encoded, the old one is
// not decoded. It is never refused for the store's bounds.
func (m *Memory) ReplaceTask(_ context.Context, task a2a.Task) error {
	return m.change(task.ID, false, func(old packed, now time.Time) (packed, error) {
		if task.ContextID != old.contextID {
			return packed{}, errors.New("taskstore: ReplaceTask may not change the context id")
		}
		p, err := pack(Record{Task: task, Owner: old.owner, Principal: old.principal, Created: old.created, Updated: now})
		// None is ever changed in place.
		p.messageIDs, p.configs, p.deliveries = old.messageIDs, old.configs, old.deliveries
		return p, err
	})
}

// ReplaceTaskEncoded implements EncodedWriter: the store keeps enc as the
// task's encoding.
func (m *Memory) ReplaceTaskEncoded(_ context.Context, task a2a.Task, enc []byte) error {
	return m.change(task.ID, false, func(old packed, now time.Time) (packed, error) {
		if task.ContextID != old.contextID {
			return packed{}, errors.New("taskstore: ReplaceTask may not change the context id")
		}
		p := packEncoded(Record{Task: task, Owner: old.owner, Principal: old.principal, Created: old.created, Updated: now}, enc)
		// None is ever changed in place.
		p.messageIDs, p.configs, p.deliveries = old.messageIDs, old.configs, old.deliveries
		return p, nil
	})
}

// SetPushDelivery implements DeliverySetter: the task is neither decoded
// nor encoded, and keeps its Updated time and its place in the store's
// orders.
func (m *Memory) SetPushDelivery(_ context.Context, id string, d PushDelivery) (bool, error) {
	// Serialised with the task's updates, which rewrite its reports.
	t, _, err := m.lockTask(id)
	if err != nil {
		return false, err
	}
	defer t.update.Unlock()
	m.mu.Lock()
	defer m.unlock()
	if m.tasks[id] != t {
		// Expired or evicted meanwhile.
		return false, m.missing('t', id)
	}
	next, changed := WithDelivery(t.rec.configs, t.rec.deliveries, d)
	if !changed {
		return false, nil
	}
	// t.rec is replaced, not changed: a reader holding a copy of it keeps
	// the reports it read.
	rec := t.rec
	rec.deliveries = next
	size := rec.size()
	grow := size - t.size
	t.rec, t.size = rec, size
	m.bytes += grow
	if t.in == &m.finished {
		m.finishedBytes += grow
	}
	m.evict(0, 0, t)
	return true, nil
}

// lockTask sweeps the store at its time now and takes the update lock of
// task id (which serialises the task's changes) for the caller to
// release. It returns without the store's lock: the caller takes it
// again and checks that the task is still there. A task not found is
// missing's error.
func (m *Memory) lockTask(id string) (t *memTask, now time.Time, err error) {
	now = m.now()
	m.mu.Lock()
	m.sweep(now)
	t, ok := m.tasks[id]
	if !ok {
		err = m.missing('t', id)
		m.unlock()
		return nil, now, err
	}
	m.unlock()
	t.update.Lock()
	return t, now, nil
}

// change replaces the stored record of a task with what fn makes of it.
// Changes of one task are serialised; fn runs outside the store's lock.
// With bounded set, a change that grows the task is refused when the store
// cannot make room for it; otherwise finished tasks are evicted after the
// change until the store is within its bounds, if it can be.
func (m *Memory) change(id string, bounded bool, fn func(old packed, now time.Time) (packed, error)) error {
	t, now, err := m.lockTask(id)
	if err != nil {
		return err
	}
	defer t.update.Unlock()
	m.mu.Lock()
	old := t.rec
	m.unlock()
	p, err := fn(old, now)
	if err != nil {
		return err
	}
	size := p.size()
	m.mu.Lock()
	defer m.unlock()
	if m.tasks[id] != t {
		// Expired or evicted meanwhile.
		return m.missing('t', id)
	}
	grow := size - t.size
	if bounded && grow > 0 && !m.room(0, grow, t) {
		return m.cfg.full(len(m.tasks), m.bytes, 0, grow)
	}
	m.unplace(t)
	t.rec = p
	t.size = size
	m.bytes += grow
	m.place(t)
	if c, ok := m.contexts[p.contextID]; ok && p.updated.After(c.lastActive) {
		c.lastActive = p.updated
		m.contexts[p.contextID] = c
	}
	m.evict(0, 0, t)
	return nil
}

// List implements Store. Tasks are filtered and sorted by what the store
// keeps beside them; only the page is decoded.
func (m *Memory) List(_ context.Context, f Filter) (Page, error) {
	now := m.now()
	m.mu.Lock()
	m.sweep(now)
	var heads []Record
	byID := map[string]packed{}
	add := func(t *memTask) {
		heads = append(heads, t.rec.head())
		byID[t.rec.id] = t.rec
	}
	if f.ContextID != "" {
		if c, ok := m.contexts[f.ContextID]; ok {
			for _, id := range c.taskIDs {
				add(m.tasks[id])
			}
		}
	} else {
		for _, t := range m.tasks {
			add(t)
		}
	}
	m.unlock()
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
	now := m.now()
	m.mu.Lock()
	defer m.unlock()
	m.sweep(now)
	c, ok := m.contexts[id]
	if id == "" || !ok {
		return ContextInfo{}, m.missing('c', id)
	}
	info := ContextInfo{ID: id, TaskIDs: slices.Clone(c.taskIDs), LastActive: c.lastActive, Tasks: make([]ContextTask, len(c.taskIDs))}
	for i, tid := range c.taskIDs {
		r := &m.tasks[tid].rec
		info.Tasks[i] = ContextTask{ID: tid, Principal: r.principal, Updated: r.updated}
	}
	return info, nil
}

var (
	_ Store          = (*Memory)(nil)
	_ Replacer       = (*Memory)(nil)
	_ HeadReader     = (*Memory)(nil)
	_ DeliverySetter = (*Memory)(nil)
	_ DropWatcher    = (*Memory)(nil)
	_ Store          = (*Bolt)(nil)
	_ DeliverySetter = (*Bolt)(nil)
	_ DropWatcher    = (*Bolt)(nil)
)
