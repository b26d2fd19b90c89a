package inbox

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/offline"
)

// sendAll runs senders goroutines, each enqueueing perSender records made
// by mk, and counts the outcomes.
func sendAll(t *testing.T, s Store, senders, perSender int, b offline.QueueBounds, mk func(g, i int) Record) (stored int64, full map[offline.QueueFullKind]int64) {
	t.Helper()
	var mu sync.Mutex
	full = make(map[offline.QueueFullKind]int64)
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				_, dup, kind, err := s.Enqueue(bg, mk(g, i), b)
				switch {
				case err != nil || dup:
					t.Errorf("Enqueue: dup %v, %v", dup, err)
				case kind != "":
					mu.Lock()
					full[kind]++
					mu.Unlock()
				default:
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return n.Load(), full
}

func TestConcurrentSendersNeverExceedTheBounds(t *testing.T) {
	size := int64(len(msg("p00", "00-000").Payload))
	for _, tc := range []struct {
		name   string
		bounds offline.QueueBounds
		peers  int
		want   offline.QueueFullKind
	}{
		{"messages", offline.QueueBounds{MaxMessages: 37, MaxBytes: 1 << 30, MaxPerPeer: 1 << 20}, 64, offline.QueueFullKindMessages},
		{"bytes", offline.QueueBounds{MaxMessages: 1 << 20, MaxBytes: 23 * size, MaxPerPeer: 1 << 20}, 64, offline.QueueFullKindBytes},
		{"peer", offline.QueueBounds{MaxMessages: 1 << 20, MaxBytes: 1 << 30, MaxPerPeer: 5}, 4, offline.QueueFullKindPeer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openNew(t)
			stored, full := sendAll(t, s, 64, 4, tc.bounds, func(g, i int) Record {
				return msg(fmt.Sprintf("p%02d", g%tc.peers), fmt.Sprintf("%02d-%03d", g, i))
			})
			got := all(t, s)
			if int64(len(got)) != stored {
				t.Fatalf("%d enqueues succeeded, Next returns %d", stored, len(got))
			}
			st, _ := s.Stats(bg)
			perPeer := map[string]int{}
			for _, r := range got {
				perPeer[r.Peer]++
			}
			if st.Messages > tc.bounds.MaxMessages || st.Bytes > tc.bounds.MaxBytes || st.Messages != len(got) {
				t.Fatalf("stats %+v over the bounds %+v", st, tc.bounds)
			}
			for p, n := range perPeer {
				if n > tc.bounds.MaxPerPeer {
					t.Fatalf("peer %s has %d pending, bound %d", p, n, tc.bounds.MaxPerPeer)
				}
			}
			if full[tc.want] == 0 || len(full) != 1 || stored+full[tc.want] != 64*4 {
				t.Fatalf("stored %d, refused %v; want refusals of kind %q only", stored, full, tc.want)
			}
			// The bound is reached exactly: it leaves no room unused.
			switch tc.want {
			case offline.QueueFullKindMessages:
				if st.Messages != tc.bounds.MaxMessages {
					t.Fatalf("stored %d, bound %d", st.Messages, tc.bounds.MaxMessages)
				}
			case offline.QueueFullKindBytes:
				if st.Bytes != tc.bounds.MaxBytes {
					t.Fatalf("stored %d bytes, bound %d", st.Bytes, tc.bounds.MaxBytes)
				}
			case offline.QueueFullKindPeer:
				if st.Messages != tc.peers*tc.bounds.MaxPerPeer {
					t.Fatalf("stored %d, want %d", st.Messages, tc.peers*tc.bounds.MaxPerPeer)
				}
			}
		})
	}
}

func TestAFloodingPeerIsRefusedWhileAnotherStillEnqueues(t *testing.T) {
	s, _ := openNew(t)
	b := offline.DefaultQueueBounds()
	b.MaxPerPeer = 10
	var calm []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 8 {
			_, _, full, err := s.Enqueue(bg, msg("calm", fmt.Sprint(i)), b)
			if err == nil && full != "" {
				err = fmt.Errorf("refused: %s", full)
			}
			mu.Lock()
			calm = append(calm, err)
			mu.Unlock()
		}
	})
	stored, full := sendAll(t, s, 63, 5, b, func(g, i int) Record { return msg("flood", fmt.Sprintf("%d-%d", g, i)) })
	wg.Wait()
	if stored != 10 || full[offline.QueueFullKindPeer] != 63*5-10 || len(full) != 1 {
		t.Fatalf("flood: stored %d, refused %v", stored, full)
	}
	if err := errors.Join(calm...); err != nil || len(calm) != 8 {
		t.Fatalf("the calm peer: %v", err)
	}
}

func TestConcurrentEnqueuesShareTransactions(t *testing.T) {
	s, _ := openNew(t)
	stored, _ := sendAll(t, s, 64, 8, roomy, func(g, i int) Record { return msg(fmt.Sprint(g), fmt.Sprint(i)) })
	commits := s.commits.Load()
	if stored != 64*8 || commits >= stored/2 {
		t.Fatalf("%d records in %d transactions", stored, commits)
	}
	t.Logf("%d records in %d transactions", stored, commits)
}

func TestDuplicatesInOneGroupStoreOneRecord(t *testing.T) {
	s, _ := openNew(t)
	var seqs sync.Map
	var dups atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			r, dup, _, err := s.Enqueue(bg, msg("p1", "same"), roomy)
			if err != nil {
				t.Error(err)
			}
			if dup {
				dups.Add(1)
			}
			seqs.Store(r.Seq, true)
		})
	}
	wg.Wait()
	n := 0
	seqs.Range(func(any, any) bool { n++; return true })
	if n != 1 || dups.Load() != 31 || len(all(t, s)) != 1 {
		t.Fatalf("%d distinct seqs, %d dups, %d stored", n, dups.Load(), len(all(t, s)))
	}
}

func TestCloseWhileSendersEnqueueAnswersEveryoneAndKeepsWhatWasStored(t *testing.T) {
	s, path := openNew(t)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, _, _, err := s.Enqueue(bg, msg(fmt.Sprint(g), fmt.Sprint(i)), roomy)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				ok.Add(1)
			}
		})
	}
	for ok.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s2, _ := openAt(t, path, BoltOptions{})
	if got := int64(len(all(t, s2))); got != ok.Load() {
		t.Fatalf("%d enqueues succeeded, %d records after reopen", ok.Load(), got)
	}
}

func TestALoneSenderCommitsEachRecordAtOnce(t *testing.T) {
	s, _ := openNew(t)
	for i := range 20 {
		mustEnqueue(t, s, msg("p1", fmt.Sprint(i)))
	}
	if n := s.commits.Load(); n != 20 {
		t.Fatalf("20 records in %d transactions", n)
	}
}
