package handover

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/a2abind/a2abind/generated/fsm"
)

const modelSeed = 3003

// Long seeded random sequences of replies, exhaustions and restarts over
// many tasks, with pool failover off and on, checked after
// every step: the latest well-formed a2a-responder-agent-id always wins; no
// property or a malformed one changes nothing; the fallback happens at most
// once per task and never for a pooled task; a pooled task goes back to the
// pool after selection only by a failover, only with PoolFailover, and at
// most once per selection; every route stays valid and keeps its Task.id;
// a save and restore changes nothing.
func TestModelRandomSequences(t *testing.T) {
	for _, failover := range []bool{false, true} {
		t.Run(fmt.Sprintf("pool failover %v", failover), func(t *testing.T) { modelRandomSequences(t, failover) })
	}
}

func modelRandomSequences(t *testing.T, failover bool) {
	const steps = 10000
	t.Logf("seed %d, %d steps", modelSeed, steps)
	rng := rand.New(rand.NewPCG(modelSeed, 0))
	tb := NewTable()
	tb.PoolFailover = failover
	fallbacks := map[string]int{}
	selected := map[string]bool{}
	failovers := 0
	values := [][]string{nil, {"agent-b"}, {"agent-c"}, {"agent-d"}, {"agent-e"}, {"agent-c", "agent-c"}, {"agent-c", "agent-d"}, {"bad/id"}, {""}}
	for i := range steps {
		id := fmt.Sprintf("task-%02d", rng.IntN(30))
		before, known := tb.Route(id)
		if !known {
			var err error
			if rng.IntN(3) == 0 {
				_, err = tb.StartPooled(id, "pool-1")
			} else {
				_, err = tb.Start(id, "agent-b")
			}
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			continue
		}
		var step Step
		var err error
		switch op := rng.IntN(12); {
		case op < 8:
			v := values[rng.IntN(len(values))]
			step, err = tb.Reply(id, v)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			switch ev, named := classify(v); ev {
			case fsm.HandoverEventReplyWithResponder:
				if step.Target != (Target{Agent: named}) {
					t.Fatalf("step %d: latest responder %s lost to %v", i, named, step.Target)
				}
				selected[id] = true
			case fsm.HandoverEventReplyMalformedResponder:
				if step.Target != before.Target() || !step.Outputs.Has(fsm.HandoverOutputProtocolError) {
					t.Fatalf("step %d: malformed %q: %+v", i, v, step)
				}
			default:
				if step.Target != before.Target() {
					t.Fatalf("step %d: reply without responder moved %v to %v", i, before.Target(), step.Target)
				}
			}
		case op < 10:
			step, err = tb.Exhausted(id)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			switch {
			case step.Outputs.Has(fsm.HandoverOutputFallBackToCardAgent):
				fallbacks[id]++
				if before.Pooled() || fallbacks[id] > 1 || step.Target != (Target{Agent: "agent-b"}) {
					t.Fatalf("step %d: fallback #%d of %+v to %v", i, fallbacks[id], before, step.Target)
				}
			case step.Outputs.Has(fsm.HandoverOutputFallBackToPool):
				failovers++
				if !failover || !selected[id] || before.State != fsm.HandoverStateResponder || step.Target != (Target{Pool: "pool-1"}) {
					t.Fatalf("step %d: failover of %+v to %v (failover %v, selected %v)", i, before, step.Target, failover, selected[id])
				}
				selected[id] = false // the next failover needs a new selection
			case step.Target != before.Target():
				t.Fatalf("step %d: exhaustion without fallback moved the route", i)
			}
		case op < 11: // restart: save everything, restore into a new table
			s := &MemStore{}
			if err := tb.Save(s); err != nil {
				t.Fatal(err)
			}
			fresh := NewTable()
			fresh.PoolFailover = failover
			if err := fresh.Restore(s); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if !slices.Equal(fresh.Routes(), tb.Routes()) {
				t.Fatalf("step %d: restore differs", i)
			}
			tb = fresh
		default: // the task ends
			tb.Forget(id)
			delete(fallbacks, id)
			delete(selected, id)
			continue
		}
		after, _ := tb.Route(id)
		if err := after.Check(); err != nil || after.TaskID != id {
			t.Fatalf("step %d: %v (%+v)", i, err, after)
		}
		if after.Pooled() && selected[id] && after.Target().Pool != "" {
			t.Fatalf("step %d: pooled task back on the pool after selection", i)
		}
	}
	if failover == (failovers == 0) {
		t.Fatalf("%d failovers with pool failover %v", failovers, failover)
	}
	t.Logf("%d failovers", failovers)
}
