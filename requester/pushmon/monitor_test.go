package pushmon_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	"github.com/a2abind/a2abind/statemachines/pushbind"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

const receiverURL = "https://requester.example/a2a/push"

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// rig is a Monitor over a fakeAgent on a fake clock at t0.
type rig struct {
	clock *fakeClock
	agent *fakeAgent
	m     *pushmon.Monitor
}

func newRig(t *testing.T, a *fakeAgent, cfg pushmon.Config) *rig {
	t.Helper()
	clk := &fakeClock{t: t0}
	a.now, a.start = clk.Now, t0
	if a.webhook == nil {
		a.webhook = func(time.Duration) hook { return up }
	}
	c, err := requester.New(a, requester.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReceiverURL, cfg.Now = receiverURL, clk.Now
	m, err := pushmon.New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	a.recv = m.Receiver()
	return &rig{clock: clk, agent: a, m: m}
}

// send sends a message for a new task that returns at once (SUBMITTED).
func (r *rig) send(t *testing.T) *pushmon.Watch {
	t.Helper()
	req := requester.TextMessage("a long job", "", "")
	req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
	w, err := r.m.Send(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// run plays the story second by second until the watch ends or until
// end: the agent pushes what is due, and the Monitor ticks unless its
// poller is stopped then.
func (r *rig) run(t *testing.T, w *pushmon.Watch, end time.Duration, stopped func(time.Duration) bool) {
	t.Helper()
	for s := time.Duration(0); s <= end; s += time.Second {
		r.clock.Set(t0.Add(s))
		r.agent.advance(t)
		if stopped == nil || !stopped(s) {
			r.m.Tick(ctx(t))
		}
		select {
		case <-w.Done():
			return
		default:
		}
	}
}

// between is a window of offsets [from, to).
func between(from, to time.Duration) func(time.Duration) bool {
	return func(at time.Duration) bool { return at >= from && at < to }
}

// states collects the states of a finished watch's updates, checking
// that the channel is closed.
func states(t *testing.T, w *pushmon.Watch) []a2a.TaskState {
	t.Helper()
	var out []a2a.TaskState
	for u := range w.Updates() {
		switch x := u.Item.Payload.(type) {
		case *a2a.Task:
			out = append(out, x.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, x.Status.State)
		}
	}
	return out
}

const (
	submitted = a2a.TaskStateSubmitted
	working   = a2a.TaskStateWorking
	completed = a2a.TaskStateCompleted
)

// TestOrphaningModes plays the ways a task can end unobserved
// (docs/protocol.md §8.5) against a fake agent and clock: each ends
// settled, when a live channel carried the end, or orphaned, with the
// binding state it was found in, never silently.
func TestOrphaningModes(t *testing.T) {
	// A job that reports progress at 2 s and 100 s and completes at 150 s.
	job := []step{{0, submitted}, {2 * time.Second, working}, {100 * time.Second, working}, {150 * time.Second, completed}}
	// The same with progress at 40 s too, so that a rotated receiver is
	// found dead twice before the end.
	chatty := []step{{0, submitted}, {2 * time.Second, working}, {40 * time.Second, working}, {100 * time.Second, working}, {150 * time.Second, completed}}
	quick := []step{{0, submitted}, {2 * time.Second, working}, {20 * time.Second, completed}}
	healthyUntil := func(d time.Duration) func(time.Duration) hook {
		return func(at time.Duration) hook {
			if at < d {
				return up
			}
			return gone
		}
	}
	always := func(h hook) func(time.Duration) hook { return func(time.Duration) hook { return h } }
	cases := []struct {
		name     string
		configs  configFate
		webhook  func(time.Duration) hook
		timeline []step
		pollDown func(time.Duration) bool
		stopped  func(time.Duration) bool
		end      time.Duration
		// want is the binding's final state; via, for Orphaned, the state
		// the orphan was found in.
		want, via fsm.PushBindingState
		// sends, sendCfgs and creates count the agent's SendMessage calls,
		// those carrying a config, and the registrations.
		sends, sendCfgs, creates int
		// answers are the webhook's answers to the agent's pushes.
		answers []int
	}{
		{name: "happy path: every push acknowledged, the terminal push settles",
			configs: stored, webhook: always(up), timeline: job, end: 600 * time.Second,
			want: fsm.PushBindingStateSettled, sends: 1, sendCfgs: 1, answers: []int{204, 204, 204}},
		{name: "webhook down: nothing acknowledged, polling on schedule finds the end",
			configs: stored, webhook: always(down), timeline: job, end: 600 * time.Second,
			want: fsm.PushBindingStateSettled, sends: 1, sendCfgs: 1, creates: 1, answers: []int{0, 0, 0, 0, 0}},
		{name: "webhook down and GetTask failing across the end: orphaned via suspect",
			configs: stored, webhook: always(down), timeline: job, pollDown: between(140*time.Second, 400*time.Second), end: 600 * time.Second,
			want: fsm.PushBindingStateOrphaned, via: fsm.PushBindingStateSuspect, sends: 1, sendCfgs: 1, creates: 1, answers: []int{0, 0, 0, 0, 0}},
		{name: "webhook rotated (410): reported dead, registered again once, dead again, polling settles",
			configs: stored, webhook: healthyUntil(30 * time.Second), timeline: chatty, end: 600 * time.Second,
			want: fsm.PushBindingStateSettled, sends: 1, sendCfgs: 1, creates: 1, answers: []int{204, 410, 410}},
		{name: "webhook rotated (410) and the poller stopped across the end: orphaned via dead",
			configs: stored, webhook: healthyUntil(30 * time.Second), timeline: chatty, stopped: between(125*time.Second, 400*time.Second), end: 600 * time.Second,
			want: fsm.PushBindingStateOrphaned, via: fsm.PushBindingStateDead, sends: 1, sendCfgs: 1, creates: 1, answers: []int{204, 410, 410}},
		{name: "poller stopped while the webhook works: the terminal push settles",
			configs: stored, webhook: always(up), timeline: job, stopped: between(time.Second, 600*time.Second), end: 600 * time.Second,
			want: fsm.PushBindingStateSettled, sends: 1, sendCfgs: 1, answers: []int{204, 204, 204}},
		{name: "poller stopped before the webhook acknowledged anything: orphaned via registered",
			configs: stored, webhook: always(down), timeline: quick, stopped: between(time.Second, 100*time.Second), end: 600 * time.Second,
			want: fsm.PushBindingStateOrphaned, via: fsm.PushBindingStateRegistered, sends: 1, sendCfgs: 1, answers: []int{0, 0}},
		{name: "binding lost at creation (config silently dropped): suspect, registration refused, polling settles",
			configs: dropped, timeline: job, end: 600 * time.Second,
			want: fsm.PushBindingStateSettled, sends: 1, sendCfgs: 1, creates: 1},
		{name: "binding lost at creation and the poller stopped across the end: orphaned via suspect",
			configs: dropped, timeline: job, stopped: between(130*time.Second, 400*time.Second), end: 600 * time.Second,
			want: fsm.PushBindingStateOrphaned, via: fsm.PushBindingStateSuspect, sends: 1, sendCfgs: 1, creates: 1},
		{name: "binding refused at creation (push not supported): sent again without it, polled, settled",
			configs: refused, timeline: job, end: 600 * time.Second,
			want: fsm.PushBindingStateSettled, sends: 2, sendCfgs: 1},
		{name: "binding refused at creation and the poller stopped across the end: orphaned via unbound",
			configs: refused, timeline: job, stopped: between(140*time.Second, 400*time.Second), end: 600 * time.Second,
			want: fsm.PushBindingStateOrphaned, via: fsm.PushBindingStateUnbound, sends: 2, sendCfgs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, &fakeAgent{ids: tasklife.ResponderIDs, timeline: tc.timeline, configs: tc.configs,
				webhook: tc.webhook, pollDown: tc.pollDown}, pushmon.Config{})
			w := r.send(t)
			r.run(t, w, tc.end, tc.stopped)
			select {
			case <-w.Done():
			default:
				t.Fatalf("the watch did not end; binding %v", w.Binding())
			}
			if got := w.Binding(); got != tc.want {
				t.Errorf("binding %v, want %v", got, tc.want)
			}
			err := w.Err()
			var orphan *pushbind.OrphanError
			switch {
			case tc.want == fsm.PushBindingStateSettled && err != nil:
				t.Errorf("settled with error %v", err)
			case tc.want == fsm.PushBindingStateOrphaned && !errors.As(err, &orphan):
				t.Errorf("error %v, want a *pushbind.OrphanError", err)
			case tc.want == fsm.PushBindingStateOrphaned:
				if !errors.Is(err, pushbind.ErrTaskOrphaned) || orphan.Via != tc.via || orphan.TaskID != "task-1" {
					t.Errorf("orphan %+v, want task-1 via %v", orphan, tc.via)
				}
			}
			if task := w.Task(); task == nil || task.Status.State != completed {
				t.Errorf("final task %+v, want COMPLETED", task)
			}
			got := states(t, w)
			if len(got) == 0 || got[0] != submitted || got[len(got)-1] != completed {
				t.Errorf("updates %v: want SUBMITTED first and COMPLETED last", got)
			}
			for i, s := range got[:len(got)-1] {
				if s == completed {
					t.Errorf("update %d of %v is terminal before the last", i, got)
				}
			}
			if sends, sendCfgs, creates := r.agent.counts(); sends != tc.sends || sendCfgs != tc.sendCfgs || creates != tc.creates {
				t.Errorf("agent saw %d sends (%d with a config) and %d registrations, want %d (%d) and %d",
					sends, sendCfgs, creates, tc.sends, tc.sendCfgs, tc.creates)
			}
			if got := r.agent.answers(); !slices.Equal(got, tc.answers) {
				t.Errorf("the webhook answered %v, want %v", got, tc.answers)
			}
			if n := r.m.Len(); n != 0 {
				t.Errorf("%d tasks still tracked", n)
			}
		})
	}
}
