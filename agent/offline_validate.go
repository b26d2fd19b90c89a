package agent

import (
	"context"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// QueuedMessage is a message taken from the offline queue: what a
// Validator checks at dequeue and what Turn.Queued tells the handler.
type QueuedMessage struct {
	// Peer is the verified identity of the sender when it was queued.
	Peer string
	// TaskID and ContextID are the ids the sender was given.
	TaskID, ContextID string
	// Message is the message queued.
	Message *a2a.Message
	// Enqueued is when it was queued; Expires, when the record expires.
	Enqueued, Expires time.Time
	// ReplayKey is the key under which the message entered the replay
	// cache (set once validated).
	ReplayKey string
}

// Validator checks a queued message at dequeue, against the wall-clock time
// of dequeue (docs/protocol.md §7.6): its authenticity, its purpose and its
// own expiry. It returns the key of the object in the replay cache and how
// long the cache must keep it; a message whose key was already delivered is
// drained as a replay and never reaches the handler. An error drains the
// record, with the error as the recorded reason.
type Validator interface {
	Validate(ctx context.Context, m QueuedMessage, now time.Time) (replayKey string, until time.Time, err error)
}

// ReplayByMessageID is the default Validator, for messages that carry no
// signed object: the sender's identity was verified by the transport when
// the message was queued, its expiry is the record's, and its replay key is
// the sender and the messageId, so a message delivered once is never
// delivered again, even after a restart.
type ReplayByMessageID struct{}

// Validate returns the sender and messageId as the replay key, kept until
// the record would have expired.
func (ReplayByMessageID) Validate(_ context.Context, m QueuedMessage, _ time.Time) (string, time.Time, error) {
	return "msg:" + m.Peer + "\x00" + m.Message.MessageID, m.Expires, nil
}
