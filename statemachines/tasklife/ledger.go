package tasklife

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// Ledger is an in-memory responder store that applies Admit and the task
// table: tasks by id, contexts with their tasks. It is for tests and for
// agents that keep nothing across restarts; a durable store applies the same
// functions to its own records. It is not safe for concurrent use.
type Ledger struct {
	policy   Policy
	newID    func() string
	tasks    map[string]*TaskRecord
	contexts map[string]*contextEntry
}

type contextEntry struct {
	rec   ContextRecord
	tasks []string
}

// NewLedger returns an empty ledger. newID makes the ids the responder mints
// (a contextId left out by the requester; a Task.id under ResponderIDs); nil
// means random UUIDv4 strings.
func NewLedger(p Policy, newID func() string) *Ledger {
	if newID == nil {
		newID = NewUUID
	}
	return &Ledger{policy: p, newID: newID, tasks: map[string]*TaskRecord{}, contexts: map[string]*contextEntry{}}
}

// NewUUID returns a random (version 4) UUID in its 8-4-4-4-12 form.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// Outcome is what Ledger.Send did with a message.
type Outcome struct {
	Admission
	// Task is the task after the message (a copy).
	Task TaskRecord
	// Step is the Resume transition for VerdictResume; zero otherwise.
	Step Step
	// Prior are the ids of the context's other tasks, oldest first, so that
	// the handler can use earlier turns of the conversation.
	Prior []string
}

// Send applies an incoming message at time now: Admit, then create, resume
// or nothing (a retry). On error nothing changes.
func (l *Ledger) Send(req Request, now time.Time) (Outcome, error) {
	task := l.tasks[req.TaskID]
	if req.TaskID == "" {
		task = nil
	}
	ctxID := req.ContextID
	if task != nil {
		ctxID = task.ContextID
	}
	var ctx *ContextRecord
	ce := l.contexts[ctxID]
	if ce != nil && ctxID != "" {
		ctx = &ce.rec
	}
	adm, err := Admit(req, task, ctx, l.policy, now)
	if err != nil {
		return Outcome{}, err
	}
	var step Step
	switch adm.Verdict {
	case VerdictCreate:
		id := req.TaskID
		if id == "" {
			id = l.newID()
		}
		if ce == nil {
			if ctxID == "" {
				ctxID = l.newID()
			}
			ce = &contextEntry{rec: ContextRecord{ID: ctxID}}
			l.contexts[ctxID] = ce
		}
		task = &TaskRecord{ID: id, ContextID: ctxID, State: fsm.TaskInitial, MessageIDs: []string{req.MessageID}}
		l.tasks[id] = task
		ce.tasks = append(ce.tasks, id)
		ce.rec.LastActive = now
	case VerdictResume:
		t := Restore(task.ID, task.ContextID, task.State)
		if step, err = t.Resume(); err != nil {
			return Outcome{}, err
		}
		task.State = t.State()
		task.MessageIDs = append(task.MessageIDs, req.MessageID)
		ce.rec.LastActive = now
	}
	return Outcome{Admission: adm, Task: copyRecord(task), Step: step, Prior: l.prior(ce, task.ID)}, nil
}

// Update applies a status the agent produced for a task at time now.
func (l *Ledger) Update(taskID string, s a2a.TaskState, now time.Time) (Step, error) {
	task := l.tasks[taskID]
	if task == nil {
		return Step{}, a2a.NewError(a2a.TokenTaskNotFound, "task "+taskID+" not found")
	}
	t := Restore(task.ID, task.ContextID, task.State)
	step, err := t.Observe(s)
	if err != nil {
		return Step{}, err
	}
	task.State = t.State()
	l.touch(task.ContextID, now)
	return step, nil
}

// Cancel applies a CancelTask request at time now; refused says the agent
// cannot cancel the task at its current stage. See Task.Cancel.
func (l *Ledger) Cancel(taskID string, refused bool, now time.Time) (Step, error) {
	task := l.tasks[taskID]
	if task == nil {
		return Step{}, a2a.NewError(a2a.TokenTaskNotFound, "task "+taskID+" not found")
	}
	t := Restore(task.ID, task.ContextID, task.State)
	step, err := t.Cancel(refused)
	if err != nil {
		return Step{}, err
	}
	if step.To != step.From {
		task.State = t.State()
		l.touch(task.ContextID, now)
	}
	return step, nil
}

// Task returns a copy of a task's record.
func (l *Ledger) Task(id string) (TaskRecord, bool) {
	t := l.tasks[id]
	if t == nil {
		return TaskRecord{}, false
	}
	return copyRecord(t), true
}

// Context returns a context's record and its tasks, oldest first.
func (l *Ledger) Context(id string) (ContextRecord, []string, bool) {
	c := l.contexts[id]
	if c == nil {
		return ContextRecord{}, nil, false
	}
	return c.rec, slices.Clone(c.tasks), true
}

// Len returns the number of tasks.
func (l *Ledger) Len() int { return len(l.tasks) }

func (l *Ledger) touch(ctxID string, now time.Time) {
	if c := l.contexts[ctxID]; c != nil && now.After(c.rec.LastActive) {
		c.rec.LastActive = now
	}
}

func (l *Ledger) prior(c *contextEntry, self string) []string {
	var out []string
	for _, id := range c.tasks {
		if id != self {
			out = append(out, id)
		}
	}
	return out
}

func copyRecord(t *TaskRecord) TaskRecord {
	c := *t
	c.MessageIDs = slices.Clone(t.MessageIDs)
	return c
}
