package inbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Recovery describes what OpenBolt found wrong with the file and what it
// kept of it. The zero value is a sound file of which nothing was dropped.
type Recovery struct {
	// Damaged is true when the file could not be read whole: it was moved
	// aside to MovedTo and the store starts from a fresh file holding what
	// could be salvaged.
	Damaged bool
	// MovedTo is where the damaged file was moved ("" when it was not).
	MovedTo string
	// Records and Replay are the records and replay keys salvaged from a
	// damaged file.
	Records, Replay int
	// Unreadable is the number of record entries dropped: found but
	// failing their checksum, plus, in a damaged file whose record count
	// could still be read, those that could not be reached.
	Unreadable int
	// Uncounted is true when part of a damaged file's records could not
	// be reached and its record count could not be read: Unreadable is
	// then a lower bound.
	Uncounted bool
	// Error describes what was wrong ("" when nothing was).
	Error string
}

// damageError is a file found damaged, with what was wrong.
type damageError struct{ why string }

func (d *damageError) Error() string { return d.why }

func damaged(format string, a ...any) error { return &damageError{fmt.Sprintf(format, a...)} }

// isDamage reports whether an error of bbolt's Open means a damaged file
// rather than one that cannot be opened (permissions, a lock).
func isDamage(err error) bool {
	var d *damageError
	var p *panicError
	switch {
	case errors.As(err, &d), errors.As(err, &p), errors.Is(err, errTimedOut),
		errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch),
		errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrInvalidMapping),
		errors.Is(err, berrors.ErrIncompatibleValue):
		return true
	}
	// bbolt's error for a file shorter than its two meta pages.
	return strings.Contains(err.Error(), "file size too small")
}

// loaded is what reading a sound file found.
type loaded struct {
	st *state
	// badRecords and badReplay are the keys of the entries failing their
	// checksum, to be deleted.
	badRecords, badReplay [][]byte
	// extraReplay are the keys of replay log entries superseded by
	// another of the same key (never left by Bolt), to be deleted.
	extraReplay [][]byte
	// seq is the bucket sequence of the records, maxSeq their largest key;
	// logSeq and maxLog, of the replay log.
	seq, maxSeq, logSeq, maxLog uint64
	// count is the stored record count (-1 when absent).
	count int
	// missing is true when a bucket or the format is to be created (a
	// new file).
	missing bool
	// format is the file's format (0 when it has none).
	format uint64
	// txid is the id of the last transaction committed to the file read.
	txid int
}

// open opens the file at path, recovering it when it is damaged.
func open(path string, o *BoltOptions) (*bolt.DB, *state, Recovery, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, Recovery{}, fmt.Errorf("inbox: %w", err)
	}
	db, l, err := openSound(path, o)
	if err == nil {
		rec := Recovery{Unreadable: len(l.badRecords)}
		if rec.Unreadable > 0 || len(l.badReplay) > 0 {
			rec.Error = fmt.Sprintf("%d records and %d replay keys failed their checksum", len(l.badRecords), len(l.badReplay))
			o.Logger.Warn("inbox: dropped damaged entries of the queue file", "path", path,
				"records", len(l.badRecords), "replayKeys", len(l.badReplay))
		}
		return db, l.st, rec, nil
	}
	if !isDamage(err) {
		return nil, nil, Recovery{}, err
	}
	why := err.Error()
	rec := Recovery{Damaged: true, Error: why}
	moved, err := moveAside(path)
	if err != nil {
		return nil, nil, rec, fmt.Errorf("inbox: %s is damaged (%s) and cannot be moved aside: %w", path, why, err)
	}
	rec.MovedTo = moved
	sv := salvage(moved, o)
	rec.Records, rec.Replay = len(sv.records), len(sv.replay)
	rec.Unreadable = sv.bad
	if sv.incomplete {
		if sv.count >= 0 {
			rec.Unreadable = max(rec.Unreadable, sv.count-len(sv.records))
		} else {
			rec.Uncounted = true
		}
	}
	if sv.err != "" {
		rec.Error += "; salvage: " + sv.err
	}
	if err := writeFresh(path, o, sv); err != nil {
		return nil, nil, rec, fmt.Errorf("inbox: %s was damaged (%s), moved to %s; creating a fresh file: %w", path, why, moved, err)
	}
	o.Logger.Warn("inbox: the queue file was damaged and has been replaced", "path", path, "movedTo", moved,
		"reason", why, "records", rec.Records, "replayKeys", rec.Replay, "unreadable", rec.Unreadable, "uncounted", rec.Uncounted)
	db, l, err = openSound(path, o)
	if err != nil {
		return nil, nil, rec, fmt.Errorf("inbox: %s was damaged (%s), moved to %s; the fresh file: %w", path, why, moved, err)
	}
	return db, l.st, rec, nil
}

// moveAside renames a damaged file to path.corrupt-<unix time>, with a
// further suffix if that name is taken.
func moveAside(path string) (string, error) {
	base := fmt.Sprintf("%s.corrupt-%d", path, nowUnix())
	to := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s-%d", base, i)
	}
	return to, os.Rename(path, to)
}

// openSound opens the file at path and reads it whole, in a guarded
// goroutine; an error for which isDamage holds means the file is damaged
// (it is closed).
func openSound(path string, o *BoltOptions) (*bolt.DB, *loaded, error) {
	fi, statErr := os.Stat(path)
	switch {
	case statErr == nil && !fi.Mode().IsRegular():
		return nil, nil, fmt.Errorf("inbox: open %s: not a regular file (%s)", path, fi.Mode().Type())
	case statErr == nil && fi.Size() == 0:
		// bbolt would silently start a new database in it.
		return nil, nil, damaged("the file is empty")
	}
	var (
		db    *bolt.DB
		l     *loaded
		files fileCatcher
	)
	closeAll := func() {
		if db != nil {
			db.Close()
		}
		files.close()
	}
	fresh := errors.Is(statErr, os.ErrNotExist)
	// The wait for the lock is bbolt's to end (LockTimeout): a file
	// locked elsewhere must not look damaged.
	err := guarded(2*o.LockTimeout+o.RecoverTimeout, func() error {
		var err error
		if !fresh {
			// Read-only first: bbolt opening a file for writing walks its
			// pages to find the free ones (the free list is not stored),
			// in a goroutine of its own where a page that faults would
			// crash the process; load reads them here first, where a
			// fault is caught.
			if db, err = openDB(path, o, &files, true); err != nil {
				return err
			}
			if l, err = load(db); err != nil {
				return err
			}
			err, db = db.Close(), nil
			if err != nil {
				return err
			}
		}
		if db, err = openDB(path, o, &files, false); err != nil {
			return err
		}
		if l != nil && l.txid == lastTx(db) {
			return nil
		}
		// New, or written in between by another process.
		l, err = load(db)
		return err
	}, closeAll)
	switch {
	case errors.Is(err, errTimedOut):
		return nil, nil, err
	case errors.Is(err, berrors.ErrTimeout):
		return nil, nil, fmt.Errorf("inbox: open %s: locked by another process (waited %s): %w", path, o.LockTimeout, err)
	case err != nil:
		closeAll()
		if isDamage(err) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("inbox: open %s: %w", path, err)
	}
	if err := repair(db, l, wantFormat(o)); err != nil {
		closeAll()
		if isDamage(err) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("inbox: open %s: %w", path, err)
	}
	return db, l, nil
}

// openDB opens the bbolt file at path. The free list is not stored: it
// would be rewritten whole by every commit, and is as large as the part
// of the file left free by the records taken (a queue that held 100,000
// records of 1 KiB and was emptied frees some 32,000 pages: 256 KB of
// free list a commit). bbolt finds the free pages when it opens the file
// for writing.
func openDB(path string, o *BoltOptions, files *fileCatcher, readOnly bool) (*bolt.DB, error) {
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: o.LockTimeout, OpenFile: files.open, ReadOnly: readOnly,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
}

// lastTx is the id of the last transaction committed to db (0 when it
// cannot be read).
func lastTx(db *bolt.DB) int {
	id := 0
	_ = db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// load reads every page of a freshly opened file, the records and the
// replay cache into a state, and runs bbolt's consistency check; an error
// for which isDamage holds means the file is damaged. Run guarded.
func load(db *bolt.DB) (*loaded, error) {
	fi, err := os.Stat(db.Path())
	if err != nil {
		return nil, err
	}
	l := &loaded{st: newState(), count: -1}
	err = db.View(func(tx *bolt.Tx) error {
		l.txid = tx.ID()
		if tx.Size() > fi.Size() {
			return damaged("the file (%d bytes) is shorter than its pages (%d bytes)", fi.Size(), tx.Size())
		}
		// Touch every key and value first, here where a fault is caught:
		// the check below reads them in a goroutine of bbolt's.
		if err := touchAll(tx); err != nil {
			return err
		}
		if err := checkTx(tx); err != nil {
			return err
		}
		return l.read(tx)
	})
	return l, err
}

// touchAll reads every key and value of every bucket.
func touchAll(tx *bolt.Tx) error {
	var sum uint32
	var walk func(b *bolt.Bucket, depth int) error
	walk = func(b *bolt.Bucket, depth int) error {
		if depth > 8 {
			return damaged("buckets nested too deep")
		}
		return b.ForEach(func(k, v []byte) error {
			sum = crc32.Update(sum, castagnoli, k)
			if v != nil {
				sum = crc32.Update(sum, castagnoli, v)
				return nil
			}
			if sub := b.Bucket(k); sub != nil {
				return walk(sub, depth+1)
			}
			return nil
		})
	}
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		sum = crc32.Update(sum, castagnoli, name)
		return walk(b, 1)
	})
	_ = sum
	return err
}

// checkTx runs bbolt's consistency check and returns its first finding.
func checkTx(tx *bolt.Tx) error {
	var first error
	n := 0
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
		n++
	}
	if first == nil {
		return nil
	}
	if n > 1 {
		return damaged("consistency check: %v (and %d more)", first, n-1)
	}
	return damaged("consistency check: %v", first)
}

// read reads the buckets of a sound file.
func (l *loaded) read(tx *bolt.Tx) error {
	if err := checkFormat(tx); err != nil {
		return err
	}
	for _, name := range buckets {
		if tx.Bucket(name) == nil {
			l.missing = true
		}
	}
	if m := tx.Bucket(bucketMeta); m != nil {
		if n, ok := clampCount(m.Get(metaCount)); ok {
			l.count = n
		}
		if v := m.Get(metaFormat); v == nil {
			l.missing = true
		} else {
			l.format = binary.BigEndian.Uint64(v) // checked by checkFormat
		}
	}
	if b := tx.Bucket(bucketRecords); b != nil {
		l.seq = b.Sequence()
		if err := b.ForEach(func(k, v []byte) error {
			if v == nil {
				return damaged("a bucket among the records")
			}
			r, isSealed, err := decodeRecord(k, v)
			if err != nil {
				l.badRecords = append(l.badRecords, bytes.Clone(k))
				return nil
			}
			e := entryOf(&r)
			e.size = storedSize(&r, isSealed)
			l.st.add(r.Seq, e)
			l.maxSeq = r.Seq
			return nil
		}); err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketReplayLog); b != nil {
		l.logSeq = b.Sequence()
		c := l.st.cache
		if err := b.ForEach(func(k, v []byte) error {
			if v == nil {
				return damaged("a bucket in the replay log")
			}
			ctr, h, until, ok := decodeLogEntry(k, v)
			if !ok {
				l.badReplay = append(l.badReplay, bytes.Clone(k))
				return nil
			}
			l.maxLog = ctr
			e := replayEntry{until: until, ctr: ctr}
			if old, ok := c.keys[h]; ok {
				// Two entries of one key: the later Until is kept.
				if !until.after(old.until) {
					l.extraReplay = append(l.extraReplay, bytes.Clone(k))
					return nil
				}
				l.extraReplay = append(l.extraReplay, seqKey(old.ctr))
			}
			c.keys[h] = e
			return nil
		}); err != nil {
			return err
		}
		c.next = max(l.logSeq, l.maxLog) + 1
		c.reorder()
	}
	l.st.syncReplay()
	return nil
}

// checkFormat returns an error wrapping ErrFormat unless tx is a queue
// file of fileFormat or a new file (no bucket at all).
func checkFormat(tx *bolt.Tx) error {
	if m := tx.Bucket(bucketMeta); m != nil {
		if v := m.Get(metaFormat); v != nil {
			if len(v) != 8 {
				return fmt.Errorf("%w: its format is unreadable (%d bytes)", ErrFormat, len(v))
			}
			if f := binary.BigEndian.Uint64(v); f != fileFormat && f != fileFormatSealed {
				return fmt.Errorf("%w: it is of format %d, this version reads formats %d and %d", ErrFormat, f, fileFormat, fileFormatSealed)
			}
			return nil
		}
	}
	for _, name := range bucketsFormat1 {
		if tx.Bucket(name) != nil {
			return fmt.Errorf("%w: it is of format 1, an earlier layout of the replay cache, which this version does not read (format %d); move it aside", ErrFormat, fileFormat)
		}
	}
	var names []string
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if !slices.ContainsFunc(buckets, func(b []byte) bool { return bytes.Equal(b, name) }) {
			names = append(names, fmt.Sprintf("%q", name))
		}
		return nil
	}); err != nil {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("%w: it has buckets of its own (%s)", ErrFormat, strings.Join(names, ", "))
	}
	return nil
}

// wantFormat is the format a store opened with o marks its file with:
// fileFormatSealed with a key ring, else fileFormat.
func wantFormat(o *BoltOptions) uint64 {
	if o.Keys != nil {
		return fileFormatSealed
	}
	return fileFormat
}

// repair creates the missing buckets and the format (raising it to format
// when it is lower), deletes the entries failing their checksum and the
// superseded log entries, and brings the counters in line, in one
// transaction, when anything needs it.
func repair(db *bolt.DB, l *loaded, format uint64) error {
	if !l.missing && len(l.badRecords) == 0 && len(l.badReplay) == 0 && len(l.extraReplay) == 0 &&
		l.seq >= l.maxSeq && l.logSeq >= l.maxLog && l.count == len(l.st.entries) && l.format >= format {
		return nil
	}
	return db.Update(func(tx *bolt.Tx) error {
		if err := createBuckets(tx, format); err != nil {
			return err
		}
		recs, lg := tx.Bucket(bucketRecords), tx.Bucket(bucketReplayLog)
		for _, k := range l.badRecords {
			if err := recs.Delete(k); err != nil {
				return err
			}
		}
		for _, k := range slices.Concat(l.badReplay, l.extraReplay) {
			if err := lg.Delete(k); err != nil {
				return err
			}
		}
		if l.seq < l.maxSeq {
			if err := recs.SetSequence(l.maxSeq); err != nil {
				return err
			}
		}
		if l.logSeq < l.maxLog {
			if err := lg.SetSequence(l.maxLog); err != nil {
				return err
			}
		}
		return putCount(tx, len(l.st.entries))
	})
}

// createBuckets creates the buckets of a queue file that are missing and
// stores its format: format, unless it has a higher one already (a file
// that may hold sealed records stays marked so).
func createBuckets(tx *bolt.Tx, format uint64) error {
	for _, name := range buckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	m := tx.Bucket(bucketMeta)
	if v := m.Get(metaFormat); len(v) == 8 && binary.BigEndian.Uint64(v) >= format {
		return nil
	}
	return m.Put(metaFormat, seqKey(format))
}
