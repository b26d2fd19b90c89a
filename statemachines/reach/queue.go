package reach

import "github.com/a2abind/a2abind/generated/offline"

// Occupancy is the state of an offline queue when a message arrives.
type Occupancy struct {
	// Messages is the number of records queued, over every peer.
	Messages int
	// Bytes is the total size of the records queued, over every peer.
	Bytes int64
	// PeerMessages is the pending count of the sending peer, keyed by its
	// verified transport identity, never by a body field.
	PeerMessages int
}

// Fits reports whether a message of size bytes can be enqueued without
// exceeding the bounds, and otherwise which bound refuses it: the global
// message cap, then the global byte cap, then the per-peer cap.
func Fits(b offline.QueueBounds, occ Occupancy, size int64) (bool, offline.QueueFullKind) {
	switch {
	case occ.Messages+1 > b.MaxMessages:
		return false, offline.QueueFullKindMessages
	case occ.Bytes+size > b.MaxBytes:
		return false, offline.QueueFullKindBytes
	case occ.PeerMessages+1 > b.MaxPerPeer:
		return false, offline.QueueFullKindPeer
	}
	return true, ""
}
