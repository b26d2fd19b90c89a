package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Sink that keeps every reply.
type recorder struct {
	mu      sync.Mutex
	replies []Reply
}

func (r *recorder) Send(_ context.Context, rep Reply) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Keep a copy: the server may reuse nothing, but be strict.
	b, _ := json.Marshal(rep.Result)
	rep.Result = json.RawMessage(b)
	r.replies = append(r.replies, rep)
	return nil
}

func (r *recorder) all() []Reply {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Reply(nil), r.replies...)
}

// fixture is a server with helpers to call it as a transport would.
type fixture struct {
	t   *testing.T
	srv *Server
	ids tasklife.IDOrigin
	// caller is the Caller of the calls (none by default).
	caller Caller
}

func newFixture(t *testing.T, h Handler, opts ...Option) *fixture {
	t.Helper()
	s := NewServer(h, opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &fixture{t: t, srv: s, ids: tasklife.RequesterIDs}
}

// call decodes a request as a transport would and serves it.
func (f *fixture) call(method a2a.Method, params any) []Reply {
	f.t.Helper()
	return f.serve(Call{IDs: f.ids, Caller: f.caller}, method, params)
}

// serve decodes a request as a transport would and serves it as c, its
// Request set: the replies, or the decoding's error as the one reply.
func (f *fixture) serve(c Call, method a2a.Method, params any) []Reply {
	f.t.Helper()
	data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), method, params)
	if err != nil {
		f.t.Fatal(err)
	}
	req, _, perr := f.srv.DecodeRequest(data)
	if perr != nil {
		return []Reply{{Err: perr, Final: true}}
	}
	c.Request = req
	rec := &recorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Serve(ctx, c, rec); err != nil {
		f.t.Fatalf("serve: %v", err)
	}
	return rec.all()
}

func msg(taskID, ctxID, text string) *a2a.Message {
	return &a2a.Message{MessageID: uuid.NewString(), TaskID: taskID, ContextID: ctxID, Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
}

func (f *fixture) send(m *a2a.Message) []Reply {
	return f.call(a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: m})
}

func (f *fixture) stream(m *a2a.Message) []Reply {
	return f.call(a2a.MethodSendStreamingMessage, &a2a.SendMessageRequest{Message: m})
}

// taskOf decodes the task of a single SendMessage reply or a Task result.
func taskOf(t *testing.T, r Reply) a2a.Task {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("error reply: %v", r.Err)
	}
	raw := r.Result.(json.RawMessage)
	var resp a2a.SendMessageResponse
	if err := json.Unmarshal(raw, &resp); err == nil {
		if task, ok := resp.Payload.(*a2a.Task); ok {
			return *task
		}
	}
	var task a2a.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatalf("not a task: %s", raw)
	}
	return task
}

func itemKinds(t *testing.T, replies []Reply) []string {
	t.Helper()
	var out []string
	for _, r := range replies {
		var item a2a.StreamResponse
		if err := json.Unmarshal(r.Result.(json.RawMessage), &item); err != nil {
			t.Fatalf("not a stream item: %s", r.Result)
		}
		switch p := item.Payload.(type) {
		case *a2a.Task:
			out = append(out, "task:"+string(p.Status.State))
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, "status:"+string(p.Status.State))
		case *a2a.TaskArtifactUpdateEvent:
			out = append(out, "artifact")
		case *a2a.Message:
			out = append(out, "message")
		}
	}
	return out
}

func soleError(t *testing.T, replies []Reply) *a2a.Error {
	t.Helper()
	if len(replies) != 1 || replies[0].Err == nil || !replies[0].Final {
		t.Fatalf("want one final error, got %+v", replies)
	}
	return replies[0].Err
}

// echo completes every task with one artifact echoing the text; "ask"
// asks for input first.
func echo(calls *atomic.Int32) HandlerFunc {
	return func(ctx context.Context, t *Turn) error {
		if calls != nil {
			calls.Add(1)
		}
		if strings.HasPrefix(t.Text(), "ask") && !t.Resumed {
			return t.AskInput(ctx, "which one?")
		}
		if err := t.Working(ctx, "on it"); err != nil {
			return err
		}
		earlier, err := t.ContextTasks(ctx)
		if err != nil {
			return err
		}
		text := fmt.Sprintf("%s (earlier tasks in context: %d)", t.Text(), len(earlier))
		if err := t.Artifact(ctx, a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText(text)}}}, ArtifactOptions{LastChunk: true}); err != nil {
			return err
		}
		return nil
	}
}

func TestSendMessageCompletesWithOneReply(t *testing.T) {
	f := newFixture(t, echo(nil))
	id, ctxID := uuid.NewString(), uuid.NewString()
	replies := f.send(msg(id, ctxID, "hello"))
	if len(replies) != 1 || !replies[0].Final {
		t.Fatalf("%d replies", len(replies))
	}
	task := taskOf(t, replies[0])
	if task.ID != id || task.ContextID != ctxID || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("%+v", task)
	}
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestStreamBeginsWithTheTaskAndEndsOnTerminalStatus(t *testing.T) {
	f := newFixture(t, echo(nil))
	replies := f.stream(msg(uuid.NewString(), uuid.NewString(), "hello"))
	got := strings.Join(itemKinds(t, replies), ",")
	want := "task:TASK_STATE_SUBMITTED,status:TASK_STATE_WORKING,artifact,status:TASK_STATE_COMPLETED"
	if got != want {
		t.Fatalf("items %s\nwant %s", got, want)
	}
	for i, r := range replies {
		if r.Final != (i == len(replies)-1) {
			t.Fatalf("reply %d final=%v", i, r.Final)
		}
	}
}

func TestMultiTurn(t *testing.T) {
	var calls atomic.Int32
	f := newFixture(t, echo(&calls))
	ctxID := uuid.NewString()

	t.Run("input required is stream-final and resume completes the same task", func(t *testing.T) {
		id := uuid.NewString()
		got := strings.Join(itemKinds(t, f.stream(msg(id, ctxID, "ask me"))), ",")
		if got != "task:TASK_STATE_SUBMITTED,status:TASK_STATE_INPUT_REQUIRED" {
			t.Fatalf("items %s", got)
		}
		task := taskOf(t, f.send(msg(id, ctxID, "the blue one"))[0])
		if task.ID != id || task.Status.State != a2a.TaskStateCompleted || len(task.History) != 4 {
			t.Fatalf("%+v (history %d)", task.Status, len(task.History))
		}
	})
	t.Run("a follow-up turn sees the earlier tasks of its context", func(t *testing.T) {
		task := taskOf(t, f.send(msg(uuid.NewString(), ctxID, "next"))[0])
		if txt := string(task.Artifacts[0].Parts[0].Content.(a2a.PartText)); !strings.Contains(txt, "earlier tasks in context: 1") {
			t.Fatal(txt)
		}
	})
	t.Run("a retry with the same messageId creates nothing and runs nothing", func(t *testing.T) {
		m := msg(uuid.NewString(), ctxID, "once")
		first := taskOf(t, f.send(m)[0])
		before := calls.Load()
		again := taskOf(t, f.send(m)[0])
		if calls.Load() != before || again.ID != first.ID || again.Status.Timestamp != first.Status.Timestamp {
			t.Fatalf("retry ran the handler or changed the task: %+v", again.Status)
		}
		p, _ := f.srv.Store().List(context.Background(), taskstore.Filter{ContextID: ctxID})
		if p.Total != 3 {
			t.Fatalf("%d tasks in the context, want 3", p.Total)
		}
	})
	t.Run("mismatched contextId is invalid params", func(t *testing.T) {
		id := uuid.NewString()
		f.send(msg(id, ctxID, "ask again"))
		if e := soleError(t, f.send(msg(id, uuid.NewString(), "x"))); e.Token != a2a.TokenInvalidParams || e.Code != -32602 {
			t.Fatal(e)
		}
	})
	t.Run("a new message to a finished task is unsupported operation", func(t *testing.T) {
		id := uuid.NewString()
		f.send(msg(id, ctxID, "done"))
		if e := soleError(t, f.send(msg(id, ctxID, "more"))); e.Token != a2a.TokenUnsupportedOperation {
			t.Fatal(e)
		}
	})
	t.Run("an unknown contextId starts a context", func(t *testing.T) {
		task := taskOf(t, f.send(msg(uuid.NewString(), uuid.NewString(), "fresh"))[0])
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatal(task.Status)
		}
	})
	t.Run("concurrent tasks in one context complete independently", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if task := taskOf(t, f.send(msg(uuid.NewString(), ctxID, "parallel"))[0]); task.Status.State != a2a.TaskStateCompleted {
					t.Error(task.Status)
				}
			}()
		}
		wg.Wait()
	})
}

func TestRequesterMadeIDsAreChecked(t *testing.T) {
	f := newFixture(t, echo(nil))
	cases := []struct {
		name string
		m    *a2a.Message
	}{
		{"missing taskId", msg("", "", "x")},
		{"taskId not a UUID", msg("task-1", "", "x")},
		{"contextId not a UUID", msg(uuid.NewString(), "ctx 1", "x")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if e := soleError(t, f.send(tc.m)); e.Token != a2a.TokenInvalidParams {
				t.Fatal(e)
			}
		})
	}
}

func TestResponderMadeIDs(t *testing.T) {
	f := newFixture(t, echo(nil))
	f.ids = tasklife.ResponderIDs
	task := taskOf(t, f.send(msg("", "", "hi"))[0])
	if task.ID == "" || task.ContextID == "" || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v", task)
	}
	if e := soleError(t, f.send(msg(uuid.NewString(), "", "x"))); e.Token != a2a.TokenTaskNotFound {
		t.Fatal(e)
	}
}

func TestExpiredContext(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := newFixture(t, echo(nil), WithClock(clock), WithContextTTL(time.Hour))
	ctxID, id := uuid.NewString(), uuid.NewString()
	f.send(msg(id, ctxID, "ask"))
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if e := soleError(t, f.send(msg(id, ctxID, "late answer"))); e.Token != a2a.TokenContextExpired {
		t.Fatal(e)
	}
	if e := soleError(t, f.send(msg(uuid.NewString(), ctxID, "new turn"))); e.Token != a2a.TokenContextExpired {
		t.Fatal(e)
	}
}

// blocker runs until its context ends or it is released.
type blocker struct {
	started chan struct{}
	release chan struct{}
	ended   chan error
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 10), release: make(chan struct{}), ended: make(chan error, 10)}
}

func (b *blocker) ServeTurn(ctx context.Context, t *Turn) error {
	if err := t.Working(ctx, "started"); err != nil {
		return err
	}
	b.started <- struct{}{}
	select {
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return ctx.Err()
	case <-b.release:
		b.ended <- nil
		return nil
	}
}

func TestFullWorkerPoolAnswersResponderUnavailable(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, b, WithMaxTurns(1))
	done := make(chan []Reply)
	go func() { done <- f.send(msg(uuid.NewString(), "", "long")) }()
	<-b.started
	e := soleError(t, f.send(msg(uuid.NewString(), "", "second")))
	if e.Token != a2a.TokenResponderUnavailable || !e.Retryable() {
		t.Fatal(e)
	}
	close(b.release)
	if task := taskOf(t, (<-done)[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatal(task.Status)
	}
}

func TestCancel(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, b)
	id := uuid.NewString()
	streamDone := make(chan []Reply)
	go func() { streamDone <- f.stream(msg(id, "", "long")) }()
	<-b.started

	task := taskOf(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: id})[0])
	if task.Status.State != a2a.TaskStateCanceled {
		t.Fatal(task.Status)
	}
	if err := <-b.ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context: %v", err)
	}
	got := strings.Join(itemKinds(t, <-streamDone), ",")
	if got != "task:TASK_STATE_SUBMITTED,status:TASK_STATE_WORKING,status:TASK_STATE_CANCELED" {
		t.Fatalf("stream %s", got)
	}
	if again := taskOf(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: id})[0]); again.Status.State != a2a.TaskStateCanceled {
		t.Fatal("a repeated cancel answers with the canceled task")
	}
	if stored, _ := f.srv.Store().Get(context.Background(), id); stored.Task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("store holds %s after the handler returned", stored.Task.Status.State)
	}

	done := uuid.NewString()
	close(b.release)
	f.send(msg(done, "", "quick"))
	if e := soleError(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: done})); e.Token != a2a.TokenTaskNotCancelable {
		t.Fatal(e)
	}
	if e := soleError(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: uuid.NewString()})); e.Token != a2a.TokenTaskNotFound {
		t.Fatal(e)
	}
}

func TestReadMethods(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, b)
	ctxID := uuid.NewString()
	close(b.release)
	for range 3 {
		f.send(msg(uuid.NewString(), ctxID, "x"))
	}
	f.send(msg(uuid.NewString(), uuid.NewString(), "other context"))

	t.Run("GetTask trims history", func(t *testing.T) {
		id := uuid.NewString()
		f.send(msg(id, ctxID, "y"))
		zero := int32(0)
		task := taskOf(t, f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id, HistoryLength: &zero})[0])
		if task.ID != id || len(task.History) != 0 {
			t.Fatalf("%+v", task)
		}
		if e := soleError(t, f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: "nope"})); e.Token != a2a.TokenTaskNotFound {
			t.Fatal(e)
		}
	})
	t.Run("ListTasks filters by context and pages", func(t *testing.T) {
		two := int32(2)
		raw := f.call(a2a.MethodListTasks, &a2a.ListTasksRequest{ContextID: ctxID, PageSize: &two})[0].Result.(json.RawMessage)
		var resp a2a.ListTasksResponse
		if err := json.Unmarshal(raw, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Tasks) != 2 || resp.TotalSize != 4 || resp.NextPageToken == "" || resp.PageSize != 2 {
			t.Fatalf("%s", raw)
		}
		if err := resp.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SubscribeToTask on a finished task is unsupported", func(t *testing.T) {
		id := uuid.NewString()
		f.send(msg(id, ctxID, "z"))
		if e := soleError(t, f.call(a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{ID: id})); e.Token != a2a.TokenUnsupportedOperation {
			t.Fatal(e)
		}
	})
	t.Run("push configs and the extended card are not configured", func(t *testing.T) {
		if e := soleError(t, f.call(a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: "t", ID: "c"})); e.Token != a2a.TokenPushNotificationNotSupported {
			t.Fatal(e)
		}
		if e := soleError(t, f.call(a2a.MethodGetExtendedAgentCard, &a2a.GetExtendedAgentCardRequest{})); e.Token != a2a.TokenExtendedAgentCardNotConfigured {
			t.Fatal(e)
		}
	})
}

func TestSubscribeToARunningTask(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, b)
	id := uuid.NewString()
	first := make(chan []Reply)
	go func() { first <- f.send(msg(id, "", "long")) }()
	<-b.started
	sub := make(chan []Reply)
	go func() { sub <- f.call(a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{ID: id}) }()
	// Wait until the subscriber is attached, then let the turn finish.
	for {
		r := f.srv.activeRun(id)
		r.mu.Lock()
		n := len(r.subs)
		r.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(b.release)
	got := strings.Join(itemKinds(t, <-sub), ",")
	if got != "task:TASK_STATE_WORKING,status:TASK_STATE_COMPLETED" {
		t.Fatalf("subscription %s", got)
	}
	if task := taskOf(t, (<-first)[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatal(task.Status)
	}
}

func TestHandoverToAnInstanceSharingTheStore(t *testing.T) {
	store := taskstore.NewMemory(nil)
	card := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error {
		if err := t.Handover(ctx, "b-c1"); err != nil {
			return err
		}
		return t.AskInput(ctx, "c1 here: what size?")
	}), WithStore(store))
	spawned := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error {
		if !t.Resumed {
			return errors.New("c1 only resumes")
		}
		return t.Complete(ctx, "done by c1")
	}), WithStore(store))

	id, ctxID := uuid.NewString(), uuid.NewString()
	replies := card.send(msg(id, ctxID, "handover please"))
	task := taskOf(t, replies[0])
	if replies[0].Responder != "b-c1" || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("responder %q, state %s", replies[0].Responder, task.Status.State)
	}
	replies = spawned.send(msg(id, ctxID, "large"))
	task = taskOf(t, replies[0])
	if task.ID != id || task.Status.State != a2a.TaskStateCompleted || replies[0].Responder != "b-c1" {
		t.Fatalf("%+v responder %q", task.Status, replies[0].Responder)
	}
	got := spawned.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id})
	if got[0].Responder != "b-c1" {
		t.Fatal("GetTask does not name the owner")
	}
}

// A turn started over HTTP (server-made ids) cannot hand its task over: no
// reply can name a new responder, so Handover says so and changes nothing.
func TestHandoverOverHTTPIsRefused(t *testing.T) {
	got := make(chan error, 1)
	f := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error {
		got <- t.Handover(ctx, "b-c1")
		return t.AskInput(ctx, "kept: what size?")
	}))
	f.ids = tasklife.ResponderIDs
	replies := f.send(msg("", "", "handover please"))
	if err := <-got; !errors.Is(err, ErrNoHandover) {
		t.Fatalf("Handover over HTTP: %v, want ErrNoHandover", err)
	}
	task := taskOf(t, replies[0])
	if replies[0].Responder != "" || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("responder %q, state %s: want no new responder and the task kept", replies[0].Responder, task.Status.State)
	}
	rec, err := f.srv.Store().Get(context.Background(), task.ID)
	if err != nil || rec.Owner != "" {
		t.Fatalf("stored owner %q (%v): want none", rec.Owner, err)
	}
}

// The card's capabilities are enforced by the runtime, for every
// transport (A2A v1.0 §3.3.4): what the card does not declare is
// unsupported_operation; a call without a card (nil) is not checked.
func TestCapabilitiesOfTheCard(t *testing.T) {
	yes, no := true, false
	f := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error { return nil }), WithExtendedCard(&a2a.AgentCard{Name: "x"}))
	serve := func(caps *a2a.AgentCapabilities, method a2a.Method, params any) Reply {
		data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), method, params)
		if err != nil {
			t.Fatal(err)
		}
		req, _, perr := jsonrpc.DecodeRequest(data)
		if perr != nil {
			t.Fatal(perr)
		}
		rec := &recorder{}
		if err := f.srv.Serve(context.Background(), Call{Request: req, Capabilities: caps}, rec); err != nil {
			t.Fatal(err)
		}
		return rec.all()[0]
	}
	stream := &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "x")}
	cases := []struct {
		name    string
		caps    *a2a.AgentCapabilities
		method  a2a.Method
		params  any
		refused bool
	}{
		{"no card: not checked", nil, a2a.MethodSendStreamingMessage, stream, false},
		{"streaming declared", &a2a.AgentCapabilities{Streaming: &yes}, a2a.MethodSendStreamingMessage, stream, false},
		{"streaming not declared", &a2a.AgentCapabilities{}, a2a.MethodSendStreamingMessage, stream, true},
		{"streaming false: no SubscribeToTask", &a2a.AgentCapabilities{Streaming: &no}, a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{ID: "t"}, true},
		{"extended card not declared", &a2a.AgentCapabilities{Streaming: &yes}, a2a.MethodGetExtendedAgentCard, &a2a.GetExtendedAgentCardRequest{}, true},
		{"extended card declared", &a2a.AgentCapabilities{ExtendedAgentCard: &yes}, a2a.MethodGetExtendedAgentCard, &a2a.GetExtendedAgentCardRequest{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := serve(tc.caps, tc.method, tc.params)
			refused := r.Err != nil && r.Err.Token == a2a.TokenUnsupportedOperation
			if refused != tc.refused {
				t.Fatalf("reply %+v (error %v): refused %v, want %v", r, r.Err, refused, tc.refused)
			}
		})
	}
}

func TestHandlerFailures(t *testing.T) {
	cases := []struct {
		name string
		h    HandlerFunc
	}{
		{"an error fails the task", func(ctx context.Context, t *Turn) error { return errors.New("no luck") }},
		{"a panic fails the task", func(ctx context.Context, t *Turn) error { panic("boom") }},
		{"an explicit failure", func(ctx context.Context, t *Turn) error { return t.Fail(ctx, "cannot") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.h)
			task := taskOf(t, f.send(msg(uuid.NewString(), "", "x"))[0])
			if task.Status.State != a2a.TaskStateFailed || task.Status.Message == nil {
				t.Fatalf("%+v", task.Status)
			}
		})
	}
}

func TestTurnMethodsAfterTheTurnEnded(t *testing.T) {
	errs := make(chan error, 1)
	f := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error {
		if err := t.Complete(ctx, "done"); err != nil {
			return err
		}
		errs <- t.Working(ctx, "more?")
		return nil
	}))
	f.send(msg(uuid.NewString(), "", "x"))
	if err := <-errs; !errors.Is(err, ErrTurnEnded) {
		t.Fatal(err)
	}
}

func TestReturnImmediately(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, b)
	replies := f.call(a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "x"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	if st := taskOf(t, replies[0]).Status.State; st != a2a.TaskStateSubmitted && st != a2a.TaskStateWorking {
		t.Fatal(st)
	}
	<-b.started
	close(b.release)
}

// guardedSink records whether anything was sent to it after its call
// returned, and fails from its n-th send on (never when n is 0).
type guardedSink struct {
	mu       sync.Mutex
	returned bool
	late     int
	sends    int
	failFrom int
}

func (g *guardedSink) Send(context.Context, Reply) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sends++
	if g.returned {
		g.late++
	}
	if g.failFrom > 0 && g.sends >= g.failFrom {
		return errors.New("peer gone")
	}
	return nil
}

func (g *guardedSink) callReturned() {
	g.mu.Lock()
	g.returned = true
	g.mu.Unlock()
}

func (f *fixture) serveWith(ctx context.Context, method a2a.Method, m *a2a.Message, sink Sink) error {
	f.t.Helper()
	data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), method, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		f.t.Fatal(err)
	}
	req, _, perr := jsonrpc.DecodeRequest(data)
	if perr != nil {
		f.t.Fatal(perr)
	}
	return f.srv.Serve(ctx, Call{Request: req, IDs: f.ids, Caller: f.caller}, sink)
}

func TestCallThatGivesUpGetsNothingAfterItReturned(t *testing.T) {
	for _, method := range []a2a.Method{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
		t.Run(string(method), func(t *testing.T) {
			b := newBlocker()
			f := newFixture(t, b)
			sink := &guardedSink{}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error)
			go func() { errc <- f.serveWith(ctx, method, msg(uuid.NewString(), "", "long"), sink) }()
			<-b.started
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("Serve: %v", err)
			}
			sink.callReturned()
			close(b.release)
			if err := <-b.ended; err != nil {
				t.Fatal(err)
			}
			// The turn settles (COMPLETED) after the handler returns; wait
			// for the run to end before looking.
			f.srv.Close(context.Background())
			if sink.late != 0 {
				t.Fatalf("%d sends after the call returned", sink.late)
			}
		})
	}
}

func TestStreamWhoseSinkFailsReturnsBeforeTheTurnEnds(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, b)
	// The first item (the task) goes through; the WORKING status fails.
	sink := &guardedSink{failFrom: 2}
	errc := make(chan error)
	go func() {
		errc <- f.serveWith(context.Background(), a2a.MethodSendStreamingMessage, msg(uuid.NewString(), "", "long"), sink)
	}()
	<-b.started
	select {
	case err := <-errc:
		if err == nil || err.Error() != "peer gone" {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve still waits for the turn although its sink failed")
	}
	close(b.release)
	<-b.ended
}

// A blocking SendMessage gets its reply when the turn ends, even while the
// handler goes on after ending it.
func TestBlockingReplyComesWhenTheTurnEndsNotWhenTheHandlerReturns(t *testing.T) {
	release := make(chan struct{})
	f := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error {
		if err := t.AskInput(ctx, "which one?"); err != nil {
			return err
		}
		<-release
		return nil
	}))
	defer close(release)
	replies := f.send(msg(uuid.NewString(), "", "ask"))
	if task := taskOf(t, replies[0]); task.Status.State != a2a.TaskStateInputRequired {
		t.Fatal(task.Status)
	}
}

// A requester that sends its next message as soon as it has the reply finds
// the worker slot of the finished turn free, although that turn's handler
// has not returned yet.
func TestTheSlotIsFreeWhenTheReplyGoesOut(t *testing.T) {
	linger := make(chan struct{})
	defer close(linger)
	f := newFixture(t, HandlerFunc(func(ctx context.Context, t *Turn) error {
		if err := t.Complete(ctx, "done"); err != nil {
			return err
		}
		<-linger
		return nil
	}), WithMaxTurns(1))
	for i := range 3 {
		replies := f.send(msg(uuid.NewString(), "", "hi"))
		if replies[0].Err != nil {
			t.Fatalf("message %d: %v", i, replies[0].Err)
		}
		if task := taskOf(t, replies[0]); task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("message %d: %s", i, task.Status.State)
		}
	}
}

func TestBearerTokensAndDeadlinesAreCheckedBeforeAnyWork(t *testing.T) {
	accept := VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (Caller, error) {
		switch token {
		case "alice":
			return Caller{Subject: "alice"}, nil
		case "mallory":
			return Caller{}, a2a.NewError(a2a.TokenPermissionDenied, "not for you")
		case "slow":
			time.Sleep(50 * time.Millisecond)
			return Caller{Subject: "slow"}, nil
		}
		return Caller{}, errors.New("signature does not verify")
	})
	cases := []struct {
		name     string
		verifier Verifier
		token    string
		deadline time.Duration // from now; 0: none
		want     a2a.Token     // "": served
		subject  string        // the Caller the handler sees when served
	}{
		{"no verifier: a call without a token is served", nil, "", 0, "", ""},
		{"a call without a token is refused", accept, "", 0, a2a.TokenUnauthenticated, ""},
		{"the verifier's own error is answered as is", accept, "mallory", 0, a2a.TokenPermissionDenied, ""},
		{"any other verifier error is unauthenticated", accept, "forged", 0, a2a.TokenUnauthenticated, ""},
		{"an accepted token names the caller", accept, "alice", 0, "", "alice"},
		{"a request past its deadline is not processed", nil, "", -time.Second, a2a.TokenRequestExpired, ""},
		{"a request that expires while its token is checked is not processed", accept, "slow", 20 * time.Millisecond, a2a.TokenRequestExpired, ""},
		{"a request within its deadline is served", accept, "alice", time.Minute, "", "alice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int32
			var subject atomic.Value
			var opts []Option
			if tc.verifier != nil {
				opts = append(opts, WithVerifier(tc.verifier))
			}
			f := newFixture(t, HandlerFunc(func(ctx context.Context, turn *Turn) error {
				ran.Add(1)
				subject.Store(turn.Caller.Subject)
				return nil
			}), opts...)
			data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "hi")})
			if err != nil {
				t.Fatal(err)
			}
			req, _, perr := jsonrpc.DecodeRequest(data)
			if perr != nil {
				t.Fatal(perr)
			}
			call := Call{Request: req, IDs: f.ids, Token: tc.token}
			if tc.deadline != 0 {
				call.Deadline = time.Now().Add(tc.deadline)
			}
			rec := &recorder{}
			if err := f.srv.Serve(context.Background(), call, rec); err != nil {
				t.Fatal(err)
			}
			replies := rec.all()
			if tc.want != "" {
				if e := soleError(t, replies); e.Token != tc.want {
					t.Fatalf("got %s, want %s", e.Token, tc.want)
				}
				if ran.Load() != 0 {
					t.Fatal("the handler ran for a refused call")
				}
				return
			}
			if task := taskOf(t, replies[0]); task.Status.State != a2a.TaskStateCompleted {
				t.Fatal(task.Status)
			}
			if got, _ := subject.Load().(string); got != tc.subject {
				t.Fatalf("handler saw caller %q, want %q", got, tc.subject)
			}
		})
	}
}

// Close ends the context of every running turn, waits for the handlers, and
// answers later calls internal_error.
func TestCloseStopsRunningTurns(t *testing.T) {
	b := newBlocker()
	s := NewServer(b)
	const n = 3
	done := make(chan error, n)
	for range n {
		go func() {
			data, _ := jsonrpc.EncodeRequest(json.RawMessage(`1`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "long")})
			req, _, _ := jsonrpc.DecodeRequest(data)
			done <- s.Serve(context.Background(), Call{Request: req}, &recorder{})
		}()
	}
	for range n {
		<-b.started
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range n {
		if err := <-b.ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	}
	rec := &recorder{}
	data, _ := jsonrpc.EncodeRequest(json.RawMessage(`1`), a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "late")})
	req, _, _ := jsonrpc.DecodeRequest(data)
	if err := s.Serve(context.Background(), Call{Request: req}, rec); err != nil {
		t.Fatal(err)
	}
	if e := soleError(t, rec.all()); e.Token != a2a.TokenInternalError {
		t.Fatal(e)
	}
}

// plainStore hides every optional method of the store it wraps.
type plainStore struct{ taskstore.Store }

// A store with only the Store methods (no taskstore.Replacer) serves turns
// the same way.
func TestAStoreWithoutReplaceTaskServesTurns(t *testing.T) {
	st := taskstore.NewMemory(nil)
	f := newFixture(t, echo(nil), WithStore(plainStore{st}))
	id := uuid.NewString()
	task := taskOf(t, f.send(msg(id, "", "hello"))[0])
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("%+v", task)
	}
	stored, err := st.Get(context.Background(), id)
	if err != nil || stored.Task.Status.State != a2a.TaskStateCompleted || !stored.HasMessage(task.History[0].MessageID) {
		t.Fatalf("%+v %v", stored, err)
	}
}

// failingStore refuses to store a final state.
type failingStore struct{ taskstore.Store }

func (f failingStore) Update(ctx context.Context, id string, fn func(*taskstore.Record) error) (taskstore.Record, error) {
	return f.Store.Update(ctx, id, func(r *taskstore.Record) error {
		if err := fn(r); err != nil {
			return err
		}
		if r.Task.Status != nil && r.Task.Status.State == a2a.TaskStateCompleted {
			return errors.New("disk full")
		}
		return nil
	})
}

// A turn whose last state the store refuses answers the waiting calls with
// internal_error instead of leaving them waiting for an end that never
// comes.
func TestAStoreThatRefusesTheLastStateAnswersInternalError(t *testing.T) {
	for _, method := range []a2a.Method{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
		t.Run(string(method), func(t *testing.T) {
			f := newFixture(t, echo(nil), WithStore(failingStore{taskstore.NewMemory(nil)}))
			done := make(chan []Reply, 1)
			go func() { done <- f.call(method, &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "hello")}) }()
			select {
			case replies := <-done:
				last := replies[len(replies)-1]
				if last.Err == nil || last.Err.Token != a2a.TokenInternalError || !last.Final {
					t.Fatalf("last reply %+v", last)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call still waits for the end of a turn the store could not finish")
			}
		})
	}
}

// A retry of the message that resumed a task on another agent sharing the
// store (a pool on one store: the first copy went to one member, the
// retry to another) waits, as a call to the agent running the turn would,
// for the turn to end, and answers how it ended; streaming alike, and
// returnImmediately answers at once.
func TestARetryWaitsForTheTurnAnotherAgentRuns(t *testing.T) {
	store := taskstore.NewMemory(nil)
	b := newBlocker()
	asks := HandlerFunc(func(ctx context.Context, t *Turn) error {
		if !t.Resumed {
			return t.AskInput(ctx, "which one?")
		}
		return b.ServeTurn(ctx, t)
	})
	runner := newFixture(t, asks, WithStore(store))
	// other's reads of the store: the third read of a task is the wait's
	// first poll (admission and attach read it once each before).
	reads := &countingStore{Store: store, polled: make(chan struct{}, 100)}
	other := newFixture(t, asks, WithStore(reads))

	for _, tc := range []struct {
		name      string
		streaming bool
		now       bool
		want      a2a.TaskState
	}{
		{"SendMessage waits for the end", false, false, a2a.TaskStateCompleted},
		{"SendStreamingMessage ends with the end", true, false, a2a.TaskStateCompleted},
		{"returnImmediately answers at once", false, true, a2a.TaskStateWorking},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, ctxID := uuid.NewString(), uuid.NewString()
			if got := taskOf(t, runner.send(msg(id, ctxID, "start"))[0]); got.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("first turn: %s", got.Status.State)
			}
			follow := msg(id, ctxID, "this one")
			first := make(chan []Reply, 1)
			go func() { first <- runner.send(follow) }()
			<-b.started
			req := &a2a.SendMessageRequest{Message: follow}
			method := a2a.MethodSendMessage
			if tc.streaming {
				method = a2a.MethodSendStreamingMessage
			}
			if tc.now {
				req.Configuration = &a2a.SendMessageConfiguration{ReturnImmediately: true}
			}
			reads.reset(id)
			retried := make(chan []Reply, 1)
			go func() { retried <- other.call(method, req) }()
			if tc.now {
				replies := <-retried
				if got := lastTask(t, replies); got.Status.State != tc.want {
					t.Fatalf("returnImmediately: %s, want %s", got.Status.State, tc.want)
				}
			} else {
				select {
				case replies := <-retried:
					b.release <- struct{}{}
					<-first
					t.Fatalf("the retry answered %s while the turn ran", lastTask(t, replies).Status.State)
				case <-reads.polled:
				}
			}
			b.release <- struct{}{}
			if got := taskOf(t, (<-first)[0]); got.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("the turn itself: %s", got.Status.State)
			}
			if !tc.now {
				if got := lastTask(t, <-retried); got.Status.State != tc.want {
					t.Fatalf("the retry answered %s, want %s", got.Status.State, tc.want)
				}
			}
			rec, err := store.Get(context.Background(), id)
			if err != nil || len(rec.MessageIDs) != 2 {
				t.Fatalf("the follow-up accepted %v times: %v %v", len(rec.MessageIDs)-1, rec.MessageIDs, err)
			}
		})
	}
}

// lastTask is the task of the last reply: a SendMessage result, or a
// stream's final Task item.
func lastTask(t *testing.T, replies []Reply) a2a.Task {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("no reply")
	}
	r := replies[len(replies)-1]
	if sr, ok := r.Result.(*a2a.StreamResponse); ok {
		if task, ok := sr.Payload.(*a2a.Task); ok {
			return *task
		}
		t.Fatalf("the last stream item is %T", sr.Payload)
	}
	return taskOf(t, r)
}

// countingStore signals polled at the third Get of the task it watches.
type countingStore struct {
	taskstore.Store
	mu     sync.Mutex
	id     string
	n      int
	polled chan struct{}
}

func (c *countingStore) reset(id string) {
	c.mu.Lock()
	c.id, c.n = id, 0
	c.mu.Unlock()
}

func (c *countingStore) Get(ctx context.Context, id string) (taskstore.Record, error) {
	c.mu.Lock()
	if id == c.id {
		if c.n++; c.n == 3 {
			c.polled <- struct{}{}
		}
	}
	c.mu.Unlock()
	return c.Store.Get(ctx, id)
}

// Past maxTurnWaiters retries waiting at once, a retry of a turn another
// agent runs is answered at once with the task as it stands.
func TestRetriesWaitingForAnotherAgentAreBounded(t *testing.T) {
	store := taskstore.NewMemory(nil)
	b := newBlocker()
	asks := HandlerFunc(func(ctx context.Context, t *Turn) error {
		if !t.Resumed {
			return t.AskInput(ctx, "which one?")
		}
		return b.ServeTurn(ctx, t)
	})
	runner := newFixture(t, asks, WithStore(store))
	other := newFixture(t, asks, WithStore(store))
	other.srv.waiters = make(chan struct{}) // no room: as if maxTurnWaiters were waiting

	id, ctxID := uuid.NewString(), uuid.NewString()
	runner.send(msg(id, ctxID, "start"))
	follow := msg(id, ctxID, "this one")
	first := make(chan []Reply, 1)
	go func() { first <- runner.send(follow) }()
	<-b.started
	if got := lastTask(t, other.send(follow)); got.Status.State != a2a.TaskStateWorking {
		t.Errorf("the retry past the bound answered %s, want the task as it stands (WORKING)", got.Status.State)
	}
	b.release <- struct{}{}
	if got := taskOf(t, (<-first)[0]); got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the turn itself: %s", got.Status.State)
	}
}
