package handover

import (
	"slices"
	"testing"

	"github.com/a2abind/a2abind/generated/fsm"
)

// Every row that pool failover added to the table (docs/protocol.md
// §4.6.1), reached through the Table's methods from a route the table can
// be in, with Table.PoolFailover on and off: where the route goes, the
// outputs, the next target, and that the route stays valid.
func TestPoolFailoverRows(t *testing.T) {
	pooled := Route{TaskID: taskT, State: fsm.HandoverStateResponder, Pool: "workers", Responder: "member-1"}
	handedOver := Route{TaskID: taskT, State: fsm.HandoverStateResponder, CardAgent: "agent-b", Responder: "agent-c"}
	card := Route{TaskID: taskT, State: fsm.HandoverStateCardAgent, CardAgent: "agent-b"}
	fallen := Route{TaskID: taskT, State: fsm.HandoverStateFallenBack, CardAgent: "agent-b", FellBack: true}
	exhausted := func(tb *Table) (Step, error) { return tb.Exhausted(taskT) }
	pool := Target{Pool: "workers"}
	var none fsm.HandoverOutputSet
	fellBackToPool := none.With(fsm.HandoverOutputFallBackToPool).With(fsm.HandoverOutputPersistRoute)
	cases := []struct {
		name     string
		route    Route
		failover bool
		do       func(*Table) (Step, error)
		to       fsm.HandoverState
		outputs  fsm.HandoverOutputSet
		target   Target
	}{
		// Responder --RetryExhausted [FailoverAllowed] → PoolPending.
		{"an unreachable pool member: back to the pool", pooled, true, exhausted,
			fsm.HandoverStatePoolPending, fellBackToPool, pool},
		// Without the guard the row below it applies, as before.
		{"an unreachable pool member without failover: reported", pooled, false, exhausted,
			fsm.HandoverStateResponder, none.With(fsm.HandoverOutputReportUnreachable), Target{Agent: "member-1"}},
		// FailoverAllowed holds only for a pooled task: a handover target
		// still falls back to its card agent.
		{"an unreachable handover target with failover on: the card agent", handedOver, true, exhausted,
			fsm.HandoverStateFallenBack, none.With(fsm.HandoverOutputFallBackToCardAgent).With(fsm.HandoverOutputPersistRoute), Target{Agent: "agent-b"}},
		// The rows of other states are untouched by the guard.
		{"the card agent unreachable with failover on: reported", card, true, exhausted,
			fsm.HandoverStateCardAgent, none.With(fsm.HandoverOutputReportUnreachable), Target{Agent: "agent-b"}},
		{"the card agent after a fallback unreachable with failover on: reported", fallen, true, exhausted,
			fsm.HandoverStateFallenBack, none.With(fsm.HandoverOutputReportUnreachable), Target{Agent: "agent-b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := NewTable()
			tb.PoolFailover = tc.failover
			r := tc.route
			tb.routes[taskT] = &r
			s := must(t)(tc.do(tb))
			if s.To != tc.to || s.Outputs != tc.outputs || s.Target != tc.target {
				t.Fatalf("got %v -> %v %v to %v; want %v %v to %v", s.From, s.To, s.Outputs.List(), s.Target, tc.to, tc.outputs.List(), tc.target)
			}
			got, _ := tb.Route(taskT)
			if err := got.Check(); err != nil {
				t.Fatal(err)
			}
			if got.Target() != tc.target || got.FellBack != (tc.route.FellBack || s.Outputs.Has(fsm.HandoverOutputFallBackToCardAgent)) {
				t.Fatalf("route %+v", got)
			}
		})
	}
}

// The whole failover story of one pooled task: selection, the member dies,
// the follow-up runs again on the pool, another member takes it (the
// latest a2a-responder-agent-id wins as ever), and a requester that
// restarts keeps the new route. A failover needs a new selection before
// another can follow: the pool's own exhaustion is reported and keeps the
// route on the pool.
func TestPoolFailoverStory(t *testing.T) {
	tb := NewTable()
	tb.PoolFailover = true
	store := &MemStore{}
	save := func(s Step) Step {
		t.Helper()
		if s.Outputs.Has(fsm.HandoverOutputPersistRoute) {
			r, _ := tb.Route(taskT)
			if err := store.SaveRoute(r); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	save(must(t)(tb.StartPooled(taskT, "workers")))
	save(must(t)(tb.Reply(taskT, []string{"member-1"})))
	s := save(must(t)(tb.Exhausted(taskT)))
	if !s.Outputs.Has(fsm.HandoverOutputFallBackToPool) || s.Target != (Target{Pool: "workers"}) {
		t.Fatalf("member-1 unreachable: %+v", s)
	}
	// The pool's members are gone too: reported, the route stays on the
	// pool, and no second failover happens without a new responder.
	s = save(must(t)(tb.Exhausted(taskT)))
	if !s.Outputs.Has(fsm.HandoverOutputReportUnreachable) || s.Outputs.Has(fsm.HandoverOutputFallBackToPool) || s.Target != (Target{Pool: "workers"}) {
		t.Fatalf("the pool unreachable: %+v", s)
	}
	// A pooled reply without a responder is still a protocol error.
	if s := must(t)(tb.Reply(taskT, nil)); !s.Outputs.Has(fsm.HandoverOutputProtocolError) {
		t.Fatalf("pooled reply without responder after failover: %+v", s)
	}
	s = save(must(t)(tb.Reply(taskT, []string{"member-2"})))
	if s.Target != (Target{Agent: "member-2"}) || !s.Outputs.Has(fsm.HandoverOutputPersistRoute) {
		t.Fatalf("member-2 takes the task: %+v", s)
	}
	restarted := NewTable()
	if err := restarted.Restore(store); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(restarted.Routes(), tb.Routes()) {
		t.Fatalf("restored %+v, want %+v", restarted.Routes(), tb.Routes())
	}
	// member-2 is lost too: the restarted requester fails over again.
	restarted.PoolFailover = true
	if s := must(t)(restarted.Exhausted(taskT)); !s.Outputs.Has(fsm.HandoverOutputFallBackToPool) || s.Target != (Target{Pool: "workers"}) {
		t.Fatalf("member-2 unreachable: %+v", s)
	}
}
