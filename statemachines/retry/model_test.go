package retry

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/handover"
)

const modelSeed = 4444

// Seeded random operations: ticks at random moments, refused publishes,
// replies of every kind to current and earlier attempts, error tokens of
// every profile. After every call: never more than MaxAttempts publishes;
// never a publish after a stream item, after a final reply or after a
// non-retryable error; every republish follows a failed attempt by a
// backoff within the jittered range (or the agent's retryAfter); the
// operation ends when the profile is used up; Wake is set exactly while the
// operation is pending.
func TestModelRandomSequences(t *testing.T) {
	const minSteps = 10000
	t.Logf("seed %d, at least %d steps", modelSeed, minSteps)
	rng := rand.New(rand.NewPCG(modelSeed, 0))
	infos := a2a.ErrorInfos()
	steps, ops := 0, 0
	outcomes := map[Outcome]int{}
	for steps < minSteps {
		ops++
		p := mqttbind.DefaultRetryProfile()
		p.MaxAttempts = 1 + rng.IntN(4)
		op := New(p, rng.Float64)
		now := t0
		d := op.Start(handover.Target{Agent: "agent-b"}, now)
		publishes := 1
		streamed, ended := false, false
		failedAfter := 0          // the attempt that failed last
		backoffEnd := time.Time{} // when the backoff after it ends
		for !ended && steps < 10*minSteps {
			steps++
			now = now.Add(time.Duration(rng.IntN(20000)) * time.Millisecond)
			attemptsBefore := op.Attempts()
			phaseBefore := op.Phase()
			var r Reply
			switch k := rng.IntN(10); {
			case k < 5:
				d = op.Tick(now)
			case k < 6:
				d = op.Refused(now)
			default:
				r = Reply{Kind: ReplyKind(1 + rng.IntN(3)), Attempt: rng.IntN(op.Attempts() + 1)}
				if r.Kind == ReplyError {
					r.Token = infos[rng.IntN(len(infos))].Token
					r.Queued = rng.IntN(2) == 0
					if rng.IntN(4) == 0 {
						r.RetryAfter = time.Duration(rng.IntN(10)) * time.Second
					}
				}
				d = op.Reply(r, now)
			}
			if d.Action == ActionPublish {
				publishes++
				switch {
				case publishes > p.MaxAttempts:
					t.Fatalf("op %d: attempt %d of %d", ops, publishes, p.MaxAttempts)
				case streamed:
					t.Fatalf("op %d: republished after a stream item", ops)
				case failedAfter != attemptsBefore || phaseBefore != PhaseBackoff:
					t.Fatalf("op %d: republished without a failed attempt (phase %v)", ops, phaseBefore)
				}
				if now.Before(backoffEnd) {
					t.Fatalf("op %d: republished at %v before the backoff ended at %v", ops, now.Sub(t0), backoffEnd.Sub(t0))
				}
			}
			if phaseBefore == PhaseAwaiting && op.Phase() == PhaseBackoff {
				failedAfter = op.Attempts()
				base := p.RetryBackoff[min(failedAfter, len(p.RetryBackoff))-1]
				lo := time.Duration(float64(base) * (1 - p.BackoffJitter))
				hi := time.Duration(float64(base) * (1 + p.BackoffJitter))
				if r.Kind == ReplyError {
					lo, hi = max(lo, r.RetryAfter), max(hi, r.RetryAfter)
				}
				if wait := d.Wake.Sub(now); wait < lo || wait > hi {
					t.Fatalf("op %d: backoff %v outside [%v, %v]", ops, wait, lo, hi)
				}
				backoffEnd = d.Wake
			}
			if r.Kind == ReplyItem && phaseBefore != PhaseDone {
				streamed = true
			}
			if r.Kind == ReplyFinal && phaseBefore != PhaseDone && phaseBefore != PhaseIdle && d.Outcome != OutcomeReplied {
				t.Fatalf("op %d: a final reply did not end the operation: %+v", ops, d)
			}
			if r.Kind == ReplyError && phaseBefore != PhaseDone {
				if info, _ := r.Token.Info(); !info.Retryable && d.Outcome != OutcomeFailed {
					t.Fatalf("op %d: non-retryable %s did not end the operation: %+v", ops, r.Token, d)
				}
			}
			ended = op.Phase() == PhaseDone
			if ended != d.Wake.IsZero() || ended != (d.Outcome != OutcomePending) {
				t.Fatalf("op %d: phase %v with decision %+v", ops, op.Phase(), d)
			}
			if d.Outcome == OutcomeExhausted && op.Attempts() != p.MaxAttempts {
				t.Fatalf("op %d: exhausted after %d of %d attempts", ops, op.Attempts(), p.MaxAttempts)
			}
		}
		outcomes[d.Outcome]++
	}
	t.Logf("%d operations, %d steps, outcomes %v", ops, steps, outcomes)
}
