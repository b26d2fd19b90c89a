// Package storetest is the contract of taskstore.Store as one table-driven
// suite, for every store: the Memory and Bolt stores of agent/taskstore
// (this package's own test runs it on both) and the PostgreSQL store of
// agent/taskstore/pgstore. A new store passes it before it is used.
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, c storetest.Config) taskstore.Store {
//			return open(t, c) // a new, empty store with c's clock and bounds
//		})
//	}
//
// The cases cover Create, Get, Update, List and Context, ErrExists and
// ErrNotFound, the principal that created a task (kept through every
// change, a List scoped to a caller, each task's principal in Context),
// the bounds (MaxTasks, MaxBytes: eviction of finished tasks
// least recently changed first, then ErrFull), the idle expiry of tasks
// waiting for input (ErrExpired) and the retention of finished ones, the
// push-notification configs and delivery reports a record keeps, and the
// optional interfaces the agent runtime uses (Replacer, DeliverySetter,
// DropWatcher, HeadReader), each through the runtime's own path
// (taskstore.ReplaceTask, taskstore.SetPushDelivery, taskstore.GetHead) so that a store without them is held to the
// same answers. Every store of this repository implements DropWatcher,
// which the suite requires.
//
// The clocks are fake and move only when a case says so: no case waits
// for time to pass.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Config is what a case asks of the store it opens. Zero fields are the
// store's defaults.
type Config struct {
	// Now is the store's clock.
	Now func() time.Time
	// MaxTasks, MaxBytes, ExpireInterruptedAfter and KeepFinishedFor are
	// the bounds of the options of the same names (taskstore.MaxTasks and
	// the others); when set they are positive.
	MaxTasks               int
	MaxBytes               int64
	ExpireInterruptedAfter time.Duration
	KeepFinishedFor        time.Duration
}

// Options returns the options of taskstore.NewMemory and taskstore.OpenBolt
// that c sets.
func (c Config) Options() []taskstore.Option {
	var opts []taskstore.Option
	if c.MaxTasks != 0 {
		opts = append(opts, taskstore.MaxTasks(c.MaxTasks))
	}
	if c.MaxBytes != 0 {
		opts = append(opts, taskstore.MaxBytes(c.MaxBytes))
	}
	if c.ExpireInterruptedAfter != 0 {
		opts = append(opts, taskstore.ExpireInterruptedAfter(c.ExpireInterruptedAfter))
	}
	if c.KeepFinishedFor != 0 {
		opts = append(opts, taskstore.KeepFinishedFor(c.KeepFinishedFor))
	}
	return opts
}

// Opener opens a new, empty store configured as c says, for the test t; it
// closes it when t ends (t.Cleanup) and fails t if it cannot open it.
type Opener func(t *testing.T, c Config) taskstore.Store

// Option configures Run.
type Option func(*suite)

// WithCheck has Run call check at the end of every case that passed, with
// the store the case opened (each, when it opened several), before it is
// closed: a store checks its own bookkeeping there (counters, indexes)
// against what it holds.
func WithCheck(check func(t *testing.T, s taskstore.Store)) Option {
	return func(s *suite) { s.check = check }
}

type suite struct {
	open  Opener
	check func(t *testing.T, s taskstore.Store)
}

// opened opens a store for a case, and has it checked when the case ends.
func (s *suite) opened(t *testing.T, c Config) taskstore.Store {
	t.Helper()
	st := s.open(t, c)
	if s.check != nil {
		t.Cleanup(func() {
			if !t.Failed() {
				s.check(t, st)
			}
		})
	}
	return st
}

// Case is one case of the contract.
type Case struct {
	// Name says what the case shows.
	Name string
	run  func(t *testing.T, s *suite)
}

// Cases returns the cases Run runs, in order.
func Cases() []Case { return slices.Clone(cases) }

// Run runs every case of the contract as a subtest of t against the stores
// open opens, one or more new stores a case.
func Run(t *testing.T, open Opener, opts ...Option) {
	s := &suite{open: open}
	for _, o := range opts {
		o(s)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.run(t, s) })
	}
}

// ticking is a clock that moves a second each time it is read.
type ticking struct {
	mu sync.Mutex
	t  time.Time
}

func (c *ticking) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// epoch is when the clocks start.
var epoch = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func newTicking() *ticking { return &ticking{t: epoch} }

// manual is a clock that moves only when told to.
type manual struct {
	mu sync.Mutex
	t  time.Time
}

func newManual() *manual { return &manual{t: epoch} }

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

var ctx = context.Background()

func task(id, ctxID string, state a2a.TaskState) taskstore.Record {
	return taskstore.Record{Task: a2a.Task{ID: id, ContextID: ctxID, Status: &a2a.TaskStatus{State: state}}, MessageIDs: []string{"m-" + id}}
}

// create creates a record, failing the test on error.
func create(t *testing.T, s taskstore.Store, r taskstore.Record) taskstore.Record {
	t.Helper()
	out, err := s.Create(ctx, r)
	if err != nil {
		t.Fatalf("create %s: %v", r.Task.ID, err)
	}
	return out
}

// setState moves a stored task to a state.
func setState(t *testing.T, s taskstore.Store, id string, st a2a.TaskState) taskstore.Record {
	t.Helper()
	r, err := s.Update(ctx, id, func(r *taskstore.Record) error {
		r.Task.Status = &a2a.TaskStatus{State: st}
		return nil
	})
	if err != nil {
		t.Fatalf("%s to %s: %v", id, st, err)
	}
	return r
}

// kept returns the ids a store holds, sorted.
func kept(t *testing.T, s taskstore.Store) string {
	t.Helper()
	p, err := s.List(ctx, taskstore.Filter{PageSize: 1000})
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

// ids returns the task ids of a page, in its order.
func ids(p taskstore.Page) string {
	var out []string
	for _, r := range p.Records {
		out = append(out, r.Task.ID)
	}
	return strings.Join(out, ",")
}

// withPush is a task record created with a push-notification config and a
// delivery report, as the runtime creates one from a SendMessage carrying a
// config.
func withPush(id string) taskstore.Record {
	r := task(id, "c1", a2a.TaskStateSubmitted)
	r.PushConfigs = []a2a.TaskPushNotificationConfig{{ID: "cfg-1", TaskID: id, URL: "https://hooks.example/a2a", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}}
	r.PushDeliveries = []taskstore.PushDelivery{{ConfigID: "cfg-1", State: "failing", Status: 503, Reason: "HTTP 503", Dropped: 2,
		At: epoch}}
	return r
}

// samePush fails the test unless got has want's push configs and reports.
func samePush(t *testing.T, what string, got, want taskstore.Record) {
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

// hidden is a Store without the optional interfaces of the one it wraps:
// the runtime writes it with Update.
type hidden struct{ taskstore.Store }

// withText is a task whose history holds one message of text.
func withText(id, text string, st a2a.TaskState) taskstore.Record {
	r := task(id, "c1", st)
	r.Task.History = []a2a.Message{{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}}}
	return r
}

var cases = []Case{
	{"create then get returns a copy", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		r, err := s.Create(ctx, task("t1", "c1", a2a.TaskStateSubmitted))
		if err != nil || r.Created.IsZero() || !r.Created.Equal(r.Updated) {
			t.Fatalf("%+v %v", r, err)
		}
		got, err := s.Get(ctx, "t1")
		if err != nil || got.Task.ContextID != "c1" || !got.HasMessage("m-t1") || got.HasMessage("other") ||
			!got.Created.Equal(r.Created) || !got.Updated.Equal(r.Updated) {
			t.Fatalf("%+v %v", got, err)
		}
		got.Task.Status.State = a2a.TaskStateFailed
		got.MessageIDs[0] = "changed"
		again, _ := s.Get(ctx, "t1")
		if again.Task.Status.State != a2a.TaskStateSubmitted || !again.HasMessage("m-t1") {
			t.Fatal("changing a returned record changed the store")
		}
	}},
	{"a task's head is its record without the task's body", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		r := withPush("t1")
		r.Task.History = []a2a.Message{{MessageID: "m-t1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hello")}}}}
		r.Task.Status = &a2a.TaskStatus{State: a2a.TaskStateInputRequired, Timestamp: "2026-01-02T03:04:05Z",
			Message: &a2a.Message{MessageID: "q", Role: a2a.RoleAgent, Parts: []a2a.Part{{Content: a2a.PartText("which one?")}}}}
		r.Owner, r.Principal = "agent-a", "alice"
		create(t, s, r)
		full, err := s.Get(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		head, err := taskstore.GetHead(ctx, s, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if head.Task.ID != "t1" || head.Task.ContextID != "c1" || head.Task.Status == nil || head.Task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("head %+v", head.Task)
		}
		if _, ok := s.(taskstore.HeadReader); ok && (head.Task.History != nil || head.Task.Status.Message != nil || head.Task.Status.Timestamp != "") {
			t.Fatalf("a HeadReader's head holds the task's body: %+v", head.Task)
		}
		if !slices.Equal(head.MessageIDs, full.MessageIDs) || head.Owner != full.Owner || head.Principal != full.Principal ||
			!head.Created.Equal(full.Created) || !head.Updated.Equal(full.Updated) {
			t.Fatalf("head %+v, record %+v", head, full)
		}
		samePush(t, "head", head, full)
		head.MessageIDs[0] = "changed"
		head.PushConfigs[0].Authentication.Credentials = "changed"
		if again, _ := taskstore.GetHead(ctx, s, "t1"); !again.HasMessage("m-t1") || again.PushConfigs[0].Authentication.Credentials != "secret" {
			t.Fatal("changing a returned head changed the store")
		}
		if _, err := taskstore.GetHead(ctx, s, "nope"); !errors.Is(err, taskstore.ErrNotFound) || errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("head of an unknown task: %v", err)
		}
	}},
	{"a repeated create returns the stored task and creates nothing", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		first := create(t, s, task("t1", "c1", a2a.TaskStateWorking))
		dup, err := s.Create(ctx, task("t1", "other", a2a.TaskStateSubmitted))
		if !errors.Is(err, taskstore.ErrExists) || dup.Task.ContextID != "c1" || dup.Task.Status.State != a2a.TaskStateWorking || !dup.Created.Equal(first.Created) {
			t.Fatalf("%+v %v", dup, err)
		}
		if p, _ := s.List(ctx, taskstore.Filter{}); p.Total != 1 {
			t.Fatalf("%d tasks after a repeated create", p.Total)
		}
		if _, err := s.Context(ctx, "other"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("the refused task's context: %v", err)
		}
	}},
	{"an unknown task is not found by any method", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		create(t, s, task("t1", "c1", a2a.TaskStateWorking))
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, taskstore.ErrNotFound) || !errors.Is(err, a2a.ErrTaskNotFound) || errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("get: %v", err)
		}
		called := false
		if _, err := s.Update(ctx, "nope", func(*taskstore.Record) error { called = true; return nil }); !errors.Is(err, taskstore.ErrNotFound) || called {
			t.Fatalf("update: %v (fn called: %v)", err, called)
		}
		if err := taskstore.ReplaceTask(ctx, s, task("nope", "c1", a2a.TaskStateWorking).Task); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("replace: %v", err)
		}
		if ok, err := taskstore.SetPushDelivery(ctx, s, "nope", taskstore.PushDelivery{ConfigID: "cfg-1", State: "delivered"}); ok || !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("set push delivery: %v %v", ok, err)
		}
		for _, id := range []string{"unknown", ""} {
			if _, err := s.Context(ctx, id); !errors.Is(err, taskstore.ErrNotFound) || errors.Is(err, taskstore.ErrExpired) {
				t.Fatalf("context %q: %v", id, err)
			}
		}
	}},
	{"concurrent updates of a task are applied one at a time", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		created := create(t, s, task("t1", "c1", a2a.TaskStateSubmitted))
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error {
					r.MessageIDs = append(r.MessageIDs, fmt.Sprint("m", i))
					return nil
				}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		r, _ := s.Get(ctx, "t1")
		if len(r.MessageIDs) != 21 || !r.Updated.After(r.Created) || !r.Created.Equal(created.Created) {
			t.Fatalf("%d message ids, created %v, updated %v", len(r.MessageIDs), r.Created, r.Updated)
		}
	}},
	{"an update that fails or changes an id stores nothing", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		create(t, s, task("t1", "c1", a2a.TaskStateSubmitted))
		boom := errors.New("boom")
		if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Owner = "x"; return boom }); !errors.Is(err, boom) {
			t.Fatalf("fn's error: %v", err)
		}
		if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Owner = "x"; r.Task.ID = "t2"; return nil }); err == nil {
			t.Fatal("id change accepted")
		}
		if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Owner = "x"; r.Task.ContextID = "c2"; return nil }); err == nil {
			t.Fatal("context change accepted")
		}
		if r, _ := s.Get(ctx, "t1"); r.Owner != "" || !r.Updated.Equal(r.Created) {
			t.Fatalf("a refused update was stored: %+v", r)
		}
		if _, err := s.Get(ctx, "t2"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("t2: %v", err)
		}
		if _, err := s.Context(ctx, "c2"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("c2: %v", err)
		}
	}},
	{"an update returns and stores the whole record", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		created := create(t, s, task("t1", "c1", a2a.TaskStateSubmitted))
		hist := []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}}
		upd, err := s.Update(ctx, "t1", func(r *taskstore.Record) error {
			r.Owner = "b-c1"
			r.MessageIDs = append(r.MessageIDs, "m1")
			r.Task.History = hist
			r.Task.Status = &a2a.TaskStatus{State: a2a.TaskStateInputRequired}
			return nil
		})
		if err != nil || !upd.Updated.After(created.Updated) || !upd.Created.Equal(created.Created) {
			t.Fatalf("%+v %v", upd, err)
		}
		got, err := s.Get(ctx, "t1")
		if err != nil || got.Owner != "b-c1" || strings.Join(got.MessageIDs, ",") != "m-t1,m1" || len(got.Task.History) != 1 ||
			got.Task.History[0].MessageID != "m1" || got.Task.Status.State != a2a.TaskStateInputRequired ||
			!got.Updated.Equal(upd.Updated) || !got.Created.Equal(created.Created) {
			t.Fatalf("%+v %v", got, err)
		}
	}},
	{"contexts list their tasks oldest first with the last activity", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		create(t, s, task("a", "c1", a2a.TaskStateSubmitted))
		create(t, s, task("b", "c2", a2a.TaskStateSubmitted))
		create(t, s, task("c", "c1", a2a.TaskStateSubmitted))
		upd := setState(t, s, "a", a2a.TaskStateWorking)
		info, err := s.Context(ctx, "c1")
		if err != nil || info.ID != "c1" || strings.Join(info.TaskIDs, ",") != "a,c" || !info.LastActive.Equal(upd.Updated) {
			t.Fatalf("%+v %v", info, err)
		}
	}},
	{"a context is read without the other contexts", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		for i := range 200 {
			create(t, s, task(fmt.Sprint("t", i), fmt.Sprint("c", i%20), a2a.TaskStateSubmitted))
		}
		info, err := s.Context(ctx, "c7")
		if err != nil || len(info.TaskIDs) != 10 || info.TaskIDs[0] != "t7" || info.TaskIDs[9] != "t187" {
			t.Fatalf("%+v %v", info, err)
		}
		p, err := s.List(ctx, taskstore.Filter{ContextID: "c7", PageSize: 3})
		if err != nil || p.Total != 10 || ids(p) != "t187,t167,t147" || p.NextPageToken == "" {
			t.Fatalf("%+v %v", p, err)
		}
	}},
	{"list filters, orders newest first and pages", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		for i := range 7 {
			st := a2a.TaskStateCompleted
			if i%2 == 0 {
				st = a2a.TaskStateWorking
			}
			create(t, s, task(fmt.Sprint("t", i), fmt.Sprint("c", i%3), st))
		}
		p, err := s.List(ctx, taskstore.Filter{ContextID: "c0"})
		if err != nil || p.Total != 3 || ids(p) != "t6,t3,t0" || p.NextPageToken != "" {
			t.Fatalf("%+v %v", p, err)
		}
		p, _ = s.List(ctx, taskstore.Filter{State: a2a.TaskStateWorking, PageSize: 3})
		if p.Total != 4 || ids(p) != "t6,t4,t2" || p.NextPageToken == "" {
			t.Fatalf("%+v", p)
		}
		p2, _ := s.List(ctx, taskstore.Filter{State: a2a.TaskStateWorking, PageSize: 3, PageToken: p.NextPageToken})
		if p2.Total != 4 || ids(p2) != "t0" || p2.NextPageToken != "" {
			t.Fatalf("%+v", p2)
		}
		p, _ = s.List(ctx, taskstore.Filter{ContextID: "c1", State: a2a.TaskStateCompleted})
		if p.Total != 1 || ids(p) != "t1" {
			t.Fatalf("context and state: %+v", p)
		}
		if p, _ := s.List(ctx, taskstore.Filter{}); p.Total != 7 || len(p.Records) != 7 {
			t.Fatalf("default page: %+v", p)
		}
		if p, err := s.List(ctx, taskstore.Filter{ContextID: "none"}); err != nil || p.Total != 0 || len(p.Records) != 0 || p.NextPageToken != "" {
			t.Fatalf("no match: %+v %v", p, err)
		}
		// Listed records are whole: history, owner and times.
		s.Update(ctx, "t0", func(r *taskstore.Record) error {
			r.Owner = "b-c1"
			r.Task.History = []a2a.Message{{MessageID: "m1", Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}}
			return nil
		})
		p3, _ := s.List(ctx, taskstore.Filter{ContextID: "c0", State: a2a.TaskStateWorking})
		last := p3.Records[len(p3.Records)-1]
		if last.Task.ID != "t0" || last.Owner != "b-c1" || len(last.Task.History) != 1 || !last.HasMessage("m-t0") || !last.Updated.After(last.Created) {
			t.Fatalf("%+v", last)
		}
	}},
	{"list keeps the tasks changed at or after a time", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now})
		for _, id := range []string{"a", "b", "c"} {
			create(t, s, task(id, "c1", a2a.TaskStateWorking))
			clk.advance(time.Second)
		}
		clk.advance(time.Minute)
		upd := setState(t, s, "a", a2a.TaskStateCompleted)
		p, err := s.List(ctx, taskstore.Filter{UpdatedAfter: upd.Updated})
		if err != nil || p.Total != 1 || ids(p) != "a" {
			t.Fatalf("changed at the time: %+v %v", p, err)
		}
		p, _ = s.List(ctx, taskstore.Filter{UpdatedAfter: epoch.Add(2 * time.Second)})
		if p.Total != 2 || ids(p) != "c,a" {
			t.Fatalf("changed at or after c's creation: %+v", p)
		}
		if p, _ := s.List(ctx, taskstore.Filter{UpdatedAfter: upd.Updated.Add(time.Second)}); p.Total != 0 {
			t.Fatalf("changed after the last change: %+v", p)
		}
	}},
	{"the principal that created a task is kept through every change", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		r := withPush("t1")
		r.Principal = "alice"
		if created := create(t, s, r); created.Principal != "alice" {
			t.Fatalf("create returned principal %q", created.Principal)
		}
		check := func(what, want string) {
			t.Helper()
			if got, err := s.Get(ctx, "t1"); err != nil || got.Principal != want {
				t.Fatalf("%s: principal %q, want %q (%v)", what, got.Principal, want, err)
			}
		}
		check("get", "alice")
		dup := task("t1", "c1", a2a.TaskStateSubmitted)
		dup.Principal = "bob"
		if got, err := s.Create(ctx, dup); !errors.Is(err, taskstore.ErrExists) || got.Principal != "alice" {
			t.Fatalf("a repeated create by another principal: %q %v", got.Principal, err)
		}
		check("a repeated create", "alice")
		if p, _ := s.List(ctx, taskstore.Filter{}); len(p.Records) != 1 || p.Records[0].Principal != "alice" {
			t.Fatalf("list: %+v", p.Records)
		}
		if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Owner = "b-c1"; return nil }); err != nil {
			t.Fatal(err)
		}
		check("an update of the owner", "alice")
		next := task("t1", "c1", a2a.TaskStateWorking).Task
		if err := taskstore.ReplaceTask(ctx, s, next); err != nil {
			t.Fatal(err)
		}
		check("a turn's event", "alice")
		if _, err := taskstore.SetPushDelivery(ctx, s, "t1", taskstore.PushDelivery{ConfigID: "cfg-1", State: "delivered", At: epoch}); err != nil {
			t.Fatal(err)
		}
		check("a delivery report", "alice")
		if info, err := s.Context(ctx, "c1"); err != nil || len(info.Tasks) != 1 || info.Tasks[0].Principal != "alice" {
			t.Fatalf("context: %+v %v", info, err)
		}
		// The store keeps what an update leaves, as it does of Owner.
		if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Principal = "carol"; return nil }); err != nil {
			t.Fatal(err)
		}
		check("an update of the principal", "carol")
		if info, _ := s.Context(ctx, "c1"); len(info.Tasks) != 1 || info.Tasks[0].Principal != "carol" {
			t.Fatalf("context after the update: %+v", info)
		}
		create(t, s, task("t2", "c1", a2a.TaskStateWorking))
		check("another task's create", "carol")
		if got, _ := s.Get(ctx, "t2"); got.Principal != "" {
			t.Fatalf("a task created without a principal has %q", got.Principal)
		}
	}},
	{"a list scoped to a caller keeps its tasks and those of no principal", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		for i, who := range []string{"alice", "bob", "", "alice", "bob", "alice", ""} {
			r := task(fmt.Sprint("t", i), fmt.Sprint("c", i%2), a2a.TaskStateWorking)
			if i == 5 {
				r.Task.Status.State = a2a.TaskStateCompleted
			}
			r.Principal = who
			create(t, s, r)
		}
		for _, tc := range []struct {
			name string
			f    taskstore.Filter
			want string
			// total is the count of the filter's matches, all pages.
			total int
		}{
			{"alice", taskstore.Filter{Scoped: true, VisibleTo: "alice"}, "t6,t5,t3,t2,t0", 5},
			{"bob", taskstore.Filter{Scoped: true, VisibleTo: "bob"}, "t6,t4,t2,t1", 4},
			{"a caller of no task", taskstore.Filter{Scoped: true, VisibleTo: "mallory"}, "t6,t2", 2},
			{"an anonymous caller sees the tasks of no principal alone", taskstore.Filter{Scoped: true}, "t6,t2", 2},
			{"unscoped, every task", taskstore.Filter{VisibleTo: "alice"}, "t6,t5,t4,t3,t2,t1,t0", 7},
			{"alice's in a context", taskstore.Filter{Scoped: true, VisibleTo: "alice", ContextID: "c1"}, "t5,t3", 2},
			{"bob's in a context", taskstore.Filter{Scoped: true, VisibleTo: "bob", ContextID: "c1"}, "t1", 1},
			{"alice's in a state", taskstore.Filter{Scoped: true, VisibleTo: "alice", State: a2a.TaskStateWorking}, "t6,t3,t2,t0", 4},
			{"alice's, a page", taskstore.Filter{Scoped: true, VisibleTo: "alice", PageSize: 2}, "t6,t5", 5},
			{"alice's, the next page", taskstore.Filter{Scoped: true, VisibleTo: "alice", PageSize: 2, PageToken: "2"}, "t3,t2", 5},
			{"alice's changed at or after a time", taskstore.Filter{Scoped: true, VisibleTo: "alice", UpdatedAfter: epoch.Add(4 * time.Second)},
				"t6,t5,t3", 3},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, err := s.List(ctx, tc.f)
				if err != nil || ids(p) != tc.want || p.Total != tc.total {
					t.Fatalf("%s, total %d (%v); want %s, total %d", ids(p), p.Total, err, tc.want, tc.total)
				}
				for _, r := range p.Records {
					if tc.f.Scoped && !taskstore.Visible(r.Principal, tc.f.VisibleTo) {
						t.Fatalf("listed %s of %q", r.Task.ID, r.Principal)
					}
				}
			})
		}
		// A page token past a caller's tasks is past its listing.
		if _, err := s.List(ctx, taskstore.Filter{Scoped: true, VisibleTo: "bob", PageToken: "5"}); !errors.Is(err, taskstore.ErrBadPageToken) {
			t.Fatalf("a token past bob's 4 tasks: %v", err)
		}
	}},
	{"a context lists the principal and last change of each task", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now})
		for _, r := range []struct{ id, who string }{{"a", "alice"}, {"b", ""}, {"c", "bob"}, {"d", "alice"}} {
			rec := task(r.id, "c1", a2a.TaskStateWorking)
			rec.Principal = r.who
			create(t, s, rec)
			clk.advance(time.Second)
		}
		bobs := setState(t, s, "c", a2a.TaskStateInputRequired)
		info, err := s.Context(ctx, "c1")
		if err != nil || strings.Join(info.TaskIDs, ",") != "a,b,c,d" || len(info.Tasks) != 4 || !info.LastActive.Equal(bobs.Updated) {
			t.Fatalf("%+v %v", info, err)
		}
		for i, want := range []string{"alice", "", "bob", "alice"} {
			ct := info.Tasks[i]
			got, _ := s.Get(ctx, ct.ID)
			if ct.ID != info.TaskIDs[i] || ct.Principal != want || !ct.Updated.Equal(got.Updated) {
				t.Fatalf("task %d: %+v, want %s of %q updated %v", i, ct, info.TaskIDs[i], want, got.Updated)
			}
		}
		// Each caller's view: its tasks and those of no principal, the
		// last activity theirs; a caller seeing none has no context.
		for _, tc := range []struct {
			caller, want string
			active       time.Time
		}{
			{"alice", "a,b,d", epoch.Add(3 * time.Second)},
			{"bob", "b,c", bobs.Updated},
			{"", "b", epoch.Add(time.Second)},
		} {
			v, ok := info.VisibleTo(tc.caller)
			if !ok || strings.Join(v.TaskIDs, ",") != tc.want || len(v.Tasks) != len(v.TaskIDs) || !v.LastActive.Equal(tc.active) {
				t.Fatalf("%q sees %+v %v, want %s active %v", tc.caller, v, ok, tc.want, tc.active)
			}
		}
		rec := task("x", "c2", a2a.TaskStateWorking)
		rec.Principal = "alice"
		create(t, s, rec)
		if other, err := s.Context(ctx, "c2"); err != nil {
			t.Fatal(err)
		} else if v, ok := other.VisibleTo("bob"); ok {
			t.Fatalf("bob sees alice's context: %+v", v)
		}
	}},
	{"a page token the store did not issue is invalid params", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		for i := range 3 {
			create(t, s, task(fmt.Sprint("t", i), "c1", a2a.TaskStateWorking))
		}
		for _, tok := range []string{"x", "-1", "4", "1.5"} {
			if _, err := s.List(ctx, taskstore.Filter{PageToken: tok}); !errors.Is(err, a2a.ErrInvalidParams) || !errors.Is(err, taskstore.ErrBadPageToken) {
				t.Fatalf("token %q: %v", tok, err)
			}
		}
		// The token at the end is an empty last page.
		if p, err := s.List(ctx, taskstore.Filter{PageToken: "3"}); err != nil || len(p.Records) != 0 || p.Total != 3 || p.NextPageToken != "" {
			t.Fatalf("token at the end: %+v %v", p, err)
		}
	}},
	{"a replaced task keeps its bookkeeping", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		first := create(t, s, task("t1", "c1", a2a.TaskStateSubmitted))
		s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Owner = "b-c1"; return nil })
		next := task("t1", "c1", a2a.TaskStateCompleted).Task
		next.Artifacts = []a2a.Artifact{{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText("done")}}}}
		if err := taskstore.ReplaceTask(ctx, s, next); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(ctx, "t1")
		if got.Task.Status.State != a2a.TaskStateCompleted || len(got.Task.Artifacts) != 1 || got.Owner != "b-c1" || !got.HasMessage("m-t1") ||
			!got.Created.Equal(first.Created) || !got.Updated.After(first.Updated) {
			t.Fatalf("%+v", got)
		}
		if info, _ := s.Context(ctx, "c1"); !info.LastActive.Equal(got.Updated) {
			t.Fatalf("context last active %v, want %v", info.LastActive, got.Updated)
		}
		if p, _ := s.List(ctx, taskstore.Filter{State: a2a.TaskStateCompleted}); ids(p) != "t1" {
			t.Fatalf("listed by its new state: %+v", p)
		}
		moved := next
		moved.ContextID = "c2"
		if err := taskstore.ReplaceTask(ctx, s, moved); err == nil {
			t.Fatal("context change accepted")
		}
	}},
	{"a task that cannot be stored is refused, not kept half", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
		bad := task("t1", "c1", a2a.TaskStateWorking)
		bad.Task.Metadata = map[string]any{"f": func() {}}
		if _, err := s.Create(ctx, bad); err == nil {
			t.Fatal("a task whose metadata is not JSON was stored")
		}
		if _, err := s.Get(ctx, "t1"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("get after a refused create: %v", err)
		}
		create(t, s, task("t2", "c1", a2a.TaskStateWorking))
		if _, err := s.Update(ctx, "t2", func(r *taskstore.Record) error { r.Task.Metadata = bad.Task.Metadata; return nil }); err == nil {
			t.Fatal("an update whose metadata is not JSON was stored")
		}
		badEvent := bad.Task
		badEvent.ID = "t2"
		if err := taskstore.ReplaceTask(ctx, s, badEvent); err == nil {
			t.Fatal("a replacement whose metadata is not JSON was stored")
		}
		if got, err := s.Get(ctx, "t2"); err != nil || got.Task.Metadata != nil {
			t.Fatalf("t2 after refused changes: %+v %v", got, err)
		}
	}},
	{"bounds evict finished tasks oldest first then refuse", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, MaxTasks: 3})
		for _, id := range []string{"a", "b", "c"} {
			create(t, s, task(id, "c1", a2a.TaskStateSubmitted))
			clk.advance(time.Second)
		}
		// b finishes first, then a: b is the older finished task.
		setState(t, s, "b", a2a.TaskStateCompleted)
		clk.advance(time.Second)
		setState(t, s, "a", a2a.TaskStateFailed)
		clk.advance(time.Second)
		for _, st := range []struct{ create, kept string }{
			{"d", "a,c,d"}, // b evicted
			{"e", "c,d,e"}, // a evicted
		} {
			create(t, s, task(st.create, "c1", a2a.TaskStateSubmitted))
			if got := kept(t, s); got != st.kept {
				t.Fatalf("after %s: kept %s, want %s", st.create, got, st.kept)
			}
			clk.advance(time.Second)
		}
		_, err := s.Create(ctx, task("f", "c1", a2a.TaskStateSubmitted))
		if !errors.Is(err, taskstore.ErrFull) || !strings.Contains(err.Error(), "3 tasks kept, the limit") {
			t.Fatalf("a full store of unfinished tasks: %v", err)
		}
		if got := kept(t, s); got != "c,d,e" {
			t.Fatalf("a refused create changed the store: %s", got)
		}
		if _, err := s.Get(ctx, "b"); !errors.Is(err, taskstore.ErrNotFound) || errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("an evicted task: %v", err)
		}
		// A repeated create is answered ErrExists even at the bound.
		if _, err := s.Create(ctx, task("c", "c1", a2a.TaskStateSubmitted)); !errors.Is(err, taskstore.ErrExists) {
			t.Fatalf("a repeated create at the bound: %v", err)
		}
		// Once one finishes, there is room again.
		setState(t, s, "d", a2a.TaskStateCanceled)
		create(t, s, task("f", "c1", a2a.TaskStateSubmitted))
		if info, _ := s.Context(ctx, "c1"); strings.Join(info.TaskIDs, ",") != "c,e,f" {
			t.Fatalf("context after evictions: %v", info.TaskIDs)
		}
	}},
	{"a new finished task is not evicted to make room for itself", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, MaxTasks: 2})
		create(t, s, task("a", "c1", a2a.TaskStateWorking))
		clk.advance(time.Second)
		create(t, s, task("b", "c1", a2a.TaskStateWorking))
		clk.advance(time.Second)
		if _, err := s.Create(ctx, task("done", "c1", a2a.TaskStateCompleted)); !errors.Is(err, taskstore.ErrFull) {
			t.Fatalf("a finished task past the bound: %v", err)
		}
		if got := kept(t, s); got != "a,b" {
			t.Fatalf("kept %s", got)
		}
	}},
	{"the byte bound refuses growth but not a turn's events", func(t *testing.T, su *suite) {
		big := strings.Repeat("x", 2000)
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, MaxBytes: 5000})
		for _, id := range []string{"a", "b"} {
			create(t, s, withText(id, big, a2a.TaskStateInputRequired))
			clk.advance(time.Second)
		}
		_, err := s.Create(ctx, withText("c", big, a2a.TaskStateSubmitted))
		if !errors.Is(err, taskstore.ErrFull) || !strings.Contains(err.Error(), "limit of 5000 bytes") {
			t.Fatalf("a third big task: %v", err)
		}
		// A resume that would add a big message is refused, and nothing
		// of it is kept.
		_, err = s.Update(ctx, "a", func(r *taskstore.Record) error {
			r.Task.History = append(r.Task.History, withText("a", big, a2a.TaskStateWorking).Task.History...)
			r.MessageIDs = append(r.MessageIDs, "m2")
			return nil
		})
		if !errors.Is(err, taskstore.ErrFull) {
			t.Fatalf("an update growing past the bound: %v", err)
		}
		if r, _ := s.Get(ctx, "a"); len(r.Task.History) != 1 || r.HasMessage("m2") {
			t.Fatalf("a refused update was kept: %+v", r)
		}
		// A turn's events are never refused.
		grown := withText("b", big+big, a2a.TaskStateWorking).Task
		if err := taskstore.ReplaceTask(ctx, s, grown); err != nil {
			t.Fatalf("a turn's event: %v", err)
		}
		// Finishing a frees its bytes for a new task, by eviction.
		setState(t, s, "a", a2a.TaskStateCompleted)
		create(t, s, withText("c", "small", a2a.TaskStateSubmitted))
		if got := kept(t, s); got != "b,c" {
			t.Fatalf("kept %s", got)
		}
	}},
	{"push configs count against the byte bound", func(t *testing.T, su *suite) {
		bigHook := func(id string) []a2a.TaskPushNotificationConfig {
			return []a2a.TaskPushNotificationConfig{{ID: "c", TaskID: id, URL: "https://hooks.example/" + strings.Repeat("x", 4000)}}
		}
		s := su.opened(t, Config{Now: newManual().now, MaxBytes: 3000})
		r := task("a", "c1", a2a.TaskStateSubmitted)
		r.PushConfigs = bigHook("a")
		if _, err := s.Create(ctx, r); !errors.Is(err, taskstore.ErrFull) {
			t.Fatalf("a task with 4 kB of configs in a 3 kB store: %v", err)
		}
		if _, err := s.Get(ctx, "a"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("the refused task was kept: %v", err)
		}
		create(t, s, task("b", "c1", a2a.TaskStateSubmitted))
		_, err := s.Update(ctx, "b", func(r *taskstore.Record) error {
			r.PushConfigs = bigHook("b")
			return nil
		})
		if !errors.Is(err, taskstore.ErrFull) {
			t.Fatalf("an update adding 4 kB of configs: %v", err)
		}
		if got, _ := s.Get(ctx, "b"); len(got.PushConfigs) != 0 {
			t.Fatalf("a refused update was kept: %+v", got.PushConfigs)
		}
	}},
	{"tasks waiting for input expire after the idle time", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, ExpireInterruptedAfter: time.Hour})
		create(t, s, task("input", "c1", a2a.TaskStateInputRequired))
		create(t, s, task("auth", "c1", a2a.TaskStateAuthRequired))
		create(t, s, task("touched", "c1", a2a.TaskStateInputRequired))
		create(t, s, task("working", "c1", a2a.TaskStateWorking))
		create(t, s, task("done", "c2", a2a.TaskStateCompleted))
		clk.advance(50 * time.Minute)
		setState(t, s, "touched", a2a.TaskStateInputRequired) // a change restarts the idle time
		clk.advance(10*time.Minute + time.Second)

		for _, id := range []string{"input", "auth"} {
			_, err := s.Get(ctx, id)
			var exp *taskstore.ExpiredError
			if !errors.Is(err, taskstore.ErrExpired) || !errors.Is(err, taskstore.ErrNotFound) || !errors.As(err, &exp) ||
				exp.ID != id || exp.Context || !exp.At.Equal(epoch.Add(time.Hour)) {
				t.Fatalf("%s an hour and a moment later: %v", id, err)
			}
			if _, err := taskstore.GetHead(ctx, s, id); !errors.As(err, &exp) || exp.ID != id || !exp.At.Equal(epoch.Add(time.Hour)) {
				t.Fatalf("head of %s: %v", id, err)
			}
			if _, err := s.Update(ctx, id, func(*taskstore.Record) error { return nil }); !errors.Is(err, taskstore.ErrExpired) {
				t.Fatalf("update of %s: %v", id, err)
			}
			if _, err := s.Get(ctx, id); !errors.As(err, &exp) || !exp.At.Equal(epoch.Add(time.Hour)) {
				t.Fatalf("%s once a write dropped it: %v", id, err)
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
		create(t, s, task("alone", "c9", a2a.TaskStateInputRequired))
		clk.advance(2 * time.Hour)
		var exp *taskstore.ExpiredError
		if _, err := s.Context(ctx, "c9"); !errors.Is(err, taskstore.ErrExpired) || !errors.As(err, &exp) || !exp.Context || exp.ID != "c9" {
			t.Fatalf("a context whose last task expired: %v", err)
		}
		if _, err := s.Context(ctx, "c1"); err != nil {
			t.Fatalf("a context with a task going: %v", err)
		}
		// So it stays once a write dropped its task.
		setState(t, s, "working", a2a.TaskStateWorking)
		if _, err := s.Context(ctx, "c9"); !errors.As(err, &exp) || !exp.Context || exp.ID != "c9" {
			t.Fatalf("a context whose last task was dropped expired: %v", err)
		}
		// A task never known is not reported expired.
		if _, err := s.Get(ctx, "never"); !errors.Is(err, taskstore.ErrNotFound) || errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("unknown id: %v", err)
		}
		// A new task under an expired id is a new task, and its context
		// is no longer expired.
		create(t, s, task("input", "c9", a2a.TaskStateSubmitted))
		if _, err := s.Get(ctx, "input"); err != nil {
			t.Fatal(err)
		}
		if info, err := s.Context(ctx, "c9"); err != nil || strings.Join(info.TaskIDs, ",") != "input" {
			t.Fatalf("the expired context with a new task: %+v %v", info, err)
		}
	}},
	{"finished tasks go after the retention", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, KeepFinishedFor: time.Minute})
		create(t, s, task("old", "c1", a2a.TaskStateCompleted))
		create(t, s, task("going", "c1", a2a.TaskStateWorking))
		create(t, s, task("waiting", "c1", a2a.TaskStateInputRequired))
		clk.advance(61 * time.Second)
		create(t, s, task("new", "c1", a2a.TaskStateRejected))
		if _, err := s.Get(ctx, "old"); !errors.Is(err, taskstore.ErrNotFound) || errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("finished 61 s ago, 60 s retention: %v", err)
		}
		if got := kept(t, s); got != "going,new,waiting" {
			t.Fatalf("kept %s", got)
		}
		if info, _ := s.Context(ctx, "c1"); strings.Join(info.TaskIDs, ",") != "going,waiting,new" {
			t.Fatalf("context: %v", info.TaskIDs)
		}
	}},
	{"without a retention finished tasks stay", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now})
		create(t, s, task("done", "c1", a2a.TaskStateCompleted))
		clk.advance(365 * 24 * time.Hour)
		create(t, s, task("later", "c1", a2a.TaskStateWorking))
		if _, err := s.Get(ctx, "done"); err != nil {
			t.Fatalf("a finished task a year later: %v", err)
		}
	}},
	{"push configs live in the task record", func(t *testing.T, su *suite) {
		s := su.opened(t, Config{Now: newTicking().now})
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
		if p, _ := s.List(ctx, taskstore.Filter{}); len(p.Records) != 1 {
			t.Fatalf("list: %+v", p)
		} else {
			samePush(t, "list", p.Records[0], want)
		}

		got.PushConfigs[0].URL = "https://changed.example/"
		got.PushConfigs[0].Authentication.Credentials = "changed"
		if again, _ := s.Get(ctx, "t1"); again.PushConfigs[0].URL != want.PushConfigs[0].URL ||
			again.PushConfigs[0].Authentication.Credentials != "secret" {
			t.Fatal("changing a returned record changed its stored configs")
		}

		next := got.Task
		next.Status = &a2a.TaskStatus{State: a2a.TaskStateWorking}
		if err := taskstore.ReplaceTask(ctx, s, next); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Get(ctx, "t1")
		samePush(t, "after a turn's event", got, want)

		if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error {
			r.PushConfigs = nil
			r.PushDeliveries = nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Get(ctx, "t1")
		samePush(t, "after deleting them", got, taskstore.Record{})
		if got.Task.Status.State != a2a.TaskStateWorking {
			t.Fatalf("the task lost its state: %+v", got.Task.Status)
		}
	}},
	{"a delivery report is written alone", func(t *testing.T, su *suite) {
		setPushDelivery(t, su.opened(t, Config{Now: newTicking().now}), false)
	}},
	{"a delivery report through Update gets the same answers", func(t *testing.T, su *suite) {
		setPushDelivery(t, su.opened(t, Config{Now: newTicking().now}), true)
	}},
	{"a delivery report on an expired task is ErrExpired", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, ExpireInterruptedAfter: time.Minute})
		r := withPush("w")
		r.Task.Status.State = a2a.TaskStateInputRequired
		create(t, s, r)
		clk.advance(2 * time.Minute)
		_, err := taskstore.SetPushDelivery(ctx, s, "w", taskstore.PushDelivery{ConfigID: "cfg-1", State: "delivered", At: clk.now()})
		if !errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("a report on an expired task: %v", err)
		}
	}},
	{"a delivery report past the byte bound evicts a finished task", func(t *testing.T, su *suite) {
		// Tasks of 3 to 4 kB in every store: two fit in 7,600 bytes, and
		// a report of 3 kB more does not.
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, MaxBytes: 7600})
		for _, id := range []string{"done", "a"} {
			r := withPush(id)
			r.PushDeliveries = nil
			r.Task.History = withText(id, strings.Repeat("x", 3000), a2a.TaskStateWorking).Task.History
			if id == "done" {
				r.Task.Status.State = a2a.TaskStateCompleted
			}
			create(t, s, r)
			clk.advance(time.Second)
		}
		long := taskstore.PushDelivery{ConfigID: "cfg-1", State: "failing", Reason: strings.Repeat("x", 3000), At: clk.now()}
		if ok, err := taskstore.SetPushDelivery(ctx, s, "a", long); !ok || err != nil {
			t.Fatalf("a report past the bound is not refused: %v %v", ok, err)
		}
		if _, err := s.Get(ctx, "done"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Fatalf("the finished task was not evicted: %v", err)
		}
		if got, _ := s.Get(ctx, "a"); len(got.PushDeliveries) != 1 || got.PushDeliveries[0].Reason != long.Reason {
			t.Fatalf("the report: %+v", got.PushDeliveries)
		}
	}},
	{"the tasks a store drops are told to its watchers", func(t *testing.T, su *suite) {
		clk := newManual()
		s := su.opened(t, Config{Now: clk.now, MaxTasks: 3, ExpireInterruptedAfter: time.Minute, KeepFinishedFor: time.Hour})
		dw, ok := s.(taskstore.DropWatcher)
		if !ok {
			t.Fatalf("%T is not a taskstore.DropWatcher", s)
		}
		var mu sync.Mutex
		var told []string
		stop := dw.WatchDrops(func(d taskstore.Dropped) {
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
			create(t, s, r)
			clk.advance(time.Second)
		}
		// A write after the clock moved: every store has dropped what
		// had to go by the time it returns.
		touch := func() {
			t.Helper()
			if _, err := s.Update(ctx, "new", func(*taskstore.Record) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		mk("done", a2a.TaskStateCompleted, true)
		mk("plain", a2a.TaskStateCompleted, false)
		mk("wait", a2a.TaskStateInputRequired, true)
		setState(t, s, "plain", a2a.TaskStateCompleted)
		saw("creates and an update")
		// A fourth task evicts the finished task changed least recently.
		mk("new", a2a.TaskStateWorking, false)
		saw("evicted", "done(c-done)cfg-1")
		// Two minutes later the waiting task has expired.
		clk.advance(2 * time.Minute)
		touch()
		saw("expired", "wait(c-wait)cfg-1")
		// An hour later the finished one is past its retention.
		clk.advance(time.Hour)
		touch()
		saw("past retention", "plain(c-plain)")
		stop()
		mk("done2", a2a.TaskStateCompleted, true)
		clk.advance(2 * time.Hour)
		touch()
		saw("after stop")
	}},
}

// setPushDelivery checks SetPushDelivery step by step: a first report is
// added, a changed one replaces it, one that differs only by its time, or
// is about a config the task does not have, writes nothing; an unknown
// task is ErrNotFound. A store's own (DeliverySetter) leaves Updated as it
// is; through Update (viaUpdate, a Store without it) the answers are the
// same.
func setPushDelivery(t *testing.T, raw taskstore.Store, viaUpdate bool) {
	at := func(s int) time.Time { return epoch.Add(time.Hour + time.Duration(s)*time.Second) }
	rep := func(cfg, state string, status int, s int) taskstore.PushDelivery {
		return taskstore.PushDelivery{ConfigID: cfg, State: state, Status: status, At: at(s)}
	}
	s := raw
	if viaUpdate {
		s = hidden{raw}
	} else if _, ok := raw.(taskstore.DeliverySetter); !ok {
		t.Fatalf("%T is not a taskstore.DeliverySetter", raw)
	}
	start := withPush("t1").PushDeliveries // cfg-1 failing 503
	r := withPush("t1")
	r.PushConfigs = append(r.PushConfigs, a2a.TaskPushNotificationConfig{ID: "cfg-2", TaskID: "t1", URL: "https://other.example/a2a"})
	created := create(t, s, r)
	steps := []struct {
		name    string
		task    string
		d       taskstore.PushDelivery
		changed bool
		err     error
		want    []taskstore.PushDelivery // the task's reports after the step
	}{
		{name: "first report of a config", task: "t1", d: rep("cfg-2", "delivered", 204, 1), changed: true,
			want: []taskstore.PushDelivery{start[0], rep("cfg-2", "delivered", 204, 1)}},
		{name: "the same but for its time", task: "t1", d: rep("cfg-2", "delivered", 204, 9),
			want: []taskstore.PushDelivery{start[0], rep("cfg-2", "delivered", 204, 1)}},
		{name: "another status", task: "t1", d: rep("cfg-2", "delivered", 200, 2), changed: true,
			want: []taskstore.PushDelivery{start[0], rep("cfg-2", "delivered", 200, 2)}},
		{name: "a changed state replaces the config's report", task: "t1", d: rep("cfg-1", "dead", 410, 3), changed: true,
			want: []taskstore.PushDelivery{rep("cfg-1", "dead", 410, 3), rep("cfg-2", "delivered", 200, 2)}},
		{name: "a config the task does not have", task: "t1", d: rep("cfg-9", "delivered", 204, 4),
			want: []taskstore.PushDelivery{rep("cfg-1", "dead", 410, 3), rep("cfg-2", "delivered", 200, 2)}},
		{name: "an unknown task", task: "t9", d: rep("cfg-1", "delivered", 204, 5), err: taskstore.ErrNotFound},
	}
	for _, st := range steps {
		changed, err := taskstore.SetPushDelivery(ctx, s, st.task, st.d)
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
		samePush(t, st.name, got, taskstore.Record{PushConfigs: created.PushConfigs, PushDeliveries: st.want})
		if !viaUpdate && !got.Updated.Equal(created.Updated) {
			t.Fatalf("%s: Updated moved from %v to %v", st.name, created.Updated, got.Updated)
		}
	}
	// The reports stay through a turn's event and an update.
	got, _ := s.Get(ctx, "t1")
	next := got.Task
	next.Status = &a2a.TaskStatus{State: a2a.TaskStateCompleted}
	if err := taskstore.ReplaceTask(ctx, s, next); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "t1", func(r *taskstore.Record) error { r.Owner = "other"; return nil }); err != nil {
		t.Fatal(err)
	}
	again, _ := s.Get(ctx, "t1")
	samePush(t, "after an event and an update", again, got)
	// A report on a finished task.
	if ok, err := taskstore.SetPushDelivery(ctx, s, "t1", rep("cfg-2", "failing", 503, 6)); !ok || err != nil {
		t.Fatalf("a report on a finished task: %v %v", ok, err)
	}
}
