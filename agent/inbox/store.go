package inbox

import (
	"context"
	"errors"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

// Record is one queued message.
type Record struct {
	// Seq is the record's place in the queue, assigned by the store at
	// enqueue: increasing, never reused, 1 for the first record of a store.
	Seq uint64
	// Peer is the verified transport identity of the sender (the per-peer
	// key); "" for an anonymous sender.
	Peer string
	// MessageID is the message's messageId. A second enqueue with the same
	// Peer and MessageID while the first is pending stores nothing and
	// returns the first (a sender retrying after a lost answer).
	MessageID string
	// TaskID and ContextID are the ids the sender was given for the task the
	// message will run as.
	TaskID, ContextID string
	// Payload is the request as received, opaque to the store.
	Payload []byte
	// Enqueued is when the record was stored.
	Enqueued time.Time
	// Expires is when the record expires: it is purged, never delivered.
	Expires time.Time
}

// Size is what the record counts against the byte bound: its payload.
func (r *Record) Size() int64 { return int64(len(r.Payload)) }

// Stats describes a store's occupancy.
type Stats struct {
	// Messages and Bytes are the pending records and their total size.
	Messages int
	Bytes    int64
	// Replay is the number of object ids in the replay cache.
	Replay int
}

// Taken is a record removed for delivery, with the key under which its
// object id enters the replay cache.
type Taken struct {
	Seq uint64
	// ReplayKey identifies the object for the replay cache.
	ReplayKey string
	// Until is when the replay cache may forget the key: the object's own
	// expiry, or the record's.
	Until time.Time
}

// Store is a durable offline queue. Implementations are safe for
// concurrent use.
type Store interface {
	// Enqueue stores r, with a Seq it assigns, and returns it once it is on
	// disk (synced). It stores nothing and returns the bound that refuses
	// it (full) when the record does not fit b (checked in the order of
	// reach.Fits: messages, bytes, peer), or when the replay cache holds
	// MaxReplay keys (kind messages). When a record with the same Peer and
	// MessageID is pending it stores nothing and returns that record with
	// dup true. r.Expires must be set.
	Enqueue(ctx context.Context, r Record, b offline.QueueBounds) (stored Record, dup bool, full offline.QueueFullKind, err error)
	// Next returns up to n pending records with Seq > after, oldest first.
	Next(ctx context.Context, after uint64, n int) ([]Record, error)
	// Lookup returns the pending record of a task id.
	Lookup(ctx context.Context, taskID string) (Record, bool, error)
	// Take removes the records for delivery and enters their replay keys,
	// in one synced transaction. replayed[i] is true when takes[i]'s key
	// was already in the cache: that record is removed too and must not be
	// delivered. A Seq no longer pending is skipped (replayed false,
	// missing true).
	Take(ctx context.Context, takes []Taken) (replayed, missing []bool, err error)
	// Untake puts records taken for delivery but never handed to the
	// handler back in the queue, under their own Seq (so in their place),
	// and removes their replay keys, in one synced transaction: an agent
	// that stops gracefully in the middle of a batch loses nothing. Only a
	// crash between Take and the handler loses a record (delivery is at
	// most once, docs/protocol.md §7.7).
	Untake(ctx context.Context, recs []Record, keys []string) error
	// Remove removes pending records without delivering them (validation
	// failed, expired, canceled), in one synced transaction, and returns
	// the ones that were still pending.
	Remove(ctx context.Context, seqs []uint64) ([]Record, error)
	// Expired returns up to n pending records whose Expires is not after
	// now, oldest first (to be removed with Remove), and forgets the replay
	// keys whose Until has passed.
	Expired(ctx context.Context, now time.Time, n int) ([]Record, error)
	// Stats returns the occupancy.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store.
	Close() error
}

// Notifier is implemented by a Store that several agents (instances of one
// agent: a pool, handover instances) may share, such as
// agent/inbox/pginbox's: each agent's Store says when the others added
// records, so that an agent accepting work delivers them without polling.
// The Server's delivery loop (agent.OfflineConfig.Queue) looks for it.
type Notifier interface {
	// Notify returns a channel that receives a value when records may
	// have been added to the queue since the last value was received:
	// another agent sharing the queue enqueued records, or put records it
	// had taken back (Untake). Values do not accumulate: after receiving
	// one, read the queue (Next) until it is empty. The channel is the
	// same for every call and is read by one agent: agents sharing a
	// queue each open a Store of their own.
	Notify() <-chan struct{}
}

// DefaultMaxReplay is how many object ids the replay cache holds at most
// by default: once full, enqueues are refused (kind messages) until keys
// expire, rather than forgetting ids that are still live.
const DefaultMaxReplay = 100_000

// ErrClosed is returned by a Store after Close.
var ErrClosed = errors.New("inbox: store closed")
