package taskstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

var (
	bucketTasks = []byte("tasks")
	// bucketContexts indexes tasks by context: key contextId + 0x00 +
	// taskId, value the task's Created and Updated times (two big-endian
	// Unix nanosecond counts) then its Principal, so a context is read
	// without its tasks. A value of a file written before principals were
	// kept ends after the times: its task has none.
	bucketContexts = []byte("contexts")
	// bucketMeta holds the counters (metaTasks, metaBytes, metaFinished,
	// metaFinishedBytes, metaExpired), and metaVersion once the indexes
	// below are built.
	bucketMeta = []byte("meta")
	// bucketFinished and bucketWaiting index the finished tasks and those
	// waiting for input or authentication: key the task's Updated time (a
	// big-endian Unix nanosecond count) + taskId, value its contextId.
	bucketFinished = []byte("finished")
	bucketWaiting  = []byte("waiting")
	// bucketExpired remembers expired tasks and contexts: key expiredKey,
	// value when it expired; bucketExpiredOrder lists them: key that time
	// + the expiredKey.
	bucketExpired      = []byte("expired")
	bucketExpiredOrder = []byte("expiredOrder")

	metaTasks         = []byte("tasks")
	metaBytes         = []byte("bytes")
	metaFinished      = []byte("finished")
	metaFinishedBytes = []byte("finishedBytes")
	metaExpired       = []byte("expired")
	metaVersion       = []byte("version")
)

func contextKey(ctxID, taskID string) []byte {
	return append(append([]byte(ctxID), 0), taskID...)
}

// contextValue is the index value of a task: its Created and Updated
// times, then its Principal.
func contextValue(r *Record) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16+len(r.Principal)), uint64(r.Created.UnixNano()))
	v = binary.BigEndian.AppendUint64(v, uint64(r.Updated.UnixNano()))
	return append(v, r.Principal...)
}

// parseContextValue reads an index value; ok is false for one written
// before the index held times (an empty value).
func parseContextValue(v []byte) (created, updated time.Time, principal string, ok bool) {
	if len(v) < 16 {
		return time.Time{}, time.Time{}, "", false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:16]))), string(v[16:]), true
}

// timeKey is a key of the time-ordered indexes: t, then id.
func timeKey(t time.Time, id string) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(t.UnixNano())), id...)
}

// parseTimeKey splits a key of a time-ordered index.
func parseTimeKey(k []byte) (time.Time, string) {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k))), string(k[8:])
}

// Bolt is a durable Store in a bbolt database file: every change is
// committed to disk before the call returns, so tasks survive a restart.
// It has the bounds and expiries of the Memory store (MaxTasks, MaxBytes,
// ExpireInterruptedAfter, KeepFinishedFor), applied as it is written to;
// reads leave out what has expired meanwhile. Beside the tasks it keeps
// their count and bytes, the finished and the waiting tasks in the order of
// their last change, and the most recent expiries.
type Bolt struct {
	db  *bolt.DB
	now func() time.Time
	cfg config
	// watch are the functions told of the tasks the store drops
	// (WatchDrops).
	watch Watchers
}

// WatchDrops implements DropWatcher: the tasks a transaction dropped are
// told once it committed.
func (s *Bolt) WatchDrops(fn func(Dropped)) (stop func()) { return s.watch.Add(fn) }

// update runs fn in a write transaction, then, once it committed, tells
// the watchers of the tasks it dropped.
func (s *Bolt) update(fn func(w *writer) error) error {
	var dropped []Dropped
	err := s.db.Update(func(tx *bolt.Tx) error {
		w := s.writer(tx)
		w.collect = s.watch.Active()
		err := fn(w)
		dropped = w.dropped
		return err
	})
	if err == nil {
		s.watch.Tell(dropped)
	}
	return err
}

// OpenBolt opens (creating if needed) the database at path. now may be nil
// (time.Now). Only one process may open a file at a time; OpenBolt waits at
// most timeout for the file lock (0: one second). Without options the store
// keeps at most DefaultMaxTasks tasks and DefaultMaxBytes bytes, and
// expires tasks left waiting for input after DefaultIdleExpiry; a file
// already holding more is brought within the bounds as it is written to.
// A file written before the store kept counters is indexed once, when
// opened. The secrets of push configs are written in clear unless the
// store is given a key ring (SealSecrets).
func OpenBolt(path string, now func() time.Time, timeout time.Duration, opts ...Option) (*Bolt, error) {
	if now == nil {
		now = time.Now
	}
	if timeout == 0 {
		timeout = time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("taskstore: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("taskstore: open %s: %w", path, err)
	}
	s := &Bolt{db: db, now: now, cfg: newConfig(opts)}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketTasks, bucketContexts, bucketMeta, bucketFinished, bucketWaiting, bucketExpired, bucketExpiredOrder} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if tx.Bucket(bucketMeta).Get(metaVersion) == nil {
			return s.reindex(tx)
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("taskstore: %w", err)
	}
	return s, nil
}

// reindex builds the counters and the time-ordered indexes of a file
// written without them.
func (s *Bolt) reindex(tx *bolt.Tx) error {
	w := s.writer(tx)
	if err := w.tasks.ForEach(func(_, v []byte) error {
		r, _, err := decodeSealed(v)
		if err != nil {
			return err
		}
		w.count++
		w.bytes += int64(len(v))
		return w.index(nil, 0, &r, len(v))
	}); err != nil {
		return err
	}
	if err := w.meta.Put(metaVersion, []byte{1}); err != nil {
		return err
	}
	return w.save()
}

// writer applies changes in one write transaction, keeping the counters
// and indexes.
type writer struct {
	cfg                                                      *config
	tasks, contexts, meta, finished, waiting, expired, order *bolt.Bucket

	count, finishedN, expiredN int
	bytes, finishedBytes       int64

	// collect keeps the tasks dropped in dropped, for the store's
	// watchers.
	collect bool
	dropped []Dropped
}

func (s *Bolt) writer(tx *bolt.Tx) *writer {
	w := &writer{cfg: &s.cfg, tasks: tx.Bucket(bucketTasks), contexts: tx.Bucket(bucketContexts), meta: tx.Bucket(bucketMeta),
		finished: tx.Bucket(bucketFinished), waiting: tx.Bucket(bucketWaiting),
		expired: tx.Bucket(bucketExpired), order: tx.Bucket(bucketExpiredOrder)}
	w.count = int(getCount(w.meta, metaTasks))
	w.bytes = getCount(w.meta, metaBytes)
	w.finishedN = int(getCount(w.meta, metaFinished))
	w.finishedBytes = getCount(w.meta, metaFinishedBytes)
	w.expiredN = int(getCount(w.meta, metaExpired))
	return w
}

func getCount(b *bolt.Bucket, k []byte) int64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// save writes the counters back.
func (w *writer) save() error {
	for _, c := range []struct {
		k []byte
		n int64
	}{{metaTasks, int64(w.count)}, {metaBytes, w.bytes}, {metaFinished, int64(w.finishedN)},
		{metaFinishedBytes, w.finishedBytes}, {metaExpired, int64(w.expiredN)}} {
		if err := w.meta.Put(c.k, binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(c.n))); err != nil {
			return err
		}
	}
	return nil
}

// index moves a task in the time-ordered indexes from where old (of
// oldSize stored bytes; nil for a new task) put it to where r (of size
// bytes; nil for a task dropped) puts it.
func (w *writer) index(old *Record, oldSize int, r *Record, size int) error {
	if old != nil {
		switch st := stateOf(old); {
		case final(st):
			w.finishedN--
			w.finishedBytes -= int64(oldSize)
			if err := w.finished.Delete(timeKey(old.Updated, old.Task.ID)); err != nil {
				return err
			}
		case interrupted(st):
			if err := w.waiting.Delete(timeKey(old.Updated, old.Task.ID)); err != nil {
				return err
			}
		}
	}
	if r == nil {
		return nil
	}
	switch st := stateOf(r); {
	case final(st):
		w.finishedN++
		w.finishedBytes += int64(size)
		return w.finished.Put(timeKey(r.Updated, r.Task.ID), []byte(r.Task.ContextID))
	case interrupted(st):
		return w.waiting.Put(timeKey(r.Updated, r.Task.ID), []byte(r.Task.ContextID))
	}
	return nil
}

func stateOf(r *Record) a2a.TaskState {
	if r.Task.Status == nil {
		return ""
	}
	return r.Task.Status.State
}

// put stores r, encoded as data, which replaces old (nil for a new task)
// of oldSize bytes.
func (w *writer) put(old *Record, oldSize int, r *Record, data []byte) error {
	if r.Task.ContextID != "" {
		if err := w.contexts.Put(contextKey(r.Task.ContextID, r.Task.ID), contextValue(r)); err != nil {
			return err
		}
	}
	if old == nil {
		w.count++
	}
	w.bytes += int64(len(data) - oldSize)
	if err := w.index(old, oldSize, r, len(data)); err != nil {
		return err
	}
	return w.tasks.Put([]byte(r.Task.ID), data)
}

// dropIndexed drops the task an index entry (key k, value its context id)
// of the finished or the waiting index names, and reports whether its
// context went with it.
func (w *writer) dropIndexed(idx *bolt.Bucket, k, ctxID []byte) (bool, error) {
	// Both point into the transaction's pages, which the deletes change.
	k, ctxID = bytes.Clone(k), bytes.Clone(ctxID)
	_, id := parseTimeKey(k)
	data := w.tasks.Get([]byte(id))
	size := len(data)
	if w.collect {
		w.dropped = append(w.dropped, Dropped{TaskID: id, ContextID: string(ctxID), PushConfigIDs: pushConfigIDs(data)})
	}
	if idx == w.finished {
		w.finishedN--
		w.finishedBytes -= int64(size)
	}
	if err := idx.Delete(k); err != nil {
		return false, err
	}
	w.count--
	w.bytes -= int64(size)
	if err := w.tasks.Delete([]byte(id)); err != nil {
		return false, err
	}
	if len(ctxID) == 0 {
		return false, nil
	}
	if err := w.contexts.Delete(contextKey(string(ctxID), id)); err != nil {
		return false, err
	}
	prefix := contextKey(string(ctxID), "")
	next, _ := w.contexts.Cursor().Seek(prefix)
	return next == nil || !bytes.HasPrefix(next, prefix), nil
}

// sweep drops the tasks whose time is up at now: those waiting unchanged
// for longer than the idle expiry (remembered as expired) and, with a
// retention, those finished for longer than it.
func (w *writer) sweep(now time.Time) error {
	if w.cfg.idle > 0 {
		cut := now.Add(-w.cfg.idle)
		for k, v := w.waiting.Cursor().First(); k != nil; k, v = w.waiting.Cursor().First() {
			at, id := parseTimeKey(k)
			if !at.Before(cut) {
				break
			}
			ctxID := string(v)
			emptied, err := w.dropIndexed(w.waiting, k, v)
			if err != nil {
				return err
			}
			if err := w.remember(expiredKey('t', id), at.Add(w.cfg.idle)); err != nil {
				return err
			}
			if emptied {
				// Its context is gone with it: a message to it is told
				// so too.
				if err := w.remember(expiredKey('c', ctxID), at.Add(w.cfg.idle)); err != nil {
					return err
				}
			}
		}
	}
	if w.cfg.keepFinished > 0 {
		cut := now.Add(-w.cfg.keepFinished)
		for k, v := w.finished.Cursor().First(); k != nil; k, v = w.finished.Cursor().First() {
			if at, _ := parseTimeKey(k); !at.Before(cut) {
				break
			}
			if _, err := w.dropIndexed(w.finished, k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// remember records that a task or context (by expiredKey) expired at a
// time, forgetting the oldest expiry past RememberExpired.
func (w *writer) remember(key string, at time.Time) error {
	if err := w.forget(key); err != nil {
		return err
	}
	k := timeKey(at, key)
	if err := w.expired.Put([]byte(key), k[:8]); err != nil {
		return err
	}
	if err := w.order.Put(k, nil); err != nil {
		return err
	}
	w.expiredN++
	for w.expiredN > RememberExpired {
		k, _ := w.order.Cursor().First()
		if k == nil {
			break
		}
		_, old := parseTimeKey(k)
		if err := w.order.Delete(k); err != nil {
			return err
		}
		if err := w.expired.Delete([]byte(old)); err != nil {
			return err
		}
		w.expiredN--
	}
	return nil
}

// forget drops what the store remembers of an expired task or context (by
// expiredKey).
func (w *writer) forget(key string) error {
	old := w.expired.Get([]byte(key))
	if len(old) != 8 {
		return nil
	}
	if err := w.order.Delete(append(bytes.Clone(old), key...)); err != nil {
		return err
	}
	w.expiredN--
	return w.expired.Delete([]byte(key))
}

// room reports whether evicting finished tasks other than keep (a task of
// keepSize stored bytes; "" for none) can bring the store within its
// bounds once more tasks and moreBytes bytes are added.
func (w *writer) room(more int, moreBytes int64, keep *Record, keepSize int) bool {
	n, b := w.finishedN, w.finishedBytes
	if keep != nil && final(stateOf(keep)) {
		n, b = n-1, b-int64(keepSize)
	}
	return w.cfg.fits(w.count+more-n, w.bytes+moreBytes-b)
}

// evict drops finished tasks other than keepID, the least recently changed
// first, until the store is within its bounds once more tasks and
// moreBytes bytes are added, or no such task is left.
func (w *writer) evict(more int, moreBytes int64, keepID string) error {
	c := w.finished.Cursor()
	for k, v := c.First(); k != nil && !w.cfg.fits(w.count+more, w.bytes+moreBytes); {
		if _, id := parseTimeKey(k); id == keepID {
			k, v = c.Next()
			continue
		}
		at := bytes.Clone(k)
		if _, err := w.dropIndexed(w.finished, k, v); err != nil {
			return err
		}
		// The entry under the cursor is gone: find the next one.
		k, v = c.Seek(at)
	}
	return nil
}

// missing is the error for a task id the store does not hold.
func (w *writer) missing(id string) error {
	if at := w.expired.Get([]byte(expiredKey('t', id))); len(at) == 8 {
		t, _ := parseTimeKey(at)
		return &ExpiredError{ID: id, At: t}
	}
	return ErrNotFound
}

// missing is the error for a task or context id ('t', 'c') the store
// does not hold.
func missing(tx *bolt.Tx, kind byte, id string) error {
	if at := tx.Bucket(bucketExpired).Get([]byte(expiredKey(kind, id))); len(at) == 8 {
		t, _ := parseTimeKey(at)
		return &ExpiredError{ID: id, Context: kind == 'c', At: t}
	}
	return ErrNotFound
}

// gone reports whether a stored task has expired at now, though not yet
// been dropped: it is answered as dropped. A waiting task returns its
// *ExpiredError.
func (s *Bolt) gone(r *Record, now time.Time) (bool, error) {
	switch st := stateOf(r); {
	case s.cfg.idle > 0 && interrupted(st) && r.Updated.Before(now.Add(-s.cfg.idle)):
		return true, &ExpiredError{ID: r.Task.ID, At: r.Updated.Add(s.cfg.idle)}
	case s.cfg.keepFinished > 0 && final(st) && r.Updated.Before(now.Add(-s.cfg.keepFinished)):
		return true, ErrNotFound
	}
	return false, nil
}

// Create implements Store.
func (s *Bolt) Create(ctx context.Context, r Record) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.update(func(w *writer) error {
		now := s.now()
		if err := w.sweep(now); err != nil {
			return err
		}
		if old := w.tasks.Get([]byte(r.Task.ID)); old != nil {
			rec, err := decode(old, s.cfg.keys)
			if err != nil {
				return err
			}
			out = rec
			return ErrExists
		}
		r.Created, r.Updated = now, now
		data, err := encode(r, s.cfg.keys)
		if err != nil {
			return err
		}
		if out, err = decode(data, s.cfg.keys); err != nil {
			return err
		}
		if !w.room(1, int64(len(data)), nil, 0) {
			return w.cfg.full(w.count, w.bytes, 1, int64(len(data)))
		}
		if err := w.evict(1, int64(len(data)), ""); err != nil {
			return err
		}
		if err := w.forget(expiredKey('t', r.Task.ID)); err != nil {
			return err
		}
		if err := w.forget(expiredKey('c', r.Task.ContextID)); err != nil {
			return err
		}
		if err := w.put(nil, 0, &r, data); err != nil {
			return err
		}
		return w.save()
	})
	switch {
	case errors.Is(err, ErrExists):
		return out, err
	case errors.Is(err, ErrFull):
		return Record{}, err
	case err != nil:
		return Record{}, fmt.Errorf("taskstore: %w", err)
	}
	return out, nil
}

// Get implements Store. A task that expired while waiting for input is
// answered with an *ExpiredError as long as the store remembers it.
func (s *Bolt) Get(ctx context.Context, id string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	var out Record
	err := s.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(bucketTasks).Get([]byte(id))
		if data == nil {
			return missing(tx, 't', id)
		}
		var err error
		if out, err = decode(data, s.cfg.keys); err != nil {
			return err
		}
		_, err = s.gone(&out, s.now())
		return err
	})
	return out, err
}

// Update implements Store. An update that grows the task is refused with
// ErrFull when evicting finished tasks cannot keep the store within
// MaxBytes.
func (s *Bolt) Update(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	return s.change(ctx, id, true, func(r *Record) error {
		old := r.Task.ContextID
		if err := fn(r); err != nil {
			return err
		}
		if r.Task.ID != id {
			return errors.New("taskstore: Update may not change the task id")
		}
		if r.Task.ContextID != old {
			return errors.New("taskstore: Update may not change the context id")
		}
		return nil
	})
}

// ReplaceTask implements Replacer. It is never refused for the store's
// bounds.
func (s *Bolt) ReplaceTask(ctx context.Context, t a2a.Task) error {
	_, err := s.change(ctx, t.ID, false, func(r *Record) error {
		if t.ContextID != r.Task.ContextID {
			return errors.New("taskstore: ReplaceTask may not change the context id")
		}
		r.Task = t
		return nil
	})
	return err
}

// change applies fn to a stored record in one transaction. With bounded
// set, a change that grows the task is refused when the store cannot make
// room for it; otherwise finished tasks are evicted after the change until
// the store is within its bounds, if it can be.
func (s *Bolt) change(ctx context.Context, id string, bounded bool, fn func(*Record) error) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	var out Record
	var expired error
	err := s.update(func(w *writer) error {
		now := s.now()
		data, exp, err := w.lookup(now, id)
		if data == nil {
			expired = exp
			return err
		}
		// old is what the indexes need: its secrets stay sealed.
		old, _, err := decodeSealed(data)
		if err != nil {
			return err
		}
		r, err := decode(data, s.cfg.keys)
		if err != nil {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
		r.Updated = now
		next, err := encode(r, s.cfg.keys)
		if err != nil {
			return err
		}
		grow := int64(len(next) - len(data))
		if bounded && grow > 0 && !w.room(0, grow, &old, len(data)) {
			return w.cfg.full(w.count, w.bytes, 0, grow)
		}
		if err := w.put(&old, len(data), &r, next); err != nil {
			return err
		}
		if err := w.evict(0, 0, id); err != nil {
			return err
		}
		out = r
		return w.save()
	})
	if err == nil {
		err = expired
	}
	if err != nil {
		return Record{}, err
	}
	return out, nil
}

// SetPushDelivery implements DeliverySetter: one transaction that
// rewrites the task's value without decoding the task, and leaves its
// Updated time and the indexes as they are.
func (s *Bolt) SetPushDelivery(ctx context.Context, id string, d PushDelivery) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var expired error
	err := s.update(func(w *writer) error {
		data, exp, err := w.lookup(s.now(), id)
		if data == nil {
			expired = exp
			return err
		}
		var r wireKeepingTask
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		next, changed := WithDelivery(r.PushConfigs, r.PushDeliveries, d)
		if !changed {
			// Nothing to write: the transaction is rolled back, the
			// sweep with it (the next write makes it again).
			return errUnchanged
		}
		r.PushDeliveries = next
		if err := w.rewrite(id, data, &r); err != nil {
			return err
		}
		if err := w.evict(0, 0, id); err != nil {
			return err
		}
		return w.save()
	})
	switch {
	case errors.Is(err, errUnchanged):
		return false, nil
	case err != nil:
		return false, err
	case expired != nil:
		return false, expired
	}
	return true, nil
}

// lookup sweeps the store at now and returns the value of task id. For a
// task it does not hold it returns nil and missing's error; for one that
// expired (perhaps in this very sweep), nil, the expiry for the caller
// to answer once the transaction committed, and the sweep saved.
func (w *writer) lookup(now time.Time, id string) (data []byte, expired, err error) {
	if err := w.sweep(now); err != nil {
		return nil, nil, err
	}
	if data = w.tasks.Get([]byte(id)); data != nil {
		return data, nil, nil
	}
	if err := w.missing(id); !errors.Is(err, ErrExpired) {
		return nil, nil, err
	}
	return nil, w.missing(id), w.save()
}

// rewrite stores r as the value of task id in place of data, its Updated
// time and places unchanged, its push-config secrets sealed again with
// the current key of the store's ring, if it has one (secrets written in
// clear, or with an older key, are not left so), and counts the change
// of its size.
func (w *writer) rewrite(id string, data []byte, r *wireKeepingTask) error {
	var err error
	if r.PushConfigs, r.PushSecrets, _, err = ResealPushSecrets(w.cfg.keys, id, r.PushConfigs, r.PushSecrets); err != nil {
		return err
	}
	value, err := json.Marshal(r)
	if err != nil {
		return err
	}
	grow := int64(len(value) - len(data))
	w.bytes += grow
	// The finished index counts the bytes of its tasks.
	if w.finished.Get(timeKey(r.Updated, id)) != nil {
		w.finishedBytes += grow
	}
	return w.tasks.Put([]byte(id), value)
}

// Reseal seals again, with the current key of the store's ring
// (SealSecrets), the push-config secrets of every task that holds them in
// clear or sealed with another key, in one transaction, and returns how
// many tasks it rewrote. Once it returned, the other keys may leave the
// ring. The tasks, their Updated times and their places are left as they
// are; finished tasks are evicted after it if the store is past its
// bounds. Without a ring it does nothing.
func (s *Bolt) Reseal(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	keys := s.cfg.keys
	if keys == nil {
		return 0, nil
	}
	n := 0
	err := s.update(func(w *writer) error {
		n = 0
		var stale [][]byte
		if err := w.tasks.ForEach(func(k, v []byte) error {
			if needsSeal(v, keys) {
				stale = append(stale, bytes.Clone(k))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range stale {
			data := w.tasks.Get(k)
			var r wireKeepingTask
			if err := json.Unmarshal(data, &r); err != nil {
				return err
			}
			if err := w.rewrite(string(k), data, &r); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return errUnchanged
		}
		if err := w.evict(0, 0, ""); err != nil {
			return err
		}
		return w.save()
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("taskstore: reseal: %w", err)
	}
	return n, nil
}

// List implements Store.
func (s *Bolt) List(ctx context.Context, f Filter) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	now := s.now()
	var all []Record
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTasks).ForEach(func(_, v []byte) error {
			r, err := decode(v, s.cfg.keys)
			if err != nil {
				return err
			}
			if gone, _ := s.gone(&r, now); !gone {
				all = append(all, r)
			}
			return nil
		})
	})
	if err != nil {
		return Page{}, err
	}
	return page(all, f)
}

// Close closes the database file.
func (s *Bolt) Close() error { return s.db.Close() }

// Context implements Store. Tasks that have expired are left out; a
// context whose last task expired waiting for input is answered with an
// *ExpiredError as long as the store remembers it.
func (s *Bolt) Context(ctx context.Context, id string) (ContextInfo, error) {
	if err := ctx.Err(); err != nil {
		return ContextInfo{}, err
	}
	if id == "" {
		return ContextInfo{}, ErrNotFound
	}
	now := s.now()
	var in []Record
	// expiredAt is the latest expiry of the context's tasks that expired
	// but are not dropped yet.
	var expiredAt time.Time
	err := s.db.View(func(tx *bolt.Tx) error {
		prefix := contextKey(id, "")
		c := tx.Bucket(bucketContexts).Cursor()
		tasks := tx.Bucket(bucketTasks)
		waiting, finished := tx.Bucket(bucketWaiting), tx.Bucket(bucketFinished)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			taskID := string(k[len(prefix):])
			if created, updated, principal, ok := parseContextValue(v); ok {
				// Expired or past the retention: the indexes say so
				// without the task.
				switch {
				case s.cfg.idle > 0 && updated.Before(now.Add(-s.cfg.idle)) && waiting.Get(timeKey(updated, taskID)) != nil:
					expiredAt = later(expiredAt, updated.Add(s.cfg.idle))
				case s.cfg.keepFinished > 0 && updated.Before(now.Add(-s.cfg.keepFinished)) && finished.Get(timeKey(updated, taskID)) != nil:
				default:
					in = append(in, Record{Task: a2a.Task{ID: taskID, ContextID: id}, Principal: principal, Created: created, Updated: updated})
				}
				continue
			}
			data := tasks.Get([]byte(taskID))
			if data == nil {
				continue
			}
			r, _, err := decodeSealed(data)
			if err != nil {
				return err
			}
			switch gone, err := s.gone(&r, now); {
			case errors.Is(err, ErrExpired):
				expiredAt = later(expiredAt, r.Updated.Add(s.cfg.idle))
			case !gone:
				in = append(in, r)
			}
		}
		if len(in) > 0 {
			return nil
		}
		if !expiredAt.IsZero() {
			return &ExpiredError{ID: id, Context: true, At: expiredAt}
		}
		return missing(tx, 'c', id)
	})
	if err != nil {
		return ContextInfo{}, err
	}
	return contextOf(id, in)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
