package handover

import (
	"errors"
	"testing"

	"github.com/a2abind/a2abind/generated/fsm"
)

func guardSets() []fsm.HandoverGuardSet {
	n := len(fsm.HandoverGuards())
	out := make([]fsm.HandoverGuardSet, 0, 1<<n)
	for m := range 1 << n {
		out = append(out, fsm.HandoverGuardSet(m))
	}
	return out
}

// tableLookup reads the row for (from, ev) with the guards held from
// HandoverTable in table order, independently of HandoverStep.
func tableLookup(from fsm.HandoverState, ev fsm.HandoverEvent, held fsm.HandoverGuardSet) (fsm.HandoverTransition, bool) {
	for _, r := range fsm.HandoverTable() {
		if r.From == from && r.Event == ev && (r.Guard == fsm.HandoverGuardNone || held.Has(r.Guard)) {
			return r, true
		}
	}
	return fsm.HandoverTransition{}, false
}

// Every state × every event × every guard set: a defined transition goes
// where the table says; an undefined one is a *fsm.TransitionError and
// leaves the route unchanged.
func TestApplyMatchesTable(t *testing.T) {
	for _, s := range fsm.HandoverStates() {
		for _, ev := range fsm.HandoverEvents() {
			for _, held := range guardSets() {
				want, defined := tableLookup(s, ev, held)
				r := Route{TaskID: "t", State: s, CardAgent: "b"}
				before := r
				step, err := apply(&r, ev, held, "c")
				var te *fsm.TransitionError
				switch {
				case defined && (err != nil || step.To != want.To || step.Outputs != want.Outputs || r.State != want.To):
					t.Errorf("%v + %v %v: got %+v, %v; table says %+v", s, ev, held.List(), step, err, want)
				case !defined && (!errors.As(err, &te) || r != before):
					t.Errorf("%v + %v %v: undefined, got %+v, %v, route %+v", s, ev, held.List(), step, err, r)
				}
				if r.TaskID != "t" {
					t.Fatal("Task.id changed")
				}
			}
		}
	}
}

// Every reachable (state, event) through the Table's methods, with the
// guards the handwritten code computes: the route lands where the table says.
func TestMethodsFollowTable(t *testing.T) {
	type setup struct {
		name     string
		route    Route
		failover bool // Table.PoolFailover
	}
	setups := []setup{
		{"card agent", Route{TaskID: "t", State: fsm.HandoverStateCardAgent, CardAgent: "b"}, false},
		{"pool pending", Route{TaskID: "t", State: fsm.HandoverStatePoolPending, Pool: "p"}, false},
		{"responder after handover", Route{TaskID: "t", State: fsm.HandoverStateResponder, CardAgent: "b", Responder: "c"}, false},
		{"responder after fallback and a new handover", Route{TaskID: "t", State: fsm.HandoverStateResponder, CardAgent: "b", Responder: "c", FellBack: true}, false},
		{"pooled responder", Route{TaskID: "t", State: fsm.HandoverStateResponder, Pool: "p", Responder: "c"}, false},
		{"fallen back", Route{TaskID: "t", State: fsm.HandoverStateFallenBack, CardAgent: "b", FellBack: true}, false},
		{"card agent, pool failover on", Route{TaskID: "t", State: fsm.HandoverStateCardAgent, CardAgent: "b"}, true},
		{"pool pending, pool failover on", Route{TaskID: "t", State: fsm.HandoverStatePoolPending, Pool: "p"}, true},
		{"responder after handover, pool failover on", Route{TaskID: "t", State: fsm.HandoverStateResponder, CardAgent: "b", Responder: "c"}, true},
		{"pooled responder, pool failover on", Route{TaskID: "t", State: fsm.HandoverStateResponder, Pool: "p", Responder: "c"}, true},
		{"fallen back, pool failover on", Route{TaskID: "t", State: fsm.HandoverStateFallenBack, CardAgent: "b", FellBack: true}, true},
	}
	type call struct {
		name string
		ev   fsm.HandoverEvent
		do   func(*Table) (Step, error)
	}
	calls := []call{
		{"reply naming the card agent", fsm.HandoverEventReplyWithResponder, func(tb *Table) (Step, error) { return tb.Reply("t", []string{"b"}) }},
		{"reply naming the current responder", fsm.HandoverEventReplyWithResponder, func(tb *Table) (Step, error) { return tb.Reply("t", []string{"c", "c"}) }},
		{"reply naming a new agent", fsm.HandoverEventReplyWithResponder, func(tb *Table) (Step, error) { return tb.Reply("t", []string{"d"}) }},
		{"reply without responder", fsm.HandoverEventReplyWithoutResponder, func(tb *Table) (Step, error) { return tb.Reply("t", nil) }},
		{"reply with a malformed responder", fsm.HandoverEventReplyMalformedResponder, func(tb *Table) (Step, error) { return tb.Reply("t", []string{"a/b"}) }},
		{"reply with two responders", fsm.HandoverEventReplyMalformedResponder, func(tb *Table) (Step, error) { return tb.Reply("t", []string{"c", "d"}) }},
		{"retry exhausted", fsm.HandoverEventRetryExhausted, func(tb *Table) (Step, error) { return tb.Exhausted("t") }},
	}
	for _, s := range setups {
		for _, c := range calls {
			t.Run(s.name+"/"+c.name, func(t *testing.T) {
				tb := NewTable()
				tb.PoolFailover = s.failover
				r := s.route
				tb.routes["t"] = &r
				named := ""
				switch c.name {
				case "reply naming the card agent":
					named = "b"
				case "reply naming the current responder":
					named = "c"
				case "reply naming a new agent":
					named = "d"
				}
				want, defined := tableLookup(s.route.State, c.ev, tb.guards(&s.route, named))
				step, err := c.do(tb)
				if !defined {
					var te *fsm.TransitionError
					if got, _ := tb.Route("t"); !errors.As(err, &te) || got != s.route {
						t.Fatalf("no row: got %+v, %v, route %+v", step, err, got)
					}
					return
				}
				if err != nil || step.Event != c.ev || step.To != want.To || step.Outputs != want.Outputs {
					t.Fatalf("got %+v, %v; table says %+v", step, err, want)
				}
				got, _ := tb.Route("t")
				if err := got.Check(); err != nil {
					t.Fatalf("route after the step: %v", err)
				}
				if named != "" && step.Target != (Target{Agent: named}) {
					t.Errorf("the latest responder %q does not win: target %v", named, step.Target)
				}
			})
		}
	}
}
