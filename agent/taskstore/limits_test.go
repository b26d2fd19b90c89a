package taskstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

// manual is a clock that moves only when told to.
type manual struct {
	mu sync.Mutex
	t  time.Time
}

func newManual() *manual { return &manual{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)} }

func (c *manual) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manual) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type boundedOpener func(t *testing.T, now func() time.Time, opts ...Option) Store

func boundedStores() map[string]boundedOpener {
	return map[string]boundedOpener{
		"memory": func(t *testing.T, now func() time.Time, opts ...Option) Store { return NewMemory(now, opts...) },
		"bolt": func(t *testing.T, now func() time.Time, opts ...Option) Store {
			s, err := OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), now, 0, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// setState moves a stored task to a state.
func setState(t *testing.T, s Store, id string, st a2a.TaskState) {
	t.Helper()
	if _, err := s.Update(context.Background(), id, func(r *Record) error {
		r.Task.Status = &a2a.TaskStatus{State: st}
		return nil
	}); err != nil {
		t.Fatalf("%s to %s: %v", id, st, err)
	}
}

// kept returns the ids a store holds, sorted.
func kept(t *testing.T, s Store) string {
	t.Helper()
	p, err := s.List(context.Background(), Filter{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range p.Records {
		ids = append(ids, r.Task.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

func TestBoundsEvictFinishedTasksOldestFirstThenRefuse(t *testing.T) {
	ctx := context.Background()
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			clk := newManual()
			s := open(t, clk.now, MaxTasks(3))
			for _, id := range []string{"a", "b", "c"} {
				if _, err := s.Create(ctx, task(id, "c1", a2a.TaskStateSubmitted)); err != nil {
					t.Fatal(err)
				}
				clk.advance(time.Second)
			}
			// b finishes first, then a: b is the older finished task.
			setState(t, s, "b", a2a.TaskStateCompleted)
			clk.advance(time.Second)
			setState(t, s, "a", a2a.TaskStateFailed)
			clk.advance(time.Second)

			steps := []struct {
				create string
				kept   string
			}{
				{"d", "a,c,d"}, // b evicted
				{"e", "c,d,e"}, // a evicted
			}
			for _, st := range steps {
				if _, err := s.Create(ctx, task(st.create, "c1", a2a.TaskStateSubmitted)); err != nil {
					t.Fatalf("create %s: %v", st.create, err)
				}
				if got := kept(t, s); got != st.kept {
					t.Fatalf("after %s: kept %s, want %s", st.create, got, st.kept)
				}
				clk.advance(time.Second)
			}
			_, err := s.Create(ctx, task("f", "c1", a2a.TaskStateSubmitted))
			if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "3 tasks kept, the limit") {
				t.Fatalf("a full store of unfinished tasks: %v", err)
			}
			if got := kept(t, s); got != "c,d,e" {
				t.Fatalf("a refused create changed the store: %s", got)
			}
			if _, err := s.Get(ctx, "b"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
				t.Fatalf("an evicted task: %v", err)
			}
			// Once one finishes, there is room again.
			setState(t, s, "d", a2a.TaskStateCanceled)
			if _, err := s.Create(ctx, task("f", "c1", a2a.TaskStateSubmitted)); err != nil {
				t.Fatal(err)
			}
			if info, _ := s.Context(ctx, "c1"); strings.Join(info.TaskIDs, ",") != "c,e,f" {
				t.Fatalf("context after evictions: %v", info.TaskIDs)
			}
		})
	}
}

func TestByteBoundRefusesGrowthButNotATurnsEvents(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 2000)
	withText := func(id, text string, st a2a.TaskState) Record {
		r := task(id, "c1", st)
		r.Task.History = []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}}
		return r
	}
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			clk := newManual()
			s := open(t, clk.now, MaxBytes(5000))
			for _, id := range []string{"a", "b"} {
				if _, err := s.Create(ctx, withText(id, big, a2a.TaskStateInputRequired)); err != nil {
					t.Fatal(err)
				}
				clk.advance(time.Second)
			}
			_, err := s.Create(ctx, withText("c", big, a2a.TaskStateSubmitted))
			if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "limit of 5000 bytes") {
				t.Fatalf("a third big task: %v", err)
			}
			// A resume that would add a big message is refused, and
			// nothing of it is kept.
			_, err = s.Update(ctx, "a", func(r *Record) error {
				r.Task.History = append(r.Task.History, withText("a", big, a2a.TaskStateWorking).Task.History...)
				r.MessageIDs = append(r.MessageIDs, "m2")
				return nil
			})
			if !errors.Is(err, ErrFull) {
				t.Fatalf("an update growing past the bound: %v", err)
			}
			if r, _ := s.Get(ctx, "a"); len(r.Task.History) != 1 || r.HasMessage("m2") {
				t.Fatalf("a refused update was kept: %+v", r)
			}
			// A turn's events are never refused.
			grown := withText("b", big+big, a2a.TaskStateWorking).Task
			if err := ReplaceTask(ctx, s, grown); err != nil {
				t.Fatalf("a turn's event: %v", err)
			}
			// Finishing a frees its bytes for a new task, by eviction.
			setState(t, s, "a", a2a.TaskStateCompleted)
			if _, err := s.Create(ctx, withText("c", "small", a2a.TaskStateSubmitted)); err != nil {
				t.Fatal(err)
			}
			if got := kept(t, s); got != "b,c" {
				t.Fatalf("kept %s", got)
			}
		})
	}
}

func TestTasksWaitingForInputExpireAfterTheIdleTime(t *testing.T) {
	ctx := context.Background()
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			clk := newManual()
			s := open(t, clk.now, ExpireInterruptedAfter(time.Hour))
			s.Create(ctx, task("input", "c1", a2a.TaskStateInputRequired))
			s.Create(ctx, task("auth", "c1", a2a.TaskStateAuthRequired))
			s.Create(ctx, task("touched", "c1", a2a.TaskStateInputRequired))
			s.Create(ctx, task("working", "c1", a2a.TaskStateWorking))
			s.Create(ctx, task("done", "c2", a2a.TaskStateCompleted))
			clk.advance(50 * time.Minute)
			setState(t, s, "touched", a2a.TaskStateInputRequired) // a change restarts the idle time
			clk.advance(10*time.Minute + time.Nanosecond)

			for _, id := range []string{"input", "auth"} {
				_, err := s.Get(ctx, id)
				var exp *ExpiredError
				if !errors.Is(err, ErrExpired) || !errors.Is(err, ErrNotFound) || !errors.As(err, &exp) ||
					exp.ID != id || !exp.At.Equal(time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)) {
					t.Fatalf("%s an hour and a moment later: %v", id, err)
				}
				if _, err := s.Update(ctx, id, func(*Record) error { return nil }); !errors.Is(err, ErrExpired) {
					t.Fatalf("update of %s: %v", id, err)
				}
			}
			for _, id := range []string{"touched", "working", "done"} {
				if _, err := s.Get(ctx, id); err != nil {
					t.Fatalf("%s: %v", id, err)
				}
			}
			if info, _ := s.Context(ctx, "c1"); strings.Join(info.TaskIDs, ",") != "touched,working" {
				t.Fatalf("context: %v", info.TaskIDs)
			}
			if got := kept(t, s); got != "done,touched,working" {
				t.Fatalf("kept %s", got)
			}
			// A context whose every task expired is reported expired; one
			// that still has a task is not.
			s.Create(ctx, task("alone", "c9", a2a.TaskStateInputRequired))
			clk.advance(2 * time.Hour)
			var exp *ExpiredError
			if _, err := s.Context(ctx, "c9"); !errors.Is(err, ErrExpired) || !errors.As(err, &exp) || !exp.Context || exp.ID != "c9" {
				t.Fatalf("a context whose last task expired: %v", err)
			}
			if _, err := s.Context(ctx, "c1"); err != nil {
				t.Fatalf("a context with a task going: %v", err)
			}
			// A task never known is not reported expired.
			if _, err := s.Get(ctx, "never"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
				t.Fatalf("unknown id: %v", err)
			}
			// A new task under an expired id is a new task.
			if _, err := s.Create(ctx, task("input", "c3", a2a.TaskStateSubmitted)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "input"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFinishedRetentionAppliesToBothStores(t *testing.T) {
	ctx := context.Background()
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			clk := newManual()
			s := open(t, clk.now, KeepFinishedFor(time.Minute))
			s.Create(ctx, task("old", "c1", a2a.TaskStateCompleted))
			s.Create(ctx, task("going", "c1", a2a.TaskStateWorking))
			clk.advance(61 * time.Second)
			s.Create(ctx, task("new", "c1", a2a.TaskStateRejected))
			if _, err := s.Get(ctx, "old"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
				t.Fatalf("finished 61 s ago, 60 s retention: %v", err)
			}
			if got := kept(t, s); got != "going,new" {
				t.Fatalf("kept %s", got)
			}
		})
	}
}

// The store remembers the most recent RememberExpired expiries of tasks
// and contexts, no more.
func TestExpiriesAreRememberedWithinABound(t *testing.T) {
	ctx := context.Background()
	clk := newManual()
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
	clk := newManual()
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
	if got := kept(t, s); got != "t2,t3,t4,t5" {
		t.Fatalf("kept %s", got)
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
