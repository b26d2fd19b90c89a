package retry

import (
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/statemachines/handover"
)

// Operation is one logical operation under the retry profile. Create it with
// New; it is a small value that holds no goroutine or timer. It is not safe
// for concurrent use.
type Operation struct {
	profile   mqttbind.RetryProfile
	jitter    Jitter
	phase     Phase
	attempts  int
	target    handover.Target
	deadline  time.Time
	lastToken a2a.Token
	outcome   Outcome
}

// New returns an operation under profile p; jitter nil means DefaultJitter.
// Check the profile with CheckProfile first when it comes from
// configuration.
func New(p mqttbind.RetryProfile, jitter Jitter) Operation {
	if jitter == nil {
		jitter = DefaultJitter
	}
	return Operation{profile: p, jitter: jitter}
}

// Phase returns where the operation stands.
func (o *Operation) Phase() Phase { return o.phase }

// Attempts returns how many attempts were published.
func (o *Operation) Attempts() int { return o.attempts }

// Outcome returns how the operation ended, or OutcomePending.
func (o *Operation) Outcome() Outcome { return o.outcome }

// Start publishes the first attempt to target at now.
func (o *Operation) Start(target handover.Target, now time.Time) Decision {
	if o.phase != PhaseIdle {
		return o.current()
	}
	o.target = target
	return o.publish(now)
}

// Refused applies a publish that was not accepted (a PUBACK reason code of
// 0x80 or more, or no connection): the current attempt failed.
func (o *Operation) Refused(now time.Time) Decision {
	if o.phase != PhaseAwaiting {
		return o.current()
	}
	return o.failAttempt(now, 0)
}

// Reply applies a valid correlated reply received at now.
func (o *Operation) Reply(r Reply, now time.Time) Decision {
	if o.phase == PhaseIdle || o.phase == PhaseDone {
		return o.current()
	}
	if r.Responder != "" && mqttbind.ValidIdentifier(r.Responder) {
		o.target = handover.Target{Agent: r.Responder}
	}
	switch r.Kind {
	case ReplyFinal:
		return o.finish(OutcomeReplied, "")
	case ReplyItem:
		o.phase = PhaseStreaming
		o.deadline = after(now, o.profile.StreamIdleTimeout)
		return o.current()
	}
	// An error reply.
	o.lastToken = r.Token
	info, _ := r.Token.Info()
	switch {
	case o.phase == PhaseStreaming:
		return o.finish(OutcomeFailed, r.Token)
	case r.Token == a2a.TokenAgentAsleep && r.Queued:
		return o.finish(OutcomeQueued, r.Token)
	case !info.Retryable:
		return o.finish(OutcomeFailed, r.Token)
	case o.phase == PhaseBackoff, r.Attempt != 0 && r.Attempt < o.attempts:
		// A retry is already coming, or a later attempt is in flight: this
		// answer to an earlier attempt changes nothing.
		return o.current()
	}
	return o.failAttempt(now, r.RetryAfter)
}

// Tick applies the passing of time: an attempt whose first reply is overdue
// fails, a backoff that ran out publishes the next attempt, a stream idle
// for too long asks for GetTask. Call it at Decision.Wake; an early call
// only repeats the current decision.
func (o *Operation) Tick(now time.Time) Decision {
	if o.deadline.IsZero() || now.Before(o.deadline) {
		return o.current()
	}
	switch o.phase {
	case PhaseAwaiting:
		return o.failAttempt(now, 0)
	case PhaseBackoff:
		return o.publish(now)
	case PhaseStreaming:
		d := o.finish(OutcomeStalled, "")
		d.Action = ActionGetTask
		return d
	}
	return o.current()
}

// after returns the deadline d after now, or the zero time (no deadline)
// when d is zero.
func after(now time.Time, d time.Duration) time.Time {
	if d == 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// publish starts the next attempt.
func (o *Operation) publish(now time.Time) Decision {
	o.attempts++
	o.phase, o.lastToken = PhaseAwaiting, ""
	o.deadline = after(now, o.profile.ReplyFirstTimeout)
	d := o.current()
	d.Action = ActionPublish
	return d
}

// failAttempt ends the current attempt as failed: back off, or give up.
func (o *Operation) failAttempt(now time.Time, atLeast time.Duration) Decision {
	if o.attempts >= o.profile.MaxAttempts {
		return o.finish(OutcomeExhausted, o.lastToken)
	}
	wait := Backoff(o.profile, o.attempts, o.jitter())
	o.phase = PhaseBackoff
	o.deadline = now.Add(max(wait, atLeast))
	return o.current()
}

func (o *Operation) finish(out Outcome, tok a2a.Token) Decision {
	o.phase, o.outcome, o.deadline, o.lastToken = PhaseDone, out, time.Time{}, tok
	return o.current()
}

// current describes the operation as it stands, with nothing new to do.
func (o *Operation) current() Decision {
	d := Decision{Action: ActionWait, Attempt: o.attempts, Target: o.target, Wake: o.deadline, Outcome: o.outcome}
	switch o.phase {
	case PhaseIdle:
		d.Wake = time.Time{}
	case PhaseDone:
		d.Action, d.Token = ActionFinish, o.lastToken
		if o.outcome == OutcomeStalled {
			d.Action = ActionGetTask
		}
	}
	return d
}
