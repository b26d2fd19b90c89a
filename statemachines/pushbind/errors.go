package pushbind

import (
	"errors"

	"github.com/a2abind/a2abind/generated/fsm"
)

// ErrTaskOrphaned is matched (errors.Is) by every *OrphanError.
var ErrTaskOrphaned = errors.New("pushbind: task orphaned")

// OrphanError reports a task that reached a terminal state with no live
// delivery channel bound at the moment of the transition.
type OrphanError struct {
	// TaskID is the orphaned task.
	TaskID string
	// Via is the binding state the orphan was found in: Unbound
	// (docs/protocol.md §8.5 mode 1, card flag only), Suspect (mode 2, late
	// registration), Dead (mode 3, receiver gone while polling had lapsed)
	// or Registered (the webhook never acknowledged anything).
	Via fsm.PushBindingState
}

// Error names the task and how the orphan came about.
func (e *OrphanError) Error() string {
	return "pushbind: task " + e.TaskID + " reached a terminal state with no live delivery channel (binding " + e.Via.String() + ")"
}

// Is reports whether target is ErrTaskOrphaned.
func (e *OrphanError) Is(target error) bool { return target == ErrTaskOrphaned }
