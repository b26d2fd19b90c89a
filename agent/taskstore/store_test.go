package taskstore

import (
	"bytes"
	"context"
	"encoding/json"
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

// clock is the tests' time source. It moves by step at each reading, and
// by what advance says.
type clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

// newClock is a clock at 2026-11-29 10:00 UTC.
func newClock(step time.Duration) *clock {
	return &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), step: step}
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func task(id, ctxID string, state a2a.TaskState) Record {
	return Record{Task: a2a.Task{ID: id, ContextID: ctxID, Status: &a2a.TaskStatus{State: state}}, MessageIDs: []string{"m-" + id}}
}

// A Bolt store's records decode as they were written after the file is
// closed and opened again: the task, its owner, its push configs and
// reports; and a create of its id is still a repeat.
func TestBoltKeepsTasksAcrossRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := OpenBolt(path, newClock(time.Second).now, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := task("t1", "c1", a2a.TaskStateInputRequired)
	want.PushConfigs = []a2a.TaskPushNotificationConfig{{ID: "cfg-1", TaskID: "t1", URL: "https://hooks.example/a2a", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}}
	want.PushDeliveries = []PushDelivery{{ConfigID: "cfg-1", State: "failing", Status: 503, Reason: "HTTP 503", Dropped: 2,
		At: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}}
	if _, err := s.Create(ctx, want); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "t1", func(r *Record) error { r.Owner = "agent-c1"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBolt(path, newClock(time.Second).now, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Get(ctx, "t1")
	if err != nil || r.Owner != "agent-c1" || r.Task.Status.State != a2a.TaskStateInputRequired || !r.HasMessage("m-t1") {
		t.Fatalf("%+v %v", r, err)
	}
	if !reflect.DeepEqual(r.PushConfigs, want.PushConfigs) || len(r.PushDeliveries) != 1 || !r.PushDeliveries[0].At.Equal(want.PushDeliveries[0].At) {
		t.Fatalf("reopened: configs %+v, reports %+v", r.PushConfigs, r.PushDeliveries)
	}
	got := r.PushDeliveries[0]
	got.At = want.PushDeliveries[0].At
	if got != want.PushDeliveries[0] {
		t.Fatalf("reopened: report %+v, want %+v", got, want.PushDeliveries[0])
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
	clk := newClock(time.Second)
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
	s, err := OpenBolt(filepath.Join(t.TempDir(), "tasks.db"), newClock(time.Second).now, 0)
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
