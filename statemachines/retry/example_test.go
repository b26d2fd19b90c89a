package retry_test

import (
	"fmt"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/retry"
)

// A requester runs each operation under the retry profile: it publishes when
// told, calls Tick at Wake, and feeds the correlated replies.
func ExampleOperation() {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	noJitter := func() float64 { return 0.5 }
	op := retry.New(mqttbind.DefaultRetryProfile(), noJitter)

	show := func(d retry.Decision) {
		switch d.Action {
		case retry.ActionPublish:
			fmt.Printf("publish attempt %d to %s, wait until +%v\n", d.Attempt, d.Target.Agent, d.Wake.Sub(t0))
		case retry.ActionWait:
			fmt.Printf("wait until +%v\n", d.Wake.Sub(t0))
		default:
			fmt.Printf("over: %v\n", d.Outcome)
		}
	}
	d := op.Start(handover.Target{Agent: "agent-b"}, t0)
	show(d)
	show(op.Tick(d.Wake)) // no first reply within 15 s: back off
	d = op.Tick(t0.Add(16 * time.Second))
	show(d) // the second attempt
	show(op.Reply(retry.Reply{Kind: retry.ReplyError, Token: a2a.TokenTransportProtocolError}, t0.Add(17*time.Second)))
	// Output:
	// publish attempt 1 to agent-b, wait until +15s
	// wait until +16s
	// publish attempt 2 to agent-b, wait until +31s
	// over: failed
}
