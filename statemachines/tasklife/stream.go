package tasklife

import "github.com/a2abind/a2abind/generated/a2a"

// StreamItemFinal reports whether a stream item ends its correlation
// (docs/protocol.md §11, "end of stream"): a status update or a task whose
// state is terminal or interrupted (INPUT_REQUIRED, AUTH_REQUIRED), or a
// message. Status and artifact updates of a working task do not; neither
// does an item with an unknown state.
func StreamItemFinal(item *a2a.StreamResponse) bool {
	var st *a2a.TaskStatus
	switch p := item.Payload.(type) {
	case *a2a.Message:
		return true
	case *a2a.Task:
		st = p.Status
	case *a2a.TaskStatusUpdateEvent:
		st = p.Status
	}
	if st == nil {
		return false
	}
	class, err := Classify(st.State)
	return err == nil && class.StreamFinal()
}
