package taskstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

// The store remembers the most recent RememberExpired expiries of tasks
// and contexts, no more.
func TestExpiriesAreRememberedWithinABound(t *testing.T) {
	ctx := context.Background()
	clk := newClock(0)
	s := NewMemory(clk.now, ExpireInterruptedAfter(time.Minute), MaxTasks(0))
	for i := range RememberExpired + 5 {
		s.Create(ctx, task(fmt.Sprint("t", i), "c", a2a.TaskStateInputRequired))
	}
	clk.advance(2 * time.Minute)
	s.List(ctx, Filter{}) // sweeps
	if len(s.expired) != RememberExpired || len(s.expiredOrder) != RememberExpired || len(s.tasks) != 0 || s.waiting.Len() != 0 {
		t.Fatalf("%d expiries remembered, %d listed, %d tasks, %d waiting", len(s.expired), len(s.expiredOrder), len(s.tasks), s.waiting.Len())
	}
	// Five tasks more than the bound, and their context, expired: the six
	// oldest expiries are forgotten.
	if _, err := s.Get(ctx, "t5"); errors.Is(err, ErrExpired) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("the oldest expiries are forgotten: %v", err)
	}
	if _, err := s.Get(ctx, "t6"); !errors.Is(err, ErrExpired) {
		t.Fatalf("a recent expiry: %v", err)
	}
	var exp *ExpiredError
	if _, err := s.Context(ctx, "c"); !errors.As(err, &exp) || !exp.Context || exp.ID != "c" {
		t.Fatalf("the context of the last expired task: %v", err)
	}
	if s.bytes != 0 || s.finishedBytes != 0 {
		t.Fatalf("bytes %d, finished bytes %d after every task went", s.bytes, s.finishedBytes)
	}
}

// A file written before the store kept counters is indexed when opened,
// and its bounds apply from then on; the counters survive a restart.
func TestBoltIndexesAnOlderFileAndKeepsItsCounters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	clk := newClock(0)
	s, err := OpenBolt(path, clk.now, 0, MaxTasks(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		st := a2a.TaskStateWorking
		if i < 2 {
			st = a2a.TaskStateCompleted
		}
		s.Create(ctx, task(fmt.Sprint("t", i), "c", st))
		clk.advance(time.Second)
	}
	// Make it an older file: no counters, no time-ordered indexes.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketFinished, bucketWaiting} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = OpenBolt(path, clk.now, 0, MaxTasks(4)); err != nil {
		t.Fatal(err)
	}
	// Five tasks kept, two finished: a new one evicts both.
	if _, err := s.Create(ctx, task("t5", "c", a2a.TaskStateWorking)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t0", "t1"} {
		if _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s, finished, of the older file was not evicted: %v", id, err)
		}
	}
	s.Close()
	if s, err = OpenBolt(path, clk.now, 0, MaxTasks(4)); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Create(ctx, task("t6", "c", a2a.TaskStateWorking)); !errors.Is(err, ErrFull) {
		t.Fatalf("four unfinished tasks of four, after a restart: %v", err)
	}
	p, err := s.List(ctx, Filter{})
	var kept []string
	for _, r := range p.Records {
		kept = append(kept, r.Task.ID)
	}
	if err != nil || strings.Join(kept, ",") != "t5,t4,t3,t2" {
		t.Fatalf("kept %v: %v", kept, err)
	}
	var n, b int64
	s.db.View(func(tx *bolt.Tx) error {
		n, b = getCount(tx.Bucket(bucketMeta), metaTasks), getCount(tx.Bucket(bucketMeta), metaBytes)
		var sum int64
		tx.Bucket(bucketTasks).ForEach(func(_, v []byte) error { sum += int64(len(v)); return nil })
		if sum != b {
			t.Errorf("byte counter %d, stored %d", b, sum)
		}
		return nil
	})
	if n != 4 {
		t.Fatalf("task counter %d", n)
	}
}
