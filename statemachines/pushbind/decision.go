package pushbind

import (
	"time"

	"github.com/a2abind/a2abind/generated/fsm"
)

// maxFired bounds the table events one call applies: an elapsed window,
// then the call's own event or the reconciliation timer.
const maxFired = 2

// Decision is what one call did and what the caller does next.
type Decision struct {
	// From and To are the binding's states before and after the call.
	From, To fsm.PushBindingState
	// Outputs are the decisions to act on, merged over the events the call
	// applied (a later PollPrimary or KeepWebhookPrimary replaces an earlier
	// one; once the binding has ended only the reports and Release remain):
	// RegisterWithSend, KeepWebhookPrimary, PollPrimary, PollNow, ReRegister,
	// WarnLateBinding, RaiseBindingDead, RaiseOrphaned and Release.
	Outputs fsm.PushBindingOutputSet
	// NextPoll is when the reconciliation timer fires next (zero once ended).
	NextPoll time.Time
	// WindowDeadline is when the expected transition window runs out (zero
	// when none runs).
	WindowDeadline time.Time

	fired  [maxFired]fsm.PushBindingEvent
	nfired uint8
}

// Events returns the table events the call applied, in order: possibly
// WindowElapsed first, then the call's own.
func (d Decision) Events() []fsm.PushBindingEvent {
	return append([]fsm.PushBindingEvent(nil), d.fired[:d.nfired]...)
}

// Orphaned reports whether this call found the task orphaned: surface it as
// an error (Binding.Err), never silently.
func (d Decision) Orphaned() bool { return d.Outputs.Has(fsm.PushBindingOutputRaiseOrphaned) }

// Wake returns when the caller must call Tick next: the earlier of NextPoll
// and WindowDeadline, or the zero time once the binding has ended.
func (d Decision) Wake() time.Time {
	switch {
	case d.WindowDeadline.IsZero():
		return d.NextPoll
	case d.NextPoll.IsZero() || d.WindowDeadline.Before(d.NextPoll):
		return d.WindowDeadline
	}
	return d.NextPoll
}

// endedMask keeps, once the binding has ended, the outputs that still mean
// something: the reports and Release.
const endedMask = fsm.PushBindingOutputSet(0) |
	1<<(fsm.PushBindingOutputWarnLateBinding-1) |
	1<<(fsm.PushBindingOutputRaiseBindingDead-1) |
	1<<(fsm.PushBindingOutputRaiseOrphaned-1) |
	1<<(fsm.PushBindingOutputRelease-1)

// begin starts a call: it applies an expected transition window that ran
// out before now.
func (b *Binding) begin(now time.Time) Decision {
	d := Decision{From: b.state}
	if dl := b.WindowDeadline(); !dl.IsZero() && !now.Before(dl) {
		// Defined in Registered and Acknowledged, the only states with a window.
		_ = b.fire(&d, fsm.PushBindingEventWindowElapsed, 0, now)
	}
	return d
}

// fire applies one table event and its outputs' effects on the timers.
func (b *Binding) fire(d *Decision, ev fsm.PushBindingEvent, held fsm.PushBindingGuardSet, now time.Time) error {
	from := b.state
	tr, err := fsm.PushBindingStep(from, ev, held)
	if err != nil {
		return err
	}
	b.state = tr.To
	out := tr.Outputs
	if out.Has(fsm.PushBindingOutputKeepWebhookPrimary) {
		b.pollPrimary = false
		b.window = now.Add(b.cfg.Window)
		d.Outputs &^= 1 << (fsm.PushBindingOutputPollPrimary - 1)
	}
	if out.Has(fsm.PushBindingOutputPollPrimary) {
		b.pollPrimary = true
		d.Outputs &^= 1 << (fsm.PushBindingOutputKeepWebhookPrimary - 1)
	}
	if out.Has(fsm.PushBindingOutputPollNow) {
		b.lastIssued = now
	}
	if ev == fsm.PushBindingEventWindowElapsed {
		b.window = time.Time{}
	}
	if tr.To == fsm.PushBindingStateOrphaned && from != fsm.PushBindingStateOrphaned {
		b.via = from
	}
	d.Outputs |= out
	if int(d.nfired) < maxFired {
		d.fired[d.nfired] = ev
		d.nfired++
	}
	return nil
}

// finish completes a call's decision.
func (b *Binding) finish(d Decision, err error) (Decision, error) {
	d.To = b.state
	if b.state.IsEnded() {
		d.Outputs &= endedMask
	}
	d.NextPoll = b.NextPoll()
	d.WindowDeadline = b.WindowDeadline()
	return d, err
}
