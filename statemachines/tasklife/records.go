package tasklife

import (
	"time"

	"github.com/a2abind/a2abind/generated/fsm"
)

// Request is what the responder's rules need from an incoming SendMessage or
// SendStreamingMessage: the ids of its message.
type Request struct {
	// TaskID is message.taskId, "" when absent.
	TaskID string
	// ContextID is message.contextId, "" when absent.
	ContextID string
	// MessageID is message.messageId (required).
	MessageID string
}

// TaskRecord is what a responder's store holds about one task for these
// rules.
type TaskRecord struct {
	// ID is the task's Task.id.
	ID string
	// ContextID is the task's context; it never changes.
	ContextID string
	// State is the task's state.
	State fsm.TaskState
	// MessageIDs are the messageIds the task accepted (the one that created
	// it and every resume), oldest first: a message repeating one of them is
	// a retry.
	MessageIDs []string
}

// ContextRecord is what a responder's store holds about one context.
type ContextRecord struct {
	// ID is the contextId.
	ID string
	// LastActive is when a task of the context was last created, resumed or
	// changed state; the expiry window runs from it.
	LastActive time.Time
}
