package pgstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
)

// ReplaceTask writes a task in one statement when it can (replaceSQL) and
// the general way otherwise; either way the totals stay the sums of the
// rows and the answers are those of the other stores.
func TestReplaceTaskKeepsTheTotalsOnEitherWay(t *testing.T) {
	withText := func(id, ctxID string, st a2a.TaskState, n int) a2a.Task {
		task := a2a.Task{ID: id, ContextID: ctxID, Status: &a2a.TaskStatus{State: st}}
		if n > 0 {
			task.Artifacts = []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat("x", n))}}}}
		}
		return task
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return now }
	cases := []struct {
		name    string
		o       Options
		setup   []a2a.Task // created, in order, a second apart
		replace a2a.Task
		wantErr func(error) bool
		gone    []string // tasks evicted by the replacement
	}{
		{name: "a task that grows within the bounds",
			setup:   []a2a.Task{withText("t1", "c1", a2a.TaskStateWorking, 10)},
			replace: withText("t1", "c1", a2a.TaskStateWorking, 500)},
		{name: "a task that shrinks",
			setup:   []a2a.Task{withText("t1", "c1", a2a.TaskStateWorking, 500)},
			replace: withText("t1", "c1", a2a.TaskStateCompleted, 0)},
		{name: "a task that grows past MaxBytes evicts a finished task",
			o:       Options{MaxBytes: 3000},
			setup:   []a2a.Task{withText("old", "c0", a2a.TaskStateCompleted, 1000), withText("t1", "c1", a2a.TaskStateWorking, 10)},
			replace: withText("t1", "c1", a2a.TaskStateCompleted, 1900),
			gone:    []string{"old"}},
		{name: "a task the store does not hold",
			replace: withText("nope", "c1", a2a.TaskStateWorking, 0),
			wantErr: func(err error) bool { return errors.Is(err, taskstore.ErrNotFound) }},
		{name: "a task in another context",
			setup:   []a2a.Task{withText("t1", "c1", a2a.TaskStateWorking, 0)},
			replace: withText("t1", "c2", a2a.TaskStateWorking, 0),
			wantErr: func(err error) bool { return err != nil && strings.Contains(err.Error(), "context") }},
		{name: "a waiting task that expired",
			o:       Options{ExpireInterruptedAfter: time.Minute},
			setup:   []a2a.Task{withText("t1", "c1", a2a.TaskStateInputRequired, 0)},
			replace: withText("t1", "c1", a2a.TaskStateWorking, 0),
			wantErr: func(err error) bool { var e *taskstore.ExpiredError; return errors.As(err, &e) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			o := tc.o
			o.Migrate, o.Now = true, clock
			s := open(t, pgtest.NewSchema(t), o)
			for _, task := range tc.setup {
				if _, err := s.Create(ctx, taskstore.Record{Task: task}); err != nil {
					t.Fatal(err)
				}
				now = now.Add(time.Second)
			}
			if tc.o.ExpireInterruptedAfter > 0 {
				now = now.Add(2 * tc.o.ExpireInterruptedAfter)
			}
			err := s.ReplaceTask(ctx, tc.replace)
			switch {
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("ReplaceTask: %v, not the error wanted", err)
			case tc.wantErr == nil && err != nil:
				t.Fatalf("ReplaceTask: %v", err)
			case tc.wantErr == nil:
				got, err := s.Get(ctx, tc.replace.ID)
				if err != nil || got.Task.Status.State != tc.replace.Status.State || len(got.Task.Artifacts) != len(tc.replace.Artifacts) ||
					!got.Updated.Equal(now) {
					t.Fatalf("the task replaced: %+v %v", got, err)
				}
			}
			for _, id := range tc.gone {
				if _, err := s.Get(ctx, id); !errors.Is(err, taskstore.ErrNotFound) {
					t.Fatalf("%s kept: %v", id, err)
				}
			}
			checkTotals(t, s)
		})
	}
}

// Replacements of one task by two stores at once, growing and shrinking
// it, leave the totals the sums of the rows: each reckons its growth from
// the version it replaces.
func TestConcurrentReplacementsKeepTheTotals(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	a, b := open(t, dsn, Options{Migrate: true}), open(t, dsn, Options{Migrate: true})
	for i := range 4 {
		if _, err := a.Create(ctx, taskstore.Record{Task: a2a.Task{ID: fmt.Sprint("t", i), ContextID: "c"}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 8 {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for j := range 25 {
				task := a2a.Task{ID: fmt.Sprint("t", j%4), ContextID: "c", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking},
					Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{{Content: a2a.PartText(strings.Repeat("y", (w*37+j*101)%900))}}}}}
				if err := s.ReplaceTask(ctx, task); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkTotals(t, a)
}

// The runtime hands the store the task's encoding (taskstore.EncodedWriter):
// the store keeps those bytes, and its totals count them.
func TestTheEncodingGivenIsStored(t *testing.T) {
	s := open(t, pgtest.NewSchema(t), Options{Migrate: true})
	task := a2a.Task{ID: "t1", ContextID: "c1", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}
	enc, err := task.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateEncoded(ctx, taskstore.Record{Task: task}, enc); err != nil {
		t.Fatal(err)
	}
	task.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted}
	task.Artifacts = []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{{Content: a2a.PartText("done")}}}}
	if enc, err = task.AppendJSON(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceTaskEncoded(ctx, task, enc); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := s.pool.QueryRow(ctx, "SELECT task FROM a2a_tasks WHERE id = 't1'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, enc) {
		t.Fatalf("stored %s, want %s", stored, enc)
	}
	got, err := s.Get(ctx, "t1")
	if err != nil || got.Task.Status.State != a2a.TaskStateCompleted || len(got.Task.Artifacts) != 1 {
		t.Fatalf("Get: %+v %v", got, err)
	}
	checkTotals(t, s)
}
