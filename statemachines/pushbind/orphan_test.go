package pushbind

import (
	"errors"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

const taskT = "6f1c9a2e-3b7d-4c1e-9f2a-8b5d4e3c2a10"

// server is the task as the agent runs it: the state it enters at each time.
type server []struct {
	at    time.Duration
	state a2a.TaskState
}

// at returns the task's status at now and when it was reached.
func (s server) at(now time.Time) (a2a.TaskState, time.Time) {
	st, ts := a2a.TaskStateSubmitted, t0
	for _, c := range s {
		if t0.Add(c.at).After(now) {
			break
		}
		st, ts = c.state, t0.Add(c.at)
	}
	return st, ts
}

// completesAt400 is the long-running task of docs/protocol.md §8.5, mode 1:
// working at once, done after 400 s.
var completesAt400 = server{{1 * time.Second, a2a.TaskStateWorking}, {400 * time.Second, a2a.TaskStateCompleted}}

// follow plays a client that does what the binding asks: it calls Tick at
// every Wake and polls whenever a decision says PollNow, until the binding
// ends or until passes. It returns every decision.
func follow(t *testing.T, b *Binding, srv server, from time.Time, until time.Duration) []Decision {
	t.Helper()
	var out []Decision
	poll := func(now time.Time) Decision {
		st, ts := srv.at(now)
		d, err := b.Polled(st, ts, now.Add(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
		return d
	}
	wake := b.NextPoll()
	if w := b.WindowDeadline(); !w.IsZero() && w.Before(wake) {
		wake = w
	}
	if wake.Before(from) {
		wake = from
	}
	for !b.State().IsEnded() && wake.Before(t0.Add(until)) {
		d, err := b.Tick(wake)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
		if d.Outputs.Has(fsm.PushBindingOutputPollNow) {
			d = poll(wake)
		}
		wake = d.Wake()
	}
	return out
}

func mustDecide(t *testing.T) func(Decision, error) Decision {
	return func(d Decision, err error) Decision {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

func anyOrphan(ds []Decision) bool {
	for _, d := range ds {
		if d.Orphaned() {
			return true
		}
	}
	return false
}

func checkOrphan(t *testing.T, b *Binding, d Decision, via fsm.PushBindingState) {
	t.Helper()
	var oe *OrphanError
	err := b.Err()
	if !d.Orphaned() || b.State() != fsm.PushBindingStateOrphaned || !errors.Is(err, ErrTaskOrphaned) || !errors.As(err, &oe) || oe.Via != via || oe.TaskID != taskT {
		t.Fatalf("orphan not reported: decision %v, state %v, err %v", d.Outputs.List(), b.State(), err)
	}
}

// docs/protocol.md §8.5: the three ways to orphan a task. Each subtest
// plays the client as §8.5 describes it and shows the binding catching
// the orphan, then plays a client that follows the binding's decisions and
// shows that nothing is orphaned.
func TestOrphaningModes(t *testing.T) {
	cfg := DefaultConfig()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	t.Run("mode 1: card flag only, no registration, sparse polling", func(t *testing.T) {
		b := New(taskT, cfg, t0)
		d := mustDecide(t)(b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, t0))
		if b.State() != fsm.PushBindingStateUnbound || !d.Outputs.Has(fsm.PushBindingOutputRegisterWithSend) || !d.Outputs.Has(fsm.PushBindingOutputPollPrimary) {
			t.Fatalf("the card flag must not bind: %v %v", b.State(), d.Outputs.List())
		}
		if d.NextPoll != at(15) {
			t.Fatalf("the binding asked to poll at %v", d.NextPoll)
		}
		// As observed: no set was issued; the client polls every 300 s.
		mustDecide(t)(b.Polled(a2a.TaskStateWorking, at(1), at(300)))
		d = mustDecide(t)(b.Polled(a2a.TaskStateCompleted, at(400), at(600)))
		checkOrphan(t, &b, d, fsm.PushBindingStateUnbound)

		// Following the binding: polls every 15 s find the task in time.
		b = New(taskT, cfg, t0)
		mustDecide(t)(b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, t0))
		if ds := follow(t, &b, completesAt400, t0, time.Hour); anyOrphan(ds) || b.State() != fsm.PushBindingStateSettled {
			t.Fatalf("followed: %v", b.State())
		}
	})

	t.Run("mode 2: registration race, set after the task left SUBMITTED", func(t *testing.T) {
		b := New(taskT, cfg, t0)
		mustDecide(t)(b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, t0))
		// Submitted at t0, working at 1 s (its only progress push went
		// nowhere), the set accepted at 2 s.
		d := mustDecide(t)(b.Registered(true, at(2)))
		if b.State() != fsm.PushBindingStateSuspect || !d.Outputs.Has(fsm.PushBindingOutputWarnLateBinding) || !d.Outputs.Has(fsm.PushBindingOutputPollNow) || !b.PollPrimary() {
			t.Fatalf("late registration not caught: %v %v", b.State(), d.Outputs.List())
		}
		// As observed: the client treats the task as monitored and waits.
		d = mustDecide(t)(b.Polled(a2a.TaskStateCompleted, at(400), at(900)))
		checkOrphan(t, &b, d, fsm.PushBindingStateSuspect)

		// Following the binding: the immediate poll recovers the missed
		// transition and polling stays primary until the end.
		b = New(taskT, cfg, t0)
		mustDecide(t)(b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, t0))
		mustDecide(t)(b.Registered(true, at(2)))
		mustDecide(t)(b.Polled(a2a.TaskStateWorking, at(1), at(2)))
		if ds := follow(t, &b, completesAt400, at(2), time.Hour); anyOrphan(ds) || b.State() != fsm.PushBindingStateSettled {
			t.Fatalf("followed: %v", b.State())
		}

		// Registering with the send instead binds in time and is verified.
		b = New(taskT, cfg, t0)
		mustDecide(t)(b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, t0))
		mustDecide(t)(b.Registered(false, t0))
		mustDecide(t)(b.Receiver(200, a2a.TaskStateWorking, at(1)))
		if b.State() != fsm.PushBindingStateAcknowledged || b.PollPrimary() {
			t.Fatalf("in-time binding: %v", b.State())
		}
		d = mustDecide(t)(b.Receiver(204, a2a.TaskStateCompleted, at(100)))
		if b.State() != fsm.PushBindingStateSettled || !d.Outputs.Has(fsm.PushBindingOutputRelease) {
			t.Fatalf("terminal push: %v %v", b.State(), d.Outputs.List())
		}
	})

	t.Run("mode 3: terminal-state delivery gap, receiver answered 410", func(t *testing.T) {
		start := func() Binding {
			b := New(taskT, cfg, t0)
			mustDecide(t)(b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, t0))
			mustDecide(t)(b.Registered(false, t0))
			mustDecide(t)(b.Receiver(200, a2a.TaskStateWorking, at(5)))
			return b
		}
		b := start()
		d := mustDecide(t)(b.Receiver(410, a2a.TaskStateFailed, at(30)))
		for _, o := range []fsm.PushBindingOutput{fsm.PushBindingOutputRaiseBindingDead, fsm.PushBindingOutputPollNow, fsm.PushBindingOutputPollPrimary, fsm.PushBindingOutputReRegister} {
			if !d.Outputs.Has(o) {
				t.Fatalf("410: %v lacks %v", d.Outputs.List(), o)
			}
		}
		// As observed: GetTask had been disabled once the webhook worked.
		d = mustDecide(t)(b.Polled(a2a.TaskStateFailed, at(30), at(900)))
		checkOrphan(t, &b, d, fsm.PushBindingStateDead)

		// Following the binding: the audit poll right after the 410 finds
		// the terminal state at once.
		b = start()
		mustDecide(t)(b.Receiver(410, a2a.TaskStateFailed, at(30)))
		if d := mustDecide(t)(b.Polled(a2a.TaskStateFailed, at(30), at(31))); d.Orphaned() || b.State() != fsm.PushBindingStateSettled {
			t.Fatalf("followed: %v", b.State())
		}
	})
}

// The expected transition window: a webhook that acknowledges nothing in
// time is suspect, and a poll after the window is not saved by a stale
// acknowledgement.
func TestWindowMakesWebhookSuspect(t *testing.T) {
	cfg := DefaultConfig()
	b := New(taskT, cfg, t0)
	mustDecide(t)(b.Registered(false, t0))
	if b.WindowDeadline() != t0.Add(cfg.Window) {
		t.Fatalf("window %v", b.WindowDeadline())
	}
	d := mustDecide(t)(b.Tick(t0.Add(cfg.Window)))
	if b.State() != fsm.PushBindingStateSuspect || !d.Outputs.Has(fsm.PushBindingOutputReRegister) || !d.Outputs.Has(fsm.PushBindingOutputPollNow) {
		t.Fatalf("registered, window elapsed: %v %v", b.State(), d.Outputs.List())
	}

	// An acknowledged webhook that falls silent: the caller's timer is late,
	// and the terminal state is found by a poll long after the window.
	b = New(taskT, cfg, t0)
	mustDecide(t)(b.Registered(false, t0))
	mustDecide(t)(b.Receiver(200, a2a.TaskStateWorking, t0.Add(time.Second)))
	d = mustDecide(t)(b.Polled(a2a.TaskStateCompleted, t0.Add(5*time.Minute), t0.Add(10*time.Minute)))
	if got := d.Events(); len(got) != 2 || got[0] != fsm.PushBindingEventWindowElapsed {
		t.Fatalf("events %v", got)
	}
	checkOrphan(t, &b, d, fsm.PushBindingStateSuspect)
}

// A poll that shows a transition the receiver never acknowledged makes a
// trusted webhook suspect and asks to register again.
func TestPushMissed(t *testing.T) {
	cfg := DefaultConfig()
	b := New(taskT, cfg, t0)
	mustDecide(t)(b.Registered(false, t0))
	mustDecide(t)(b.Receiver(200, a2a.TaskStateWorking, t0.Add(time.Second)))
	// Within the grace: the push may still be on its way.
	if mustDecide(t)(b.Polled(a2a.TaskStateInputRequired, t0.Add(55*time.Second), t0.Add(60*time.Second))); b.State() != fsm.PushBindingStateAcknowledged {
		t.Fatalf("within grace: %v", b.State())
	}
	d := mustDecide(t)(b.Polled(a2a.TaskStateInputRequired, t0.Add(55*time.Second), t0.Add(90*time.Second)))
	if b.State() != fsm.PushBindingStateSuspect || !d.Outputs.Has(fsm.PushBindingOutputReRegister) {
		t.Fatalf("missed push: %v %v", b.State(), d.Outputs.List())
	}
}

func TestConfigCheck(t *testing.T) {
	if err := DefaultConfig().Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{},
		{Window: time.Minute, PollInterval: time.Minute, ReconcileInterval: time.Second},
		{Window: time.Minute, PollInterval: time.Second, ReconcileInterval: time.Minute, Grace: -1},
	} {
		if c.Check() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
