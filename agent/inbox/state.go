package inbox

import (
	"slices"
	"time"

	"github.com/a2abind/a2abind/statemachines/reach"
)

// entry is what the store keeps in memory of a pending record: enough to
// check the bounds, find duplicates and tasks, and find expired records
// without reading the file.
type entry struct {
	peer, messageID, taskID string
	size                    int64
	expires                 time.Time
}

// msgKey identifies a message for duplicate detection.
type msgKey struct{ peer, messageID string }

// state is the in-memory view of the pending records and the replay
// cache, rebuilt from the file at open and changed only after a commit.
type state struct {
	entries map[uint64]entry
	// order lists the Seqs in increasing order; it may still hold Seqs
	// removed since (not in entries), dropped when they are half of it.
	order     []uint64
	dead      int
	byMessage map[msgKey]uint64
	// byTask lists the pending Seqs of each task id, oldest first.
	byTask  map[string][]uint64
	perPeer map[string]int
	bytes   int64
	// cache is the replay cache, the writers' only; replay is its number
	// of keys and replayFirst (when replayAny) its earliest Until, for the
	// readers.
	cache       *replayCache
	replay      int
	replayFirst moment
	replayAny   bool
}

func newState() *state {
	return &state{
		entries:   make(map[uint64]entry),
		byMessage: make(map[msgKey]uint64),
		byTask:    make(map[string][]uint64),
		perPeer:   make(map[string]int),
		cache:     newReplayCache(),
	}
}

// syncReplay copies the replay cache's size and earliest Until for the
// readers; called with the writer lock and mu held.
func (s *state) syncReplay() {
	s.replay = len(s.cache.keys)
	s.replayFirst, s.replayAny = s.cache.first()
}

func entryOf(r *Record) entry {
	return entry{peer: r.Peer, messageID: r.MessageID, taskID: r.TaskID, size: r.Size(), expires: r.Expires}
}

// add enters a record; Seqs are added in increasing order.
func (s *state) add(seq uint64, e entry) {
	s.entries[seq] = e
	s.order = append(s.order, seq)
	if e.messageID != "" {
		s.byMessage[msgKey{e.peer, e.messageID}] = seq
	}
	if e.taskID != "" {
		s.byTask[e.taskID] = append(s.byTask[e.taskID], seq)
	}
	s.perPeer[e.peer]++
	s.bytes += e.size
}

// insert enters a record at its place among the pending ones (a record
// put back after it was taken); the record must not be pending.
func (s *state) insert(seq uint64, e entry) {
	if n := len(s.order); n == 0 || s.order[n-1] < seq {
		s.add(seq, e)
		return
	}
	s.entries[seq] = e
	if i, found := slices.BinarySearch(s.order, seq); found {
		s.dead-- // its place was kept
	} else {
		s.order = slices.Insert(s.order, i, seq)
	}
	if e.messageID != "" {
		// As at open, where records are added in order, the latest of
		// two pending records of a message is the one indexed.
		if k := (msgKey{e.peer, e.messageID}); s.byMessage[k] < seq {
			s.byMessage[k] = seq
		}
	}
	if e.taskID != "" {
		seqs := s.byTask[e.taskID]
		i, _ := slices.BinarySearch(seqs, seq)
		s.byTask[e.taskID] = slices.Insert(seqs, i, seq)
	}
	s.perPeer[e.peer]++
	s.bytes += e.size
}

// remove drops a record, if pending.
func (s *state) remove(seq uint64) {
	e, ok := s.entries[seq]
	if !ok {
		return
	}
	delete(s.entries, seq)
	if k := (msgKey{e.peer, e.messageID}); e.messageID != "" && s.byMessage[k] == seq {
		delete(s.byMessage, k)
	}
	if e.taskID != "" {
		seqs := slices.DeleteFunc(s.byTask[e.taskID], func(x uint64) bool { return x == seq })
		if len(seqs) == 0 {
			delete(s.byTask, e.taskID)
		} else {
			s.byTask[e.taskID] = seqs
		}
	}
	if s.perPeer[e.peer]--; s.perPeer[e.peer] <= 0 {
		delete(s.perPeer, e.peer)
	}
	s.bytes -= e.size
	if s.dead++; s.dead > len(s.order)/2 {
		s.order = slices.DeleteFunc(s.order, func(x uint64) bool { _, ok := s.entries[x]; return !ok })
		s.dead = 0
	}
}

// occupancy is the queue's occupancy for a message of peer.
func (s *state) occupancy(peer string) reach.Occupancy {
	return reach.Occupancy{Messages: len(s.entries), Bytes: s.bytes, PeerMessages: s.perPeer[peer]}
}

// expired lists up to n pending Seqs whose record expires at or before
// now, oldest first.
func (s *state) expired(now time.Time, n int) []uint64 {
	var out []uint64
	for _, seq := range s.order {
		if len(out) >= n {
			break
		}
		if e, ok := s.entries[seq]; ok && !e.expires.After(now) {
			out = append(out, seq)
		}
	}
	return out
}
