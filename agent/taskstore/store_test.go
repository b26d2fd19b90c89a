package taskstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

// clock is a deterministic time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)} }

type opener func(t *testing.T, now func() time.Time) Store

func stores() map[string]opener {
	return map[string]opener{
		"memory": func(t *testing.T, now func() time.Time) Store { return NewMemory(now) },
		"bolt": func(t *testing.T, now func() time.Time) Store {
			s, err := OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), now, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

func task(id, ctxID string, state a2a.TaskState) Record {
	return Record{Task: a2a.Task{ID: id, ContextID: ctxID, Status: &a2a.TaskStatus{State: state}}, MessageIDs: []string{"m-" + id}}
}

func TestStoreConformance(t *testing.T) {
	ctx := context.Background()
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Run("create then get returns a copy", func(t *testing.T) {
				s := open(t, newClock().now)
				r, err := s.Create(ctx, task("t1", "c1", a2a.TaskStateSubmitted))
				if err != nil || r.Created.IsZero() || !r.Created.Equal(r.Updated) {
					t.Fatalf("%+v %v", r, err)
				}
				got, err := s.Get(ctx, "t1")
				if err != nil || got.Task.ContextID != "c1" || !got.HasMessage("m-t1") || got.HasMessage("other") {
					t.Fatalf("%+v %v", got, err)
				}
				got.Task.Status.State = a2a.TaskStateFailed
				again, _ := s.Get(ctx, "t1")
				if again.Task.Status.State != a2a.TaskStateSubmitted {
					t.Fatal("changing a returned record changed the store")
				}
			})
			t.Run("a repeated create returns the stored task and creates nothing", func(t *testing.T) {
				s := open(t, newClock().now)
				first, _ := s.Create(ctx, task("t1", "c1", a2a.TaskStateWorking))
				dup, err := s.Create(ctx, task("t1", "other", a2a.TaskStateSubmitted))
				if !errors.Is(err, ErrExists) || dup.Task.ContextID != "c1" || dup.Task.Status.State != a2a.TaskStateWorking || !dup.Created.Equal(first.Created) {
					t.Fatalf("%+v %v", dup, err)
				}
				p, _ := s.List(ctx, Filter{})
				if p.Total != 1 {
					t.Fatalf("%d tasks after a repeated create", p.Total)
				}
			})
			t.Run("unknown task", func(t *testing.T) {
				s := open(t, newClock().now)
				if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) || !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Fatalf("get: %v", err)
				}
				if _, err := s.Update(ctx, "nope", func(*Record) error { return nil }); !errors.Is(err, ErrNotFound) {
					t.Fatalf("update: %v", err)
				}
			})
			t.Run("update is atomic and refuses id changes", func(t *testing.T) {
				s := open(t, newClock().now)
				s.Create(ctx, task("t1", "c1", a2a.TaskStateSubmitted))
				var wg sync.WaitGroup
				for i := range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := s.Update(ctx, "t1", func(r *Record) error {
							r.MessageIDs = append(r.MessageIDs, fmt.Sprint("m", i))
							return nil
						})
						if err != nil {
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				r, _ := s.Get(ctx, "t1")
				if len(r.MessageIDs) != 21 || !r.Updated.After(r.Created) {
					t.Fatalf("%d message ids, updated %v", len(r.MessageIDs), r.Updated)
				}
				boom := errors.New("boom")
				if _, err := s.Update(ctx, "t1", func(r *Record) error { r.Owner = "x"; return boom }); !errors.Is(err, boom) {
					t.Fatal(err)
				}
				if _, err := s.Update(ctx, "t1", func(r *Record) error { r.Task.ID = "t2"; return nil }); err == nil {
					t.Fatal("id change accepted")
				}
				if r, _ := s.Get(ctx, "t1"); r.Owner != "" {
					t.Fatal("a failed update was stored")
				}
			})
			t.Run("contexts list their tasks oldest first with the last activity", func(t *testing.T) {
				s := open(t, newClock().now)
				s.Create(ctx, task("a", "c1", a2a.TaskStateSubmitted))
				s.Create(ctx, task("b", "c2", a2a.TaskStateSubmitted))
				s.Create(ctx, task("c", "c1", a2a.TaskStateSubmitted))
				upd, _ := s.Update(ctx, "a", func(r *Record) error { r.Task.Status.State = a2a.TaskStateWorking; return nil })
				info, err := s.Context(ctx, "c1")
				if err != nil || strings.Join(info.TaskIDs, ",") != "a,c" || !info.LastActive.Equal(upd.Updated) {
					t.Fatalf("%+v %v", info, err)
				}
				if _, err := s.Context(ctx, "unknown"); !errors.Is(err, ErrNotFound) {
					t.Fatal(err)
				}
				if _, err := s.Update(ctx, "a", func(r *Record) error { r.Task.ContextID = "c2"; return nil }); err == nil {
					t.Fatal("context change accepted")
				}
			})
			t.Run("list filters, orders newest first and pages", func(t *testing.T) {
				s := open(t, newClock().now)
				for i := range 7 {
					st := a2a.TaskStateCompleted
					if i%2 == 0 {
						st = a2a.TaskStateWorking
					}
					s.Create(ctx, task(fmt.Sprint("t", i), fmt.Sprint("c", i%3), st))
				}
				p, err := s.List(ctx, Filter{ContextID: "c0"})
				if err != nil || p.Total != 3 || p.Records[0].Task.ID != "t6" || p.Records[2].Task.ID != "t0" {
					t.Fatalf("%+v %v", p, err)
				}
				p, _ = s.List(ctx, Filter{State: a2a.TaskStateWorking, PageSize: 3})
				if p.Total != 4 || len(p.Records) != 3 || p.NextPageToken == "" {
					t.Fatalf("%+v", p)
				}
				p2, _ := s.List(ctx, Filter{State: a2a.TaskStateWorking, PageSize: 3, PageToken: p.NextPageToken})
				if len(p2.Records) != 1 || p2.NextPageToken != "" || p2.Records[0].Task.ID != "t0" {
					t.Fatalf("%+v", p2)
				}
				if _, err := s.List(ctx, Filter{PageToken: "x"}); !errors.Is(err, a2a.ErrInvalidParams) {
					t.Fatalf("bad token: %v", err)
				}
				// Listed records are whole: history, owner and times.
				s.Update(ctx, "t0", func(r *Record) error {
					r.Owner = "b-c1"
					r.Task.History = []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}}
					return nil
				})
				p3, _ := s.List(ctx, Filter{ContextID: "c0", State: a2a.TaskStateWorking})
				last := p3.Records[len(p3.Records)-1]
				if last.Task.ID != "t0" || last.Owner != "b-c1" || len(last.Task.History) != 1 || !last.Updated.After(last.Created) {
					t.Fatalf("%+v", last)
				}
			})
			t.Run("a replaced task keeps its bookkeeping", func(t *testing.T) {
				s := open(t, newClock().now)
				first, _ := s.Create(ctx, task("t1", "c1", a2a.TaskStateSubmitted))
				s.Update(ctx, "t1", func(r *Record) error { r.Owner = "b-c1"; return nil })
				next := task("t1", "c1", a2a.TaskStateCompleted).Task
				if err := ReplaceTask(ctx, s, next); err != nil {
					t.Fatal(err)
				}
				got, _ := s.Get(ctx, "t1")
				if got.Task.Status.State != a2a.TaskStateCompleted || got.Owner != "b-c1" || !got.HasMessage("m-t1") ||
					!got.Created.Equal(first.Created) || !got.Updated.After(first.Updated) {
					t.Fatalf("%+v", got)
				}
				if info, _ := s.Context(ctx, "c1"); !info.LastActive.Equal(got.Updated) {
					t.Fatalf("context last active %v, want %v", info.LastActive, got.Updated)
				}
				moved := next
				moved.ContextID = "c2"
				if err := ReplaceTask(ctx, s, moved); err == nil {
					t.Fatal("context change accepted")
				}
				if err := ReplaceTask(ctx, s, task("nope", "c1", a2a.TaskStateWorking).Task); !errors.Is(err, ErrNotFound) {
					t.Fatalf("unknown task: %v", err)
				}
			})
			t.Run("a task that cannot be stored is refused, not kept half", func(t *testing.T) {
				s := open(t, newClock().now)
				bad := task("t1", "c1", a2a.TaskStateWorking)
				bad.Task.Metadata = map[string]any{"f": func() {}}
				if _, err := s.Create(ctx, bad); err == nil {
					t.Fatal("a task whose metadata is not JSON was stored")
				}
				if _, err := s.Get(ctx, "t1"); !errors.Is(err, ErrNotFound) {
					t.Fatalf("get after a refused create: %v", err)
				}
			})
		})
	}
}

func TestBoltKeepsTasksAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := OpenBolt(path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Create(ctx, task("t1", "c1", a2a.TaskStateInputRequired))
	s.Update(ctx, "t1", func(r *Record) error { r.Owner = "agent-c1"; return nil })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBolt(path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Get(ctx, "t1")
	if err != nil || r.Owner != "agent-c1" || r.Task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := s.Create(ctx, task("t1", "c1", a2a.TaskStateSubmitted)); !errors.Is(err, ErrExists) {
		t.Fatal("dedup by Task.id lost across a restart")
	}
}

func TestBoltRefusesASecondOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := OpenBolt(path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := OpenBolt(path, nil, 50*time.Millisecond); err == nil {
		t.Fatal("a second process-level opener got the file")
	}
}

// A database written before the context index held times (empty index
// values) still answers Context, from the tasks themselves.
func TestBoltReadsAnIndexWithoutTimes(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s, err := OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), clk.now, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Create(ctx, task("a", "c1", a2a.TaskStateSubmitted))
	s.Create(ctx, task("b", "c1", a2a.TaskStateSubmitted))
	upd, _ := s.Update(ctx, "a", func(r *Record) error { r.Owner = "x"; return nil })
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketContexts).Put(contextKey("c1", "a"), nil)
	}); err != nil {
		t.Fatal(err)
	}
	info, err := s.Context(ctx, "c1")
	if err != nil || strings.Join(info.TaskIDs, ",") != "a,b" || !info.LastActive.Equal(upd.Updated) {
		t.Fatalf("%+v %v", info, err)
	}
}

// A database written before principals were kept (index values of the
// two times alone, records without a principal) answers Context with
// tasks of no principal, everyone's; an index value without times takes
// the principal from the task.
func TestBoltReadsAnIndexWithoutPrincipals(t *testing.T) {
	ctx := context.Background()
	s, err := OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), newClock().now, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"a", "b", "c"} {
		r := task(id, "c1", a2a.TaskStateSubmitted)
		r.Principal = "alice"
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		// a: as an older release wrote it; b: an index value without times.
		old := encodeWithout(t, tx.Bucket(bucketTasks).Get([]byte("a")), "principal")
		if err := tx.Bucket(bucketTasks).Put([]byte("a"), old); err != nil {
			return err
		}
		v := tx.Bucket(bucketContexts).Get(contextKey("c1", "a"))
		if err := tx.Bucket(bucketContexts).Put(contextKey("c1", "a"), bytes.Clone(v[:16])); err != nil {
			return err
		}
		return tx.Bucket(bucketContexts).Put(contextKey("c1", "b"), nil)
	}); err != nil {
		t.Fatal(err)
	}
	info, err := s.Context(ctx, "c1")
	if err != nil || len(info.Tasks) != 3 {
		t.Fatalf("%+v %v", info, err)
	}
	var got []string
	for _, ct := range info.Tasks {
		got = append(got, ct.ID+":"+ct.Principal)
	}
	if strings.Join(got, ",") != "a:,b:alice,c:alice" {
		t.Fatalf("principals %v", got)
	}
	if r, err := s.Get(ctx, "a"); err != nil || r.Principal != "" {
		t.Fatalf("the older record: %+v %v", r, err)
	}
}

// encodeWithout returns the JSON object b without its member name.
func encodeWithout(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m[name]; !ok {
		t.Fatalf("no member %q in %s", name, b)
	}
	delete(m, name)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A context lookup reads the context's index, not every task: a context of
// one task among many answers with that task alone.
func TestContextLookupIsScopedToTheContext(t *testing.T) {
	ctx := context.Background()
	for name, s := range map[string]Store{"memory": NewMemory(nil), "bolt": mustBolt(t)} {
		t.Run(name, func(t *testing.T) {
			for i := range 500 {
				s.Create(ctx, task(fmt.Sprint("t", i), fmt.Sprint("c", i%50), a2a.TaskStateSubmitted))
			}
			info, err := s.Context(ctx, "c7")
			if err != nil || len(info.TaskIDs) != 10 || info.TaskIDs[0] != "t7" || info.TaskIDs[9] != "t457" {
				t.Fatalf("%+v %v", info, err)
			}
			p, err := s.List(ctx, Filter{ContextID: "c7", PageSize: 3})
			if err != nil || p.Total != 10 || len(p.Records) != 3 || p.NextPageToken == "" {
				t.Fatalf("%+v %v", p, err)
			}
		})
	}
}

func mustBolt(t *testing.T) *Bolt {
	t.Helper()
	s, err := OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// With KeepFinishedFor, a task finished longer ago than the retention is
// dropped (from Get, Context and List); tasks still going and tasks
// finished recently stay.
func TestMemoryDropsTasksFinishedLongAgo(t *testing.T) {
	ctx := context.Background()
	clk := newClock() // one second per call
	s := NewMemory(clk.now, KeepFinishedFor(time.Minute))
	s.Create(ctx, task("old-done", "c1", a2a.TaskStateSubmitted))
	s.Create(ctx, task("waiting", "c1", a2a.TaskStateSubmitted))
	s.Update(ctx, "old-done", func(r *Record) error { r.Task.Status.State = a2a.TaskStateCompleted; return nil })
	s.ReplaceTask(ctx, task("waiting", "c1", a2a.TaskStateInputRequired).Task)
	for i := range 70 { // seventy seconds later
		s.Create(ctx, task(fmt.Sprint("filler-", i), "c2", a2a.TaskStateWorking))
	}
	s.Create(ctx, task("new-done", "c1", a2a.TaskStateCanceled))

	if _, err := s.Get(ctx, "old-done"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a task finished 70 s ago with 60 s retention: %v", err)
	}
	for _, id := range []string{"waiting", "new-done", "filler-0"} {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	info, err := s.Context(ctx, "c1")
	if err != nil || strings.Join(info.TaskIDs, ",") != "waiting,new-done" {
		t.Fatalf("%+v %v", info, err)
	}
	if p, _ := s.List(ctx, Filter{ContextID: "c1"}); p.Total != 2 {
		t.Fatalf("list of c1: %d tasks", p.Total)
	}
	// A store without the option keeps everything.
	keep := NewMemory(newClock().now)
	keep.Create(ctx, task("done", "c1", a2a.TaskStateCompleted))
	for i := range 200 {
		keep.Create(ctx, task(fmt.Sprint("f", i), "c2", a2a.TaskStateWorking))
	}
	if _, err := keep.Get(ctx, "done"); err != nil {
		t.Fatal(err)
	}
}

// Visible: a caller sees its own tasks and those of no principal; an
// anonymous caller the latter alone. A ContextInfo of a store that does
// not list its tasks' principals is seen whole.
func TestVisibility(t *testing.T) {
	for _, tc := range []struct {
		principal, caller string
		want              bool
	}{
		{"", "", true}, {"", "alice", true}, {"alice", "alice", true},
		{"alice", "bob", false}, {"alice", "", false},
	} {
		if got := Visible(tc.principal, tc.caller); got != tc.want {
			t.Errorf("Visible(%q, %q) = %v", tc.principal, tc.caller, got)
		}
	}
	bare := ContextInfo{ID: "c1", TaskIDs: []string{"a"}}
	if v, ok := bare.VisibleTo("bob"); !ok || len(v.TaskIDs) != 1 {
		t.Fatalf("a context without its tasks' principals: %+v %v", v, ok)
	}
	if _, ok := (ContextInfo{ID: "c1"}).VisibleTo(""); ok {
		t.Fatal("an empty context is seen")
	}
}
