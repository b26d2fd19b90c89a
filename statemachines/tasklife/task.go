package tasklife

import (
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// Task is the lifecycle of one task. Its id and context never change; its
// state moves only through the generated table. The zero value is not
// usable: create one with New. A Task is a small value; copy it freely.
type Task struct {
	id        string
	contextID string
	state     fsm.TaskState
}

// New returns a task in SUBMITTED, the state every task starts in.
func New(id, contextID string) Task {
	return Task{id: id, contextID: contextID, state: fsm.TaskInitial}
}

// Restore returns a task in a state read back from a store.
func Restore(id, contextID string, state fsm.TaskState) Task {
	return Task{id: id, contextID: contextID, state: state}
}

// ID returns the task's id (Task.id). It never changes.
func (t Task) ID() string { return t.id }

// ContextID returns the task's context (Task.contextId). It never changes.
func (t Task) ContextID() string { return t.contextID }

// State returns the task's current state.
func (t Task) State() fsm.TaskState { return t.state }

// Step is one transition of a task: what happened and what to do about it.
type Step struct {
	// Event is the table event applied.
	Event fsm.TaskEvent
	// From and To are the task's states before and after.
	From, To fsm.TaskState
	// Outputs are the decisions to act on: EndCorrelation and EndStream for
	// statuses, StartWork for a resume, StopWork, EmitCanceled and
	// RefuseCancel for a cancel.
	Outputs fsm.TaskOutputSet
}

// Class classifies the state the step led to.
func (s Step) Class() Class { return ClassOf(s.To) }

// Apply looks the event up in the table with the guards that hold and moves
// the task. An event the table does not define in the current state (a
// status after a terminal one, for example) is a *fsm.TransitionError and
// leaves the task unchanged. It does not allocate on success.
func (t *Task) Apply(ev fsm.TaskEvent, held fsm.TaskGuardSet) (Step, error) {
	tr, err := fsm.TaskStep(t.state, ev, held)
	if err != nil {
		return Step{}, err
	}
	from := t.state
	t.state = tr.To
	return Step{Event: ev, From: from, To: tr.To, Outputs: tr.Outputs}, nil
}

/*
Observe applies a status the agent produced for this task, whatever carried
it: a stream item, a reply, a push or a GetTask answer. A status after a
terminal one is a protocol error (*fsm.TransitionError), and so is a return to
SUBMITTED; an unknown state is ErrUnknownState.
*/
func (t *Task) Observe(s a2a.TaskState) (Step, error) {
	st, err := StateOf(s)
	if err != nil {
		return Step{}, err
	}
	ev, _ := StatusEvent(st)
	return t.Apply(ev, 0)
}

/*
Resume applies a new message (same taskId and contextId, new messageId) to
the task, as a responder receives it. Only an interrupted task (INPUT_REQUIRED,
AUTH_REQUIRED) accepts it, and the step carries StartWork. A terminal task or
one that is not waiting for input refuses it with UnsupportedOperation
(docs/protocol.md §11, "retry, follow-up or error?"), which a requester
never retries.
*/
func (t *Task) Resume() (Step, error) {
	switch {
	case t.state.Terminal():
		return Step{}, a2a.NewError(a2a.TokenUnsupportedOperation, "task "+t.id+" is in a terminal state ("+t.state.Wire()+")")
	case !t.state.IsResumable():
		return Step{}, a2a.NewError(a2a.TokenUnsupportedOperation, "task "+t.id+" is not waiting for input ("+t.state.Wire()+")")
	}
	return t.Apply(fsm.TaskEventResume, 0)
}

/*
Cancel applies a CancelTask request, as a responder receives it; refused says
that the agent cannot cancel the task at its current stage. A live task moves
to CANCELED (StopWork, EmitCanceled, EndStream) or, when refused, stays
(RefuseCancel, to be answered with TaskNotCancelable). A repeated cancel of a
CANCELED task is answered with the task (a step with no outputs and no error:
cancel is idempotent); any other terminal task is TaskNotCancelable.
*/
func (t *Task) Cancel(refused bool) (Step, error) {
	switch {
	case t.state == fsm.TaskStateCanceled:
		return Step{Event: fsm.TaskEventCancel, From: t.state, To: t.state}, nil
	case t.state.Terminal():
		return Step{}, a2a.NewError(a2a.TokenTaskNotCancelable, "task "+t.id+" is in a terminal state ("+t.state.Wire()+")")
	}
	var held fsm.TaskGuardSet
	if refused {
		held = held.With(fsm.TaskGuardCancelRefused)
	}
	return t.Apply(fsm.TaskEventCancel, held)
}
