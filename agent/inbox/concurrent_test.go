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
