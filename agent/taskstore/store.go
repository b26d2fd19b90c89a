// Package taskstore keeps the tasks of an A2A agent: an in-memory store for
// tests and short-lived agents, and a durable one on an embedded bbolt
// database for tasks that must survive a restart. Both satisfy [Store], and
// both are checked by the same conformance tests.
//
// A store keeps, beside each task, what the responder rules of the protocol
// need: the message ids already accepted for the task (to tell a retried
// request from a new turn), the agent that currently owns the task (after a
// handover), the principal that created it (the verified caller whose tasks
// it is: Visible) and the times of creation and last change. It knows
// nothing of transports.
//
// Both stores are bounded (docs/protocol.md §14): at most DefaultMaxTasks
// tasks and DefaultMaxBytes bytes by default (MaxTasks, MaxBytes), making
// room by evicting finished tasks, the least recently changed first, and
// refusing new tasks with ErrFull when none is left to evict; a task
// waiting for input or authentication expires after DefaultIdleExpiry
// unchanged (ExpireInterruptedAfter), and is then answered ErrExpired; with
// KeepFinishedFor, finished tasks go after a retention time.
//
// The Bolt store seals the tokens and credentials of push-notification
// configs with a key ring when given one (SealSecrets, package
// agent/sealed); without one it keeps them in clear in its file.
package taskstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// ErrNotFound is returned for a task id the store does not hold. It matches
// a2a.ErrTaskNotFound under errors.Is.
var ErrNotFound = a2a.ErrTaskNotFound

// ErrExists is returned by Create when the task id is already taken.
var ErrExists = errors.New("taskstore: task already exists")

// Record is a task with the bookkeeping the responder needs.
type Record struct {
	// Task is the task as the protocol shows it.
	Task a2a.Task
	// MessageIDs are the ids of the messages accepted for the task, oldest
	// first.
	MessageIDs []string
	// Owner is the agent id that serves the task after a handover ("" for the
	// agent that created it).
	Owner string
	// Principal is the verified identity of the caller that created the
	// task (agent.Caller's Subject; "" for a task created without one).
	// Only that caller sees the task; a task without a principal is
	// everyone's (Visible, docs/protocol.md §15). The store keeps it as
	// given, through every change; it counts against MaxBytes.
	Principal string
	// Created and Updated are set by the store.
	Created, Updated time.Time
	// PushConfigs are the task's push-notification configs (A2A v1.0
	// §4.3), oldest first, each with its id and taskId set. They live in
	// the record so that a config sent with the message that creates the
	// task is stored with it, in one Create. A store keeps them as they
	// are; the agent runtime bounds how many a task has
	// (agent.PushConfig.MaxConfigsPerTask). They count against MaxBytes.
	PushConfigs []a2a.TaskPushNotificationConfig
	// PushDeliveries are the latest delivery reports of the configs, at
	// most one per config id (docs/protocol.md §8.8). They count against
	// MaxBytes.
	PushDeliveries []PushDelivery
}

// PushDelivery is what became of the notifications sent to one
// push-notification config of a task, as the sender last reported it
// (agent.PushReport).
type PushDelivery struct {
	// ConfigID is the config's id.
	ConfigID string `json:"configId"`
	// State is the delivery state: delivered, failing, dead, refused or
	// overflow (agent.PushState).
	State string `json:"state"`
	// Status is the webhook's last HTTP status (0 when it gave none).
	Status int `json:"status,omitempty"`
	// Reason says why, in a few words, for a config not delivered to.
	Reason string `json:"reason,omitempty"`
	// Dropped counts the notifications dropped by overflow so far.
	Dropped int `json:"dropped,omitempty"`
	// At is when the delivery came to this state.
	At time.Time `json:"at"`
}

// PushConfig returns the index of the config with id in r.PushConfigs, or
// -1.
func (r *Record) PushConfig(id string) int {
	for i := range r.PushConfigs {
		if r.PushConfigs[i].ID == id {
			return i
		}
	}
	return -1
}

// HasMessage reports whether id was already accepted for the task.
func (r *Record) HasMessage(id string) bool {
	for _, m := range r.MessageIDs {
		if m == id {
			return true
		}
	}
	return false
}

// Visible reports whether the caller of verified identity caller ("" for
// an anonymous one) may see a task whose Record.Principal is principal:
// its own, and the tasks created without a principal. An anonymous caller
// sees only the latter (docs/protocol.md §15).
func Visible(principal, caller string) bool { return principal == "" || principal == caller }

// Filter selects tasks for List. Zero fields match everything.
type Filter struct {
	ContextID string
	State     a2a.TaskState
	// UpdatedAfter keeps tasks changed at or after this time.
	UpdatedAfter time.Time
	// Scoped keeps only the tasks visible to the caller VisibleTo
	// (Visible): those it created and those created without a principal;
	// with VisibleTo "", only the latter. Page.Total counts those alone.
	Scoped    bool
	VisibleTo string
	// PageSize is the most tasks returned (default 50).
	PageSize int
	// PageToken continues a previous listing.
	PageToken string
}

// Page is one page of a listing, newest first.
type Page struct {
	Records       []Record
	NextPageToken string
	// Total counts every task the filter matches.
	Total int
}

// Store keeps task records. Implementations are safe for concurrent use;
// Update is atomic with respect to other calls for the same task.
type Store interface {
	// Create stores a new record. If the id is taken it returns the stored
	// record and ErrExists, and stores nothing.
	Create(ctx context.Context, r Record) (Record, error)
	// Get returns the record of a task, or ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)
	// Update applies fn to the stored record and stores the result
	// atomically. If fn returns an error nothing is stored and the error is
	// returned.
	Update(ctx context.Context, id string, fn func(*Record) error) (Record, error)
	// List returns the records matching f, most recently created first.
	List(ctx context.Context, f Filter) (Page, error)
	// Context returns what the store knows of a context, or ErrNotFound
	// when no task belongs to it.
	Context(ctx context.Context, id string) (ContextInfo, error)
	// Close releases the store.
	Close() error
}

// Replacer is implemented by stores that can replace a task's body
// without reading the stored one first. The runtime uses it for the events
// of a turn, which rewrite the whole task and keep its bookkeeping (message
// ids, owner, creation time, push-notification configs and their
// reports); a Store without it is written with Update.
type Replacer interface {
	// ReplaceTask stores t as the task of the record with t's id, setting
	// Updated. It returns ErrNotFound for an unknown id and refuses a
	// different context id.
	ReplaceTask(ctx context.Context, t a2a.Task) error
}

// EncodedWriter is implemented by stores that keep a task in its JSON form
// and can take that form from the caller instead of encoding the task
// themselves: the runtime encodes a task once per event, for the store and
// for the reply, and copies the encoding of the history's messages from
// one event to the next instead of encoding them again.
type EncodedWriter interface {
	// CreateEncoded is Create with enc, r.Task's encoding
	// (r.Task.AppendJSON, byte for byte), which the store may keep: the
	// caller does not change enc afterwards.
	CreateEncoded(ctx context.Context, r Record, enc []byte) (Record, error)
	// ReplaceTaskEncoded is ReplaceTask (Replacer) with enc, t's encoding,
	// kept as CreateEncoded keeps it.
	ReplaceTaskEncoded(ctx context.Context, t a2a.Task, enc []byte) error
}

// HeadReader is implemented by stores that can read a task's record
// without decoding the task's body: the runtime admits a message to a task
// by its id, context, state and message ids alone.
type HeadReader interface {
	// GetHead is Get with the record's Task reduced to its ID, ContextID
	// and Status.State (no history, artifacts, metadata, status message or
	// timestamp); the rest of the record is Get's.
	GetHead(ctx context.Context, id string) (Record, error)
}

// GetHead reads the record of task id from st as HeadReader.GetHead does:
// the whole task when st is not a HeadReader.
func GetHead(ctx context.Context, st Store, id string) (Record, error) {
	if hr, ok := st.(HeadReader); ok {
		return hr.GetHead(ctx, id)
	}
	return st.Get(ctx, id)
}

// ReplaceTask stores t as the task of its record in st, keeping the
// record's bookkeeping: in one write when st is a Replacer, else through
// Update.
func ReplaceTask(ctx context.Context, st Store, t a2a.Task) error {
	if rp, ok := st.(Replacer); ok {
		return rp.ReplaceTask(ctx, t)
	}
	_, err := st.Update(ctx, t.ID, func(r *Record) error {
		r.Task = t
		return nil
	})
	return err
}

// DeliverySetter is implemented by stores that record a push delivery
// report without rewriting the rest of the task's record: the Memory store
// keeps the reports beside the task's encoding and changes neither the
// task nor its place in the store's orders; the Bolt store rewrites the
// record's value without decoding the task. The agent runtime records its
// Notifier's reports (agent.Server.PushReport) with it; a Store without it
// is written with Update.
type DeliverySetter interface {
	// SetPushDelivery records d as the delivery report of the config
	// d.ConfigID of the task id, replacing the one it had, and reports
	// whether it wrote. It writes nothing when the task has no config
	// d.ConfigID (deleted meanwhile), or when the report the task has
	// differs from d only by its time (At says since when the delivery
	// has been in its state). Updated is left as it is: a report is not a
	// change of the task (its idle expiry, its place among the finished
	// tasks, ListTasks's statusTimestampAfter). It returns ErrNotFound for
	// an unknown task. It is never refused for the store's bounds (a task
	// holds at most one report per config); finished tasks are evicted
	// after it until the store is within them, if it can be.
	SetPushDelivery(ctx context.Context, id string, d PushDelivery) (bool, error)
}

// SetPushDelivery records d as the delivery report of the config
// d.ConfigID of the task id in st, as DeliverySetter says: in one write
// that leaves the rest of the record alone when st is a DeliverySetter,
// else through Update (which sets Updated).
func SetPushDelivery(ctx context.Context, st Store, id string, d PushDelivery) (bool, error) {
	if ds, ok := st.(DeliverySetter); ok {
		return ds.SetPushDelivery(ctx, id, d)
	}
	changed := false
	_, err := st.Update(ctx, id, func(r *Record) error {
		next, ok := WithDelivery(r.PushConfigs, r.PushDeliveries, d)
		if !ok {
			return errUnchanged
		}
		r.PushDeliveries, changed = next, true
		return nil
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	return changed, err
}

// errUnchanged ends an Update that has nothing to write.
var errUnchanged = errors.New("taskstore: unchanged")

// WithDelivery returns deliveries with d as the report of the config
// d.ConfigID, and true; or, when configs has no such config or its report
// differs from d only by its time, deliveries and false. deliveries is
// never changed in place. It is the change DeliverySetter describes, for
// a store of another package to apply to a task's configs and reports.
func WithDelivery(configs []a2a.TaskPushNotificationConfig, deliveries []PushDelivery, d PushDelivery) ([]PushDelivery, bool) {
	known := false
	for i := range configs {
		if configs[i].ID == d.ConfigID {
			known = true
			break
		}
	}
	if !known {
		return deliveries, false
	}
	for i, o := range deliveries {
		if o.ConfigID != d.ConfigID {
			continue
		}
		if o.State == d.State && o.Status == d.Status && o.Reason == d.Reason && o.Dropped == d.Dropped {
			return deliveries, false
		}
		next := make([]PushDelivery, len(deliveries))
		copy(next, deliveries)
		next[i] = d
		return next, true
	}
	next := make([]PushDelivery, len(deliveries), len(deliveries)+1)
	copy(next, deliveries)
	return append(next, d), true
}

// Dropped is a task a store dropped on its own: evicted to make room
// (MaxTasks, MaxBytes), expired waiting for input or authentication
// (ExpireInterruptedAfter), or past its retention (KeepFinishedFor).
type Dropped struct {
	TaskID, ContextID string
	// PushConfigIDs are the ids of the task's push-notification configs
	// (none for most tasks).
	PushConfigIDs []string
}

// DropWatcher is implemented by stores that tell when they drop a task on
// their own (Memory and Bolt do). The agent runtime watches them to have
// its Notifier forget the configs of a task GetTask no longer knows.
type DropWatcher interface {
	// WatchDrops calls fn for every task the store drops on its own from
	// then on, once the change that dropped it is done: outside the
	// store's locks (after the Bolt transaction committed), on the
	// goroutine of the store call that dropped it, so fn must be quick and
	// must not wait for that call. stop ends the calls; a call under way
	// may still finish after it.
	WatchDrops(fn func(Dropped)) (stop func())
}

// Watchers is the list of functions a store calls for the tasks it
// drops: the stores of this module keep one to implement DropWatcher. The
// zero value is ready to use.
type Watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Dropped)
	// on is set while fns is not empty, so that a store drops tasks
	// without collecting them when nobody watches.
	on atomic.Bool
}

// Add implements DropWatcher.WatchDrops.
func (w *Watchers) Add(fn func(Dropped)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(Dropped){}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	w.on.Store(true)
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
		w.on.Store(len(w.fns) > 0)
	}
}

// Active reports whether any function watches: a store collects the
// tasks it drops only then.
func (w *Watchers) Active() bool { return w.on.Load() }

// Tell calls the watchers for each of ds.
func (w *Watchers) Tell(ds []Dropped) {
	if len(ds) == 0 {
		return
	}
	w.mu.Lock()
	fns := make([]func(Dropped), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, d := range ds {
		for _, fn := range fns {
			fn(d)
		}
	}
}

// ContextInfo is what a store knows of a context (Task.contextId): the
// tasks in it and when one of them last changed.
type ContextInfo struct {
	ID string
	// TaskIDs are the context's tasks, oldest first.
	TaskIDs []string
	// LastActive is the latest Updated time of the context's tasks; the
	// context expiry window runs from it.
	LastActive time.Time
	// Tasks are the tasks of TaskIDs, in its order, with their principals
	// and last changes: what VisibleTo reads. The stores of this module
	// fill it.
	Tasks []ContextTask
}

// ContextTask is one task of a context, as ContextInfo lists it.
type ContextTask struct {
	ID string
	// Principal is the task's Record.Principal.
	Principal string
	// Updated is the task's last change.
	Updated time.Time
}

// VisibleTo returns the context as the caller of verified identity caller
// sees it: the tasks it may see (Visible), LastActive the latest change of
// those; false when it sees none of them, so that to this caller the
// context does not exist. A ContextInfo whose Tasks do not list its
// TaskIDs (a store that does not fill them) is seen whole.
func (c ContextInfo) VisibleTo(caller string) (ContextInfo, bool) {
	if len(c.Tasks) != len(c.TaskIDs) {
		return c, len(c.TaskIDs) > 0
	}
	all := true
	for _, t := range c.Tasks {
		if !Visible(t.Principal, caller) {
			all = false
			break
		}
	}
	if all {
		return c, len(c.TaskIDs) > 0
	}
	out := ContextInfo{ID: c.ID}
	for _, t := range c.Tasks {
		if !Visible(t.Principal, caller) {
			continue
		}
		out.TaskIDs = append(out.TaskIDs, t.ID)
		out.Tasks = append(out.Tasks, t)
		if t.Updated.After(out.LastActive) {
			out.LastActive = t.Updated
		}
	}
	return out, len(out.TaskIDs) > 0
}

// DefaultPageSize is the page size of List when Filter.PageSize is 0.
const DefaultPageSize = 50
