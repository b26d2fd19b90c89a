package handover_test

import (
	"fmt"

	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// A requester records where each task's operations go, follows the
// a2a-responder-agent-id of every reply, and saves a route whenever the step
// asks for it.
func ExampleTable_Reply() {
	const taskID = "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10"
	routes := handover.NewTable()
	store := &handover.MemStore{}

	show := func(s handover.Step, err error) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if s.Outputs.Has(fsm.HandoverOutputPersistRoute) {
			r, _ := routes.Route(taskID)
			_ = store.SaveRoute(r)
		}
		fmt.Printf("%v -> %v: next operation to %v %v\n", s.From, s.To, s.Target, s.Outputs.List())
	}
	show(routes.Start(taskID, "agent-b"))                      // first request to the card agent
	show(routes.Reply(taskID, []string{"agent-c"}))            // B hands the task over to C
	show(routes.Reply(taskID, nil))                            // no property: no change
	show(routes.Exhausted(taskID))                             // C unreachable: back to B, once
	show(routes.Reply(taskID, []string{"agent-c", "agent-d"})) // two different ids

	restarted := handover.NewTable()
	_ = restarted.Restore(store)
	target, _ := restarted.Target(taskID)
	fmt.Println("after a restart:", target)
	// Output:
	// Unrouted -> CardAgent: next operation to agent/agent-b [SetTarget PersistRoute]
	// CardAgent -> Responder: next operation to agent/agent-c [SetTarget PersistRoute]
	// Responder -> Responder: next operation to agent/agent-c []
	// Responder -> FallenBack: next operation to agent/agent-b [PersistRoute FallBackToCardAgent]
	// FallenBack -> FallenBack: next operation to agent/agent-b [ProtocolError]
	// after a restart: agent/agent-b
}
