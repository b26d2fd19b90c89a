package tasklife

import (
	"slices"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// Verdict is the responder's decision for an incoming message.
type Verdict uint8

const (
	// VerdictCreate: create the task (Submitted) and run the handler.
	VerdictCreate Verdict = iota + 1
	// VerdictRetry: the message repeats one the task already accepted (same
	// taskId, same messageId). Answer with the task as it stands; create
	// nothing, run nothing.
	VerdictRetry
	// VerdictResume: a new message for an interrupted task. Apply Resume and
	// hand the message to the handler.
	VerdictResume
)

var verdictNames = [...]string{"", "create", "retry", "resume"}

// String returns "create", "retry" or "resume".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v != 0 {
		return verdictNames[v]
	}
	return "invalid"
}

// Admission is the outcome of Admit.
type Admission struct {
	// Verdict is what to do with the message.
	Verdict Verdict
	// NewContext is set with VerdictCreate when the request's contextId is
	// absent or unknown: a new context starts (no error). When it was absent
	// the responder makes the id.
	NewContext bool
}

/*
Admit decides what a responder does with an incoming message, given the
record its store holds for the message's taskId (nil when none) and the
record of the context that applies (the task's own context for an existing
task, the message's contextId for a new one; nil when unknown). The checks,
in order:

 1. A message without messageId is InvalidParams.
 2. A new task: a missing taskId is InvalidParams when the requester makes
    ids, an unknown taskId is TaskNotFound when the responder does; an
    expired context is ContextExpired; otherwise VerdictCreate, in a new
    context if the contextId is absent or unknown.
 3. An existing task: a contextId that differs from the task's is
    InvalidParams (-32602); a messageId the task already accepted is
    VerdictRetry, whatever the state (dedup by Task.id: never a second task);
    a terminal task is UnsupportedOperation; an expired context is
    ContextExpired; an interrupted task is VerdictResume; a task that is
    not waiting for input is UnsupportedOperation.

Concurrent tasks in one context are independent: nothing here looks at the
other tasks of the context. Admit does not allocate unless it refuses.
*/
func Admit(req Request, task *TaskRecord, ctx *ContextRecord, p Policy, now time.Time) (Admission, error) {
	if req.MessageID == "" {
		return Admission{}, a2a.NewError(a2a.TokenInvalidParams, "message.messageId is required")
	}
	if task == nil {
		switch {
		case p.IDs == ResponderIDs && req.TaskID != "":
			return Admission{}, a2a.NewError(a2a.TokenTaskNotFound, "task "+req.TaskID+" not found")
		case p.IDs != ResponderIDs && req.TaskID == "":
			return Admission{}, a2a.NewError(a2a.TokenInvalidParams, "message.taskId is required: the requester makes Task.id in this binding")
		case p.Expired(ctx, now):
			return Admission{}, a2a.NewError(a2a.TokenContextExpired, "context "+ctx.ID+" has expired")
		}
		return Admission{Verdict: VerdictCreate, NewContext: ctx == nil}, nil
	}
	switch {
	case req.TaskID != task.ID:
		return Admission{}, a2a.NewError(a2a.TokenInternalError, "task record "+task.ID+" does not match message.taskId "+req.TaskID)
	case req.ContextID != "" && req.ContextID != task.ContextID:
		return Admission{}, a2a.NewError(a2a.TokenInvalidParams, "message.contextId "+req.ContextID+" differs from the context "+task.ContextID+" of task "+task.ID)
	case slices.Contains(task.MessageIDs, req.MessageID):
		return Admission{Verdict: VerdictRetry}, nil
	case task.State.Terminal():
		return Admission{}, a2a.NewError(a2a.TokenUnsupportedOperation, "task "+task.ID+" is in a terminal state ("+task.State.Wire()+")")
	case p.Expired(ctx, now):
		return Admission{}, a2a.NewError(a2a.TokenContextExpired, "context "+ctx.ID+" has expired")
	case !task.State.IsResumable():
		return Admission{}, a2a.NewError(a2a.TokenUnsupportedOperation, "task "+task.ID+" is not waiting for input ("+task.State.Wire()+")")
	}
	return Admission{Verdict: VerdictResume}, nil
}
