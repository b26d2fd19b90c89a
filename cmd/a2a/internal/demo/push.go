package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/a2abind/a2abind/agent/webhook"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

/*
storyP01 tells push notifications over HTTP (docs/protocol.md §8; A2A v1.0
§4.3): a reference agent that serves them (webhooks on loopback allowed)
and a requester's pushmon.Monitor, whose Receiver is served on a loopback
port.

  - A task sent with the webhook in the message (returnImmediately: the
    reply is the SUBMITTED task) has its updates pushed; the Monitor
    acknowledges them, and the terminal push settles the binding. GetTask
    shows the agent's delivery report: delivered.
  - A second, slow task: once its first push is acknowledged the receiver
    is killed. The agent's next pushes meet a refused connection, and it
    reports the webhook failing, then dead. The Monitor's reconciliation
    poll (GetTask) still finds the task COMPLETED, with the report dead:
    the binding ends settled by polling, not orphaned.

The transcript is the requester's calls and the pushes its receiver
answered, the latter listed once the story has seen them all; the story
waits on the agent's and the Monitor's own state, never on time, and
drives the Monitor's clock and polls itself (Tick), so that each poll is
where the story puts it.
*/
func storyP01(ctx context.Context, d *demo) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	// Few, quick retries: the webhook is declared dead within a fraction
	// of a second of the receiver's end.
	ra, err := refagent.Start(ctx, refagent.Config{ID: "pusher", HTTP: ln, Log: d.log, Push: true, AllowLoopbackWebhooks: true,
		Webhook: webhook.Config{MaxRetries: 2, RetryWaitMin: 20 * time.Millisecond, RetryWaitMax: 40 * time.Millisecond}})
	if err != nil {
		return "", fmt.Errorf("starting the push agent: %w", err)
	}
	defer ra.Close(context.Background())
	base := strings.TrimSuffix(ra.HTTPURL(), refagent.HTTPPath)
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base, HTTPClient: &http.Client{Transport: d.wire},
		Requester: requester.Config{Logger: d.log}})
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	d.wire.take()
	if p := c.Card().Capabilities.PushNotifications; p == nil || !*p {
		return "", errors.New("the push agent's card does not declare pushNotifications")
	}
	// probe reads the agent's own state, off the transcript.
	probe, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: base, Requester: requester.Config{Logger: d.log}})
	if err != nil {
		return "", err
	}
	defer probe.Close(context.Background())

	// The requester: a Monitor, its Receiver on a loopback port.
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	clock := &skewClock{}
	m, err := pushmon.New(c.Client, pushmon.Config{ReceiverURL: "http://" + hl.Addr().String() + "/push", Card: c.Card(),
		Now: clock.now, Logger: d.log,
		OnUpdate: func(_ *pushmon.Watch, u pushmon.Update) {
			d.wire.line("monitor  %s  %s", u.Source, describeItem(*u.Item))
		}})
	if err != nil {
		return "", err
	}
	defer m.Close()
	tap := &hookTap{h: m.Receiver(), wr: d.wire}
	hs := &http.Server{Handler: tap, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(hl)
	defer hs.Close()
	fmt.Fprintf(d.out, "   push agent at %s (webhooks on loopback allowed, 2 retries); the requester's receiver at http://%s/push\n", ra.HTTPURL(), hl.Addr())

	send := func(text string) (*pushmon.Watch, error) {
		w, err := m.Send(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText(text)}}},
			Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
		if err != nil {
			return nil, fmt.Errorf("sending %q: %w", text, err)
		}
		if st := w.Reply().Task.Status.State; st != a2a.TaskStateSubmitted {
			return nil, fmt.Errorf("the reply to %q is %s, want SUBMITTED", text, st)
		}
		return w, nil
	}

	// 1. Bound with the send; every update pushed and acknowledged; the
	// terminal push settles the binding.
	w1, err := send("push me the result")
	if err != nil {
		return "", err
	}
	task, err := w1.Wait(ctx)
	if err != nil || task.Status.State != a2a.TaskStateCompleted || w1.Binding() != fsm.PushBindingStateSettled {
		return "", fmt.Errorf("the first task ended %v, binding %s, err %v", stateOf(task), w1.Binding(), err)
	}
	if err := tap.handOver(ctx, 4); err != nil {
		return "", err
	}
	if _, err := report(ctx, probe, task.ID, pushmon.ReportDelivered, false); err != nil {
		return "", err
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		return "", err
	}
	if r := onlyReport(got); r.State != pushmon.ReportDelivered {
		return "", fmt.Errorf("GetTask shows the report %+v, want delivered", r)
	}

	// 2. A slow task; its receiver killed once the first push is
	// acknowledged.
	w2, err := send("slow 1")
	if err != nil {
		return "", err
	}
	if err := tap.handOver(ctx, 1); err != nil {
		return "", err
	}
	if _, err := report(ctx, probe, w2.TaskID(), pushmon.ReportDelivered, false); err != nil {
		return "", err
	}
	hs.Close()
	d.wire.line("the requester's receiver is killed")
	dead, err := report(ctx, probe, w2.TaskID(), pushmon.ReportDead, true)
	if err != nil {
		return "", err
	}
	if !strings.Contains(dead.Reason, "connection refused") {
		return "", fmt.Errorf("the webhook is dead for %q, want a refused connection", dead.Reason)
	}
	select {
	case <-w2.Done():
		return "", fmt.Errorf("the second task's watch ended before any poll: %v", w2.Err())
	default:
	}
	// The reconciliation poll: the Monitor's clock is moved to when it is
	// due, and the Monitor polls.
	clock.advanceTo(m.NextTick())
	m.Tick(ctx)
	select {
	case <-w2.Done():
	case <-ctx.Done():
		return "", errors.New("the reconciliation poll did not end the second task's watch")
	}
	task, err = w2.Wait(ctx)
	if err != nil || task.Status.State != a2a.TaskStateCompleted || w2.Binding() != fsm.PushBindingStateSettled {
		return "", fmt.Errorf("the slow task ended %v, binding %s, err %v", stateOf(task), w2.Binding(), err)
	}
	return "task 1: 4 pushes acknowledged, settled by its terminal push, GetTask shows the webhook delivered; " +
		"task 2 (slow 1): receiver killed after the first push, the agent reported the webhook dead (" + dead.Reason + "), " +
		"the reconciliation poll found COMPLETED: settled by polling, not orphaned", nil
}

func stateOf(t *a2a.Task) string {
	if t == nil {
		return "(no task)"
	}
	return StateOf(t.Status)
}

// onlyReport is the delivery report of a task's only push config.
func onlyReport(t *a2a.Task) pushmon.DeliveryReport {
	for _, r := range pushmon.DeliveryReports(t) {
		return r
	}
	return pushmon.DeliveryReport{}
}

// report waits until the agent reports state on the task's push config
// (and, with terminal, the task has ended): the agent's own state, read
// with GetTask off the transcript.
func report(ctx context.Context, probe *a2ahttp.Client, taskID, state string, terminal bool) (pushmon.DeliveryReport, error) {
	for {
		t, err := probe.GetTask(ctx, &a2a.GetTaskRequest{ID: taskID})
		if err != nil {
			return pushmon.DeliveryReport{}, fmt.Errorf("GetTask %s: %w", short(taskID), err)
		}
		r := onlyReport(t)
		if r.State == state && (!terminal || t.Status.State == a2a.TaskStateCompleted) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("task %s is %s with the delivery report %q, want %s", short(taskID), t.Status.State, r.State, state)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// skewClock is the Monitor's clock: real time, moved on by the story.
type skewClock struct {
	mu   sync.Mutex
	skew time.Duration
}

func (c *skewClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.skew)
}

// advanceTo moves the clock on to t, if it is not there yet.
func (c *skewClock) advanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := time.Until(t) - c.skew; d > 0 {
		c.skew += d
	}
}

// hookTap serves the requester's webhook receiver: it records each push
// and its answer (the token redacted) and prints them on the transcript.
// The pushes reach the transcript's record when the story hands them over,
// after the calls that caused them.
type hookTap struct {
	h  http.Handler
	wr *wire

	mu     sync.Mutex
	xs     []Exchange
	handed int
}

func (t *hookTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, pushmon.DefaultMaxBodyBytes+1))
	if err != nil {
		http.Error(w, "reading the push", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	x := Exchange{Method: r.Method, Path: r.URL.Path, Body: body}
	for _, h := range []string{"Content-Type", pushmon.TokenHeader} {
		if v := r.Header.Get(h); v != "" {
			if h == pushmon.TokenHeader {
				v = "<redacted>"
			}
			x.Header = append(x.Header, [2]string{h, v})
		}
	}
	var item a2a.StreamResponse
	summary := fmt.Sprintf("%d bytes", len(body))
	if item.UnmarshalJSON(body) == nil {
		summary = describeItem(item)
	}
	t.wr.line("push %s %s  %s", r.Method, r.URL.Path, summary)
	sw := &statusWriter{ResponseWriter: w}
	t.h.ServeHTTP(sw, r)
	x.Status = sw.status()
	t.wr.line("   %d (receiver)", x.Status)
	t.mu.Lock()
	t.xs = append(t.xs, x)
	t.mu.Unlock()
}

// handOver waits until n more pushes were answered, and adds them to the
// transcript's record.
func (t *hookTap) handOver(ctx context.Context, n int) error {
	for {
		t.mu.Lock()
		if len(t.xs) >= t.handed+n {
			xs := t.xs[t.handed : t.handed+n]
			t.handed += n
			t.mu.Unlock()
			t.wr.mu.Lock()
			for i := range xs {
				t.wr.xs = append(t.wr.xs, &xs[i])
			}
			t.wr.mu.Unlock()
			return nil
		}
		got := len(t.xs) - t.handed
		t.mu.Unlock()
		select {
		case <-ctx.Done():
			return fmt.Errorf("the receiver answered %d pushes, want %d", got, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// statusWriter keeps the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// secretRE finds the secrets a request body may carry: a push config's
// notification token and its authentication's credentials.
var secretRE = regexp.MustCompile(`"(token|credentials)":"(?:[^"\\]|\\.)*"`)

// redactSecrets hides them from the transcript.
func redactSecrets(body []byte) []byte {
	return secretRE.ReplaceAll(body, []byte(`"$1":"<redacted>"`))
}
