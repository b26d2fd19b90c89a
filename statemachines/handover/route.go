package handover

import (
	"errors"
	"fmt"

	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// Target is where an operation is published: a pool's request topic, or an
// agent's direct request topic. Exactly one field is set, or none before the
// first request.
type Target struct {
	// Pool is the pool_id: publish to $a2a/v1/request/{org_id}/{unit_id}/pool/{pool_id}.
	Pool string
	// Agent is the agent_id: publish to $a2a/v1/request/{org_id}/{unit_id}/{agent_id}.
	Agent string
}

// String returns "pool/<id>", "agent/<id>" or "none".
func (t Target) String() string {
	switch {
	case t.Pool != "":
		return "pool/" + t.Pool
	case t.Agent != "":
		return "agent/" + t.Agent
	}
	return "none"
}

// Route is the routing state of one Task.id, in the form a Store keeps it.
type Route struct {
	// TaskID is the task's Task.id, the key of the route; it never changes.
	TaskID string
	// State is the route's state in the handover table.
	State fsm.HandoverState
	// CardAgent is the agent whose card the requester used; "" for a pooled
	// task, which has none.
	CardAgent string
	// Pool is the pool_id of a pooled task; "" otherwise.
	Pool string
	// Responder is the agent named by the latest a2a-responder-agent-id
	// while State is Responder; "" otherwise.
	Responder string
	// FellBack records that the one fallback to the card agent was used.
	FellBack bool
}

// Target returns where the task's next operation goes.
func (r Route) Target() Target {
	switch r.State {
	case fsm.HandoverStateCardAgent, fsm.HandoverStateFallenBack:
		return Target{Agent: r.CardAgent}
	case fsm.HandoverStatePoolPending:
		return Target{Pool: r.Pool}
	case fsm.HandoverStateResponder:
		return Target{Agent: r.Responder}
	}
	return Target{}
}

// Pooled reports whether the task's first request went to a pool.
func (r Route) Pooled() bool { return r.Pool != "" }

// ErrInvalidRoute is wrapped by Route.Check for a route that no sequence of
// events can produce, such as one read back from a damaged store.
var ErrInvalidRoute = errors.New("handover: invalid route")

// Check reports whether the route is one the table can be in.
func (r Route) Check() error {
	bad := func(why string) error { return fmt.Errorf("%w: task %q: %s", ErrInvalidRoute, r.TaskID, why) }
	switch {
	case r.TaskID == "":
		return bad("no Task.id")
	case !r.State.Valid() || r.State == fsm.HandoverStateUnrouted:
		return bad("state " + r.State.String())
	case (r.Pool == "") == (r.CardAgent == ""):
		return bad("exactly one of a card agent and a pool is needed")
	case r.Pool != "" && !mqttbind.ValidIdentifier(r.Pool):
		return bad("pool_id " + r.Pool)
	case r.CardAgent != "" && !mqttbind.ValidIdentifier(r.CardAgent):
		return bad("card agent_id " + r.CardAgent)
	case (r.State == fsm.HandoverStateResponder) != (r.Responder != ""):
		return bad("a responder is named exactly in state Responder")
	case r.Responder != "" && !mqttbind.ValidIdentifier(r.Responder):
		return bad("responder agent_id " + r.Responder)
	case r.Pooled() && (r.FellBack || r.State == fsm.HandoverStateCardAgent || r.State == fsm.HandoverStateFallenBack):
		return bad("a pooled task has no card agent")
	case !r.Pooled() && r.State == fsm.HandoverStatePoolPending:
		return bad("pool state without a pool")
	case r.State == fsm.HandoverStateFallenBack && !r.FellBack:
		return bad("fallen back without the fallback recorded")
	}
	return nil
}
