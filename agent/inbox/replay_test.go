package inbox

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// logEntries reads the replay log of the closed file at path: Until by
// hash, failing the test on an entry that does not decode or a key held
// twice.
func logEntries(t *testing.T, path string) map[replayHash]moment {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[replayHash]moment{}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketReplayLog).ForEach(func(k, v []byte) error {
			_, h, until, ok := decodeLogEntry(k, v)
			if !ok {
				return fmt.Errorf("entry %x does not decode", k)
			}
			if _, dup := out[h]; dup {
				return fmt.Errorf("key %x held twice", h)
			}
			out[h] = until
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// enqueueN enqueues n records of p1 with message ids 0 to n-1.
func enqueueN(t *testing.T, s Store, n int) []Record {
	t.Helper()
	var out []Record
	for i := range n {
		out = append(out, mustEnqueue(t, s, msg("p1", fmt.Sprint(i))))
	}
	return out
}

func TestTheReplayLogHoldsExactlyTheKeysOfTheCache(t *testing.T) {
	s, path := openNew(t)
	enqueueN(t, s, 6)
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, step := range []struct {
		takes        []Taken
		wantReplayed []bool
	}{
		{[]Taken{{Seq: 1, ReplayKey: "A", Until: h(5 * time.Hour)}, {Seq: 2, ReplayKey: "B", Until: h(time.Hour)}, {Seq: 3, ReplayKey: "C", Until: h(3 * time.Hour)}},
			[]bool{false, false, false}},
		// A later Until supersedes A's entry; an earlier one leaves B's.
		{[]Taken{{Seq: 4, ReplayKey: "A", Until: h(8 * time.Hour)}, {Seq: 5, ReplayKey: "B", Until: h(time.Minute)}},
			[]bool{true, true}},
		// Twice in one Take, the later Until kept.
		{[]Taken{{Seq: 6, ReplayKey: "D", Until: h(2 * time.Hour)}, {Seq: 6, ReplayKey: "D", Until: h(4 * time.Hour)}},
			[]bool{false, false}},
	} {
		replayed, _, err := s.Take(bg, step.takes)
		if err != nil || !slices.Equal(replayed, step.wantReplayed) {
			t.Fatalf("Take %+v = %v, %v", step.takes, replayed, err)
		}
	}
	if err := s.Untake(bg, nil, []string{"C"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expired(bg, h(time.Hour), 10); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(bg); st.Replay != 2 {
		t.Fatalf("Stats %+v, want A and D", st)
	}
	s.Close()
	want := map[replayHash]moment{replayHashOf("A"): momentOf(h(8 * time.Hour)), replayHashOf("D"): momentOf(h(2 * time.Hour))}
	if got := logEntries(t, path); !equalMaps(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
	s2, _ := openAt(t, path, BoltOptions{})
	for _, step := range []struct {
		now  time.Duration
		want int
	}{{2 * time.Hour, 1}, {7 * time.Hour, 1}, {8 * time.Hour, 0}} {
		if _, err := s2.Expired(bg, h(step.now), 10); err != nil {
			t.Fatal(err)
		}
		if st, _ := s2.Stats(bg); st.Replay != step.want {
			t.Fatalf("after Expired at %v: %+v, want %d keys", step.now, st, step.want)
		}
	}
	s2.Close()
	if got := logEntries(t, path); len(got) != 0 {
		t.Fatalf("log %v, want empty", got)
	}
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestExpiredForgetsKeysInTheOrderOfTheirUntilNotOfTheirEntry(t *testing.T) {
	s, path := openNew(t)
	r := rand.New(rand.NewPCG(5, 6))
	// The records, enqueued together; then a record more for every third.
	const n = 1000
	sendAll(t, s, 50, n/50, roomy, func(g, i int) Record { return msg("p1", fmt.Sprint(g*n/50+i)) })
	sendAll(t, s, 50, n/150+1, roomy, func(g, i int) Record { return msg("p2", fmt.Sprint(3*(g*(n/150+1)+i))) })
	var recs, again []Record
	for _, r := range all(t, s) {
		if r.Peer == "p1" {
			recs = append(recs, r)
		} else if id, _ := strconv.Atoi(r.MessageID); id < n {
			again = append(again, r)
		}
	}
	// Keys entered 64 a Take, their Until in no order.
	until := make(map[string]time.Duration)
	take := func(rs []Record, wantReplayed bool) {
		for len(rs) > 0 {
			var takes []Taken
			for _, rec := range rs[:min(64, len(rs))] {
				d, ok := until[rec.MessageID]
				if ok {
					d += 10 * time.Hour // extended
				} else {
					d = time.Duration(r.IntN(100*60)) * time.Minute
				}
				until[rec.MessageID] = d
				takes = append(takes, Taken{Seq: rec.Seq, ReplayKey: "k" + rec.MessageID, Until: t0.Add(d)})
			}
			replayed, _, err := s.Take(bg, takes)
			if err != nil || slices.Contains(replayed, !wantReplayed) {
				t.Fatalf("Take = %v, %v", replayed, err)
			}
			rs = rs[len(takes):]
		}
	}
	take(recs, false)
	take(again, true)
	if len(recs) != n || len(again) != n/3+1 {
		t.Fatalf("%d records, %d more", len(recs), len(again))
	}
	left := func(now time.Duration) int {
		n := 0
		for _, d := range until {
			if d > now {
				n++
			}
		}
		return n
	}
	for i, now := range []time.Duration{0, 10 * time.Hour, 55 * time.Hour, 80 * time.Hour, 109 * time.Hour, 110 * time.Hour} {
		if _, err := s.Expired(bg, t0.Add(now), 1); err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Stats(bg); st.Replay != left(now) {
			t.Fatalf("at %v: %d keys, want %d", now, st.Replay, left(now))
		}
		if i == 3 {
			s.Close()
			if got := len(logEntries(t, path)); got != left(now) {
				t.Fatalf("log of %d entries, want %d", got, left(now))
			}
			s, _ = openAt(t, path, BoltOptions{})
			if st, _ := s.Stats(bg); st.Replay != left(now) {
				t.Fatalf("after reopen: %d keys, want %d", st.Replay, left(now))
			}
		}
	}
}

func TestAReplayKeyOfAnyLengthIsHeldByItsHash(t *testing.T) {
	s, path := openNew(t)
	enqueueN(t, s, 4)
	long := strings.Repeat("k", 100_000)
	other := long[:len(long)-1] + "j"
	until := t0.Add(time.Hour)
	replayed, _, err := s.Take(bg, []Taken{{Seq: 1, ReplayKey: long, Until: until}, {Seq: 2, ReplayKey: other, Until: until}})
	if err != nil || !slices.Equal(replayed, []bool{false, false}) {
		t.Fatalf("Take = %v, %v", replayed, err)
	}
	s.Close()
	s2, _ := openAt(t, path, BoltOptions{})
	replayed, _, err = s2.Take(bg, []Taken{{Seq: 3, ReplayKey: long, Until: until}, {Seq: 4, ReplayKey: long[:1000], Until: until}})
	if err != nil || !slices.Equal(replayed, []bool{true, false}) {
		t.Fatalf("Take after reopen = %v, %v", replayed, err)
	}
	if fi, _ := os.Stat(path); fi.Size() > 1<<20 {
		t.Fatalf("a file of %d bytes", fi.Size())
	}
}

func TestALogEntryFailingItsChecksumOrHeldTwiceIsDropped(t *testing.T) {
	s, path := openNew(t)
	enqueueN(t, s, 2)
	if _, _, err := s.Take(bg, []Taken{{Seq: 1, ReplayKey: "A", Until: t0.Add(2 * time.Hour)}, {Seq: 2, ReplayKey: "B", Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Entries Bolt never writes: a second one of A, with an earlier
	// Until, one of B with a later Until, and one that does not decode.
	db, err := bolt.Open(path, 0o600, asBolt)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		lg := tx.Bucket(bucketReplayLog)
		bad := encodeLogEntry(12, replayHashOf("C"), momentOf(t0))
		bad[0] ^= 1
		for ctr, v := range map[uint64][]byte{
			10: encodeLogEntry(10, replayHashOf("A"), momentOf(t0.Add(time.Hour))),
			11: encodeLogEntry(11, replayHashOf("B"), momentOf(t0.Add(3*time.Hour))),
			12: bad,
		} {
			if err := lg.Put(seqKey(ctr), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s2, rec := openAt(t, path, BoltOptions{})
	if rec.Damaged || rec.Unreadable != 0 || !strings.Contains(rec.Error, "1 replay keys failed") {
		t.Fatalf("Recovery %+v", rec)
	}
	if st, _ := s2.Stats(bg); st.Replay != 2 {
		t.Fatalf("Stats %+v", st)
	}
	s2.Close()
	want := map[replayHash]moment{replayHashOf("A"): momentOf(t0.Add(2 * time.Hour)), replayHashOf("B"): momentOf(t0.Add(3 * time.Hour))}
	if got := logEntries(t, path); !equalMaps(got, want) {
		t.Fatalf("log %v, want %v", got, want)
	}
	// New entries follow the largest counter kept.
	s3, rec := openAt(t, path, BoltOptions{})
	if rec != (Recovery{}) {
		t.Fatalf("Recovery once repaired %+v", rec)
	}
	if got := s3.st.cache.next; got != 12 {
		t.Fatalf("next counter %d, want 12", got)
	}
}

// writeBolt creates a bbolt file at path and runs fill in a transaction.
func writeBolt(t *testing.T, path string, fill func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAFileOfAnotherFormatIsReportedAndLeftAlone(t *testing.T) {
	record := msg("p1", "a")
	record.Enqueued = t0
	encoded, err := encodeRecord(nil, &record, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored := sealRecord(encoded, 1)
	for _, tc := range []struct {
		name string
		fill func(tx *bolt.Tx) error
		want string
	}{
		{"format 1", func(tx *bolt.Tx) error {
			for _, name := range [][]byte{[]byte("records"), []byte("replay"), []byte("replayOrder"), []byte("meta")} {
				if _, err := tx.CreateBucket(name); err != nil {
					return err
				}
			}
			if err := tx.Bucket([]byte("replay")).Put([]byte("obj-1"), make([]byte, 16)); err != nil {
				return err
			}
			return tx.Bucket([]byte("records")).Put(seqKey(1), stored)
		}, "format 1"},
		{"a later format", func(tx *bolt.Tx) error {
			if err := createBuckets(tx, fileFormat); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaFormat, seqKey(4))
		}, "format 4"},
		{"an unreadable format", func(tx *bolt.Tx) error {
			if err := createBuckets(tx, fileFormat); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaFormat, []byte("v2"))
		}, "unreadable"},
		{"another database", func(tx *bolt.Tx) error {
			_, err := tx.CreateBucket([]byte("users"))
			return err
		}, `"users"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := dbPath(t)
			writeBolt(t, path, tc.fill)
			before, _ := os.ReadFile(path)
			s, rec, err := OpenBolt(path, BoltOptions{})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) || rec.Damaged {
				t.Fatalf("OpenBolt = %+v, %v", rec, err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatal("the file was changed")
			}
			if m, _ := filepath.Glob(path + ".*"); len(m) != 0 {
				t.Fatalf("left %v", m)
			}
		})
	}
	t.Run("a bbolt file without buckets is a new queue", func(t *testing.T) {
		path := dbPath(t)
		writeBolt(t, path, func(*bolt.Tx) error { return nil })
		s, rec := openAt(t, path, BoltOptions{})
		if rec != (Recovery{}) {
			t.Fatalf("Recovery %+v", rec)
		}
		mustEnqueue(t, s, msg("p1", "a"))
	})
}

// TestTheCacheInMemoryFollowsAModel checks the heap by Until against a
// plain map through random changes, with enough of them superseded or
// dropped that the heap is rebuilt.
func TestTheCacheInMemoryFollowsAModel(t *testing.T) {
	c := newReplayCache()
	model := map[replayHash]moment{}
	r := rand.New(rand.NewPCG(7, 8))
	rebuilt, last := 0, 0
	var clock int64 // seconds, advancing slowly
	for step := range 50_000 {
		if step%50 == 0 {
			clock++
		}
		h := replayHashOf(fmt.Sprint(r.IntN(300)))
		switch op := r.IntN(10); {
		case op < 7:
			until := moment{sec: clock + int64(r.IntN(1000)), nsec: uint32(r.IntN(3))}
			if old, ok := model[h]; ok && !until.after(old) {
				break
			}
			model[h] = until
			c.put(h, replayEntry{until: until, ctr: c.next})
		case op < 8:
			delete(model, h)
			c.drop(h)
		default:
			now := moment{sec: clock}
			due := c.due(now)
			if !slices.IsSortedFunc(due, func(a, b untilItem) int { return cmp.Compare(a.ctr, b.ctr) }) {
				t.Fatalf("step %d: due out of the log's order", step)
			}
			for _, it := range due {
				if u, ok := model[it.h]; !ok || u.after(now) || u != it.until {
					t.Fatalf("step %d: %x due at %v, model %v %v", step, it.h, now, u, ok)
				}
				delete(model, it.h)
				c.drop(it.h)
			}
			for h, u := range model {
				if !u.after(now) {
					t.Fatalf("step %d: %x (%v) not due at %v", step, h, u, now)
				}
			}
		}
		if n := len(c.byUntil); n < len(c.keys) || n > 2*len(c.keys)+1024 {
			t.Fatalf("step %d: heap of %d items for %d keys", step, n, len(c.keys))
		}
		if len(c.byUntil) < last {
			rebuilt++ // only a rebuild shrinks it outside first
		}
		first, ok := c.first()
		last = len(c.byUntil)
		var want moment
		found := false
		for _, u := range model {
			if !found || want.after(u) {
				want, found = u, true
			}
		}
		if ok != (len(model) > 0) || ok && first != want || len(c.keys) != len(model) {
			t.Fatalf("step %d: first %v %v, model %v (%d keys, %d in the model)", step, first, ok, want, len(c.keys), len(model))
		}
	}
	if rebuilt == 0 {
		t.Error("the heap was never rebuilt")
	}
}
