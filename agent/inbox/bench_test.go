package inbox

import (
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The benchmarks append records of 1 KiB; each reports records/s. The two
// raw bbolt references write the same keys (big-endian counters) and
// values of the same size with the records bucket's fill percent, to a
// file opened with Bolt's options, synced on every commit as Bolt is;
// docs/benchmarks.md has the figures.

const benchPayload = 1024

// rawAppend appends b.N values of 1 KiB to a fresh bbolt file, perUpdate
// to a transaction.
func rawAppend(b *testing.B, perUpdate int) {
	db, err := openDB(filepath.Join(b.TempDir(), "raw.db"), &BoltOptions{}, &fileCatcher{}, false)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucketRecords); return err }); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, benchPayload)
	var seq uint64
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(perUpdate, b.N-done)
		if err := db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(bucketRecords)
			bk.FillPercent = appendFill
			for range n {
				seq++
				if err := bk.Put(seqKey(seq), value); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkRawBoltAppendOnePerUpdate(b *testing.B) { rawAppend(b, 1) }

func BenchmarkRawBoltAppend64PerUpdate(b *testing.B) { rawAppend(b, 64) }

// benchPayloadBytes is the payload of every record: the store only reads
// it, as the raw references reuse their value.
var benchPayloadBytes = make([]byte, benchPayload)

// benchRecord is record i, of 1 KiB of payload, of sender g.
func benchRecord(g, i int, expires time.Time) Record {
	id := strconv.Itoa(i)
	return Record{Peer: "peer-" + strconv.Itoa(g), MessageID: "m-" + id, TaskID: "t-" + id,
		ContextID: "ctx", Payload: benchPayloadBytes, Expires: expires}
}

// enqueueFrom enqueues n records of 1 KiB from senders goroutines.
func enqueueFrom(b *testing.B, s *Bolt, senders, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	expires := time.Now().Add(time.Hour)
	for g := range senders {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if _, _, full, err := s.Enqueue(bg, benchRecord(g, i, expires), roomy); err != nil || full != "" {
					b.Errorf("Enqueue: %q %v", full, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkBoltEnqueue64Senders(b *testing.B) {
	s, _, err := OpenBolt(filepath.Join(b.TempDir(), "queue.db"), BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	enqueueFrom(b, s, 64, b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/float64(s.commits.Load()), "records/commit")
}

func BenchmarkBoltNextTake64(b *testing.B) {
	s, _, err := OpenBolt(filepath.Join(b.TempDir(), "queue.db"), BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	enqueueFrom(b, s, 64, b.N)
	until := time.Now().Add(time.Hour)
	takes := make([]Taken, 0, 64)
	b.ResetTimer()
	var after uint64
	for taken := 0; taken < b.N; {
		rs, err := s.Next(bg, after, 64)
		if err != nil || len(rs) == 0 {
			b.Fatalf("Next after %d: %d records, %v (%d of %d taken)", after, len(rs), err, taken, b.N)
		}
		takes = takes[:0]
		for _, r := range rs {
			takes = append(takes, Taken{Seq: r.Seq, ReplayKey: r.Peer + "/" + r.MessageID, Until: until})
		}
		if _, _, err := s.Take(bg, takes); err != nil {
			b.Fatal(err)
		}
		after = rs[len(rs)-1].Seq
		taken += len(rs)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
