package pushmon_test

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	"github.com/a2abind/a2abind/statemachines/pushbind"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// job is a task that works from 2 s and completes at 150 s.
var job = []step{{0, submitted}, {2 * time.Second, working}, {150 * time.Second, completed}}

func ended(t *testing.T, w *pushmon.Watch) {
	t.Helper()
	select {
	case <-w.Done():
	default:
		t.Fatalf("the watch has not ended; binding %v", w.Binding())
	}
}

func running(t *testing.T, w *pushmon.Watch) {
	t.Helper()
	select {
	case <-w.Done():
		t.Fatalf("the watch ended: %v", w.Err())
	default:
	}
}

// TestPushBeforeTheReply: the agent pushes before its SendMessage reply
// reaches the requester (the config rode in the send); the push is
// acknowledged, not refused as an unknown task, and counts once the reply
// names the task. Over MQTT the Monitor makes the task id itself.
func TestPushBeforeTheReply(t *testing.T) {
	for name, ids := range map[string]tasklife.IDOrigin{"HTTP: the agent makes the task id": tasklife.ResponderIDs, "MQTT: the requester makes it": tasklife.RequesterIDs} {
		t.Run(name, func(t *testing.T) {
			a := &fakeAgent{ids: ids, timeline: job, configs: stored}
			r := newRig(t, a, pushmon.Config{})
			var code int
			a.duringSend = func(taskID string, pc *a2a.TaskPushNotificationConfig) {
				code = post(t, a.recv, pc.Token, statusUpdate(taskID, working, t0.Add(time.Millisecond)))
			}
			w := r.send(t)
			if code != http.StatusNoContent {
				t.Fatalf("the early push was answered %d", code)
			}
			if got := w.Binding(); got != fsm.PushBindingStateAcknowledged {
				t.Fatalf("binding %v, want Acknowledged", got)
			}
			if ids == tasklife.RequesterIDs && !uuidv4.WellFormed(w.TaskID()) {
				t.Fatalf("task id %q: want a UUID the Monitor made", w.TaskID())
			}
			if got := w.Task().Status.State; got != working {
				t.Fatalf("task %v: the reply (SUBMITTED) took back the pushed status", got)
			}
			u := <-w.Updates()
			if u.Source != pushmon.FromPush || len(w.Updates()) != 0 {
				t.Fatalf("first update from %v, %d more: want the push alone (the older reply is not yielded)", u.Source, len(w.Updates()))
			}
		})
	}
}

// TestUpdatesAreBounded: a reader that does not keep up fills the Watch's
// queue; the next push is answered 503 (the sender retries; the binding is
// suspect), the terminal push still has its place, and the Watch settles.
// A push repeating the last status is acknowledged and not queued.
func TestUpdatesAreBounded(t *testing.T) {
	r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}, pushmon.Config{QueueSize: 2})
	w := r.send(t) // update 1: SUBMITTED
	tok := r.agent.config(0).Token
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, p := range []struct {
		item *a2a.StreamResponse
		want int
	}{
		{statusUpdate("task-1", working, at(1)), http.StatusNoContent},          // update 2
		{statusUpdate("task-1", working, at(1)), http.StatusNoContent},          // a repeat: dropped
		{statusUpdate("task-1", working, at(2)), http.StatusServiceUnavailable}, // full
	} {
		if got := post(t, r.m.Receiver(), tok, p.item); got != p.want {
			t.Fatalf("push answered %d, want %d", got, p.want)
		}
	}
	if got := w.Binding(); got != fsm.PushBindingStateSuspect {
		t.Fatalf("binding %v after a 503, want Suspect", got)
	}
	if got := post(t, r.m.Receiver(), tok, statusUpdate("task-1", completed, at(3))); got != http.StatusNoContent {
		t.Fatalf("terminal push answered %d", got)
	}
	ended(t, w)
	if err := w.Err(); err != nil || w.Binding() != fsm.PushBindingStateSettled {
		t.Fatalf("binding %v, err %v: want settled", w.Binding(), err)
	}
	if got := states(t, w); !slices.Equal(got, []a2a.TaskState{submitted, working, completed}) {
		t.Fatalf("updates %v", got)
	}
}

// TestReceiverAnswersForTheMonitor: what the Monitor tells its Receiver
// for pushes that are not a watched task's.
func TestReceiverAnswersForTheMonitor(t *testing.T) {
	r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}, pushmon.Config{})
	w := r.send(t)
	tok := r.agent.config(0).Token
	item := statusUpdate("task-1", working, t0.Add(time.Second))
	for _, c := range []struct {
		name  string
		token string
		item  *a2a.StreamResponse
		want  int
	}{
		{"a task never watched", "some-token", statusUpdate("task-9", working, t0), http.StatusNotFound},
		{"the token of another task", tok, statusUpdate("task-9", working, t0), http.StatusForbidden},
		{"a watched task with a wrong token", "some-token", item, http.StatusForbidden},
		{"the watched task with its token", tok, item, http.StatusNoContent},
	} {
		if got := post(t, r.m.Receiver(), c.token, c.item); got != c.want {
			t.Errorf("%s: answered %d, want %d", c.name, got, c.want)
		}
	}
	running(t, w)
}

// TestEndedTasksAreRemembered: a late push about a task that ended is
// acknowledged while the Monitor remembers the task (the last MaxTasks),
// then answered 404 so the agent drops the binding.
func TestEndedTasksAreRemembered(t *testing.T) {
	a := &fakeAgent{ids: tasklife.RequesterIDs, timeline: job, configs: stored, blocking: true}
	r := newRig(t, a, pushmon.Config{MaxTasks: 1})
	first := r.send(t)
	ended(t, first)
	late := statusUpdate(first.TaskID(), completed, t0.Add(150*time.Second))
	if got := post(t, r.m.Receiver(), a.config(0).Token, late); got != http.StatusNoContent {
		t.Fatalf("late push answered %d, want 204", got)
	}
	second := r.send(t)
	ended(t, second)
	if got := post(t, r.m.Receiver(), a.config(0).Token, late); got != http.StatusNotFound {
		t.Fatalf("push about a forgotten task answered %d, want 404", got)
	}
}

// TestSendRefusals: what Send refuses before sending anything.
func TestSendRefusals(t *testing.T) {
	r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}, pushmon.Config{MaxTasks: 1})
	w := r.send(t)
	req := requester.TextMessage("another", "", "")
	if _, err := r.m.Send(ctx(t), req); !errors.Is(err, pushmon.ErrTooManyTasks) {
		t.Errorf("beyond MaxTasks: %v", err)
	}
	req.Configuration = &a2a.SendMessageConfiguration{TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: "https://else.example/"}}
	if _, err := r.m.Send(ctx(t), req); !errors.Is(err, pushmon.ErrConfigPresent) {
		t.Errorf("with a config of its own: %v", err)
	}
	if _, err := r.m.Send(ctx(t), requester.TextMessage("more", w.TaskID(), "")); !errors.Is(err, pushmon.ErrAlreadyWatched) {
		t.Errorf("a follow-up of a watched task: %v", err)
	}
	if sends, _, _ := r.agent.counts(); sends != 1 {
		t.Errorf("%d sends reached the agent, want 1", sends)
	}
}

// TestWatchEndings: how a Watch ends besides settling or orphaning.
func TestWatchEndings(t *testing.T) {
	no := false
	cases := []struct {
		name    string
		agent   func(a *fakeAgent)
		cfg     pushmon.Config
		act     func(t *testing.T, r *rig, w *pushmon.Watch)
		wantErr error
		binding fsm.PushBindingState
		cfgs    int // sends carrying a config
	}{
		{"a blocking send answered with the terminal task settles at once",
			func(a *fakeAgent) { a.blocking = true }, pushmon.Config{}, nil, nil, fsm.PushBindingStateSettled, 1},
		{"a send answered with a message ends at once",
			func(a *fakeAgent) { a.message = true }, pushmon.Config{}, nil, nil, 0, 1},
		{"a task the agent lost ends with ErrTaskLost",
			func(a *fakeAgent) { a.lost = true }, pushmon.Config{}, func(t *testing.T, r *rig, w *pushmon.Watch) {
				r.run(t, w, 120*time.Second, nil)
			}, a2a.ErrTaskNotFound, fsm.PushBindingStateAcknowledged, 1},
		{"a card without push notifications registers nothing and polls",
			func(*fakeAgent) {}, pushmon.Config{Card: &a2a.AgentCard{Capabilities: &a2a.AgentCapabilities{PushNotifications: &no}}},
			func(t *testing.T, r *rig, w *pushmon.Watch) { r.run(t, w, 600*time.Second, nil) }, nil, fsm.PushBindingStateSettled, 0},
		{"a stopped watch",
			func(*fakeAgent) {}, pushmon.Config{}, func(_ *testing.T, _ *rig, w *pushmon.Watch) { w.Stop() },
			pushmon.ErrWatchStopped, fsm.PushBindingStateRegistered, 1},
		{"a closed monitor",
			func(*fakeAgent) {}, pushmon.Config{}, func(_ *testing.T, r *rig, _ *pushmon.Watch) { r.m.Close() },
			pushmon.ErrMonitorClosed, fsm.PushBindingStateRegistered, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}
			tc.agent(a)
			r := newRig(t, a, tc.cfg)
			w := r.send(t)
			if tc.act != nil {
				tc.act(t, r, w)
			}
			ended(t, w)
			if err := w.Err(); (tc.wantErr == nil) != (err == nil) || !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if errors.Is(tc.wantErr, a2a.ErrTaskNotFound) && !errors.Is(w.Err(), pushmon.ErrTaskLost) {
				t.Fatalf("err %v, want ErrTaskLost too", w.Err())
			}
			if got := w.Binding(); got != tc.binding {
				t.Fatalf("binding %v, want %v", got, tc.binding)
			}
			if _, n, _ := r.agent.counts(); n != tc.cfgs {
				t.Fatalf("%d sends carried a config, want %d", n, tc.cfgs)
			}
			for range w.Updates() { // closed
			}
			if n := r.m.Len(); n != 0 {
				t.Fatalf("%d tasks still tracked", n)
			}
		})
	}
}

// TestClosedMonitor: a closed Monitor sends nothing and answers pushes
// 503.
func TestClosedMonitor(t *testing.T) {
	r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}, pushmon.Config{})
	w := r.send(t)
	tok := r.agent.config(0).Token
	r.m.Close()
	if _, err := r.m.Send(ctx(t), requester.TextMessage("x", "", "")); !errors.Is(err, pushmon.ErrMonitorClosed) {
		t.Fatalf("send: %v", err)
	}
	if got := post(t, r.m.Receiver(), tok, statusUpdate(w.TaskID(), working, t0)); got != http.StatusServiceUnavailable {
		t.Fatalf("push answered %d, want 503", got)
	}
}

// TestOnUpdate: with a callback, updates reach it in order, each before
// the push is acknowledged, and Done closes after the last.
func TestOnUpdate(t *testing.T) {
	var mu sync.Mutex
	var got []pushmon.Source
	var w *pushmon.Watch
	r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}, pushmon.Config{
		OnUpdate: func(cw *pushmon.Watch, u pushmon.Update) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, u.Source)
			if u.Terminal() && cw.Task() == nil {
				t.Error("no task at the terminal update")
			}
		}})
	w = r.send(t)
	tok := r.agent.config(0).Token
	post(t, r.m.Receiver(), tok, statusUpdate(w.TaskID(), working, t0.Add(time.Second)))
	mu.Lock()
	n := len(got)
	mu.Unlock()
	if n != 2 {
		t.Fatalf("%d updates handed over before the push was answered, want 2", n)
	}
	post(t, r.m.Receiver(), tok, statusUpdate(w.TaskID(), completed, t0.Add(2*time.Second)))
	<-w.Done()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []pushmon.Source{pushmon.FromSend, pushmon.FromPush, pushmon.FromPush}) {
		t.Fatalf("sources %v", got)
	}
	if len(w.Updates()) != 0 {
		t.Fatal("the channel got updates too")
	}
}

// TestRunInRealTime: Run drives the polls on real timers (short timings):
// an agent that drops the config is polled until the task completes.
func TestRunInRealTime(t *testing.T) {
	start := time.Now()
	a := &fakeAgent{ids: tasklife.ResponderIDs, configs: dropped, now: time.Now, start: start,
		timeline: []step{{0, submitted}, {50 * time.Millisecond, working}, {150 * time.Millisecond, completed}}}
	c, err := requester.New(a, requester.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := pushmon.New(c, pushmon.Config{ReceiverURL: receiverURL,
		Timings: pushbind.Config{Window: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond,
			ReconcileInterval: 50 * time.Millisecond, Grace: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a.recv = m.Receiver()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx(t)) }()
	req := requester.TextMessage("x", "", "")
	req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
	w, err := m.Send(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	task, err := w.Wait(ctx(t))
	if err != nil || task.Status.State != completed || w.Binding() != fsm.PushBindingStateSettled {
		t.Fatalf("task %v, binding %v, err %v", task.Status.State, w.Binding(), err)
	}
	m.Close()
	if err := <-done; !errors.Is(err, pushmon.ErrMonitorClosed) {
		t.Fatalf("Run returned %v", err)
	}
}

// TestNewChecksConfig: a Monitor needs a client and an absolute receiver
// URL, and timings that can keep the invariant.
func TestNewChecksConfig(t *testing.T) {
	c, err := requester.New(&fakeAgent{}, requester.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []pushmon.Config{
		{},
		{ReceiverURL: "/a2a/push"},
		{ReceiverURL: "ftp://x/"},
		{ReceiverURL: receiverURL, Timings: pushbind.Config{Window: time.Second, PollInterval: time.Minute, ReconcileInterval: time.Second}},
		{ReceiverURL: receiverURL, QueueSize: -1},
	} {
		if _, err := pushmon.New(c, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	if _, err := pushmon.New(nil, pushmon.Config{ReceiverURL: receiverURL}); err == nil {
		t.Error("nil client accepted")
	}
}

// TestDeliveryReports: what each delivery report the agent records in
// the task's metadata does to an acknowledged binding, read at the next
// reconciliation poll (60 s), and whether the config is registered again
// at the Tick after.
func TestDeliveryReports(t *testing.T) {
	cases := []struct {
		state   string
		status  int
		want    fsm.PushBindingState
		creates int
	}{
		{pushmon.ReportDelivered, 204, fsm.PushBindingStateAcknowledged, 0},
		{pushmon.ReportFailing, 503, fsm.PushBindingStateSuspect, 0},
		{pushmon.ReportOverflow, 0, fsm.PushBindingStateSuspect, 0},
		{pushmon.ReportDead, 410, fsm.PushBindingStateDead, 1},
		{pushmon.ReportDead, 0, fsm.PushBindingStateDead, 1}, // retries ran out
		{pushmon.ReportRefused, 0, fsm.PushBindingStateDead, 1},
	}
	for _, tc := range cases {
		t.Run(tc.state+" "+strconv.Itoa(tc.status), func(t *testing.T) {
			r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: job, configs: stored}, pushmon.Config{})
			w := r.send(t)
			r.clock.Set(t0.Add(2 * time.Second))
			r.agent.advance(t) // WORKING, acknowledged
			r.agent.setReport(0, map[string]any{"state": tc.state, "status": tc.status, "at": t0.Add(3 * time.Second).Format(time.RFC3339)})
			r.clock.Set(t0.Add(60 * time.Second))
			r.m.Tick(ctx(t))
			if got := w.Binding(); got != tc.want {
				t.Fatalf("binding %v, want %v", got, tc.want)
			}
			r.clock.Set(t0.Add(61 * time.Second))
			r.m.Tick(ctx(t))
			if _, _, creates := r.agent.counts(); creates != tc.creates {
				t.Fatalf("%d registrations, want %d", creates, tc.creates)
			}
			running(t, w)
		})
	}
}
