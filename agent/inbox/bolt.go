package inbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The buckets of a queue file.
var (
	// bucketRecords holds the records: key the big-endian Seq, value the
	// stored form (codec.go). Its bucket sequence is the last Seq
	// assigned, so that Seqs are never reused, even once the queue is
	// empty.
	bucketRecords = []byte("records")
	// bucketReplay is the replay cache: key a replay key, value its Until
	// (codec.go).
	bucketReplay = []byte("replay")
	// bucketReplayOrder indexes the replay cache by time: key
	// replayOrderKey, empty value.
	bucketReplayOrder = []byte("replayOrder")
	// bucketMeta holds metaCount, the number of records (8 bytes,
	// big-endian), written with them: it tells how many records a damaged
	// file lost.
	bucketMeta = []byte("meta")
	metaCount  = []byte("count")
)

// DefaultLockTimeout is how long OpenBolt waits by default for a file
// locked by another process.
const DefaultLockTimeout = time.Second

// DefaultRecoverTimeout is how long OpenBolt spends by default reading a
// file before it gives up on it as damaged (a damaged file can make
// reading it loop).
const DefaultRecoverTimeout = 30 * time.Second

// maxReplayKey is the longest replay key: its index key (replayOrderKey)
// must stay within bbolt's largest key.
const maxReplayKey = bolt.MaxKeySize - stampLen

// maxGroup is the most enqueues committed in one transaction.
const maxGroup = 1024

// BoltOptions configures OpenBolt. The zero value is the defaults.
type BoltOptions struct {
	// MaxReplay is the most keys the replay cache holds before enqueues
	// are refused (0: DefaultMaxReplay).
	MaxReplay int
	// Logger receives a Warn when a damaged file is recovered or records
	// are dropped at open (nil: nothing is logged).
	Logger *slog.Logger
	// Now stamps the Enqueued time of records (nil: time.Now).
	Now func() time.Time
	// LockTimeout is how long OpenBolt waits for a file locked by another
	// process before it fails (0: DefaultLockTimeout).
	LockTimeout time.Duration
	// RecoverTimeout bounds the reading of the file at open, and again of
	// a damaged file's salvage (0: DefaultRecoverTimeout).
	RecoverTimeout time.Duration
}

// Bolt is a Store in a bbolt database file, one file per agent queue.
// Every change is synced to disk before the call returns. Enqueues from
// concurrent callers are committed together: each enqueue waiting when a
// transaction starts joins it, so that many senders share one sync, and a
// lone sender does not wait for company. The indexes (duplicates by peer
// and message id, records by task id) and the occupancy are kept in memory
// and rebuilt when the file is opened.
type Bolt struct {
	db        *bolt.DB
	now       func() time.Time
	maxReplay int

	// wlock is held by the one writer at a time (a group commit, Take,
	// Remove, Expired), over its transaction and the update of st.
	wlock chan struct{}
	// mu guards st against the readers; writers hold wlock and take mu
	// only to change st.
	mu sync.RWMutex
	st *state

	reqs    chan *enqueueReq
	closed  atomic.Bool
	quit    chan struct{} // closed by Close
	stopped chan struct{} // closed when the committer has returned

	// res and delta are the committer's, reused from group to group.
	res   []enqueueRes
	delta groupDelta

	// senders counts the callers in Enqueue; left wakes the committer
	// when one leaves.
	senders atomic.Int64
	left    chan struct{}
	// commits counts the enqueue transactions (for tests).
	commits atomic.Int64
}

// OpenBolt opens the queue file at path, creating it (and its directory)
// if needed, and returns the store with what was recovered of a damaged
// file.
//
// A file that cannot be read whole (bbolt refuses it, its consistency
// check fails, it is shorter than its pages, reading it faults or takes
// longer than RecoverTimeout) is moved aside to path + ".corrupt-<unix
// time>", a fresh file is created at path, and every record and replay key
// that can still be read from the damaged file and passes its checksum is
// copied into it, with its Seq. Records that fail their checksum in an
// otherwise sound file are dropped. Either is logged at Warn and described
// by the Recovery; the store returned works in both cases.
//
// The salvage follows the file's own structure: a record whose page is
// readable but which cannot be reached any more (its branch page or the
// root lost) is not found, and no free page is read (it may hold records
// already taken). When one of the file's two meta pages is damaged, bbolt
// reads the file as it was before the last commit: records taken by that
// commit come back. When bbolt panics while opening a damaged file, the
// file stays mapped (and locked) in the process until it exits.
//
// An error is returned, and the file left alone, when the file cannot be
// opened at all (permissions, a directory) or is locked by another
// process for longer than LockTimeout.
func OpenBolt(path string, opts BoltOptions) (*Bolt, Recovery, error) {
	if opts.MaxReplay <= 0 {
		opts.MaxReplay = DefaultMaxReplay
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.RecoverTimeout <= 0 {
		opts.RecoverTimeout = DefaultRecoverTimeout
	}
	db, st, rec, err := open(path, &opts)
	if err != nil {
		return nil, rec, err
	}
	s := &Bolt{
		db:        db,
		now:       opts.Now,
		maxReplay: opts.MaxReplay,
		wlock:     make(chan struct{}, 1),
		st:        st,
		reqs:      make(chan *enqueueReq, maxGroup),
		left:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	go s.commitLoop()
	return s, rec, nil
}

// begin checks that the store is open and ctx live.
func (s *Bolt) begin(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// lock takes the writer lock, unless ctx ends or the store closes first.
func (s *Bolt) lock(ctx context.Context) error {
	select {
	case s.wlock <- struct{}{}:
		if s.closed.Load() {
			s.unlock()
			return ErrClosed
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.quit:
		return ErrClosed
	}
}

func (s *Bolt) unlock() { <-s.wlock }

// dbErr maps the errors of a closed database to ErrClosed.
func dbErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen), errors.Is(err, berrors.ErrTxClosed):
		return ErrClosed
	}
	return fmt.Errorf("inbox: %w", err)
}

// get reads the record of seq in tx; ok is false when it is not there.
func get(tx *bolt.Tx, seq uint64) (Record, bool, error) {
	k := seqKey(seq)
	v := tx.Bucket(bucketRecords).Get(k)
	if v == nil {
		return Record{}, false, nil
	}
	r, err := decodeRecord(k, v)
	if err != nil {
		return Record{}, false, fmt.Errorf("%w (seq %d)", err, seq)
	}
	return r, true, nil
}

// Next returns up to n pending records with Seq > after, oldest first.
func (s *Bolt) Next(ctx context.Context, after uint64, n int) ([]Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if n <= 0 || after == ^uint64(0) {
		return nil, nil
	}
	var out []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < n; k, v = c.Next() {
			r, err := decodeRecord(k, v)
			if err != nil {
				return fmt.Errorf("%w (seq %d)", err, binary.BigEndian.Uint64(k))
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return out, nil
}

// Lookup returns the oldest pending record of a task id.
func (s *Bolt) Lookup(ctx context.Context, taskID string) (Record, bool, error) {
	if err := s.begin(ctx); err != nil {
		return Record{}, false, err
	}
	s.mu.RLock()
	seqs := s.st.byTask[taskID]
	var seq uint64
	if len(seqs) > 0 {
		seq = seqs[0]
	}
	s.mu.RUnlock()
	if seq == 0 {
		return Record{}, false, nil
	}
	var r Record
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		r, ok, err = get(tx, seq)
		return err
	})
	if err != nil {
		return Record{}, false, dbErr(err)
	}
	return r, ok, nil
}

// Stats returns the occupancy.
func (s *Bolt) Stats(ctx context.Context) (Stats, error) {
	if err := s.begin(ctx); err != nil {
		return Stats{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Stats{Messages: len(s.st.entries), Bytes: s.st.bytes, Replay: s.st.replay}, nil
}

// Take removes the records for delivery and enters their replay keys, in
// one synced transaction. A Taken with an empty ReplayKey enters no key and
// is never reported replayed. A key already in the cache keeps the later
// of its two Until times.
func (s *Bolt) Take(ctx context.Context, takes []Taken) (replayed, missing []bool, err error) {
	if err := s.begin(ctx); err != nil {
		return nil, nil, err
	}
	for _, t := range takes {
		if len(t.ReplayKey) > maxReplayKey {
			return nil, nil, fmt.Errorf("inbox: a replay key of %d bytes is over the %d the cache holds", len(t.ReplayKey), maxReplayKey)
		}
	}
	if err := s.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer s.unlock()
	replayed, missing = make([]bool, len(takes)), make([]bool, len(takes))
	var removed []uint64
	added := 0
	err = s.db.Update(func(tx *bolt.Tx) error {
		recs, rep, order := tx.Bucket(bucketRecords), tx.Bucket(bucketReplay), tx.Bucket(bucketReplayOrder)
		gone := make(map[uint64]bool, len(takes))
		for i, t := range takes {
			if _, ok := s.st.entries[t.Seq]; !ok || gone[t.Seq] {
				missing[i] = true
				continue
			}
			gone[t.Seq] = true
			removed = append(removed, t.Seq)
			if err := recs.Delete(seqKey(t.Seq)); err != nil {
				return err
			}
			if t.ReplayKey == "" {
				continue
			}
			key := []byte(t.ReplayKey)
			if v := rep.Get(key); v != nil {
				replayed[i] = true
				old, ok := decodeReplay(key, v)
				if ok && !t.Until.After(old) {
					continue
				}
				if ok {
					if err := order.Delete(replayOrderKey(key, old)); err != nil {
						return err
					}
				}
			} else {
				added++
			}
			if err := rep.Put(key, encodeReplay(key, t.Until)); err != nil {
				return err
			}
			if err := order.Put(replayOrderKey(key, t.Until), nil); err != nil {
				return err
			}
		}
		if len(removed) == 0 && added == 0 {
			return nil
		}
		return putCount(tx, len(s.st.entries)-len(removed))
	})
	if err != nil {
		return nil, nil, dbErr(err)
	}
	s.mu.Lock()
	for _, seq := range removed {
		s.st.remove(seq)
	}
	s.st.replay += added
	s.mu.Unlock()
	return replayed, missing, nil
}

// Remove removes pending records without delivering them, in one synced
// transaction, and returns the ones that were still pending, in the order
// of seqs. A record that can no longer be read from the file (damaged since
// it was opened; Next and Lookup return an error naming its Seq) is
// removed too, and returned without its payload, ContextID and Enqueued.
func (s *Bolt) Remove(ctx context.Context, seqs []uint64) ([]Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	var out []Record
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		out, err = removeIn(tx, s.st, seqs)
		return err
	})
	if err != nil {
		return nil, dbErr(err)
	}
	s.mu.Lock()
	for _, r := range out {
		s.st.remove(r.Seq)
	}
	s.mu.Unlock()
	return out, nil
}

// removeIn deletes the pending records of seqs in tx and returns them.
func removeIn(tx *bolt.Tx, st *state, seqs []uint64) ([]Record, error) {
	var out []Record
	gone := make(map[uint64]bool, len(seqs))
	recs := tx.Bucket(bucketRecords)
	for _, seq := range seqs {
		if _, ok := st.entries[seq]; !ok || gone[seq] {
			continue
		}
		gone[seq] = true
		r, ok, err := get(tx, seq)
		if err != nil {
			// Damaged since the file was opened: removed all the same
			// (it would block the queue), described from memory.
			e := st.entries[seq]
			r, ok = Record{Seq: seq, Peer: e.peer, MessageID: e.messageID, TaskID: e.taskID, Expires: e.expires}, true
		}
		if !ok {
			continue
		}
		if err := recs.Delete(seqKey(seq)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, putCount(tx, len(st.entries)-len(out))
}

// Expired returns up to n pending records whose Expires is not after now,
// oldest first, and forgets the replay keys whose Until is not after now
// (in one synced transaction, when there are any).
func (s *Bolt) Expired(ctx context.Context, now time.Time, n int) ([]Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	cut := sortStamp(now)
	stale := false
	if err := s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketReplayOrder).Cursor().First()
		stale = len(k) > 0 && string(k[:min(len(k), stampLen)]) <= string(cut)
		return nil
	}); err != nil {
		return nil, dbErr(err)
	}
	var out []Record
	read := func(tx *bolt.Tx) error {
		s.mu.RLock()
		seqs := s.st.expired(now, n)
		s.mu.RUnlock()
		out = out[:0]
		for _, seq := range seqs {
			r, ok, err := get(tx, seq)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, r)
			}
		}
		return nil
	}
	if !stale {
		if err := s.db.View(read); err != nil {
			return nil, dbErr(err)
		}
		return out, nil
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	forgot := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		forgot = 0
		rep, order := tx.Bucket(bucketReplay), tx.Bucket(bucketReplayOrder)
		c := order.Cursor()
		for k, _ := c.First(); k != nil && string(k[:min(len(k), stampLen)]) <= string(cut); k, _ = c.First() {
			if len(k) >= stampLen {
				key := k[stampLen:]
				if v := rep.Get(key); v != nil {
					if until, ok := decodeReplay(key, v); !ok || !until.After(now) {
						if err := rep.Delete(append([]byte(nil), key...)); err != nil {
							return err
						}
						forgot++
					}
				}
			}
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return read(tx)
	})
	if err != nil {
		return nil, dbErr(err)
	}
	s.mu.Lock()
	s.st.replay -= forgot
	s.mu.Unlock()
	return out, nil
}

// putCount stores the number of records.
func putCount(tx *bolt.Tx, n int) error {
	return tx.Bucket(bucketMeta).Put(metaCount, seqKey(uint64(n)))
}

// Close stops the store: enqueues waiting are answered ErrClosed, a commit
// under way completes, and every later call returns ErrClosed. Closing
// twice returns nil.
func (s *Bolt) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.quit)
	<-s.stopped
	// Wait for a Take, Remove or Expired under way; the lock is kept.
	s.wlock <- struct{}{}
	return dbErr(s.db.Close())
}

var _ Store = (*Bolt)(nil)
