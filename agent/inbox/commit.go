package inbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/statemachines/reach"
)

// The states of an enqueue request: waiting for the committer, taken into
// a transaction (it will be answered), or abandoned by its caller (it will
// not be stored).
const (
	reqWaiting int32 = iota
	reqTaken
	reqAbandoned
)

// appendFill is the fill percent of the records bucket: Seqs only grow,
// so its pages are filled before they split.
const appendFill = 0.9

// errNoExpiry refuses a record without Expires.
var errNoExpiry = errors.New("inbox: the record has no Expires")

// errNothingStored rolls back a transaction that changed nothing, so
// that it costs no sync.
var errNothingStored = errors.New("inbox: nothing stored")

// enqueueReq is one Enqueue waiting for the committer.
type enqueueReq struct {
	rec    Record
	buf    []byte // encodeRecord(&rec), completed by the committer (sealRecord)
	bounds offline.QueueBounds
	state  atomic.Int32
	done   chan enqueueRes // buffered: the committer never waits
}

type enqueueRes struct {
	rec  Record
	dup  bool
	full offline.QueueFullKind
	err  error
}

// Enqueue stores r with a Seq it assigns and returns it once the
// transaction holding it is synced. Enqueues from concurrent callers share
// transactions: each is checked, in the order of arrival, against the
// occupancy left by those before it, and one refused or failing stores
// nothing without holding back the others.
//
// A record with the same Peer and MessageID as one pending (an empty
// MessageID never matches) is a duplicate, reported before the bounds are
// checked. Enqueued is set to the store's clock when Enqueue is called.
//
// If ctx ends before the record is taken into a transaction, nothing is
// stored and ctx.Err() is returned; once it is taken, Enqueue waits for
// that transaction (one sync) and returns its outcome.
func (s *Bolt) Enqueue(ctx context.Context, r Record, b offline.QueueBounds) (stored Record, dup bool, full offline.QueueFullKind, err error) {
	if err := s.begin(ctx); err != nil {
		return Record{}, false, "", err
	}
	if r.Expires.IsZero() {
		return Record{}, false, "", errNoExpiry
	}
	if n := encodedLen(&r, s.keys); n > maxRecord {
		return Record{}, false, "", fmt.Errorf("inbox: a record of %d bytes is over the %d the file can hold", n, maxRecord)
	}
	s.senders.Add(1)
	defer s.leave()
	r.Seq = 0
	r.Enqueued = s.now()
	req := reqPool.Get().(*enqueueReq)
	req.rec, req.bounds = r, b
	req.state.Store(reqWaiting)
	buf, err := encodeRecord(getBuf(), &req.rec, s.keys)
	if err != nil {
		putReq(req)
		return Record{}, false, "", fmt.Errorf("inbox: %w", err)
	}
	req.buf = buf
	select {
	case s.reqs <- req:
	case <-ctx.Done():
		putReq(req)
		return Record{}, false, "", ctx.Err()
	case <-s.quit:
		putReq(req)
		return Record{}, false, "", ErrClosed
	}
	var res enqueueRes
	select {
	case res = <-req.done:
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqWaiting, reqAbandoned) {
			return Record{}, false, "", ctx.Err()
		}
		res = <-req.done
	case <-s.stopped:
		if req.state.CompareAndSwap(reqWaiting, reqAbandoned) {
			return Record{}, false, "", ErrClosed
		}
		res = <-req.done
	}
	// Answered: the committer is done with req. (An abandoned request is
	// left to the collector: the committer may still hold it.)
	putReq(req)
	return res.rec, res.dup, res.full, res.err
}

// leave counts a caller out of Enqueue and wakes the committer if it
// waits for callers.
func (s *Bolt) leave() {
	s.senders.Add(-1)
	select {
	case s.left <- struct{}{}:
	default:
	}
}

// reqPool recycles the enqueue requests, and bufPool the buffers of their
// encoded records, which bbolt holds only until the commit returns.
var (
	reqPool = sync.Pool{New: func() any { return &enqueueReq{done: make(chan enqueueRes, 1)} }}
	bufPool sync.Pool
)

func getBuf() []byte {
	if p, ok := bufPool.Get().(*[]byte); ok {
		return *p
	}
	return nil
}

func putBuf(b []byte) {
	if cap(b) > 0 && cap(b) <= 64<<10 {
		b = b[:0]
		bufPool.Put(&b)
	}
}

// putReq recycles an answered request, or one never sent.
func putReq(req *enqueueReq) {
	putBuf(req.buf)
	req.buf = nil
	req.rec = Record{}
	reqPool.Put(req)
}

// commitLoop is the committer: it takes the first enqueue waiting, then,
// holding the writer lock, every other one waiting, and commits them
// together.
func (s *Bolt) commitLoop() {
	defer close(s.stopped)
	group := make([]*enqueueReq, 0, maxGroup)
	for {
		group = group[:0]
		select {
		case <-s.quit:
			return
		case req := <-s.reqs:
			group = append(group, req)
		}
		select {
		case s.wlock <- struct{}{}:
		case <-s.quit:
			// The requests are still waiting: their callers see the
			// committer stop.
			return
		}
		if group = s.gather(group); len(group) > 0 {
			s.commit(group)
		}
		s.unlock()
	}
}

// gather adds the requests waiting to group and keeps those whose caller
// still waits, marking them taken. While fewer requests have arrived than
// callers are in Enqueue, it waits for the others to send theirs or to
// leave. Those callers are running, not waiting for anything the committer
// holds, so this wait is short and bounded; it lets the callers just
// answered (still returning) enqueue again into this group rather than the
// next. A lone sender never waits.
func (s *Bolt) gather(group []*enqueueReq) []*enqueueReq {
	for len(group) < maxGroup {
		select {
		case req := <-s.reqs:
			group = append(group, req)
			continue
		default:
		}
		if int64(len(group)) >= s.senders.Load() {
			break
		}
		select {
		case req := <-s.reqs:
			group = append(group, req)
		case <-s.left:
		case <-s.quit:
			return s.keepWaiting(group)
		}
	}
	return s.keepWaiting(group)
}

// keepWaiting keeps the requests of group whose caller still waits,
// marking them taken.
func (s *Bolt) keepWaiting(group []*enqueueReq) []*enqueueReq {
	kept := group[:0]
	for _, req := range group {
		if req.state.CompareAndSwap(reqWaiting, reqTaken) {
			kept = append(kept, req)
		}
	}
	clear(group[len(kept):])
	return kept
}

// groupDelta is the occupancy a group adds before it is committed.
type groupDelta struct {
	messages int
	bytes    int64
	perPeer  map[string]int
	// byMessage maps a message to the index of the request that stores it.
	byMessage map[msgKey]int
}

func (d *groupDelta) reset() {
	d.messages, d.bytes = 0, 0
	if d.perPeer == nil {
		d.perPeer, d.byMessage = make(map[string]int), make(map[msgKey]int)
	}
	clear(d.perPeer)
	clear(d.byMessage)
}

// commit stores a group in one transaction and answers each request.
func (s *Bolt) commit(group []*enqueueReq) {
	s.commits.Add(1)
	if cap(s.res) < len(group) {
		s.res = make([]enqueueRes, len(group))
	}
	res := s.res[:len(group)]
	d := &s.delta
	stored := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketRecords)
		recs.FillPercent = appendFill
		seq := recs.Sequence()
		d.reset()
		stored = 0
		for i, req := range group {
			r := &req.rec
			res[i] = enqueueRes{}
			mk := msgKey{r.Peer, r.MessageID}
			if r.MessageID != "" {
				if j, ok := d.byMessage[mk]; ok {
					res[i] = enqueueRes{rec: res[j].rec, dup: true}
					continue
				}
				if old, ok := s.st.byMessage[mk]; ok {
					first, found, err := get(tx, old, s.keys)
					if err == nil && !found {
						err = fmt.Errorf("inbox: pending record %d is missing", old)
					}
					res[i] = enqueueRes{rec: first, dup: err == nil, err: err}
					continue
				}
			}
			if s.st.replay >= s.maxReplay {
				res[i].full = offline.QueueFullKindMessages
				continue
			}
			occ := s.st.occupancy(r.Peer)
			occ.Messages += d.messages
			occ.Bytes += d.bytes
			occ.PeerMessages += d.perPeer[r.Peer]
			if ok, kind := reach.Fits(req.bounds, occ, r.Size()); !ok {
				res[i].full = kind
				continue
			}
			seq++
			req.buf = sealRecord(req.buf, seq)
			if err := recs.Put(seqKey(seq), req.buf); err != nil {
				return err
			}
			r.Seq = seq
			res[i].rec = *r
			stored++
			d.messages++
			d.bytes += r.Size()
			d.perPeer[r.Peer]++
			if r.MessageID != "" {
				d.byMessage[mk] = i
			}
		}
		if stored == 0 {
			return errNothingStored
		}
		if err := recs.SetSequence(seq); err != nil {
			return err
		}
		return putCount(tx, len(s.st.entries)+stored)
	})
	if errors.Is(err, errNothingStored) {
		err = nil
	}
	if err != nil {
		err = dbErr(err)
		for _, req := range group {
			req.done <- enqueueRes{err: err}
		}
		return
	}
	if stored > 0 {
		s.mu.Lock()
		for i, req := range group {
			if res[i].err == nil && !res[i].dup && res[i].full == "" {
				s.st.add(req.rec.Seq, entryOf(&req.rec))
			}
		}
		s.mu.Unlock()
	}
	for i, req := range group {
		req.done <- res[i]
		res[i] = enqueueRes{}
	}
}
