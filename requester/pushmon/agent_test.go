package pushmon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/requester/pushmon"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// This file is a fake agent for the Monitor's tests: a requester.Transport
// that answers SendMessage, GetTask and CreateTaskPushNotificationConfig
// from a scripted task timeline read on a fake clock, and pushes each
// transition to the configs registered, through the Monitor's Receiver or
// into a failing webhook, recording its delivery reports in the task's
// metadata as an a2abind agent does (pushmon.DeliveryReportKey). The
// real agent serves no push notifications yet (docs/protocol.md §8).

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fakeClock is the Monitor's Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// step is a transition of the scripted task, at an offset from t0.
type step struct {
	at    time.Duration
	state a2a.TaskState
}

// configFate is what the agent does with a push-notification config.
type configFate int

const (
	// stored: the config is kept and pushed to (the server side to come).
	stored configFate = iota
	// dropped: the config in the send is silently ignored and a
	// registration refused, as the a2abind agent does today.
	dropped
	// refused: push_notification_not_supported, to the send too.
	refused
)

// hook is how the webhook at the registered URL answers the agent.
type hook int

const (
	// up: the push reaches the Monitor's Receiver.
	up hook = iota
	// down: no answer (connection refused): reported failing.
	down
	// gone: 410, from a rotated receiver: reported dead.
	gone
)

type fakeAgent struct {
	// now is the agent's clock and start the offset 0 of its timeline
	// (newRig sets the fake clock and t0).
	now      func() time.Time
	start    time.Time
	ids      tasklife.IDOrigin
	timeline []step
	configs  configFate
	webhook  func(at time.Duration) hook
	pollDown func(at time.Duration) bool
	recv     http.Handler
	// duringSend, when set, runs before the SendMessage reply leaves, with
	// the config the send carried (nil for none): a push that beats the
	// reply.
	duringSend func(taskID string, pc *a2a.TaskPushNotificationConfig)
	// blocking answers the send with the task as it stands at the end of
	// the timeline (a blocking SendMessage that waited for it).
	blocking bool
	// lost answers GetTask with task_not_found.
	lost bool
	// message answers the send with a message, not a task.
	message bool

	mu       sync.Mutex
	taskID   string
	cfgs     []*agentConfig
	pushed   time.Duration // transitions up to here are pushed
	sends    int
	creates  int
	gets     int
	sendCfgs int // sends that carried a config
	codes    []int
}

type agentConfig struct {
	a2a.TaskPushNotificationConfig
	dead   bool
	report map[string]any
}

func (a *fakeAgent) Binding() requester.Binding {
	return requester.Binding{Errors: jsonrpc.BindingHTTP, IDs: a.ids,
		Retry: mqttbind.RetryProfile{ReplyFirstTimeout: 5 * time.Second, StreamIdleTimeout: 5 * time.Second, MaxAttempts: 1}}
}

func (a *fakeAgent) Close(context.Context) error { return nil }

func (a *fakeAgent) elapsed() time.Duration { return a.now().Sub(a.start) }

// statusAt returns the task's status at offset at.
func (a *fakeAgent) statusAt(at time.Duration) *a2a.TaskStatus {
	s := a.timeline[0]
	for _, x := range a.timeline {
		if x.at <= at {
			s = x
		}
	}
	return &a2a.TaskStatus{State: s.state, Timestamp: a.start.Add(s.at).Format(time.RFC3339Nano)}
}

func (a *fakeAgent) task() *a2a.Task {
	t := &a2a.Task{ID: a.taskID, ContextID: "ctx-1", Status: a.statusAt(a.elapsed())}
	reports := map[string]any{}
	for _, c := range a.cfgs {
		if c.report != nil {
			reports[c.ID] = c.report
		}
	}
	if len(reports) > 0 {
		t.Metadata = map[string]any{pushmon.DeliveryReportKey: reports}
	}
	return t
}

func (a *fakeAgent) Send(_ context.Context, req *requester.Request, deliver func(*requester.Reply)) (func(), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	reply := func(v any) {
		b, err := jsonrpc.EncodeResult(json.RawMessage(`"`+req.ID+`"`), v)
		if err != nil {
			panic(err)
		}
		deliver(&requester.Reply{Payload: b, End: true})
	}
	fail := func(e *a2a.Error) {
		b, _ := jsonrpc.EncodeError(json.RawMessage(`"`+req.ID+`"`), e, jsonrpc.BindingHTTP)
		deliver(&requester.Reply{Payload: b, End: true})
	}
	switch req.Method {
	case a2a.MethodSendMessage:
		a.sends++
		p := req.Params.(*a2a.SendMessageRequest)
		var pc *a2a.TaskPushNotificationConfig
		if p.Configuration != nil {
			pc = p.Configuration.TaskPushNotificationConfig
		}
		if pc != nil {
			a.sendCfgs++
			if a.configs == refused {
				fail(a2a.NewError(a2a.TokenPushNotificationNotSupported, "no push notifications here"))
				return func() {}, nil
			}
		}
		switch {
		case p.Message.TaskID != "":
			a.taskID = p.Message.TaskID
		case a.taskID == "":
			a.taskID = "task-1"
		}
		if pc != nil && a.configs == stored {
			c := *pc
			c.TaskID = a.taskID
			a.cfgs = append(a.cfgs, &agentConfig{TaskPushNotificationConfig: c})
		}
		if a.message {
			reply(&a2a.SendMessageResponse{Payload: &a2a.Message{MessageID: "m-1", Role: a2a.RoleAgent, Parts: []a2a.Part{{Content: a2a.PartText("done")}}}})
			return func() {}, nil
		}
		if a.duringSend != nil {
			a.mu.Unlock()
			a.duringSend(a.taskID, pc)
			a.mu.Lock()
		}
		task := a.task()
		if a.blocking {
			task.Status = a.statusAt(a.timeline[len(a.timeline)-1].at)
		}
		reply(&a2a.SendMessageResponse{Payload: task})
	case a2a.MethodGetTask:
		a.gets++
		if a.lost {
			fail(a2a.NewError(a2a.TokenTaskNotFound, "no such task"))
			return func() {}, nil
		}
		if a.pollDown != nil && a.pollDown(a.elapsed()) {
			deliver(&requester.Reply{Failed: errors.New("connection refused"), End: true})
			return func() {}, nil
		}
		reply(a.task())
	case a2a.MethodCreateTaskPushNotificationConfig:
		a.creates++
		p := req.Params.(*a2a.TaskPushNotificationConfig)
		if a.configs != stored {
			fail(a2a.NewError(a2a.TokenPushNotificationNotSupported, ""))
			return func() {}, nil
		}
		a.cfgs = append(a.cfgs, &agentConfig{TaskPushNotificationConfig: *p})
		reply(p)
	default:
		fail(a2a.NewError(a2a.TokenUnsupportedOperation, string(req.Method)))
	}
	return func() {}, nil
}

// advance pushes the transitions reached by now to every live config.
func (a *fakeAgent) advance(t *testing.T) {
	a.mu.Lock()
	now := a.elapsed()
	var due []step
	for _, s := range a.timeline[1:] {
		if s.at > a.pushed && s.at <= now {
			due = append(due, s)
		}
	}
	a.pushed = now
	cfgs := append([]*agentConfig(nil), a.cfgs...)
	a.mu.Unlock()
	for _, s := range due {
		for _, c := range cfgs {
			if c.dead {
				continue
			}
			code := a.push(t, c, s)
			a.mu.Lock()
			report := map[string]any{"status": code, "at": a.now().Format(time.RFC3339Nano)}
			switch {
			case code >= 200 && code < 300:
				report["state"] = pushmon.ReportDelivered
			case code >= 400 && code < 500:
				report["state"], report["reason"], c.dead = pushmon.ReportDead, "the webhook refused the push", true
			default:
				report["state"], report["reason"] = pushmon.ReportFailing, "no answer"
			}
			c.report = report
			a.codes = append(a.codes, code)
			a.mu.Unlock()
		}
	}
}

// push sends one transition to one config's webhook and returns its
// answer (0: none).
func (a *fakeAgent) push(t *testing.T, c *agentConfig, s step) int {
	switch a.webhook(s.at) {
	case down:
		return 0
	case gone:
		return http.StatusGone
	}
	return post(t, a.recv, c.Token, statusUpdate(c.TaskID, s.state, a.start.Add(s.at)))
}

// statusUpdate is a pushed status update.
func statusUpdate(taskID string, state a2a.TaskState, at time.Time) *a2a.StreamResponse {
	return &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{TaskID: taskID, ContextID: "ctx-1",
		Status: &a2a.TaskStatus{State: state, Timestamp: at.Format(time.RFC3339Nano)}}}
}

// post pushes item to a receiver with token, as an agent does, and
// returns the answer's status.
func post(t *testing.T, recv http.Handler, token string, item *a2a.StreamResponse) int {
	t.Helper()
	body, err := item.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, receiverURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(pushmon.TokenHeader, token)
	rec := httptest.NewRecorder()
	recv.ServeHTTP(rec, req)
	return rec.Code
}

func (a *fakeAgent) counts() (sends, sendCfgs, creates int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sends, a.sendCfgs, a.creates
}

// answers returns what the webhook answered the agent's pushes (0: no
// answer).
func (a *fakeAgent) answers() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.codes...)
}

// config returns the i-th config the agent stored.
func (a *fakeAgent) config(i int) a2a.TaskPushNotificationConfig {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfgs[i].TaskPushNotificationConfig
}

// setReport records a delivery report for the i-th config.
func (a *fakeAgent) setReport(i int, r map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cfgs[i].report = r
}
