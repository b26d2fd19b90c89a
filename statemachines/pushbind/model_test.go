package pushbind

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

const modelSeed = 2002

// Seeded random runs: an agent moves a task through random statuses to a
// random terminal one; the client reads the card, registers in time, late
// or never; its receiver answers pushes 2xx, 404, 410, 5xx or not at all;
// the client follows the binding's PollNow and timers with a diligence drawn
// per run, sometimes late, sometimes never. After every call the invariants
// are checked: the ended states are absorbing; RaiseOrphaned comes exactly
// with the move into Orphaned, once; a terminal state found by polling
// settles the binding only when it was found within one reconciliation
// interval (plus grace) of being reached or a webhook acknowledged within the
// window, and orphans it when it was found later than the longest interval
// allows; once the terminal state is found the binding has ended; the
// reconciliation timer runs until then; Err reports exactly the orphans.
func TestModelRandomSequences(t *testing.T) {
	const minSteps = 10000
	t.Logf("seed %d, at least %d steps", modelSeed, minSteps)
	rng := rand.New(rand.NewPCG(modelSeed, 0))
	cfg := DefaultConfig()
	steps, runs, orphans := 0, 0, 0
	for steps < minSteps {
		runs++
		steps += modelRun(t, rng, cfg, runs, &orphans)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d runs, %d steps, %d orphans reported", runs, steps, orphans)
	if orphans == 0 || orphans == runs {
		t.Errorf("the runs never (or always) orphan: the model explores too little")
	}
}

func modelRun(t *testing.T, rng *rand.Rand, cfg Config, run int, orphans *int) int {
	// The agent's task: a few live statuses, then a terminal one.
	live := []a2a.TaskState{a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateWorking, a2a.TaskStateAuthRequired}
	final := []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected}
	var srv server
	at := time.Duration(0)
	for range rng.IntN(4) {
		at += time.Duration(1+rng.IntN(200)) * time.Second
		srv = append(srv, struct {
			at    time.Duration
			state a2a.TaskState
		}{at, live[rng.IntN(len(live))]})
	}
	at += time.Duration(1+rng.IntN(600)) * time.Second
	terminalAt := t0.Add(at)
	srv = append(srv, struct {
		at    time.Duration
		state a2a.TaskState
	}{at, final[rng.IntN(len(final))]})

	diligence := rng.Float64() // chance that the client does what it is asked
	registerAt := time.Duration(-1)
	switch rng.IntN(3) {
	case 0:
		registerAt = 0
	case 1:
		registerAt = time.Duration(rng.IntN(300)) * time.Second
	}

	b := New(taskT, cfg, t0)
	steps := 0
	var lastAck time.Time
	ackValid := false // the receiver's acknowledgements still count (no failure since)
	found := false
	check := func(name string, now time.Time, before fsm.PushBindingState, d Decision, err error) {
		steps++
		if err != nil {
			t.Fatalf("run %d, %s at %v: %v", run, name, now.Sub(t0), err)
		}
		switch {
		case before.IsEnded() && d.To != before:
			t.Fatalf("run %d, %s: left ended state %v for %v", run, name, before, d.To)
		case d.Orphaned() != (d.To == fsm.PushBindingStateOrphaned && before != fsm.PushBindingStateOrphaned):
			t.Fatalf("run %d, %s: RaiseOrphaned %v on %v -> %v", run, name, d.Orphaned(), before, d.To)
		case d.To.IsEnded() != d.NextPoll.IsZero():
			t.Fatalf("run %d, %s: reconciliation timer %v in %v", run, name, d.NextPoll, d.To)
		case (b.Err() != nil) != (b.State() == fsm.PushBindingStateOrphaned):
			t.Fatalf("run %d, %s: Err %v in %v", run, name, b.Err(), b.State())
		}
		if d.Orphaned() {
			*orphans++
		}
	}
	prevPoll := time.Time{}
	poll := func(now time.Time) {
		st, ts := srv.at(now)
		before := b.State()
		d, err := b.Polled(st, ts, now)
		check("poll", now, before, d, err)
		if terminal(st) && !before.IsEnded() {
			found = true
			if !d.To.IsEnded() {
				t.Fatalf("run %d: terminal state found, binding still %v", run, d.To)
			}
			reached := ts
			if reached.Before(prevPoll) {
				reached = prevPoll
			}
			onSchedule := now.Sub(reached) <= cfg.PollInterval+cfg.Grace
			lapsed := now.Sub(reached) > cfg.ReconcileInterval+cfg.Grace
			hookLive := ackValid && now.Sub(lastAck) < cfg.Window
			switch {
			case d.To == fsm.PushBindingStateSettled && lapsed && !hookLive:
				t.Fatalf("run %d: settled although found %v after the terminal state with no live webhook", run, now.Sub(reached))
			case d.To == fsm.PushBindingStateOrphaned && onSchedule:
				t.Fatalf("run %d: orphaned although found %v after the terminal state (via %v)", run, now.Sub(reached), before)
			}
		}
		prevPoll = now
	}

	now := t0
	if rng.IntN(2) == 0 {
		d, err := b.CapabilityRead(Capability{PushNotifications: rng.IntN(3) != 0, Receiver: true}, now)
		check("card", now, fsm.PushBindingStateUnbound, d, err)
	}
	registered := false
	pushed := 0 // statuses pushed so far
	for !b.State().IsEnded() && now.Before(terminalAt.Add(2*time.Hour)) {
		// Next moment: the binding's wake, the next status change, the
		// registration, or a spontaneous poll.
		wake := b.NextPoll()
		if w := b.WindowDeadline(); !w.IsZero() && w.Before(wake) {
			wake = w
		}
		if rng.Float64() > diligence {
			wake = wake.Add(time.Duration(rng.IntN(900)) * time.Second) // late, or never on time
		}
		next := wake
		if pushed < len(srv) && t0.Add(srv[pushed].at).Before(next) {
			next = t0.Add(srv[pushed].at)
		}
		if !registered && registerAt >= 0 && t0.Add(registerAt).Before(next) {
			next = t0.Add(registerAt)
		}
		if !next.After(now) {
			next = now.Add(time.Millisecond)
		}
		now = next
		switch {
		case !registered && registerAt >= 0 && !t0.Add(registerAt).After(now):
			registered = true
			late := registerAt > 0 && !t0.Add(srv[0].at).After(t0.Add(registerAt))
			before := b.State()
			d, err := b.Registered(late, now)
			check("register", now, before, d, err)
			if d.Outputs.Has(fsm.PushBindingOutputPollNow) && rng.Float64() < diligence {
				poll(now)
			}
		case pushed < len(srv) && !t0.Add(srv[pushed].at).After(now):
			st := srv[pushed].state
			pushed++
			if !registered {
				continue
			}
			codes := []int{200, 200, 200, 204, 404, 410, 400, 500, 0}
			code := codes[rng.IntN(len(codes))]
			before := b.State()
			d, err := b.Receiver(code, st, now)
			check("push", now, before, d, err)
			switch {
			case code >= 200 && code < 300:
				if !before.IsEnded() {
					lastAck, ackValid = now, true
				}
				if st == srv[len(srv)-1].state && pushed == len(srv) {
					found = true
				}
			default:
				ackValid = false
			}
			if d.Outputs.Has(fsm.PushBindingOutputPollNow) && rng.Float64() < diligence {
				poll(now)
			}
		default:
			before := b.State()
			d, err := b.Tick(now)
			check("tick", now, before, d, err)
			if d.Outputs.Has(fsm.PushBindingOutputPollNow) || rng.IntN(10) == 0 {
				poll(now)
			}
		}
	}
	if found && !b.State().IsEnded() {
		t.Fatalf("run %d: the terminal state reached the client but the binding is %v", run, b.State())
	}
	return steps
}

func terminal(s a2a.TaskState) bool {
	st, _ := fsm.TaskStateFromWire(string(s))
	return st.Terminal()
}
