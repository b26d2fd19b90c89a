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

	"github.com/a2abind/a2abind/agent/sealed"
)

// The buckets of a queue file.
var (
	// bucketRecords holds the records: key the big-endian Seq, value the
	// stored form (codec.go). Its bucket sequence is the last Seq
	// assigned, so that Seqs are never reused, even once the queue is
	// empty.
	bucketRecords = []byte("records")
	// bucketReplayLog is the replay cache, as a log (replay.go): key a
	// counter, value the key's hash and Until (codec.go). Its bucket
	// sequence is the last counter used.
	bucketReplayLog = []byte("replayLog")
	// bucketMeta holds metaCount, the number of records (8 bytes,
	// big-endian), written with them: it tells how many records a damaged
	// file lost; and metaFormat, the file's layout (fileFormat, 8 bytes,
	// big-endian).
	bucketMeta = []byte("meta")
	metaCount  = []byte("count")
	metaFormat = []byte("format")
	// buckets are the buckets of a queue file.
	buckets = [][]byte{bucketRecords, bucketReplayLog, bucketMeta}
	// bucketsFormat1 are the buckets of format 1's replay cache.
	bucketsFormat1 = [][]byte{[]byte("replay"), []byte("replayOrder")}
)

// ErrFormat is returned by OpenBolt for a file that is not a queue file
// of the layout this version reads (fileFormat): one of an earlier layout,
// a later one, or another bbolt database. The file is left alone.
var ErrFormat = errors.New("inbox: not a queue file of the format this version reads")

// DefaultLockTimeout is how long OpenBolt waits by default for a file
// locked by another process.
const DefaultLockTimeout = time.Second

// DefaultRecoverTimeout is how long OpenBolt spends by default reading a
// file before it gives up on it as damaged (a damaged file can make
// reading it loop).
const DefaultRecoverTimeout = 30 * time.Second

// maxGroup is the most enqueues committed in one transaction.
const maxGroup = 1024

// BoltOptions configures OpenBolt. The zero value is the defaults.
type BoltOptions struct {
	// MaxReplay is the most keys the replay cache holds before enqueues
	// are refused (0: DefaultMaxReplay). The cache is kept in memory, at
	// about 120 bytes a key whatever its length (12 MB for the default),
	// and takes 32 bytes a key in the file.
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
	// Keys seals the payload of each record before it is written
	// (AES-256-GCM, package sealed), bound to the record's Peer,
	// MessageID, TaskID and ContextID, and opens it when read. The payload
	// is the queued request whole: its push config's token and
	// credentials, and its message. Peer and the ids stay in clear: the
	// store indexes them. Without a ring payloads are written in clear.
	// Records written in clear are read as they are; a file opened with a
	// ring is marked format 3, which earlier versions refuse (ErrFormat).
	// Next, Lookup and Expired return an error naming the Seq of a record
	// sealed with a key the ring lacks (sealed.ErrUnknownKey), or read
	// without a ring (ErrNoKeys); Remove removes it all the same, and
	// returns it without its payload (docs/guide.md, "Secrets at rest").
	Keys *sealed.Ring
}

// ErrNoKeys is matched (errors.Is) by the error of a read of a record
// whose payload is sealed, by a store given no key ring.
var ErrNoKeys = errors.New("inbox: the record's payload is sealed and the store has no key ring")

// Bolt is a Store in a bbolt database file, one file per agent queue.
// Every change is synced to disk before the call returns. Enqueues from
// concurrent callers are committed together: each enqueue waiting when a
// transaction starts joins it, so that many senders share one sync, and a
// lone sender does not wait for company. The indexes (duplicates by peer
// and message id, records by task id), the occupancy and the replay cache
// are kept in memory and rebuilt when the file is opened. The replay cache
// is stored as a log, to which Take appends its keys together, and from
// which Expired and Untake delete them.
type Bolt struct {
	db        *bolt.DB
	now       func() time.Time
	maxReplay int
	keys      *sealed.Ring

	// wlock is held by the one writer at a time (a group commit, Take,
	// Untake, Remove, Expired), over its transaction and the update of st.
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
// opened at all (permissions, a directory), is locked by another process
// for longer than LockTimeout, or is a sound bbolt file that is not a
// queue file of the layout this version reads (ErrFormat): one written in
// an earlier layout of the replay cache, or by a later version, or another
// application's database.
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
		keys:      opts.Keys,
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

// get reads the record of seq in tx, its payload opened with keys; ok is
// false when it is not there.
func get(tx *bolt.Tx, seq uint64, keys *sealed.Ring) (Record, bool, error) {
	k := seqKey(seq)
	v := tx.Bucket(bucketRecords).Get(k)
	if v == nil {
		return Record{}, false, nil
	}
	r, err := read(k, v, keys)
	if err != nil {
		return Record{}, false, err
	}
	return r, true, nil
}

// read decodes a stored record, its payload opened with keys.
func read(k, v []byte, keys *sealed.Ring) (Record, error) {
	r, isSealed, err := decodeRecord(k, v)
	if err == nil && isSealed {
		err = OpenPayload(&r, keys)
	}
	if err != nil {
		return Record{}, fmt.Errorf("%w (seq %d)", err, binary.BigEndian.Uint64(k))
	}
	return r, nil
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
		// Each record is decoded once, into the answer: the cursor stops
		// at the n-th.
		for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
			r, err := read(k, v, s.keys)
			if err != nil {
				return err
			}
			if out == nil {
				out = make([]Record, 0, min(n, 256))
			}
			if out = append(out, r); len(out) == n {
				break
			}
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
		r, ok, err = get(tx, seq, s.keys)
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
	hashes := make([]replayHash, len(takes))
	for i, t := range takes {
		if t.ReplayKey != "" {
			hashes[i] = replayHashOf(t.ReplayKey)
		}
	}
	if err := s.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer s.unlock()
	replayed, missing = make([]bool, len(takes)), make([]bool, len(takes))
	removed := make([]uint64, 0, len(takes))
	// entered are the keys entered or extended, in the order of their
	// log entries; at, the index of each in entered.
	type keyEntry struct {
		h replayHash
		e replayEntry
	}
	var entered []keyEntry
	at := make(map[replayHash]int, len(takes))
	gone := make(map[uint64]bool, len(takes))
	c := s.st.cache
	next := c.next
	err = s.db.Update(func(tx *bolt.Tx) error {
		recs, lg := tx.Bucket(bucketRecords), tx.Bucket(bucketReplayLog)
		lg.FillPercent = appendFill
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
			h, until := hashes[i], momentOf(t.Until)
			j, inTake := at[h]
			var old replayEntry
			var known bool
			if inTake {
				old, known = entered[j].e, true
			} else {
				old, known = c.lookup(h)
			}
			if known {
				replayed[i] = true
				if !until.after(old.until) {
					continue
				}
				// The later Until supersedes the entry.
				if err := lg.Delete(seqKey(old.ctr)); err != nil {
					return err
				}
			}
			e := replayEntry{until: until, ctr: next}
			next++
			if err := lg.Put(seqKey(e.ctr), encodeLogEntry(e.ctr, h, until)); err != nil {
				return err
			}
			if inTake {
				entered[j].e = e
			} else {
				at[h] = len(entered)
				entered = append(entered, keyEntry{h, e})
			}
		}
		if len(entered) > 0 {
			if err := lg.SetSequence(next - 1); err != nil {
				return err
			}
		}
		if len(removed) == 0 {
			return errNothingStored // no sync
		}
		return putCount(tx, len(s.st.entries)-len(removed))
	})
	if errors.Is(err, errNothingStored) {
		return replayed, missing, nil
	}
	if err != nil {
		return nil, nil, dbErr(err)
	}
	for _, k := range entered {
		c.put(k.h, k.e)
	}
	c.next = next
	s.mu.Lock()
	for _, seq := range removed {
		s.st.remove(seq)
	}
	s.st.syncReplay()
	s.mu.Unlock()
	return replayed, missing, nil
}

// Untake puts records taken for delivery back in the queue, under their
// own Seq, and removes the replay keys given, in one synced transaction.
// The bounds are not checked: the records were admitted once. A record
// whose Seq is pending already is left as it is. A key is removed whatever
// entered it; an empty key, or one not in the cache, is skipped. A record
// without a Seq or an Expires, or of a Seq the store never assigned, is an
// error, and nothing is changed.
func (s *Bolt) Untake(ctx context.Context, recs []Record, keys []string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Seq == 0:
			return errors.New("inbox: Untake of a record without a Seq")
		case r.Expires.IsZero():
			return errNoExpiry
		case encodedLen(r, s.keys) > maxRecord:
			return fmt.Errorf("inbox: a record of %d bytes is over the %d the file can hold", encodedLen(r, s.keys), maxRecord)
		}
	}
	hashes := make([]replayHash, 0, len(keys))
	for _, k := range keys {
		if k != "" {
			hashes = append(hashes, replayHashOf(k))
		}
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	var back []*Record
	var forgot []replayHash
	seen := make(map[uint64]bool, len(recs))
	dropped := make(map[replayHash]bool, len(hashes))
	c := s.st.cache
	var refused error
	err := s.db.Update(func(tx *bolt.Tx) error {
		rb, lg := tx.Bucket(bucketRecords), tx.Bucket(bucketReplayLog)
		last := rb.Sequence()
		for i := range recs {
			r := &recs[i]
			if r.Seq > last {
				refused = fmt.Errorf("inbox: Untake of record %d, a Seq never assigned (the last is %d)", r.Seq, last)
				return refused
			}
			if _, ok := s.st.entries[r.Seq]; ok || seen[r.Seq] {
				continue
			}
			seen[r.Seq] = true
			b, err := encodeRecord(nil, r, s.keys)
			if err != nil {
				return err
			}
			if err := rb.Put(seqKey(r.Seq), sealRecord(b, r.Seq)); err != nil {
				return err
			}
			back = append(back, r)
		}
		for _, h := range hashes {
			e, ok := c.lookup(h)
			if !ok || dropped[h] {
				continue
			}
			dropped[h] = true
			if err := lg.Delete(seqKey(e.ctr)); err != nil {
				return err
			}
			forgot = append(forgot, h)
		}
		if len(back) == 0 && len(forgot) == 0 {
			return errNothingStored
		}
		if len(back) == 0 {
			return nil
		}
		return putCount(tx, len(s.st.entries)+len(back))
	})
	switch {
	case errors.Is(err, errNothingStored):
		return nil
	case err != nil && err == refused:
		return refused
	case err != nil:
		return dbErr(err)
	}
	for _, h := range forgot {
		c.drop(h)
	}
	s.mu.Lock()
	for _, r := range back {
		s.st.insert(r.Seq, entryOf(r))
	}
	s.st.syncReplay()
	s.mu.Unlock()
	return nil
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
		out, err = removeIn(tx, s.st, seqs, s.keys)
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
func removeIn(tx *bolt.Tx, st *state, seqs []uint64, keys *sealed.Ring) ([]Record, error) {
	var out []Record
	gone := make(map[uint64]bool, len(seqs))
	recs := tx.Bucket(bucketRecords)
	for _, seq := range seqs {
		if _, ok := st.entries[seq]; !ok || gone[seq] {
			continue
		}
		gone[seq] = true
		r, ok, err := get(tx, seq, keys)
		if err != nil {
			// Damaged since the file was opened, or sealed with a key
			// the ring lacks: removed all the same (it would block the
			// queue), described from memory.
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
// oldest first, and forgets the replay keys whose Until is not after now:
// their log entries are deleted together, in one synced transaction, when
// there are any.
func (s *Bolt) Expired(ctx context.Context, now time.Time, n int) ([]Record, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	at := momentOf(now)
	s.mu.RLock()
	stale := s.st.replayAny && !s.st.replayFirst.after(at)
	s.mu.RUnlock()
	var out []Record
	read := func(tx *bolt.Tx) error {
		s.mu.RLock()
		seqs := s.st.expired(now, n)
		s.mu.RUnlock()
		out = out[:0]
		for _, seq := range seqs {
			r, ok, err := get(tx, seq, s.keys)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, r)
			}
		}
		return nil
	}
	if stale {
		if err := s.lock(ctx); err != nil {
			return nil, err
		}
		defer s.unlock()
		c := s.st.cache
		if due := c.due(at); len(due) > 0 {
			err := s.db.Update(func(tx *bolt.Tx) error {
				lg := tx.Bucket(bucketReplayLog)
				for _, it := range due {
					if err := lg.Delete(seqKey(it.ctr)); err != nil {
						return err
					}
				}
				return read(tx)
			})
			if err != nil {
				return nil, dbErr(err)
			}
			for _, it := range due {
				c.drop(it.h)
			}
			s.mu.Lock()
			s.st.syncReplay()
			s.mu.Unlock()
			return out, nil
		}
		// Only stale items were due.
		s.mu.Lock()
		s.st.syncReplay()
		s.mu.Unlock()
	}
	if err := s.db.View(read); err != nil {
		return nil, dbErr(err)
	}
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
