package tasklife

import (
	"errors"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

// Class says what a task status means for the correlation (request and its
// replies or stream) that carried it.
type Class uint8

const (
	// ClassContinue: SUBMITTED or WORKING. More items follow on the same
	// correlation.
	ClassContinue Class = iota + 1
	// ClassResumable: INPUT_REQUIRED or AUTH_REQUIRED. Stream-final for the
	// correlation, which ends; the task goes on when a new message with the
	// same taskId and contextId (and fresh Correlation Data) resumes it.
	ClassResumable
	// ClassTerminal: COMPLETED, FAILED, CANCELED or REJECTED. Ends the
	// correlation, every stream of the task and the task itself.
	ClassTerminal
)

var classNames = [...]string{"", "continue", "stream-final-resumable", "terminal"}

// String returns "continue", "stream-final-resumable" or "terminal".
func (c Class) String() string {
	if int(c) < len(classNames) && c != 0 {
		return classNames[c]
	}
	return "invalid"
}

// StreamFinal reports whether a status of this class ends its correlation.
func (c Class) StreamFinal() bool { return c == ClassResumable || c == ClassTerminal }

// ClassOf classifies a state of the task table, using the table's own tags
// (terminal, stream_final). It returns 0 for an invalid state.
func ClassOf(s fsm.TaskState) Class {
	switch {
	case !s.Valid():
		return 0
	case s.Terminal():
		return ClassTerminal
	case s.IsStreamFinal():
		return ClassResumable
	}
	return ClassContinue
}

// ErrUnknownState is returned for a TaskState that is not one of the eight
// lifecycle states (TASK_STATE_UNSPECIFIED, or a value this version does not
// know). A requester treats such a status as an invalid agent response.
var ErrUnknownState = errors.New("tasklife: task state is not a lifecycle state")

// StateOf maps a wire task state to the state of the table.
func StateOf(s a2a.TaskState) (fsm.TaskState, error) {
	st, ok := fsm.TaskStateFromWire(string(s))
	if !ok {
		return 0, ErrUnknownState
	}
	return st, nil
}

// Classify classifies a wire task state, as carried by a status update, a
// Task snapshot or a GetTask answer.
func Classify(s a2a.TaskState) (Class, error) {
	st, err := StateOf(s)
	if err != nil {
		return 0, err
	}
	return ClassOf(st), nil
}

// statusEvents maps a state of the table to the event that reports it.
var statusEvents = [...]fsm.TaskEvent{
	fsm.TaskStateSubmitted:     fsm.TaskEventStatusSubmitted,
	fsm.TaskStateWorking:       fsm.TaskEventStatusWorking,
	fsm.TaskStateInputRequired: fsm.TaskEventStatusInputRequired,
	fsm.TaskStateAuthRequired:  fsm.TaskEventStatusAuthRequired,
	fsm.TaskStateCompleted:     fsm.TaskEventStatusCompleted,
	fsm.TaskStateFailed:        fsm.TaskEventStatusFailed,
	fsm.TaskStateCanceled:      fsm.TaskEventStatusCanceled,
	fsm.TaskStateRejected:      fsm.TaskEventStatusRejected,
}

// StatusEvent returns the event of the table that reports the status s.
func StatusEvent(s fsm.TaskState) (fsm.TaskEvent, bool) {
	if !s.Valid() || int(s) >= len(statusEvents) {
		return 0, false
	}
	return statusEvents[s], true
}
