package requester

import (
	"strconv"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
)

/*
Queued is the outcome of a message sent to an agent that is asleep and
stored it for later (docs/protocol.md §7.2: agent_asleep with queued
true), returned as the error of the operation, whichever shape the agent
answered in (HTTP 503 with the offline body, or a JSON-RPC error over HTTP
or MQTT).

The message is not lost: the agent will process it when it wakes, as the
task TaskID. Poll GetTask with TaskID after RetryAfter (when HasRetryAfter)
to learn the outcome. The requester never retries a queued message, and
neither should its caller: a second send would be queued twice
(docs/protocol.md §7.7).

	var q *requester.Queued
	if errors.As(err, &q) {
		// come back later: c.GetTask(ctx, &a2a.GetTaskRequest{ID: q.TaskID})
	}

errors.Is(err, a2a.ErrAgentAsleep) holds for it too.
*/
type Queued struct {
	// TaskID is the task the queued message will run as (the agent made
	// it); "" when the agent did not say.
	TaskID string
	// ContextID is the context the queued message belongs to; "" when the
	// agent did not say.
	ContextID string
	// RetryAfter, when HasRetryAfter, is how long until the agent's next
	// accept window (retryAfterSec, or the Retry-After header).
	RetryAfter time.Duration
	// HasRetryAfter says whether the agent gave RetryAfter.
	HasRetryAfter bool
	// Message is the agent's explanation.
	Message string
}

// Error says that the message was queued, as which task, and when to
// come back.
func (q *Queued) Error() string {
	s := "agent_asleep: the message is queued"
	if q.TaskID != "" {
		s += " as task " + q.TaskID
	}
	if q.HasRetryAfter {
		s += "; retry after " + strconv.FormatInt(int64(q.RetryAfter/time.Second), 10) + " s"
	}
	if q.Message != "" {
		s += ": " + q.Message
	}
	return s
}

// Is reports whether target is a2a.ErrAgentAsleep (any *a2a.Error of the
// token agent_asleep).
func (q *Queued) Is(target error) bool {
	e, ok := target.(*a2a.Error)
	return ok && e.Token == a2a.TokenAgentAsleep
}

// queuedFrom returns the *Queued an error reply stands for, given its
// offline details: nil unless it is agent_asleep with queued true.
func queuedFrom(e *a2a.Error, d offline.OfflineErrorData) *Queued {
	if e.Token != a2a.TokenAgentAsleep || !d.Queued {
		return nil
	}
	q := &Queued{TaskID: d.TaskID, ContextID: d.ContextID, Message: e.Message}
	if d.RetryAfterSec != nil {
		q.RetryAfter, q.HasRetryAfter = time.Duration(*d.RetryAfterSec)*time.Second, true
	}
	return q
}
