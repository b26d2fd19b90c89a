package taskstore

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/generated/a2a"
)

// withPush is a task record created with a push-notification config and a
// delivery report, as the runtime creates one from a SendMessage carrying a
// config.
func withPush(id string) Record {
	r := task(id, "c1", a2a.TaskStateSubmitted)
	r.PushConfigs = []a2a.TaskPushNotificationConfig{{ID: "cfg-1", TaskID: id, URL: "https://hooks.example/a2a", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}}
	r.PushDeliveries = []PushDelivery{{ConfigID: "cfg-1", State: "failing", Status: 503, Reason: "HTTP 503", Dropped: 2,
		At: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}}
	return r
}

func samePush(t *testing.T, what string, got, want Record) {
	t.Helper()
	if !reflect.DeepEqual(got.PushConfigs, want.PushConfigs) {
		t.Fatalf("%s: configs %+v, want %+v", what, got.PushConfigs, want.PushConfigs)
	}
	if len(got.PushDeliveries) != len(want.PushDeliveries) {
		t.Fatalf("%s: reports %+v, want %+v", what, got.PushDeliveries, want.PushDeliveries)
	}
	for i := range got.PushDeliveries {
		g, w := got.PushDeliveries[i], want.PushDeliveries[i]
		if !g.At.Equal(w.At) {
			t.Fatalf("%s: report at %v, want %v", what, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		if g != w {
			t.Fatalf("%s: report %+v, want %+v", what, g, w)
		}
	}
}

// The push-notification configs of a task live in its record: created with
// it, kept by the events of a turn (ReplaceTask), changed by Update, and
// returned as copies.
func TestPushConfigsLiveInTheTaskRecord(t *testing.T) {
	ctx := context.Background()
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			s := open(t, newClock().now)
			want := withPush("t1")
			created, err := s.Create(ctx, want)
			if err != nil {
				t.Fatal(err)
			}
			samePush(t, "create", created, want)
			got, err := s.Get(ctx, "t1")
			if err != nil {
				t.Fatal(err)
			}
			samePush(t, "get", got, want)

			got.PushConfigs[0].URL = "https://changed.example/"
			got.PushConfigs[0].Authentication.Credentials = "changed"
			if again, _ := s.Get(ctx, "t1"); again.PushConfigs[0].URL != want.PushConfigs[0].URL ||
				again.PushConfigs[0].Authentication.Credentials != "secret" {
				t.Fatal("changing a returned record changed its stored configs")
			}

			next := got.Task
			next.Status = &a2a.TaskStatus{State: a2a.TaskStateWorking}
			if err := ReplaceTask(ctx, s, next); err != nil {
				t.Fatal(err)
			}
			got, _ = s.Get(ctx, "t1")
			samePush(t, "after a turn's event", got, want)

			if _, err := s.Update(ctx, "t1", func(r *Record) error {
				r.PushConfigs = nil
				r.PushDeliveries = nil
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got, _ = s.Get(ctx, "t1")
			samePush(t, "after deleting them", got, Record{})
			if got.Task.Status.State != a2a.TaskStateWorking {
				t.Fatalf("the task lost its state: %+v", got.Task.Status)
			}
		})
	}
}

// A Bolt store's records decode as they were written, configs and reports
// included, after the file is closed and opened again.
func TestBoltKeepsPushConfigsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := OpenBolt(path, newClock().now, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := withPush("t1")
	if _, err := s.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenBolt(path, newClock().now, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	samePush(t, "reopened", got, want)
}

// Configs and reports count against MaxBytes like the task: a task whose
// configs pass the bound is refused, and so is an Update adding them.
func TestPushConfigsCountAgainstTheByteBound(t *testing.T) {
	ctx := context.Background()
	bigHook := func(id string) []a2a.TaskPushNotificationConfig {
		return []a2a.TaskPushNotificationConfig{{ID: "c", TaskID: id, URL: "https://hooks.example/" + strings.Repeat("x", 4000)}}
	}
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t, newManual().now, MaxBytes(3000))
			r := task("a", "c1", a2a.TaskStateSubmitted)
			r.PushConfigs = bigHook("a")
			if _, err := s.Create(ctx, r); !errors.Is(err, ErrFull) {
				t.Fatalf("a task with 4 kB of configs in a 3 kB store: %v", err)
			}
			if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the refused task was kept: %v", err)
			}
			if _, err := s.Create(ctx, task("b", "c1", a2a.TaskStateSubmitted)); err != nil {
				t.Fatal(err)
			}
			_, err := s.Update(ctx, "b", func(r *Record) error {
				r.PushConfigs = bigHook("b")
				return nil
			})
			if !errors.Is(err, ErrFull) {
				t.Fatalf("an update adding 4 kB of configs: %v", err)
			}
			if got, _ := s.Get(ctx, "b"); len(got.PushConfigs) != 0 {
				t.Fatalf("a refused update was kept: %+v", got.PushConfigs)
			}
		})
	}
}

// hidden is a Store without the optional interfaces of the one it wraps:
// SetPushDelivery goes through Update.
type hidden struct{ Store }

// checkCounters checks that the byte counters of s match what it holds.
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
			var all, fin int64
			tasks := tx.Bucket(bucketTasks)
			tasks.ForEach(func(_, v []byte) error { all += int64(len(v)); return nil })
			tx.Bucket(bucketFinished).ForEach(func(k, _ []byte) error {
				_, id := parseTimeKey(k)
				fin += int64(len(tasks.Get([]byte(id))))
				return nil
			})
			if b, f := getCount(meta, metaBytes), getCount(meta, metaFinishedBytes); b != all || f != fin {
				t.Fatalf("bytes %d (finished %d) counted, %d (%d) stored", b, f, all, fin)
			}
			return nil
		})
	}
}

// SetPushDelivery writes a config's report alone: a first report is
// added, a changed one replaces it, one that differs only by its time, or
// is about a config the task does not have, writes nothing; an unknown
// task is ErrNotFound. The stores' own (DeliverySetter) leave Updated as
// it is; through Update (a Store without it) the answers are the same.
func TestSetPushDelivery(t *testing.T) {
	ctx := context.Background()
	at := func(s int) time.Time { return time.Date(2026, 11, 29, 11, 0, s, 0, time.UTC) }
	rep := func(cfg, state string, status int, s int) PushDelivery {
		return PushDelivery{ConfigID: cfg, State: state, Status: status, At: at(s)}
	}
	type step struct {
		name    string
		task    string
		d       PushDelivery
		changed bool
		err     error
		// want are the task's reports after the step.
		want []PushDelivery
	}
	start := withPush("t1").PushDeliveries // cfg-1 failing 503
	twoConfigs := func(id string) Record {
		r := withPush(id)
		r.PushConfigs = append(r.PushConfigs, a2a.TaskPushNotificationConfig{ID: "cfg-2", TaskID: id, URL: "https://other.example/a2a"})
		return r
	}
	steps := []step{
		{name: "first report of a config", task: "t1", d: rep("cfg-2", "delivered", 204, 1), changed: true,
			want: []PushDelivery{start[0], rep("cfg-2", "delivered", 204, 1)}},
		{name: "the same but for its time", task: "t1", d: rep("cfg-2", "delivered", 204, 9),
			want: []PushDelivery{start[0], rep("cfg-2", "delivered", 204, 1)}},
		{name: "another status", task: "t1", d: rep("cfg-2", "delivered", 200, 2), changed: true,
			want: []PushDelivery{start[0], rep("cfg-2", "delivered", 200, 2)}},
		{name: "a changed state replaces the config's report", task: "t1", d: rep("cfg-1", "dead", 410, 3), changed: true,
			want: []PushDelivery{rep("cfg-1", "dead", 410, 3), rep("cfg-2", "delivered", 200, 2)}},
		{name: "a config the task does not have", task: "t1", d: rep("cfg-9", "delivered", 204, 4),
			want: []PushDelivery{rep("cfg-1", "dead", 410, 3), rep("cfg-2", "delivered", 200, 2)}},
		{name: "an unknown task", task: "t9", d: rep("cfg-1", "delivered", 204, 5), err: ErrNotFound},
	}
	for name, open := range stores() {
		for _, via := range []string{"own", "update"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				var s Store = open(t, newClock().now)
				raw := s
				if via == "update" {
					s = hidden{s}
				}
				created, err := s.Create(ctx, twoConfigs("t1"))
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range steps {
					changed, err := SetPushDelivery(ctx, s, st.task, st.d)
					if changed != st.changed || !errors.Is(err, st.err) {
						t.Fatalf("%s: changed %v, err %v; want %v, %v", st.name, changed, err, st.changed, st.err)
					}
					if st.err != nil {
						continue
					}
					got, err := s.Get(ctx, st.task)
					if err != nil {
						t.Fatal(err)
					}
					samePush(t, st.name, got, Record{PushConfigs: created.PushConfigs, PushDeliveries: st.want})
					if via == "own" && !got.Updated.Equal(created.Updated) {
						t.Fatalf("%s: Updated moved from %v to %v", st.name, created.Updated, got.Updated)
					}
					checkCounters(t, raw)
				}
				// The reports stay through a turn's event and an update.
				got, _ := s.Get(ctx, "t1")
				next := got.Task
				next.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted}
				if err := ReplaceTask(ctx, s, next); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Update(ctx, "t1", func(r *Record) error { r.Owner = "other"; return nil }); err != nil {
					t.Fatal(err)
				}
				again, _ := s.Get(ctx, "t1")
				samePush(t, "after an event and an update", again, got)
				checkCounters(t, raw)
				// A report on a finished task is counted with the
				// finished tasks.
				if ok, err := SetPushDelivery(ctx, s, "t1", rep("cfg-2", "failing", 503, 6)); !ok || err != nil {
					t.Fatalf("a report on a finished task: %v %v", ok, err)
				}
				checkCounters(t, raw)
			})
		}
	}
}

// A report on a task that expired waiting for input is ErrExpired, and
// one whose report grows the store past MaxBytes evicts a finished task.
func TestSetPushDeliveryAtTheBounds(t *testing.T) {
	ctx := context.Background()
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			clk := newManual()
			s := open(t, clk.now, ExpireInterruptedAfter(time.Minute))
			r := withPush("w")
			r.Task.Status.State = a2a.TaskStateInputRequired
			if _, err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			clk.advance(2 * time.Minute)
			_, err := SetPushDelivery(ctx, s, "w", PushDelivery{ConfigID: "cfg-1", State: "delivered", At: clk.now()})
			if !errors.Is(err, ErrExpired) {
				t.Fatalf("a report on an expired task: %v", err)
			}
		})
		t.Run(name+"/bytes", func(t *testing.T) {
			clk := newManual()
			probe := open(t, clk.now)
			r := withPush("a")
			r.PushDeliveries = nil
			if _, err := probe.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			// Room for two such tasks and a report, not for a long one.
			s := open(t, clk.now, MaxBytes(2*recordBytes(t, probe, "a")+400))
			for _, id := range []string{"done", "a"} {
				r := withPush(id)
				r.PushDeliveries = nil
				if id == "done" {
					r.Task.Status.State = a2a.TaskStateCompleted
				}
				if _, err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				clk.advance(time.Second)
			}
			long := PushDelivery{ConfigID: "cfg-1", State: "failing", Reason: strings.Repeat("x", 1000), At: clk.now()}
			if ok, err := SetPushDelivery(ctx, s, "a", long); !ok || err != nil {
				t.Fatalf("a report past the bound is not refused: %v %v", ok, err)
			}
			if _, err := s.Get(ctx, "done"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the finished task was not evicted: %v", err)
			}
			checkCounters(t, s)
		})
	}
}

// recordBytes is what a stored task counts against MaxBytes.
func recordBytes(t *testing.T, s Store, id string) int64 {
	t.Helper()
	switch s := s.(type) {
	case *Memory:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.tasks[id].size
	case *Bolt:
		var n int64
		s.db.View(func(tx *bolt.Tx) error { n = int64(len(tx.Bucket(bucketTasks).Get([]byte(id)))); return nil })
		return n
	}
	t.Fatalf("store %T", s)
	return 0
}

// The stores tell their watchers of each task they drop on their own
// (evicted, expired waiting for input, past the retention), with the ids
// of its push configs, once the change is done; not of a task changed, nor
// after stop.
func TestStoresTellTheTasksTheyDrop(t *testing.T) {
	ctx := context.Background()
	for name, open := range boundedStores() {
		t.Run(name, func(t *testing.T) {
			clk := newManual()
			s := open(t, clk.now, MaxTasks(3), ExpireInterruptedAfter(time.Minute), KeepFinishedFor(time.Hour))
			var mu sync.Mutex
			var told []string
			stop := s.(DropWatcher).WatchDrops(func(d Dropped) {
				mu.Lock()
				defer mu.Unlock()
				told = append(told, d.TaskID+"("+d.ContextID+")"+strings.Join(d.PushConfigIDs, "+"))
			})
			saw := func(what string, want ...string) {
				t.Helper()
				mu.Lock()
				defer mu.Unlock()
				if strings.Join(told, " ") != strings.Join(want, " ") {
					t.Fatalf("%s: told %q, want %q", what, told, want)
				}
				told = nil
			}
			mk := func(id string, st a2a.TaskState, push bool) {
				t.Helper()
				r := task(id, "c-"+id, st)
				if push {
					r = withPush(id)
					r.Task.ContextID = "c-" + id
					r.Task.Status.State = st
				}
				if _, err := s.Create(ctx, r); err != nil {
					t.Fatal(err)
				}
				clk.advance(time.Second)
			}
			mk("done", a2a.TaskStateCompleted, true)
			mk("plain", a2a.TaskStateCompleted, false)
			mk("wait", a2a.TaskStateInputRequired, true)
			setState(t, s, "plain", a2a.TaskStateCompleted)
			saw("creates and an update")
			// A fourth task evicts the finished task changed least
			// recently.
			mk("new", a2a.TaskStateWorking, false)
			saw("evicted", "done(c-done)cfg-1")
			// Two minutes later the waiting task has expired.
			clk.advance(2 * time.Minute)
			if _, err := s.Get(ctx, "new"); err != nil {
				t.Fatal(err)
			}
			if name == "bolt" {
				// Bolt drops on its next write.
				s.Update(ctx, "new", func(*Record) error { return nil })
			}
			saw("expired", "wait(c-wait)cfg-1")
			// An hour later the finished one is past its retention.
			clk.advance(time.Hour)
			s.Update(ctx, "new", func(*Record) error { return nil })
			saw("past retention", "plain(c-plain)")
			stop()
			mk("done2", a2a.TaskStateCompleted, true)
			clk.advance(2 * time.Hour)
			s.Update(ctx, "new", func(*Record) error { return nil })
			saw("after stop")
		})
	}
}
