package taskstore

import (
	"context"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

// checkCounters checks that the counters of s, of the tasks and their
// bytes, the finished ones' among them, match what it holds.
func checkCounters(t *testing.T, s Store) {
	t.Helper()
	switch s := s.(type) {
	case *Memory:
		s.mu.Lock()
		defer s.mu.Unlock()
		var all, fin int64
		for _, mt := range s.tasks {
			if mt.size != mt.rec.size() {
				t.Fatalf("task %s counted %d bytes, holds %d", mt.rec.id, mt.size, mt.rec.size())
			}
			all += mt.size
			if mt.in == &s.finished {
				fin += mt.size
			}
		}
		if all != s.bytes || fin != s.finishedBytes {
			t.Fatalf("bytes %d (finished %d) counted, %d (%d) held", s.bytes, s.finishedBytes, all, fin)
		}
	case *Bolt:
		s.db.View(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			var all, fin, n, finN int64
			tasks := tx.Bucket(bucketTasks)
			tasks.ForEach(func(_, v []byte) error { all += int64(len(v)); n++; return nil })
			tx.Bucket(bucketFinished).ForEach(func(k, _ []byte) error {
				_, id := parseTimeKey(k)
				fin += int64(len(tasks.Get([]byte(id))))
				finN++
				return nil
			})
			if b, f := getCount(meta, metaBytes), getCount(meta, metaFinishedBytes); b != all || f != fin {
				t.Fatalf("bytes %d (finished %d) counted, %d (%d) stored", b, f, all, fin)
			}
			if c, f := getCount(meta, metaTasks), getCount(meta, metaFinished); c != n || f != finN {
				t.Fatalf("tasks %d (finished %d) counted, %d (%d) stored", c, f, n, finN)
			}
			return nil
		})
	default:
		t.Fatalf("no counters to check in a %T", s)
	}
}

// Memory drops what has to go on every call, reads among them: a Get of
// another task after the idle time tells the watchers of the expired one
// before it returns. (Bolt drops on its next write; the contract,
// agent/taskstore/storetest, tells the drops after a write, for every
// store.)
func TestMemoryTellsADropFoundByARead(t *testing.T) {
	ctx := context.Background()
	clk := newClock(0)
	s := NewMemory(clk.now, ExpireInterruptedAfter(time.Minute))
	var told []Dropped
	defer s.WatchDrops(func(d Dropped) { told = append(told, d) })()
	wait := task("wait", "c-wait", a2a.TaskStateInputRequired)
	wait.PushConfigs = []a2a.TaskPushNotificationConfig{{ID: "cfg-1", TaskID: "wait", URL: "https://hooks.example/a2a"}}
	for _, r := range []Record{wait, task("other", "c1", a2a.TaskStateWorking)} {
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(2 * time.Minute)
	if _, err := s.Get(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0].TaskID != "wait" || told[0].ContextID != "c-wait" || len(told[0].PushConfigIDs) != 1 || told[0].PushConfigIDs[0] != "cfg-1" {
		t.Fatalf("told %+v", told)
	}
	if _, err := s.Get(ctx, "wait"); !errors.Is(err, ErrExpired) {
		t.Fatalf("the expired task: %v", err)
	}
}
