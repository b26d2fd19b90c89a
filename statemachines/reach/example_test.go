package reach_test

import (
	"fmt"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/statemachines/reach"
)

// An hourly-wake agent decides what to do with each inbound message, tries
// to enqueue the ones it may queue, and answers.
func ExampleDecide() {
	window := reach.Schedule{Period: time.Hour, Offset: 10 * time.Minute, Length: 15 * time.Minute}
	a := reach.Availability{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: &window, StoreForward: true}
	bounds := offline.DefaultQueueBounds()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

	for _, m := range []struct {
		at  time.Duration
		occ reach.Occupancy
	}{
		{12 * time.Minute, reach.Occupancy{}},                               // inside the window
		{30 * time.Minute, reach.Occupancy{Messages: 3}},                    // outside: queued
		{31 * time.Minute, reach.Occupancy{Messages: 60, PeerMessages: 50}}, // this peer's quota is used up
	} {
		d, err := reach.Decide(a, t0.Add(m.at), nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		var e reach.Enqueue
		if d.Verdict == reach.VerdictQueue {
			ok, kind := reach.Fits(bounds, m.occ, 512)
			e = reach.Enqueue{Stored: ok, Full: kind} // a real agent stores the record here
		}
		r := reach.Respond(d, e)
		if r.Live {
			fmt.Printf("+%v: %v\n", m.at, d.Verdict)
			continue
		}
		fmt.Printf("+%v: %v -> %d %s queued=%v", m.at, d.Verdict, r.HTTPStatus, r.Token, r.Queued)
		if r.HasRetryAfter {
			fmt.Printf(" retryAfterSec=%d", r.RetryAfterSec)
		}
		if r.Kind != "" {
			fmt.Printf(" kind=%s", r.Kind)
		}
		fmt.Println()
	}
	// Output:
	// +12m0s: accept
	// +30m0s: queue -> 503 agent_asleep queued=true retryAfterSec=2400
	// +31m0s: queue -> 429 asleep_queue_full queued=false kind=peer
}
