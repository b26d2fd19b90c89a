package inbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

func nowUnix() int64 { return time.Now().Unix() }

// kv is an entry salvaged: copies of its key and value.
type kv struct{ k, v []byte }

// salvaged is what could be read of a damaged file.
type salvaged struct {
	mu      sync.Mutex
	records []kv // sound records, value as stored
	replay  []kv // sound replay log entries, value as stored
	// seq is the records' bucket sequence, logSeq the replay log's (0 when
	// unreadable).
	seq, logSeq uint64
	// count is the stored record count (-1 when unreadable).
	count int
	// bad counts the record entries found failing their checksum.
	bad int
	// incomplete is true when part of the records could not be reached.
	incomplete bool
	err        string
}

// salvage reads what it can of the damaged file at path (moved aside):
// every record and replay log entry that can be reached and passes its
// checksum. Its format is not checked: the records of format 1 are stored
// as in format 2, and its replay cache, elsewhere, is not read.
// It reads a copy, opened read-only, in a guarded goroutine: a failed open
// of the file can leave a mapping of it, which holds bbolt's lock on it
// until the process exits. A part of the file that panics or faults is
// skipped; reading stops after o.RecoverTimeout, with what was read by
// then.
func salvage(path string, o *BoltOptions) *salvaged {
	sv := &salvaged{count: -1}
	cp, err := copyFile(path)
	if err != nil {
		sv.incomplete = true
		sv.err = err.Error()
		return sv
	}
	// Unlinked even while a goroutine that timed out still reads it.
	defer os.Remove(cp)
	var (
		db    *bolt.DB
		files fileCatcher
		stop  atomic.Bool
	)
	closeAll := func() {
		if db != nil {
			try(func() { db.Close() })
		}
		files.close()
	}
	err = guarded(o.RecoverTimeout, func() error {
		var err error
		db, err = bolt.Open(cp, 0o600, &bolt.Options{ReadOnly: true, Timeout: o.LockTimeout, OpenFile: files.open})
		if err != nil {
			return err
		}
		tx, err := db.Begin(false)
		if err != nil {
			return err
		}
		defer func() { try(func() { tx.Rollback() }) }()
		sv.read(tx, &stop)
		return nil
	}, closeAll)
	if errors.Is(err, errTimedOut) {
		stop.Store(true)
	} else {
		closeAll()
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	out := &salvaged{records: sv.records, replay: sv.replay, seq: sv.seq, logSeq: sv.logSeq, count: sv.count, bad: sv.bad, incomplete: sv.incomplete, err: sv.err}
	if err != nil {
		out.incomplete = true
		if out.err == "" {
			out.err = err.Error()
		}
	}
	return out
}

// copyFile copies the file at path to a new file beside it and returns
// the copy's name.
func copyFile(path string) (string, error) {
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".salvage-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst.Name())
		return "", fmt.Errorf("copying the damaged file: %w", err)
	}
	return dst.Name(), nil
}

// read salvages the buckets of tx.
func (sv *salvaged) read(tx *bolt.Tx, stop *atomic.Bool) {
	var recs, rep *bolt.Bucket
	if !try(func() { recs = tx.Bucket(bucketRecords) }) || recs == nil {
		sv.mu.Lock()
		sv.incomplete = true
		sv.mu.Unlock()
		sv.fail("the records bucket cannot be read")
		return
	}
	try(func() {
		seq := recs.Sequence()
		sv.mu.Lock()
		sv.seq = seq
		sv.mu.Unlock()
	})
	try(func() {
		if m := tx.Bucket(bucketMeta); m != nil {
			if n, ok := clampCount(m.Get(metaCount)); ok {
				sv.mu.Lock()
				sv.count = n
				sv.mu.Unlock()
			}
		}
	})
	sv.mu.Lock()
	limit := sv.seq
	sv.mu.Unlock()
	if limit == 0 {
		limit = ^uint64(0)
	}
	if !salvageBucket(recs, seqProbe(limit), stop, func(k, v []byte) bool {
		if _, _, err := decodeRecord(k, v); err != nil {
			sv.mu.Lock()
			sv.bad++
			sv.mu.Unlock()
			return false
		}
		sv.mu.Lock()
		sv.records = append(sv.records, kv{bytes.Clone(k), bytes.Clone(v)})
		sv.mu.Unlock()
		return true
	}) {
		sv.mu.Lock()
		sv.incomplete = true
		sv.mu.Unlock()
	}
	if !try(func() { rep = tx.Bucket(bucketReplayLog) }) || rep == nil {
		sv.fail("the replay log cannot be read")
		return
	}
	logLimit := ^uint64(0)
	try(func() {
		if n := rep.Sequence(); n > 0 {
			logLimit = n
		}
		sv.mu.Lock()
		sv.logSeq = rep.Sequence()
		sv.mu.Unlock()
	})
	if !salvageBucket(rep, seqProbe(logLimit), stop, func(k, v []byte) bool {
		if _, _, _, ok := decodeLogEntry(k, v); !ok {
			return false
		}
		sv.mu.Lock()
		sv.replay = append(sv.replay, kv{bytes.Clone(k), bytes.Clone(v)})
		sv.mu.Unlock()
		return true
	}) {
		sv.fail("part of the replay log cannot be read")
	}
}

func (sv *salvaged) fail(why string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.err == "" {
		sv.err = why
	} else {
		sv.err += "; " + why
	}
}

// probe tells where salvageBucket looks for the next readable part of a
// bucket past a part that panics or faults, over the first 8 bytes of the
// keys as a big-endian number: first every position up to linear past the
// failure, then doubling steps and a bisection, up to limit (no key
// beyond it).
type probe struct {
	linear, limit uint64
}

// seqProbe is the probe of the records, whose keys are their Seqs, and of
// the replay log, whose keys are counters, up to last: the parts that can
// be read alternate with parts that cannot (a truncated file loses the
// pages past its end, and the pages of a bucket are spread over the file),
// so every key past a failure is tried, up to a budget, then the doubling
// search.
func seqProbe(last uint64) probe { return probe{linear: 1 << 16, limit: last} }

// salvageBucket passes keep every entry of b it can read, in key order,
// and reports whether it read them all. keep reports whether an entry is
// sound. A page that panics or faults is skipped: the next pass seeks from
// just after the last sound key, and when that makes no progress, from the
// first position past it at which a seek succeeds (see probe).
func salvageBucket(b *bolt.Bucket, pr probe, stop *atomic.Bool, keep func(k, v []byte) bool) bool {
	seen := make(map[string]bool)
	complete := true
	start := []byte{}
	for !stop.Load() {
		var last []byte
		done := try(func() {
			c := b.Cursor()
			for k, v := c.Seek(start); k != nil && !stop.Load(); k, v = c.Next() {
				if v == nil || seen[string(k)] {
					continue
				}
				seen[string(k)] = true
				if keep(k, v) {
					last = bytes.Clone(k)
				}
			}
		})
		if done {
			return complete && !stop.Load()
		}
		complete = false
		if last != nil {
			// Just past the last sound key.
			start = append(last, 0)
			continue
		}
		next, ok := pr.seekable(b, prefix8(start), stop)
		if !ok {
			return false
		}
		start = binary.BigEndian.AppendUint64(nil, next)
	}
	return false
}

// touch reads every byte of k and v.
func touch(k, v []byte) uint32 {
	return crc32.Update(crc32.Checksum(k, castagnoli), castagnoli, v)
}

// prefix8 is the first 8 bytes of k as a big-endian number (k padded with
// zeros).
func prefix8(k []byte) uint64 {
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// seekable returns the first position p > from, up to the limit, at which
// a seek in b and reading what it finds succeed: one by one up to linear
// past from, then by doubling steps and a bisection between the last
// failure and the first success.
func (pr probe) seekable(b *bolt.Bucket, from uint64, stop *atomic.Bool) (uint64, bool) {
	ok := func(p uint64) bool {
		return try(func() {
			k, v := b.Cursor().Seek(binary.BigEndian.AppendUint64(nil, p))
			touch(k, v)
		})
	}
	if from >= pr.limit {
		return 0, false
	}
	lo := from // the last position that failed
	for p := from + 1; p <= pr.limit && p-from <= pr.linear; p++ {
		if stop.Load() {
			return 0, false
		}
		if ok(p) {
			return p, true
		}
		lo = p
	}
	hi, found := uint64(0), false
	for step := uint64(1); !found && !stop.Load(); step <<= 1 {
		p := lo + step
		if p <= lo || p > pr.limit {
			p = pr.limit
		}
		if p <= lo {
			return 0, false
		}
		if ok(p) {
			hi, found = p, true
		} else if p == pr.limit {
			return 0, false
		} else {
			lo = p
		}
	}
	for hi-lo > 1 && !stop.Load() {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, found
}

// writeFresh creates a new file at path holding what was salvaged.
func writeFresh(path string, o *BoltOptions, sv *salvaged) error {
	var files fileCatcher
	db, err := openDB(path, o, &files, false)
	if err != nil {
		return err
	}
	// Sealed records keep the file marked as one that may hold them.
	format := wantFormat(o)
	for _, e := range sv.records {
		if len(e.v) > 0 && e.v[0] == recordSealed {
			format = fileFormatSealed
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := createBuckets(tx, format); err != nil {
			return err
		}
		recs, lg := tx.Bucket(bucketRecords), tx.Bucket(bucketReplayLog)
		recs.FillPercent, lg.FillPercent = appendFill, appendFill
		seq := sv.seq
		for _, e := range sv.records {
			if err := recs.Put(e.k, e.v); err != nil {
				return err
			}
			seq = max(seq, binary.BigEndian.Uint64(e.k))
		}
		if err := recs.SetSequence(seq); err != nil {
			return err
		}
		ctr := sv.logSeq
		for _, e := range sv.replay {
			if err := lg.Put(e.k, e.v); err != nil {
				return err
			}
			ctr = max(ctr, binary.BigEndian.Uint64(e.k))
		}
		if err := lg.SetSequence(ctr); err != nil {
			return err
		}
		return putCount(tx, len(sv.records))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing what was salvaged: %w", err)
	}
	return nil
}
