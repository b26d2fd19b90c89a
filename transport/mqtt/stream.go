package mqtt

import (
	"encoding/json"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Output names of the handover table the client acts on.
const (
	fsmPersistRoute  = fsm.HandoverOutputPersistRoute
	fsmFallBack      = fsm.HandoverOutputFallBackToCardAgent
	fsmProtocolError = fsm.HandoverOutputProtocolError
)

// streamFinal reports whether a stream item ends its correlation: a status
// update or a task that is terminal or interrupted, or a message (protocol
// digest §10, "end of stream").
func streamFinal(raw json.RawMessage) bool {
	var item a2a.StreamResponse
	if err := item.UnmarshalJSON(raw); err != nil {
		return false
	}
	var state a2a.TaskState
	switch p := item.Payload.(type) {
	case *a2a.Message:
		return true
	case *a2a.Task:
		if p.Status != nil {
			state = p.Status.State
		}
	case *a2a.TaskStatusUpdateEvent:
		if p.Status != nil {
			state = p.Status.State
		}
	default:
		return false
	}
	class, err := tasklife.Classify(state)
	return err == nil && class.StreamFinal()
}
