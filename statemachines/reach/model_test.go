package reach

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
)

const modelSeed = 1001

// Seeded random messages against random availabilities, queue states and
// enqueue outcomes: a response never claims queued unless Decide said to
// queue and the record was stored; agent_asleep never answers a failed
// enqueue; SessionOnly never queues; AlwaysAvailable always accepts;
// PeriodicallyAvailable accepts exactly inside its window; a retryAfterSec
// always lands inside a window; the HTTP status follows the token and kind.
func TestModelRandomSequences(t *testing.T) {
	const steps = 10000
	t.Logf("seed %d, %d steps", modelSeed, steps)
	rng := rand.New(rand.NewPCG(modelSeed, 0))
	modes := offline.ReachabilityModeValues()
	bounds := offline.DefaultQueueBounds()
	now := t0
	tally := map[string]int{}
	for i := range steps {
		now = now.Add(time.Duration(rng.IntN(3600)) * time.Second)
		s := HourlyWake("agent-"+string(rune('a'+rng.IntN(26))), time.Duration(1+rng.IntN(30))*time.Minute, 20*time.Minute)
		a := Availability{
			Mode:          modes[rng.IntN(len(modes))],
			SessionActive: rng.IntN(2) == 0,
			StoreForward:  rng.IntN(3) != 0,
			RetrySpread:   time.Duration(rng.IntN(5)) * time.Minute,
		}
		if a.Mode == offline.ReachabilityModePeriodicallyAvailable || rng.IntN(2) == 0 {
			a.Schedule = &s
		}
		d, err := Decide(a, now, rng.Float64)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		occ := Occupancy{Messages: rng.IntN(bounds.MaxMessages + 2), Bytes: rng.Int64N(bounds.MaxBytes + 2), PeerMessages: rng.IntN(bounds.MaxPerPeer + 2)}
		var e Enqueue
		if d.Verdict == VerdictQueue {
			ok, kind := Fits(bounds, occ, rng.Int64N(4096))
			e = Enqueue{Stored: ok && rng.IntN(20) != 0, Full: kind} // storage sometimes fails on its own
		} else if rng.IntN(5) == 0 {
			e = Enqueue{Stored: true} // a caller that stores what it must not
		}
		r := Respond(d, e)
		tally[d.Verdict.String()+"/"+string(r.Token)]++
		switch {
		case r.Queued && (d.Verdict != VerdictQueue || !e.Stored):
			t.Fatalf("step %d: queued claimed for %v with %+v", i, d.Verdict, e)
		case r.Token == a2a.TokenAgentAsleep && d.Verdict == VerdictQueue && !e.Stored:
			t.Fatalf("step %d: agent_asleep for a failed enqueue", i)
		case a.Mode == offline.ReachabilityModeSessionOnly && d.Verdict == VerdictQueue:
			t.Fatalf("step %d: SessionOnly queued", i)
		case a.Mode == offline.ReachabilityModeAlwaysAvailable && !r.Live:
			t.Fatalf("step %d: AlwaysAvailable refused", i)
		case a.Mode == offline.ReachabilityModePeriodicallyAvailable && (d.Verdict == VerdictAccept) != s.Open(now):
			t.Fatalf("step %d: hourly_wake %v with window open %v", i, d.Verdict, s.Open(now))
		case a.Mode == offline.ReachabilityModeUnavailableStoreForward && d.Verdict == VerdictAccept:
			t.Fatalf("step %d: sleep accepted live", i)
		case d.HasRetryAfter && (d.RetryAfterSec < 0 || !a.Schedule.Open(now.Add(time.Duration(d.RetryAfterSec)*time.Second))) && a.Mode == offline.ReachabilityModePeriodicallyAvailable:
			t.Fatalf("step %d: retryAfterSec %d lands outside a window", i, d.RetryAfterSec)
		case r.Live != (d.Verdict == VerdictAccept):
			t.Fatalf("step %d: live %v for %v", i, r.Live, d.Verdict)
		}
		want := map[a2a.Token]int{a2a.TokenAgentAsleep: 503, a2a.TokenInternalError: 500, "": 0}[r.Token]
		if r.Token == a2a.TokenAsleepQueueFull {
			want = map[offline.QueueFullKind]int{offline.QueueFullKindMessages: 507, offline.QueueFullKindBytes: 507, offline.QueueFullKindPeer: 429}[r.Kind]
		}
		if r.HTTPStatus != want {
			t.Fatalf("step %d: status %d for %s/%s", i, r.HTTPStatus, r.Token, r.Kind)
		}
	}
	t.Logf("verdict/token: %v", tally)
}
