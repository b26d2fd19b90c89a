package reach

import (
	"errors"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

// Availability is what an agent publishes and knows about its reachability.
type Availability struct {
	// Mode is the reachability mode the agent publishes.
	Mode offline.ReachabilityMode
	// Schedule is the accept windows of PeriodicallyAvailable (required),
	// or, for UnavailableStoreForward, when the agent next wakes (optional).
	Schedule *Schedule
	// SessionActive says whether SessionOnly has a live session now.
	SessionActive bool
	// StoreForward says whether the agent offers store-and-forward: it may
	// queue messages it cannot accept live (PeriodicallyAvailable outside
	// its window, UnavailableStoreForward). SessionOnly never queues.
	StoreForward bool
	// RetrySpread spreads the retryAfterSec given to senders over the first
	// part of the next window, drawn per message, so that refused senders do
	// not all come back at the window's first second. Zero: no spread.
	RetrySpread time.Duration
}

// Verdict is what happens to an inbound message.
type Verdict uint8

const (
	// VerdictAccept: process the message live now.
	VerdictAccept Verdict = iota + 1
	// VerdictQueue: refuse live processing and enqueue the message for
	// delivery at the next wake, within the queue bounds (Fits); answer with
	// Respond once the enqueue was tried.
	VerdictQueue
	// VerdictRefuse: refuse the message; nothing is queued. Answer with
	// Respond.
	VerdictRefuse
)

var verdictNames = [...]string{"", "accept", "queue", "refuse"}

// String returns "accept", "queue" or "refuse".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v != 0 {
		return verdictNames[v]
	}
	return "invalid"
}

// Decision is the verdict for one inbound message.
type Decision struct {
	// Verdict is what happens to the message.
	Verdict Verdict
	// RetryAfterSec is when the sender may try again live, in whole seconds,
	// rounded up; meaningful when HasRetryAfter.
	RetryAfterSec int64
	// HasRetryAfter says whether the next window is known.
	HasRetryAfter bool
}

// ErrNoSchedule is returned for PeriodicallyAvailable without a schedule.
var ErrNoSchedule = errors.New("reach: PeriodicallyAvailable needs a published schedule")

/*
Decide returns the verdict for a message arriving at now. rnd draws in
[0, 1) to spread retryAfterSec over Availability.RetrySpread; nil means no
spread. It fails on an unknown mode or a missing or invalid schedule.
*/
func Decide(a Availability, now time.Time, rnd func() float64) (Decision, error) {
	if a.Schedule != nil {
		if err := a.Schedule.Check(); err != nil {
			return Decision{}, err
		}
	}
	switch a.Mode {
	case offline.ReachabilityModeAlwaysAvailable:
		return Decision{Verdict: VerdictAccept}, nil
	case offline.ReachabilityModeSessionOnly:
		if a.SessionActive {
			return Decision{Verdict: VerdictAccept}, nil
		}
		return Decision{Verdict: VerdictRefuse}, nil
	case offline.ReachabilityModePeriodicallyAvailable:
		if a.Schedule == nil {
			return Decision{}, ErrNoSchedule
		}
		if a.Schedule.Open(now) {
			return Decision{Verdict: VerdictAccept}, nil
		}
	case offline.ReachabilityModeUnavailableStoreForward:
	default:
		return Decision{}, errors.New("reach: unknown reachability mode " + string(a.Mode))
	}
	d := Decision{Verdict: VerdictRefuse}
	if a.StoreForward {
		d.Verdict = VerdictQueue
	}
	if a.Schedule != nil {
		wait := a.Schedule.NextOpen(now).Sub(now)
		if spread := min(a.RetrySpread, a.Schedule.Length-time.Second); spread > 0 && rnd != nil {
			wait += time.Duration(rnd() * float64(spread))
		}
		d.RetryAfterSec, d.HasRetryAfter = int64((wait+time.Second-1)/time.Second), true
	}
	return d, nil
}
