package retry

import (
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// Phase is where an operation stands.
type Phase uint8

const (
	// PhaseIdle: not started.
	PhaseIdle Phase = iota
	// PhaseAwaiting: an attempt is published; waiting for its first reply.
	PhaseAwaiting
	// PhaseBackoff: an attempt failed; waiting to publish the next one.
	PhaseBackoff
	// PhaseStreaming: a stream item arrived; never republished from here.
	PhaseStreaming
	// PhaseDone: over; Outcome says how.
	PhaseDone
)

// Action is what the caller does now.
type Action uint8

const (
	// ActionWait: nothing now; call Tick at Wake.
	ActionWait Action = iota + 1
	// ActionPublish: publish attempt number Attempt to Target with fresh
	// Correlation Data and the same Task.id, then call Tick at Wake.
	ActionPublish
	// ActionGetTask: the stream stalled; stop waiting on it and recover
	// with GetTask on the known Task.id (a new operation). This one is over.
	ActionGetTask
	// ActionFinish: the operation is over; Outcome says how.
	ActionFinish
)

// Outcome is how an operation ended.
type Outcome uint8

const (
	// OutcomePending: not over.
	OutcomePending Outcome = iota
	// OutcomeReplied: a valid correlated reply ended it (a result, or the
	// stream's final item).
	OutcomeReplied
	// OutcomeFailed: an error reply that must not be retried (its token is
	// not retry-eligible), or any error after a stream item.
	OutcomeFailed
	// OutcomeExhausted: every attempt failed; the caller reports the target
	// unreachable (statemachines/handover may fall back to the card agent).
	OutcomeExhausted
	// OutcomeStalled: the stream was idle too long; recover with GetTask.
	OutcomeStalled
	// OutcomeQueued: the agent is asleep and stored the message (offline
	// profile, agent_asleep with queued true). Never republish it: a retry
	// would be queued twice.
	OutcomeQueued
)

var outcomeNames = [...]string{"pending", "replied", "failed", "exhausted", "stalled", "queued"}

// String returns the outcome's name.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "invalid"
}

// Decision is what the caller does after a call.
type Decision struct {
	// Action is what to do now.
	Action Action
	// Attempt is the number (1-based) of the attempt to publish, or of the
	// latest one.
	Attempt int
	// Target is where to publish (ActionPublish).
	Target handover.Target
	// Wake is when to call Tick next; zero once the operation is over, and
	// while it waits with no deadline (a zero timeout in the profile).
	Wake time.Time
	// Outcome is how the operation ended (ActionFinish, ActionGetTask).
	Outcome Outcome
	// Token is the token of the error reply that ended the operation or
	// failed its last attempt, if any.
	Token a2a.Token
}
