package tasklife

import "time"

// IDOrigin says who makes Task.id in a binding (docs/protocol.md §11, "who
// makes Task.id").
type IDOrigin uint8

const (
	// RequesterIDs: the requester makes Task.id and sends it as
	// message.taskId, so an unknown id creates the task and a missing one
	// is invalid params. The A2A-over-MQTT binding.
	RequesterIDs IDOrigin = iota + 1
	// ResponderIDs: the server makes Task.id (A2A core), so a message
	// without taskId creates a task and an unknown taskId is TaskNotFound.
	// The HTTP binding.
	ResponderIDs
)

// Policy is a responder's configuration of these rules.
type Policy struct {
	// IDs says who makes Task.id; the zero value means RequesterIDs.
	IDs IDOrigin
	// ContextTTL is the context expiry window: a context whose LastActive is
	// older than this refuses new tasks and resumes with ContextExpired. Zero
	// means contexts never expire. Publish the window in the agent card.
	ContextTTL time.Duration
}

// Expired reports whether the context is past the expiry window at now.
func (p Policy) Expired(c *ContextRecord, now time.Time) bool {
	return c != nil && p.ContextTTL > 0 && now.Sub(c.LastActive) > p.ContextTTL
}
