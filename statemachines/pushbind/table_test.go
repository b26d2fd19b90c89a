package pushbind

import (
	"errors"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func guardSets() []fsm.PushBindingGuardSet {
	n := len(fsm.PushBindingGuards())
	out := make([]fsm.PushBindingGuardSet, 0, 1<<n)
	for m := range 1 << n {
		out = append(out, fsm.PushBindingGuardSet(m))
	}
	return out
}

// tableLookup reads the row for (from, ev) with the guards held from
// PushBindingTable in table order, independently of PushBindingStep.
func tableLookup(from fsm.PushBindingState, ev fsm.PushBindingEvent, held fsm.PushBindingGuardSet) (fsm.PushBindingTransition, bool) {
	for _, r := range fsm.PushBindingTable() {
		if r.From == from && r.Event == ev && (r.Guard == fsm.PushBindingGuardNone || held.Has(r.Guard)) {
			return r, true
		}
	}
	return fsm.PushBindingTransition{}, false
}

// Every state × every event × every guard set, through the binding's own
// step: a defined transition goes where the table says; an undefined one is
// a *fsm.TransitionError and leaves the binding unchanged.
func TestFireMatchesTable(t *testing.T) {
	for _, s := range fsm.PushBindingStates() {
		for _, ev := range fsm.PushBindingEvents() {
			for _, held := range guardSets() {
				want, defined := tableLookup(s, ev, held)
				b := New("t", DefaultConfig(), t0)
				b.state = s
				var d Decision
				err := b.fire(&d, ev, held, t0)
				var te *fsm.TransitionError
				switch {
				case defined && (err != nil || b.state != want.To || d.Outputs != want.Outputs):
					t.Errorf("%v + %v %v: got %v %v, %v; table says %+v", s, ev, held.List(), b.state, d.Outputs.List(), err, want)
				case !defined && (!errors.As(err, &te) || b.state != s):
					t.Errorf("%v + %v %v: undefined, got %v, %v", s, ev, held.List(), b.state, err)
				}
			}
		}
	}
}

// The ended states are absorbing and total: every event is accepted there
// and ignored (the table change that made CapabilityRead and
// ConfigRegistered self-loops too).
func TestEndedStatesAbsorbEveryEvent(t *testing.T) {
	for _, s := range []fsm.PushBindingState{fsm.PushBindingStateSettled, fsm.PushBindingStateOrphaned} {
		for _, ev := range fsm.PushBindingEvents() {
			tr, err := fsm.PushBindingStep(s, ev, 0)
			if err != nil || tr.To != s || tr.Outputs != 0 {
				t.Errorf("%v + %v: %+v, %v", s, ev, tr, err)
			}
		}
	}
}

// Every state × every kind of call, through the Binding's methods, with the
// guards the handwritten code evaluates from times and status codes: the
// binding lands where the table says.
func TestMethodsFollowTable(t *testing.T) {
	cfg := DefaultConfig()
	now := t0.Add(time.Hour)
	type call struct {
		name string
		ev   fsm.PushBindingEvent
		held fsm.PushBindingGuardSet
		do   func(*Binding) (Decision, error)
	}
	g := func(gs ...fsm.PushBindingGuard) fsm.PushBindingGuardSet {
		var s fsm.PushBindingGuardSet
		for _, x := range gs {
			s = s.With(x)
		}
		return s
	}
	calls := []call{
		{"card allows push", fsm.PushBindingEventCapabilityRead, g(fsm.PushBindingGuardWebhookAvailable), func(b *Binding) (Decision, error) {
			return b.CapabilityRead(Capability{PushNotifications: true, Receiver: true}, now)
		}},
		{"card allows push, no receiver", fsm.PushBindingEventCapabilityRead, 0, func(b *Binding) (Decision, error) {
			return b.CapabilityRead(Capability{PushNotifications: true, Receiver: false}, now)
		}},
		{"card forbids push", fsm.PushBindingEventCapabilityRead, 0, func(b *Binding) (Decision, error) {
			return b.CapabilityRead(Capability{PushNotifications: false, Receiver: true}, now)
		}},
		{"registered in time", fsm.PushBindingEventConfigRegistered, 0, func(b *Binding) (Decision, error) { return b.Registered(false, now) }},
		{"registered late", fsm.PushBindingEventConfigRegisteredLate, 0, func(b *Binding) (Decision, error) { return b.Registered(true, now) }},
		{"receiver 200", fsm.PushBindingEventReceiver2xx, 0, func(b *Binding) (Decision, error) { return b.Receiver(200, a2a.TaskStateWorking, now) }},
		{"receiver 204 for a terminal push", fsm.PushBindingEventTerminalObserved, 0, func(b *Binding) (Decision, error) { return b.Receiver(204, a2a.TaskStateFailed, now) }},
		{"receiver 404", fsm.PushBindingEventReceiver404, 0, func(b *Binding) (Decision, error) { return b.Receiver(404, a2a.TaskStateWorking, now) }},
		{"receiver 410", fsm.PushBindingEventReceiver410, 0, func(b *Binding) (Decision, error) { return b.Receiver(410, a2a.TaskStateFailed, now) }},
		{"receiver 403", fsm.PushBindingEventReceiverOther, g(fsm.PushBindingGuardClientError), func(b *Binding) (Decision, error) { return b.Receiver(403, a2a.TaskStateWorking, now) }},
		{"receiver 503", fsm.PushBindingEventReceiverOther, 0, func(b *Binding) (Decision, error) { return b.Receiver(503, a2a.TaskStateWorking, now) }},
		{"receiver silent", fsm.PushBindingEventReceiverOther, 0, func(b *Binding) (Decision, error) { return b.Receiver(0, a2a.TaskStateWorking, now) }},
		{"reconcile timer", fsm.PushBindingEventReconcileTick, 0, func(b *Binding) (Decision, error) { return b.Tick(now) }},
		{"poll, nothing missed", fsm.PushBindingEventPollResult, 0, func(b *Binding) (Decision, error) { return b.Polled(a2a.TaskStateWorking, now, now) }},
		{"poll, a push missed", fsm.PushBindingEventPollResult, g(fsm.PushBindingGuardPushMissed), func(b *Binding) (Decision, error) {
			return b.Polled(a2a.TaskStateInputRequired, now.Add(-time.Minute), now)
		}},
		{"poll finds terminal, polling fresh", fsm.PushBindingEventPollTerminal, g(fsm.PushBindingGuardPollingLive), func(b *Binding) (Decision, error) {
			b.lastPoll = now.Add(-cfg.PollInterval)
			return b.Polled(a2a.TaskStateCompleted, time.Time{}, now)
		}},
		{"poll finds terminal, polling lapsed", fsm.PushBindingEventPollTerminal, 0, func(b *Binding) (Decision, error) {
			b.lastPoll = now.Add(-time.Hour)
			return b.Polled(a2a.TaskStateCompleted, now.Add(-10*time.Minute), now)
		}},
		{"stream delivered the terminal state", fsm.PushBindingEventTerminalObserved, 0, func(b *Binding) (Decision, error) { return b.Observed(now) }},
	}
	for _, s := range fsm.PushBindingStates() {
		for _, c := range calls {
			t.Run(s.String()+"/"+c.name, func(t *testing.T) {
				b := New("t", cfg, now.Add(-time.Hour))
				b.state = s
				b.pollPrimary = true
				b.lastAckState = fsm.TaskStateWorking
				want, defined := tableLookup(s, c.ev, c.held)
				d, err := c.do(&b)
				if !defined {
					t.Fatalf("the method reached an undefined transition: %v, %v", d, err)
				}
				if err != nil || d.To != want.To || b.State() != want.To {
					t.Fatalf("got %+v, %v; table says %+v", d, err, want)
				}
				switch got := d.Events(); {
				case c.ev == fsm.PushBindingEventReconcileTick && s.IsEnded():
					if len(got) != 0 {
						t.Errorf("the timer fired after the end: %v", got)
					}
				case len(got) != 1 || got[0] != c.ev:
					t.Errorf("events %v, want [%v]", got, c.ev)
				}
				if !want.To.IsEnded() && d.Outputs != want.Outputs {
					t.Errorf("outputs %v, table says %v", d.Outputs.List(), want.Outputs.List())
				}
				if want.To.IsEnded() != d.NextPoll.IsZero() {
					t.Errorf("NextPoll %v in %v", d.NextPoll, want.To)
				}
				if (want.To == fsm.PushBindingStateOrphaned) != (b.Err() != nil) {
					t.Errorf("Err %v in %v", b.Err(), want.To)
				}
			})
		}
	}
}
