package pushmon_test

// End-to-end tests of the orphaning modes of docs/protocol.md §8.5 over
// real loopback HTTP, each side on its own listener: an agent.Server with
// agent.WithPush and agent/webhook's Sender behind a transport/http
// Handler, and a requester whose Monitor sends through a transport/http
// Client and serves its Receiver. The test tells the agent's handler when
// the task reports progress and when it completes. Timings are short
// (pushbind.Config) and the Monitor runs in real time (Run); the tests
// wait for states with bounded polling and generous deadlines, and assert
// on what happened, never on how long it took. Where a mode needs the
// terminal state to be found late, the poller is stopped (Run's context
// canceled) and the test sleeps past the reconciliation interval and the
// grace before starting it again.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/webhook"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	"github.com/a2abind/a2abind/statemachines/pushbind"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// Timings of the end-to-end tests. settledTimings has a long grace, so
// that a poll delayed by a loaded machine never makes a false orphan;
// lapseTimings a short one, so that a stopped poller lapses quickly. Both
// have a window far longer than any test, so that a binding never becomes
// suspect only because the machine is slow.
var (
	settledTimings = pushbind.Config{Window: time.Minute, PollInterval: 40 * time.Millisecond,
		ReconcileInterval: 150 * time.Millisecond, Grace: 5 * time.Second}
	lapseTimings = pushbind.Config{Window: time.Minute, PollInterval: 40 * time.Millisecond,
		ReconcileInterval: 150 * time.Millisecond, Grace: 100 * time.Millisecond}
)

// e2eDeadline bounds every wait of these tests (never reached when the
// code works; a wait that runs out fails the test).
const e2eDeadline = 30 * time.Second

// hookMode is how the requester's webhook answers the agent.
type hookMode int

const (
	// hookPass hands every push to the Monitor's Receiver.
	hookPass hookMode = iota
	// hookGone answers 410 Gone: a rotated receiver.
	hookGone
	// hookUnavailable answers 503, without Retry-After: never an
	// acknowledgement.
	hookUnavailable
)

// e2e is one agent and one requester over loopback HTTP.
type e2e struct {
	t       *testing.T
	timings pushbind.Config

	// The agent: its runtime, webhook sender and HTTP server.
	srv    *agent.Server
	sender *webhook.Sender
	h      *a2ahttp.Handler
	agent  *httptest.Server
	// steps drives the handler of the task: "working" or "complete".
	steps chan string

	// The requester: client, Monitor, and the webhook's server.
	c    *a2ahttp.Client
	m    *pushmon.Monitor
	hook *httptest.Server

	mu       sync.Mutex
	mode     hookMode
	posts    []hookPost // what the webhook got, in order
	methods  []string   // the JSON-RPC methods the agent got, in order
	withCfg  int        // SendMessages that carried a push config
	runStop  context.CancelFunc
	runDone  chan error
	attempts []taskstore.Record // Creates the failing store refused
}

// hookPost is a push the webhook got, and how it answered.
type hookPost struct {
	token  string
	status int
}

// e2eOptions vary the rig.
type e2eOptions struct {
	timings pushbind.Config
	// noPushCard serves a card without capabilities.pushNotifications
	// (the server still has WithPush).
	noPushCard bool
	// failCreate is a task store whose Create fails.
	failCreate bool
}

func newE2E(t *testing.T, o e2eOptions) *e2e {
	t.Helper()
	r := &e2e{t: t, timings: o.timings, steps: make(chan string)}
	ctx := testCtx(t)

	// The agent.
	var err error
	r.sender, err = webhook.New(webhook.Config{
		Reporter:      agent.PushReporterFunc(func(rep agent.PushReport) { r.srv.PushReport(rep) }),
		AllowLoopback: true, MaxRetries: 1, RetryWaitMin: 5 * time.Millisecond, RetryWaitMax: 20 * time.Millisecond,
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := []agent.Option{agent.WithPush(agent.PushConfig{Notifier: r.sender, AllowLoopbackHTTP: true})}
	if o.failCreate {
		opts = append(opts, agent.WithStore(&failingCreate{Store: taskstore.NewMemory(nil), r: r}))
	}
	r.srv = agent.NewServer(agent.HandlerFunc(r.handle), opts...)
	r.agent = httptest.NewUnstartedServer(nil)
	base := "http://" + r.agent.Listener.Addr().String()
	yes := !o.noPushCard
	card := &a2a.AgentCard{Name: "e2e", Description: "works when told", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(base + "/a2a")},
		Capabilities:        &a2a.AgentCapabilities{PushNotifications: &yes},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "job", Name: "Job", Description: "a long job", Tags: []string{"job"}}}}
	if r.h, err = a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: r.srv, Card: card}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/a2a", r.count(r.h))
	mux.Handle(a2ahttp.WellKnownCardPath, r.h.CardHandler())
	r.agent.Config.Handler = mux
	r.agent.Start()

	// The requester.
	if r.c, err = a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base}); err != nil {
		t.Fatal(err)
	}
	r.hook = httptest.NewUnstartedServer(nil)
	r.m, err = pushmon.New(r.c.Client, pushmon.Config{
		ReceiverURL: "http://" + r.hook.Listener.Addr().String() + "/a2a/push",
		Timings:     o.timings,
	})
	if err != nil {
		t.Fatal(err)
	}
	hmux := http.NewServeMux()
	hmux.Handle("/a2a/push", r.webhook(r.m.Receiver()))
	r.hook.Config.Handler = hmux
	r.hook.Start()

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
		defer cancel()
		r.m.Close()
		r.stopPolling()
		r.hook.Close()
		_ = r.srv.Close(ctx)
		_ = r.sender.Close(ctx)
		_ = r.h.Close(ctx)
		r.agent.Close()
		_ = r.c.Close(ctx)
	})
	return r
}

// testCtx bounds a test's calls.
func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*e2eDeadline)
	t.Cleanup(cancel)
	return c
}

// handle is the agent's handler: the task reports progress and completes
// when the test says so.
func (r *e2e) handle(ctx context.Context, t *agent.Turn) error {
	for {
		select {
		case s := <-r.steps:
			switch s {
			case "working":
				if err := t.Working(ctx, "still at it"); err != nil {
					return err
				}
			case "complete":
				return t.Complete(ctx, "done")
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// step has the handler take its next step.
func (r *e2e) step(s string) {
	r.t.Helper()
	select {
	case r.steps <- s:
	case <-time.After(e2eDeadline):
		r.t.Fatalf("the handler did not take step %q", s)
	}
}

// count records the JSON-RPC method of each request to the agent, and
// whether a SendMessage carried a push config.
func (r *e2e) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var env struct {
			Method string `json:"method"`
			Params struct {
				Configuration struct {
					Push json.RawMessage `json:"taskPushNotificationConfig"`
				} `json:"configuration"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &env)
		r.mu.Lock()
		r.methods = append(r.methods, env.Method)
		if env.Method == string(a2a.MethodSendMessage) && len(env.Params.Configuration.Push) > 0 {
			r.withCfg++
		}
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, req)
	})
}

// calls returns how many requests of method the agent got.
func (r *e2e) calls(method a2a.Method) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.methods {
		if m == string(method) {
			n++
		}
	}
	return n
}

// webhook answers as r.mode says and records every push.
func (r *e2e) webhook(recv http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		mode := r.mode
		r.mu.Unlock()
		rec := &statusWriter{ResponseWriter: w}
		switch mode {
		case hookGone:
			_, _ = io.Copy(io.Discard, req.Body)
			rec.WriteHeader(http.StatusGone)
		case hookUnavailable:
			_, _ = io.Copy(io.Discard, req.Body)
			rec.WriteHeader(http.StatusServiceUnavailable)
		case hookPass:
			recv.ServeHTTP(rec, req)
		}
		r.mu.Lock()
		r.posts = append(r.posts, hookPost{token: req.Header.Get(pushmon.TokenHeader), status: rec.status})
		r.mu.Unlock()
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (r *e2e) setMode(m hookMode) {
	r.mu.Lock()
	r.mode = m
	r.mu.Unlock()
}

func (r *e2e) received() []hookPost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.posts)
}

// receivedAtLeast returns the pushes recorded once there are n of them: the
// webhook records a push after answering it, so the agent can see the
// answer (and report the config) before the record is there.
func (r *e2e) receivedAtLeast(n int) []hookPost {
	r.t.Helper()
	r.eventually(fmt.Sprintf("the webhook records %d pushes", n), func() bool { return len(r.received()) >= n })
	return r.received()
}

// startPolling runs the Monitor in real time (Run) until stopPolling.
func (r *e2e) startPolling() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	r.mu.Lock()
	r.runStop, r.runDone = cancel, done
	r.mu.Unlock()
	go func() { done <- r.m.Run(ctx) }()
}

// stopPolling stops Run and waits until it returned (with its calls in
// flight).
func (r *e2e) stopPolling() {
	r.mu.Lock()
	stop, done := r.runStop, r.runDone
	r.runStop, r.runDone = nil, nil
	r.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}

// send sends a message for a new task through the Monitor; the agent
// answers at once (returnImmediately) with the task still running.
func (r *e2e) send() *pushmon.Watch {
	r.t.Helper()
	req := requester.TextMessage("a long job", "", "")
	req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
	w, err := r.m.Send(testCtx(r.t), req)
	if err != nil {
		r.t.Fatal(err)
	}
	if w.TaskID() == "" {
		r.t.Fatal("the watch has no task")
	}
	return w
}

// eventually waits, polling, until cond holds.
func (r *e2e) eventually(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(e2eDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// task reads the task at the agent (GetTask through the requester's
// client, not the Monitor).
func (r *e2e) task(id string) *a2a.Task {
	r.t.Helper()
	task, err := r.c.GetTask(testCtx(r.t), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		r.t.Fatal(err)
	}
	return task
}

// configs lists the task's push configs at the agent.
func (r *e2e) configs(id string) []a2a.TaskPushNotificationConfig {
	r.t.Helper()
	list, err := r.c.ListTaskPushNotificationConfigs(testCtx(r.t), &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id})
	if err != nil {
		r.t.Fatal(err)
	}
	return list.Configs
}

// report returns the agent's delivery report on a config of the task.
func (r *e2e) report(id, configID string) pushmon.DeliveryReport {
	return pushmon.DeliveryReports(r.task(id))[configID]
}

// complete completes the task and waits until the agent stored it; it
// returns when the task reached its terminal state (the status
// timestamp).
func (r *e2e) complete(id string) time.Time {
	r.t.Helper()
	r.step("complete")
	var at time.Time
	r.eventually("the agent completes the task", func() bool {
		s := r.task(id).Status
		if s.State != a2a.TaskStateCompleted {
			return false
		}
		var err error
		if at, err = time.Parse(time.RFC3339Nano, s.Timestamp); err != nil {
			r.t.Fatalf("status timestamp %q: %v", s.Timestamp, err)
		}
		return true
	})
	return at
}

// lapse sleeps until the terminal state reached at at can no longer be
// found in time by a poll: past twice the reconciliation interval and the
// grace.
func (r *e2e) lapse(at time.Time) {
	time.Sleep(time.Until(at.Add(2 * (r.timings.ReconcileInterval + r.timings.Grace))))
}

// wait waits for the Watch to end and checks what every mode shares: the
// task COMPLETED, the updates the send's SUBMITTED task first and one
// COMPLETED last, nothing tracked any more. It returns the updates and
// the Watch's error.
func (r *e2e) wait(w *pushmon.Watch) ([]pushmon.Update, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	task, err := w.Wait(ctx)
	if ctx.Err() != nil {
		r.t.Fatalf("the watch did not end; binding %v", w.Binding())
	}
	if task == nil || task.Status.State != a2a.TaskStateCompleted {
		r.t.Errorf("final task %+v, want COMPLETED", task)
	}
	var ups []pushmon.Update
	for u := range w.Updates() {
		ups = append(ups, u)
	}
	if len(ups) == 0 || ups[0].Source != pushmon.FromSend || !ups[len(ups)-1].Terminal() {
		r.t.Errorf("updates %s: want the send's task first and the terminal state last", describe(ups))
	}
	for i, u := range ups[:max(len(ups)-1, 0)] {
		if u.Terminal() {
			r.t.Errorf("update %d of %s is terminal before the last", i, describe(ups))
		}
	}
	if n := r.m.Len(); n != 0 {
		r.t.Errorf("%d tasks still tracked", n)
	}
	return ups, err
}

func describe(ups []pushmon.Update) string {
	s := "["
	for i, u := range ups {
		if i > 0 {
			s += " "
		}
		s += u.Source.String() + ":"
		switch x := u.Item.Payload.(type) {
		case *a2a.Task:
			s += string(x.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			s += string(x.Status.State)
		default:
			s += "other"
		}
	}
	return s + "]"
}

// settled checks a Watch that ended Settled without error.
func settled(t *testing.T, w *pushmon.Watch, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("settled with error %v", err)
	}
	if got := w.Binding(); got != fsm.PushBindingStateSettled {
		t.Errorf("binding %v, want Settled", got)
	}
}

// orphaned checks a Watch that ended with a *pushbind.OrphanError found
// in state via.
func orphaned(t *testing.T, w *pushmon.Watch, err error, via fsm.PushBindingState) {
	t.Helper()
	var orphan *pushbind.OrphanError
	if !errors.As(err, &orphan) || !errors.Is(err, pushbind.ErrTaskOrphaned) {
		t.Fatalf("error %v, want a *pushbind.OrphanError", err)
	}
	if orphan.TaskID != w.TaskID() || orphan.Via != via {
		t.Errorf("orphan %+v, want task %s via %v", orphan, w.TaskID(), via)
	}
	if got := w.Binding(); got != fsm.PushBindingStateOrphaned {
		t.Errorf("binding %v, want Orphaned", got)
	}
}

// statuses returns the answers of the webhook's posts.
func statuses(ps []hookPost) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.status
	}
	return out
}

// TestE2EHappyPath: the webhook acknowledges every push; the binding is
// acknowledged and the task settles, with the poller running or stopped
// (then the terminal push alone settles it).
func TestE2EHappyPath(t *testing.T) {
	for _, polling := range []bool{true, false} {
		name := "poller running"
		if !polling {
			name = "poller stopped: the terminal push settles"
		}
		t.Run(name, func(t *testing.T) {
			r := newE2E(t, e2eOptions{timings: settledTimings})
			if polling {
				r.startPolling()
			}
			w := r.send()
			r.step("working")
			r.eventually("the progress push is acknowledged", func() bool { return w.Binding() == fsm.PushBindingStateAcknowledged })
			r.complete(w.TaskID())
			ups, err := r.wait(w)
			settled(t, w, err)
			if !polling && ups[len(ups)-1].Source != pushmon.FromPush {
				t.Errorf("updates %s: want the terminal one pushed", describe(ups))
			}
			cfgs := r.configs(w.TaskID())
			if len(cfgs) != 1 {
				t.Fatalf("configs %+v, want the one sent with the message", cfgs)
			}
			r.eventually("the agent reports the config delivered", func() bool {
				return r.report(w.TaskID(), cfgs[0].ID).State == pushmon.ReportDelivered
			})
			got := r.receivedAtLeast(2)
			if !slices.Equal(statuses(got), []int{204, 204}) {
				t.Errorf("the webhook answered %v, want two 204 (WORKING, COMPLETED)", statuses(got))
			}
			if n, cfg := r.calls(a2a.MethodSendMessage), r.withCfg; n != 1 || cfg != 1 {
				t.Errorf("%d SendMessage (%d with a config), want 1 (1)", n, cfg)
			}
			if n := r.calls(a2a.MethodCreateTaskPushNotificationConfig); n != 0 {
				t.Errorf("%d registrations, want none", n)
			}
		})
	}
}

// TestE2EWebhookDown: the receiver's listener is closed before the
// updates. The sender fails (failing, then dead once its retries run out)
// and reports it on the task; the Monitor reads the report, registers
// again once (to the same closed address, which fails too), and the poll
// finds the terminal state: settled by polling. With the poller stopped
// across the end, the late poll reports an orphan (via suspect: the
// binding after the re-registration).
func TestE2EWebhookDown(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		name := "polling settles"
		timings := settledTimings
		if stopped {
			name, timings = "poller stopped across the end: orphaned", lapseTimings
		}
		t.Run(name, func(t *testing.T) {
			r := newE2E(t, e2eOptions{timings: timings})
			r.startPolling()
			w := r.send()
			id := w.TaskID()
			r.hook.Close()
			r.step("working")
			r.eventually("the Monitor registers again after the failure", func() bool {
				return len(r.configs(id)) == 2 && w.Binding() == fsm.PushBindingStateSuspect
			})
			first := r.configs(id)[0].ID
			r.eventually("the agent reports the first config dead", func() bool { return r.report(id, first).State == pushmon.ReportDead })
			if stopped {
				r.stopPolling()
				r.lapse(r.complete(id))
				r.startPolling()
				_, err := r.wait(w)
				orphaned(t, w, err, fsm.PushBindingStateSuspect)
			} else {
				r.complete(id)
				ups, err := r.wait(w)
				settled(t, w, err)
				if last := ups[len(ups)-1]; last.Source != pushmon.FromPoll {
					t.Errorf("updates %s: want the terminal one polled", describe(ups))
				}
			}
			if n := len(r.configs(id)); n != 2 {
				t.Errorf("%d configs, want 2: the one sent and one registered again", n)
			}
			if n := r.calls(a2a.MethodCreateTaskPushNotificationConfig); n != 1 {
				t.Errorf("%d registrations, want 1", n)
			}
			if got := r.received(); len(got) != 0 {
				t.Errorf("the closed webhook got %v", got)
			}
		})
	}
}

// TestE2EWebhookGone: the webhook answers 410. The sender makes the config
// dead and the agent reports it; the Monitor registers again once, the new
// config dies too (one 410 each), and polling alone carries the task to
// its end: settled.
func TestE2EWebhookGone(t *testing.T) {
	r := newE2E(t, e2eOptions{timings: settledTimings})
	r.setMode(hookGone)
	r.startPolling()
	w := r.send()
	id := w.TaskID()
	r.step("working")
	r.eventually("the Monitor registers again after the 410", func() bool { return len(r.configs(id)) == 2 })
	cfgs := r.configs(id)
	r.step("working")
	r.eventually("the agent reports the second config dead", func() bool { return r.report(id, cfgs[1].ID).State == pushmon.ReportDead })
	r.eventually("the Monitor sees the binding dead again", func() bool { return w.Binding() == fsm.PushBindingStateDead })
	r.complete(id)
	ups, err := r.wait(w)
	settled(t, w, err)
	if last := ups[len(ups)-1]; last.Source != pushmon.FromPoll {
		t.Errorf("updates %s: want the terminal one polled", describe(ups))
	}
	for _, c := range cfgs {
		if rep := r.report(id, c.ID); rep.State != pushmon.ReportDead || rep.Status != http.StatusGone {
			t.Errorf("config %s: report %+v, want dead with 410", c.ID, rep)
		}
	}
	if n := len(r.configs(id)); n != 2 {
		t.Errorf("%d configs, want 2: registered again once only", n)
	}
	if n := r.calls(a2a.MethodCreateTaskPushNotificationConfig); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
	got := r.receivedAtLeast(2)
	if !slices.Equal(statuses(got), []int{410, 410}) || len(got) == 2 && got[0].token == got[1].token {
		t.Errorf("the webhook got %+v: want one 410 for each config's token", got)
	}
}

// TestE2EPollerStoppedWebhookSilent: the webhook never acknowledges (503)
// and the poller is stopped from the send until past the end: the late
// poll finds the terminal state with no live channel, an orphan via
// registered (nothing was ever acknowledged).
func TestE2EPollerStoppedWebhookSilent(t *testing.T) {
	r := newE2E(t, e2eOptions{timings: lapseTimings})
	r.setMode(hookUnavailable)
	w := r.send()
	id := w.TaskID()
	r.step("working")
	r.lapse(r.complete(id))
	cfgs := r.configs(id)
	if len(cfgs) != 1 {
		t.Fatalf("configs %+v, want the one sent with the message", cfgs)
	}
	r.eventually("the agent reports the unacknowledged config", func() bool {
		s := r.report(id, cfgs[0].ID).State
		return s == pushmon.ReportFailing || s == pushmon.ReportDead
	})
	r.startPolling()
	_, err := r.wait(w)
	orphaned(t, w, err, fsm.PushBindingStateRegistered)
	got := r.receivedAtLeast(1)
	if len(got) == 0 {
		t.Error("the webhook got no push")
	}
	for _, p := range got {
		if p.status != http.StatusServiceUnavailable {
			t.Errorf("the webhook got %+v", got)
		}
	}
}

// TestE2EBindingRefusedAtCreation: the agent's card does not declare push
// notifications, so the send carrying the config is answered
// push_notification_not_supported; the Monitor sends the message again
// without it and falls back to polling only (unbound): settled by polling,
// or an orphan via unbound when the poller is stopped across the end.
func TestE2EBindingRefusedAtCreation(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		name := "polling settles"
		timings := settledTimings
		if stopped {
			name, timings = "poller stopped across the end: orphaned", lapseTimings
		}
		t.Run(name, func(t *testing.T) {
			r := newE2E(t, e2eOptions{timings: timings, noPushCard: true})
			r.startPolling()
			w := r.send()
			id := w.TaskID()
			if got := w.Binding(); got != fsm.PushBindingStateUnbound {
				t.Errorf("binding %v, want Unbound", got)
			}
			r.step("working")
			r.eventually("a poll finds the progress", func() bool { return w.Task().Status.State == a2a.TaskStateWorking })
			var ups []pushmon.Update
			var err error
			if stopped {
				r.stopPolling()
				r.lapse(r.complete(id))
				r.startPolling()
				ups, err = r.wait(w)
				orphaned(t, w, err, fsm.PushBindingStateUnbound)
			} else {
				r.complete(id)
				ups, err = r.wait(w)
				settled(t, w, err)
			}
			for _, u := range ups[1:] {
				if u.Source != pushmon.FromPoll {
					t.Errorf("updates %s: want only polled ones after the send", describe(ups))
				}
			}
			if n, cfg := r.calls(a2a.MethodSendMessage), r.withCfg; n != 2 || cfg != 1 {
				t.Errorf("%d SendMessage (%d with a config), want 2 (1): refused, then sent without", n, cfg)
			}
			if n := r.calls(a2a.MethodCreateTaskPushNotificationConfig); n != 0 {
				t.Errorf("%d registrations, want none", n)
			}
			if _, err := r.c.ListTaskPushNotificationConfigs(testCtx(t), &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}); !errors.Is(err, a2a.ErrPushNotificationNotSupported) {
				t.Errorf("list: %v, want push_notification_not_supported", err)
			}
			if got := r.received(); len(got) != 0 {
				t.Errorf("the webhook got %v", got)
			}
		})
	}
}

// failingCreate is a task store whose Create fails, after recording the
// record it was given.
type failingCreate struct {
	taskstore.Store
	r *e2e
}

func (f *failingCreate) Create(_ context.Context, rec taskstore.Record) (taskstore.Record, error) {
	f.r.mu.Lock()
	f.r.attempts = append(f.r.attempts, rec)
	f.r.mu.Unlock()
	return taskstore.Record{}, errors.New("disk full")
}

// TestE2EFailedCreateLeavesNeitherTaskNorBinding: the task and the config
// sent with its message are one write (docs/protocol.md §8.2, §8.8). With
// the store failing that write, the Monitor's Send returns the agent's
// error and watches nothing, and afterwards the agent knows neither the
// task nor a config of it: GetTask and ListTaskPushNotificationConfigs
// answer task_not_found, and nothing is pushed.
func TestE2EFailedCreateLeavesNeitherTaskNorBinding(t *testing.T) {
	r := newE2E(t, e2eOptions{timings: settledTimings, failCreate: true})
	r.startPolling()
	req := requester.TextMessage("a long job", "", "")
	req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
	w, err := r.m.Send(testCtx(t), req)
	if w != nil || !errors.Is(err, a2a.ErrInternalError) {
		t.Fatalf("Send: watch %v, error %v; want internal_error and no watch", w, err)
	}
	if n := r.m.Len(); n != 0 {
		t.Errorf("%d tasks tracked", n)
	}
	r.mu.Lock()
	attempts := slices.Clone(r.attempts)
	r.mu.Unlock()
	if len(attempts) != 1 {
		t.Fatalf("%d Creates, want 1", len(attempts))
	}
	rec := attempts[0]
	if len(rec.PushConfigs) != 1 || rec.PushConfigs[0].TaskID != rec.Task.ID || rec.PushConfigs[0].URL != "http://"+r.hook.Listener.Addr().String()+"/a2a/push" {
		t.Fatalf("the failed write held configs %+v: want the Monitor's, with the task", rec.PushConfigs)
	}
	ctx := testCtx(t)
	if _, err := r.c.GetTask(ctx, &a2a.GetTaskRequest{ID: rec.Task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask: %v, want task_not_found", err)
	}
	if _, err := r.c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: rec.Task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("ListTaskPushNotificationConfigs: %v, want task_not_found", err)
	}
	if _, err := r.c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: rec.Task.ID, ID: rec.PushConfigs[0].ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTaskPushNotificationConfig: %v, want task_not_found", err)
	}
	if st := r.sender.Stats(); st.Configs != 0 || st.Attempts != 0 {
		t.Errorf("the sender knows %d configs and made %d attempts, want none", st.Configs, st.Attempts)
	}
	if got := r.received(); len(got) != 0 {
		t.Errorf("the webhook got %v", got)
	}
}
