package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/reach"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// turnLog is a handler that completes every turn and keeps what it saw.
type turnLog struct {
	mu    sync.Mutex
	texts []string
	keys  []string
}

func (l *turnLog) ServeTurn(ctx context.Context, t *Turn) error {
	q, ok := t.Queued()
	l.mu.Lock()
	l.texts = append(l.texts, t.Text())
	if ok {
		l.keys = append(l.keys, q.ReplayKey)
	} else {
		l.keys = append(l.keys, "live")
	}
	l.mu.Unlock()
	return t.Complete(ctx, "done: "+t.Text())
}

func (l *turnLog) seen() ([]string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.texts...), append([]string(nil), l.keys...)
}

// offlineFixture is a server over a real queue file, with a settable clock.
type offlineFixture struct {
	*fixture
	o     *Offline
	h     *turnLog
	clock *clock
	queue *inbox.Bolt
}

func newOfflineFixture(t *testing.T, cfg OfflineConfig) *offlineFixture {
	t.Helper()
	q, _, err := inbox.OpenBolt(filepath.Join(t.TempDir(), "queue.db"), inbox.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if cfg.Mode == "" {
		cfg.Mode = offline.ReachabilityModeUnavailableStoreForward
		cfg.StoreForward = true
	}
	if cfg.StoreForward {
		cfg.Queue = q
	}
	o, err := NewOffline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	h := &turnLog{}
	f := newFixture(t, h, WithOffline(o), WithClock(c.Now))
	f.ids = tasklife.ResponderIDs
	// The tasks of peer-a's queued messages are its own: it reads and
	// cancels them (docs/protocol.md §15).
	f.caller = Caller{Subject: "peer-a"}
	return &offlineFixture{fixture: f, o: o, h: h, clock: c, queue: q}
}

// sendAs sends a message as peer, as an HTTP transport would.
func (f *offlineFixture) sendAs(peer string, m *a2a.Message) Reply {
	f.t.Helper()
	data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		f.t.Fatal(err)
	}
	req, _, perr := f.srv.DecodeRequest(data)
	if perr != nil {
		f.t.Fatal(perr)
	}
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Serve(ctx, Call{Request: req, IDs: tasklife.ResponderIDs, Caller: Caller{Subject: peer}}, rec); err != nil {
		f.t.Fatal(err)
	}
	all := rec.all()
	if len(all) != 1 {
		f.t.Fatalf("%d replies", len(all))
	}
	return all[0]
}

// queued checks that r says queued and returns the task id given.
func queuedTaskID(t *testing.T, r Reply) string {
	t.Helper()
	if r.Err == nil || r.Err.Token != a2a.TokenAgentAsleep {
		t.Fatalf("reply %+v, want agent_asleep", r)
	}
	d, _ := jsonrpc.OfflineDetails(r.Err)
	if !d.Queued {
		t.Fatalf("agent_asleep with queued %v", d.Queued)
	}
	id := d.TaskID
	if id == "" {
		t.Fatalf("queued without a taskId: %v", d)
	}
	return id
}

func (f *offlineFixture) getTask(id string) (a2a.Task, *a2a.Error) {
	f.t.Helper()
	rs := f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id})
	if rs[0].Err != nil {
		return a2a.Task{}, rs[0].Err
	}
	return taskOf(f.t, rs[0]), nil
}

// waitState polls GetTask (bounded) until the task is in state.
func (f *offlineFixture) waitState(id string, state a2a.TaskState) a2a.Task {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := f.getTask(id)
		if err == nil && task.Status.State == state {
			return task
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("task %s: %v %v, want %s", id, task.Status, err, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAsleepAgentQueuesAndDeliversInOrderOnWake(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{})
	var ids []string
	for i := range 3 {
		ids = append(ids, queuedTaskID(t, f.sendAs("peer-a", msg("", "", fmt.Sprint("job ", i)))))
	}
	for _, id := range ids {
		if task, err := f.getTask(id); err != nil || task.Status.State != a2a.TaskStateSubmitted || len(task.History) != 1 {
			t.Fatalf("queued task %s: %+v %v, want SUBMITTED with its message", id, task.Status, err)
		}
	}
	if texts, _ := f.h.seen(); len(texts) != 0 {
		t.Fatalf("the handler ran while asleep: %v", texts)
	}
	f.o.SetAwake(true)
	for _, id := range ids {
		f.waitState(id, a2a.TaskStateCompleted)
	}
	texts, keys := f.h.seen()
	if strings.Join(texts, ",") != "job 0,job 1,job 2" {
		t.Errorf("delivered %v, want in queue order", texts)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "msg:peer-a\x00") {
			t.Errorf("turn not marked queued, or replay key %q", k)
		}
	}
	// Awake, the agent serves live.
	r := f.sendAs("peer-a", msg("", "", "live"))
	if r.Err != nil {
		t.Fatalf("awake agent answered %v", r.Err)
	}
	st, _ := f.o.Stats(context.Background())
	if st.Messages != 0 || st.Delivered != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestQueueFullAnswersByKindAndStoresNothing(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true,
		Bounds: offline.QueueBounds{MaxMessages: 3, MaxPerPeer: 2}})
	queuedTaskID(t, f.sendAs("peer-a", msg("", "", "a1")))
	queuedTaskID(t, f.sendAs("peer-a", msg("", "", "a2")))
	cases := []struct {
		name   string
		peer   string
		kind   string
		status int
	}{
		{"a third message from one peer hits the per-peer cap (429)", "peer-a", "peer", 429},
		{"another peer still queues", "peer-b", "", 0},
		{"then the global message cap answers 507", "peer-c", "messages", 507},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.sendAs(c.peer, msg("", "", "more"))
			if c.kind == "" {
				queuedTaskID(t, r)
				return
			}
			if r.Err == nil || r.Err.Token != a2a.TokenAsleepQueueFull || r.Err.HTTPStatus != c.status {
				t.Fatalf("reply %+v, want asleep_queue_full %d", r.Err, c.status)
			}
			d, _ := jsonrpc.OfflineDetails(r.Err)
			if string(d.Kind) != c.kind || d.Queued {
				t.Errorf("data %v", d)
			}
		})
	}
	if st, _ := f.o.Stats(context.Background()); st.Messages != 3 {
		t.Errorf("%d records queued, want 3", st.Messages)
	}
}

func TestRetriedSendWhileQueuedIsStoredOnce(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{})
	m := msg("", "", "once")
	first := queuedTaskID(t, f.sendAs("peer-a", m))
	again := queuedTaskID(t, f.sendAs("peer-a", m))
	if first != again {
		t.Errorf("a retry got task %s, the first %s", again, first)
	}
	f.o.SetAwake(true)
	f.waitState(first, a2a.TaskStateCompleted)
	if texts, _ := f.h.seen(); len(texts) != 1 {
		t.Errorf("delivered %d times", len(texts))
	}
}

func TestReplayedMessageIsDrainedNotDelivered(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{})
	m := msg("", "", "pay once")
	first := queuedTaskID(t, f.sendAs("peer-a", m))
	f.o.SetAwake(true)
	f.waitState(first, a2a.TaskStateCompleted)
	f.o.SetAwake(false)
	// The same message again (a replay): queued, then refused at dequeue.
	second := queuedTaskID(t, f.sendAs("peer-a", m))
	f.o.SetAwake(true)
	task := f.waitState(second, a2a.TaskStateRejected)
	if !strings.Contains(agentText(task), "replay") {
		t.Errorf("reason %q", agentText(task))
	}
	if texts, _ := f.h.seen(); len(texts) != 1 {
		t.Errorf("delivered %d times", len(texts))
	}
}

func TestExpiredRecordIsPurgedNeverDelivered(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true,
		Bounds: offline.QueueBounds{RecordTTL: time.Hour}})
	id := queuedTaskID(t, f.sendAs("peer-a", msg("", "", "stale")))
	f.clock.add(2 * time.Hour)
	f.o.SetAwake(true)
	task := f.waitState(id, a2a.TaskStateFailed)
	if !strings.Contains(agentText(task), "expired") {
		t.Errorf("reason %q", agentText(task))
	}
	if texts, _ := f.h.seen(); len(texts) != 0 {
		t.Errorf("an expired record was delivered: %v", texts)
	}
}

func TestCanceledWhileQueuedIsNeverDelivered(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{})
	id := queuedTaskID(t, f.sendAs("peer-a", msg("", "", "never mind")))
	rs := f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: id})
	if got := taskOf(t, rs[0]); got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %s", got.Status.State)
	}
	later := queuedTaskID(t, f.sendAs("peer-a", msg("", "", "after")))
	f.o.SetAwake(true)
	f.waitState(later, a2a.TaskStateCompleted)
	if texts, _ := f.h.seen(); strings.Join(texts, ",") != "after" {
		t.Errorf("delivered %v", texts)
	}
}

func TestReachabilityModesDecideLiveQueueOrRefuse(t *testing.T) {
	window := &reach.Schedule{Period: time.Hour, Offset: 30 * time.Minute, Length: 10 * time.Minute}
	cases := []struct {
		name      string
		cfg       OfflineConfig
		awake     *bool
		at        time.Duration // past 10:00
		wantLive  bool
		wantQueue bool
		wantRetry int64 // -1: none
	}{
		{"always_on serves live", OfflineConfig{Mode: offline.ReachabilityModeAlwaysAvailable}, nil, 0, true, false, -1},
		{"session with its session active serves live", OfflineConfig{Mode: offline.ReachabilityModeSessionOnly}, nil, 0, true, false, -1},
		{"session without a session refuses and never queues", OfflineConfig{Mode: offline.ReachabilityModeSessionOnly}, ptr(false), 0, false, false, -1},
		{"hourly_wake inside its window serves live", OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: window, StoreForward: true}, nil, 35 * time.Minute, true, false, -1},
		{"hourly_wake outside its window queues and says when it opens", OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: window, StoreForward: true}, nil, 5 * time.Minute, false, true, 25 * 60},
		{"hourly_wake without store-and-forward refuses with the wait", OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable, Schedule: window}, nil, 41 * time.Minute, false, false, 49 * 60},
		{"sleep queues", OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true}, nil, 0, false, true, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newOfflineFixture(t, c.cfg)
			f.clock.add(c.at)
			if c.awake != nil {
				f.o.SetAwake(*c.awake)
			}
			r := f.sendAs("peer-a", msg("", "", "hello"))
			if c.wantLive {
				if r.Err != nil {
					t.Fatalf("answered %v, want live", r.Err)
				}
				return
			}
			if r.Err == nil || r.Err.Token != a2a.TokenAgentAsleep {
				t.Fatalf("answered %+v, want agent_asleep", r)
			}
			d, _ := jsonrpc.OfflineDetails(r.Err)
			if d.Queued != c.wantQueue {
				t.Errorf("queued %v", d.Queued)
			}
			var got int64
			ok := d.RetryAfterSec != nil
			if ok {
				got = int64(*d.RetryAfterSec)
			}
			if c.wantRetry < 0 && ok || c.wantRetry >= 0 && got != c.wantRetry {
				t.Errorf("retryAfterSec %v (%v), want %d", got, ok, c.wantRetry)
			}
		})
	}
}

func TestAnonymousCallerIsNotQueuedWhenAuthenticationIsAdvertised(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, RequireCaller: true})
	r := f.sendAs("", msg("", "", "hi"))
	if r.Err == nil || r.Err.Token != a2a.TokenUnauthenticated {
		t.Fatalf("answered %+v, want unauthenticated", r.Err)
	}
	if st, _ := f.o.Stats(context.Background()); st.Messages != 0 {
		t.Errorf("%d queued", st.Messages)
	}
}

func TestOfflineConfigIsChecked(t *testing.T) {
	win := &reach.Schedule{Period: time.Hour, Length: time.Minute}
	cases := []struct {
		name string
		cfg  OfflineConfig
		want string
	}{
		{"unknown mode", OfflineConfig{Mode: "nap"}, "unknown reachability mode"},
		{"hourly_wake without a schedule", OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable}, "needs a schedule"},
		{"session that queues", OfflineConfig{Mode: offline.ReachabilityModeSessionOnly, StoreForward: true}, "never queues"},
		{"store-and-forward without a queue", OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true}, "needs a Queue"},
		{"always_on with a schedule", OfflineConfig{Mode: offline.ReachabilityModeAlwaysAvailable, Schedule: win}, "has no schedule"},
		{"a window in fractions of a second", OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable,
			Schedule: &reach.Schedule{Period: time.Hour, Length: 1500 * time.Millisecond}}, "whole seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewOffline(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestReachabilityIsPublishedInTheCard(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{Mode: offline.ReachabilityModePeriodicallyAvailable, StoreForward: true,
		Schedule: &reach.Schedule{Period: time.Hour, Offset: 12 * time.Minute, Length: 5 * time.Minute}, Answer: offline.AsleepAnswerJSONRPC})
	card := &a2a.AgentCard{}
	f.o.Publish(card)
	f.o.Publish(card)
	if n := len(card.Capabilities.Extensions); n != 1 {
		t.Fatalf("%d extensions", n)
	}
	b, _ := json.Marshal(card.Capabilities.Extensions[0].Params)
	if err := offline.ValidateReachabilityParamsJSON(b); err != nil {
		t.Fatalf("params %s: %v", b, err)
	}
	want := `{"asleepAnswer":"jsonrpc","mode":"hourly_wake","queue":{"maxBytes":2097152,"maxMessages":500,"maxPerPeer":50,"recordTtlSec":604800},"schedule":{"lengthSec":300,"offsetSec":720,"periodSec":3600},"storeForward":true}`
	if string(b) != want {
		t.Errorf("params\n%s\nwant\n%s", b, want)
	}
}

func ptr[T any](v T) *T { return &v }

// agentText is the text of the task's status message.
func agentText(t a2a.Task) string {
	if t.Status == nil || t.Status.Message == nil {
		return ""
	}
	return TextOf(t.Status.Message)
}

// blockingLog is a turnLog whose turns wait for release.
type blockingLog struct {
	turnLog
	started chan string
	release chan struct{}
}

func (b *blockingLog) ServeTurn(ctx context.Context, t *Turn) error {
	b.started <- t.Text()
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.turnLog.ServeTurn(ctx, t)
}

// TestTakenButNotStartedIsStillSubmittedAndCancelable: during a wake the
// records behind a running turn are out of the queue but not yet turns:
// GetTask still answers SUBMITTED, CancelTask still stops them, and a
// stop puts them back in the queue.
func TestTakenButNotStartedIsStillSubmittedAndCancelable(t *testing.T) {
	q, _, err := inbox.OpenBolt(filepath.Join(t.TempDir(), "queue.db"), inbox.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	o, err := NewOffline(OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	h := &blockingLog{started: make(chan string, 8), release: make(chan struct{})}
	srv := NewServer(h, WithOffline(o))
	f := &offlineFixture{fixture: &fixture{t: t, srv: srv, ids: tasklife.ResponderIDs, caller: Caller{Subject: "peer-a"}}, o: o}
	var ids []string
	for i := range 4 {
		ids = append(ids, queuedTaskID(t, f.sendAs("peer-a", msg("", "", fmt.Sprint("job ", i)))))
	}
	o.SetAwake(true)
	if got := <-h.started; got != "job 0" {
		t.Fatalf("first turn %q", got)
	}
	// job 0 runs; jobs 1 to 3 were taken with it.
	if st, _ := o.Stats(context.Background()); st.Messages != 0 {
		t.Fatalf("%d records still in the queue, want the batch taken", st.Messages)
	}
	if task, err := f.getTask(ids[2]); err != nil || task.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("GetTask of a taken record: %v %v, want SUBMITTED", task.Status, err)
	}
	rs := f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: ids[1]})
	if got := taskOf(t, rs[0]); got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel of a taken record: %s", got.Status.State)
	}
	// Stop while job 0 runs: jobs 2 and 3 go back to the queue.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := o.Stats(context.Background())
	pending, err := q.Next(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var back []string
	for _, r := range pending {
		back = append(back, r.TaskID)
	}
	if strings.Join(back, ",") != ids[2]+","+ids[3] {
		t.Errorf("back in the queue: %v, want jobs 2 and 3 (%v); stats %+v", back, ids[2:], st)
	}
}

// A queued message's task is its sender's, queued, delivered or drained:
// to another caller GetTask and CancelTask answer as for an unknown task,
// and a cancel by it leaves the message queued (docs/protocol.md §15).
func TestAQueuedMessagesTaskIsItsSenders(t *testing.T) {
	f := newOfflineFixture(t, OfflineConfig{})
	id := queuedTaskID(t, f.sendAs("peer-a", msg("", "", "job")))
	dropped := queuedTaskID(t, f.sendAs("peer-a", msg("", "", "never mind")))
	notFound := func(what, id string) {
		t.Helper()
		unknown := "00000000-0000-4000-8000-000000000000"
		for _, method := range []a2a.Method{a2a.MethodGetTask, a2a.MethodCancelTask} {
			var params, other any = &a2a.GetTaskRequest{ID: id}, &a2a.GetTaskRequest{ID: unknown}
			if method == a2a.MethodCancelTask {
				params, other = &a2a.CancelTaskRequest{ID: id}, &a2a.CancelTaskRequest{ID: unknown}
			}
			got, want := soleError(t, f.call(method, params)), soleError(t, f.call(method, other))
			if got.Token != a2a.TokenTaskNotFound || got.Message != strings.ReplaceAll(want.Message, unknown, id) {
				t.Fatalf("%s: %s of peer-a's task: %s %q, for an unknown one %q", what, method, got.Token, got.Message, want.Message)
			}
		}
	}
	f.caller = Caller{Subject: "peer-b"}
	notFound("queued", id)
	if st, _ := f.o.Stats(context.Background()); st.Messages != 2 {
		t.Fatalf("%d messages queued after peer-b's cancel, want 2", st.Messages)
	}
	f.caller = Caller{Subject: "peer-a"}
	if got := taskOf(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: dropped})[0]); got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("peer-a's cancel: %s", got.Status.State)
	}
	f.o.SetAwake(true)
	f.waitState(id, a2a.TaskStateCompleted)
	for _, tid := range []string{id, dropped} {
		if rec, err := f.srv.Store().Get(context.Background(), tid); err != nil || rec.Principal != "peer-a" {
			t.Fatalf("task %s records %q: %v", tid, rec.Principal, err)
		}
	}
	f.caller = Caller{Subject: "peer-b"}
	notFound("delivered", id)
	notFound("canceled while queued", dropped)
}
