package handover

import (
	"cmp"
	"errors"
	"slices"

	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/generated/mqttbind"
)

// ErrUnknownTask is returned for a Task.id the table has no route for.
var ErrUnknownTask = errors.New("handover: no route for this Task.id")

// Table is a requester's routing table, keyed by Task.id.
type Table struct {
	// PoolFailover allows a pooled task whose responder stayed
	// unreachable through the retry profile (Exhausted) to go back to its
	// pool, where another member continues it (the table's guard
	// FailoverAllowed). Set it only when the pool's members share a task
	// store: it is a deployment choice outside the profile's retry rule
	// (docs/protocol.md §4.6.1). Off, a pooled task never goes back to
	// the pool once its responder is known.
	PoolFailover bool

	routes map[string]*Route
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{routes: map[string]*Route{}} }

// Step is one transition of a task's route.
type Step struct {
	// Event is the table event the call applied.
	Event fsm.HandoverEvent
	// From and To are the route's states before and after.
	From, To fsm.HandoverState
	// Outputs are the decisions to act on: SetTarget (publish later
	// operations to Target, each with fresh Correlation Data), PersistRoute
	// (save Table.Route to the store), FallBackToCardAgent and
	// FallBackToPool (run the failed operation again at Target with the
	// full retry profile), ReportUnreachable
	// (fail the operation) and ProtocolError (the reply is a
	// transport_protocol_error and not the operation's answer).
	Outputs fsm.HandoverOutputSet
	// Target is where the task's next operation goes after the step.
	Target Target
}

// Start records the first request of a task sent to the direct request topic
// of cardAgent, the agent whose card the requester used.
func (t *Table) Start(taskID, cardAgent string) (Step, error) {
	if err := mqttbind.CheckIdentifier("agent_id", cardAgent); err != nil {
		return Step{}, err
	}
	return t.start(taskID, Route{TaskID: taskID, State: fsm.HandoverInitial, CardAgent: cardAgent}, 0)
}

// StartPooled records the first request of a task sent to the request topic
// of a pool.
func (t *Table) StartPooled(taskID, pool string) (Step, error) {
	if err := mqttbind.CheckIdentifier("pool_id", pool); err != nil {
		return Step{}, err
	}
	return t.start(taskID, Route{TaskID: taskID, State: fsm.HandoverInitial, Pool: pool}, fsm.HandoverGuardSet(0).With(fsm.HandoverGuardIsPooled))
}

func (t *Table) start(taskID string, r Route, held fsm.HandoverGuardSet) (Step, error) {
	if taskID == "" {
		return Step{}, errors.New("handover: empty Task.id")
	}
	if old := t.routes[taskID]; old != nil {
		r = *old // FirstRequest is refused by the table outside Unrouted
	}
	step, err := apply(&r, fsm.HandoverEventFirstRequest, held, "")
	if err != nil {
		return Step{}, err
	}
	t.routes[taskID] = &r
	return step, nil
}

/*
Reply applies a correlated reply or stream item for the task, result or
error alike. responders are the values of its a2a-responder-agent-id user
properties in the order received (none when absent). One well-formed agent_id
(repeats of the same value count as one) names the responder: the latest
wins. None changes nothing, except on a pooled request still waiting for its
responder, where it is a protocol error. A malformed value, or several
different ones, is a protocol error and changes nothing.
*/
func (t *Table) Reply(taskID string, responders []string) (Step, error) {
	r := t.routes[taskID]
	if r == nil {
		return Step{}, ErrUnknownTask
	}
	ev, id := classify(responders)
	var held fsm.HandoverGuardSet
	if ev == fsm.HandoverEventReplyWithResponder {
		held = t.guards(r, id)
	}
	return apply(r, ev, held, id)
}

// Exhausted applies the end of an operation that used up the retry profile
// against the task's current target without a valid correlated reply.
func (t *Table) Exhausted(taskID string) (Step, error) {
	r := t.routes[taskID]
	if r == nil {
		return Step{}, ErrUnknownTask
	}
	return apply(r, fsm.HandoverEventRetryExhausted, t.guards(r, ""), "")
}

// Target returns where the task's next operation goes.
func (t *Table) Target(taskID string) (Target, bool) {
	r := t.routes[taskID]
	if r == nil {
		return Target{}, false
	}
	return r.Target(), true
}

// Route returns a copy of the task's route, to persist on PersistRoute.
func (t *Table) Route(taskID string) (Route, bool) {
	r := t.routes[taskID]
	if r == nil {
		return Route{}, false
	}
	return *r, true
}

// Forget drops the task's route, once the task is over and no operation on
// it will follow. The caller deletes it from its store too.
func (t *Table) Forget(taskID string) { delete(t.routes, taskID) }

// Len returns the number of routes.
func (t *Table) Len() int { return len(t.routes) }

// Routes returns a copy of every route, sorted by Task.id.
func (t *Table) Routes() []Route {
	out := make([]Route, 0, len(t.routes))
	for _, r := range t.routes {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Route) int { return cmp.Compare(a.TaskID, b.TaskID) })
	return out
}

// classify reads the a2a-responder-agent-id values of a reply.
func classify(responders []string) (fsm.HandoverEvent, string) {
	if len(responders) == 0 {
		return fsm.HandoverEventReplyWithoutResponder, ""
	}
	id := responders[0]
	for _, v := range responders[1:] {
		if v != id {
			return fsm.HandoverEventReplyMalformedResponder, ""
		}
	}
	if !mqttbind.ValidIdentifier(id) {
		return fsm.HandoverEventReplyMalformedResponder, ""
	}
	return fsm.HandoverEventReplyWithResponder, id
}

// guards evaluates the table's guards for a route and the responder named
// by a reply ("" when none).
func (t *Table) guards(r *Route, responder string) fsm.HandoverGuardSet {
	var g fsm.HandoverGuardSet
	if r.Pooled() {
		g = g.With(fsm.HandoverGuardIsPooled)
		if t.PoolFailover {
			g = g.With(fsm.HandoverGuardFailoverAllowed)
		}
	}
	if responder != "" && r.State == fsm.HandoverStateResponder && responder == r.Responder {
		g = g.With(fsm.HandoverGuardSameResponder)
	}
	if responder != "" && !r.Pooled() && responder == r.CardAgent {
		g = g.With(fsm.HandoverGuardIsCardAgent)
	}
	if r.FellBack {
		g = g.With(fsm.HandoverGuardAlreadyFellBack)
	}
	return g
}

// apply steps a route through the table and carries out the outputs that
// change it. It does not allocate.
func apply(r *Route, ev fsm.HandoverEvent, held fsm.HandoverGuardSet, responder string) (Step, error) {
	tr, err := fsm.HandoverStep(r.State, ev, held)
	if err != nil {
		return Step{}, err
	}
	from := r.State
	r.State = tr.To
	if tr.To == fsm.HandoverStateResponder {
		if tr.Outputs.Has(fsm.HandoverOutputSetTarget) {
			r.Responder = responder
		}
	} else {
		r.Responder = ""
	}
	if tr.Outputs.Has(fsm.HandoverOutputFallBackToCardAgent) {
		r.FellBack = true
	}
	return Step{Event: ev, From: from, To: tr.To, Outputs: tr.Outputs, Target: r.Target()}, nil
}
