package reach

import (
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"math"
)

// Enqueue is the outcome of the caller's attempt to enqueue a message that
// Decide said to queue.
type Enqueue struct {
	// Stored is true only once the record is durably in the queue.
	Stored bool
	// Full is the bound that refused it (see Fits), when one did.
	Full offline.QueueFullKind
}

// Response is how a message that was not accepted live is answered.
type Response struct {
	// Live is true for VerdictAccept: process the message, no refusal.
	Live bool
	// Token is agent_asleep, asleep_queue_full, or internal_error when the
	// enqueue failed for a reason other than a bound.
	Token a2a.Token
	// HTTPStatus is 503 (agent_asleep), 507 (queue full, kind messages or
	// bytes), 429 (queue full, kind peer) or 500.
	HTTPStatus int
	// Queued is true only when the message was stored.
	Queued bool
	// RetryAfterSec, when HasRetryAfter, is the retryAfterSec member and the
	// Retry-After header of an agent_asleep answer.
	RetryAfterSec int64
	// HasRetryAfter says whether RetryAfterSec is given.
	HasRetryAfter bool
	// Kind is the bound of an asleep_queue_full answer.
	Kind offline.QueueFullKind
}

/*
Respond returns the answer to a message given its decision and, for
VerdictQueue, the outcome of the enqueue. It never claims queued for a
message that was not stored: a refused message is agent_asleep with queued
false whatever e says; a message whose enqueue hit a bound is
asleep_queue_full (never agent_asleep); one whose enqueue failed otherwise
is internal_error.
*/
func Respond(d Decision, e Enqueue) Response {
	asleep := Response{Token: a2a.TokenAgentAsleep, HTTPStatus: 503, RetryAfterSec: d.RetryAfterSec, HasRetryAfter: d.HasRetryAfter}
	switch d.Verdict {
	case VerdictAccept:
		return Response{Live: true}
	case VerdictQueue:
		switch {
		case e.Stored:
			asleep.Queued = true
			return asleep
		case e.Full.Valid():
			status := 507
			if e.Full == offline.QueueFullKindPeer {
				status = 429
			}
			return Response{Token: a2a.TokenAsleepQueueFull, HTTPStatus: status, Kind: e.Full}
		}
		return Response{Token: a2a.TokenInternalError, HTTPStatus: 500}
	}
	return asleep
}

// AsleepBody returns the HTTP body of an agent_asleep answer.
func (r Response) AsleepBody(message string) offline.AsleepResponse {
	b := offline.AsleepResponse{Error: string(a2a.TokenAgentAsleep), Message: message, Queued: r.Queued}
	if r.HasRetryAfter {
		s := wireSeconds(r.RetryAfterSec)
		b.RetryAfterSec = &s
	}
	return b
}

// QueueFullBody returns the HTTP body of an asleep_queue_full answer.
func (r Response) QueueFullBody(message string) offline.QueueFullResponse {
	return offline.QueueFullResponse{Error: string(a2a.TokenAsleepQueueFull), Message: message, Queued: false, Kind: r.Kind}
}

// ErrorData returns the error.data of the JSON-RPC shape of the answer.
func (r Response) ErrorData() offline.OfflineErrorData {
	d := offline.OfflineErrorData{Error: string(r.Token), Queued: r.Queued, Kind: r.Kind}
	if r.HasRetryAfter && r.Token == a2a.TokenAgentAsleep {
		s := wireSeconds(r.RetryAfterSec)
		d.RetryAfterSec = &s
	}
	return d
}

// wireSeconds bounds a wait to what retryAfterSec carries (a 32-bit
// integer: some 68 years).
func wireSeconds(s int64) int32 {
	return int32(min(max(s, 0), math.MaxInt32))
}
