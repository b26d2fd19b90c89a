package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// byToken is a verifier whose tokens are their callers' subjects.
var byToken = VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (Caller, error) {
	return Caller{Subject: token}, nil
})

// callAs serves a request as a transport of the binding ids would, with
// the bearer token token (the caller's subject under byToken) and a card
// declaring push notifications and streaming.
func (f *fixture) callAs(token string, ids tasklife.IDOrigin, method a2a.Method, params any) []Reply {
	f.t.Helper()
	return f.serve(Call{IDs: ids, Token: token, Capabilities: pushCaps}, method, params)
}

// listAs lists the tasks token's caller sees, in a context when ctxID is
// set.
func (f *fixture) listAs(token, ctxID string) a2a.ListTasksResponse {
	f.t.Helper()
	return resultOf[a2a.ListTasksResponse](f.t, f.callAs(token, tasklife.RequesterIDs, a2a.MethodListTasks, &a2a.ListTasksRequest{ContextID: ctxID}))
}

func taskIDs(l a2a.ListTasksResponse) string {
	var out []string
	for _, t := range l.Tasks {
		out = append(out, t.ID)
	}
	return strings.Join(out, ",")
}

// Every method naming a task answers another caller exactly as it answers
// for a task the agent does not hold: task_not_found, with the same
// message (A2A v1.0 §3.3.2, §13.1). The task, its configs and its state
// are left as they were, and its caller still reaches it.
func TestAnotherCallersTaskIsNotFound(t *testing.T) {
	f, _ := pushFixture(t, echo(nil), PushConfig{}, WithVerifier(byToken))
	mine, ctxID := uuid.NewString(), uuid.NewString()
	if task := taskOf(t, f.callAs("alice", tasklife.RequesterIDs, a2a.MethodSendMessage,
		&a2a.SendMessageRequest{Message: msg(mine, ctxID, "ask")})[0]); task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task: %s", task.Status.State)
	}
	cfg := resultOf[a2a.TaskPushNotificationConfig](t, f.callAs("alice", tasklife.RequesterIDs, a2a.MethodCreateTaskPushNotificationConfig,
		hook(mine, "", "https://hooks.example/alice")))

	// Each call names a task by id: asked about alice's task by bob, and
	// about an id no task has, the answers are one and the same.
	cases := []struct {
		name   string
		ids    tasklife.IDOrigin
		method a2a.Method
		params func(id string) any
	}{
		{"GetTask", tasklife.RequesterIDs, a2a.MethodGetTask, func(id string) any { return &a2a.GetTaskRequest{ID: id} }},
		{"CancelTask", tasklife.RequesterIDs, a2a.MethodCancelTask, func(id string) any { return &a2a.CancelTaskRequest{ID: id} }},
		{"SubscribeToTask", tasklife.RequesterIDs, a2a.MethodSubscribeToTask, func(id string) any { return &a2a.SubscribeToTaskRequest{ID: id} }},
		{"CreateTaskPushNotificationConfig", tasklife.RequesterIDs, a2a.MethodCreateTaskPushNotificationConfig,
			func(id string) any { return hook(id, "", "https://hooks.example/bob") }},
		{"CreateTaskPushNotificationConfig replacing the owner's", tasklife.RequesterIDs, a2a.MethodCreateTaskPushNotificationConfig,
			func(id string) any { return hook(id, cfg.ID, "https://hooks.example/bob") }},
		{"GetTaskPushNotificationConfig", tasklife.RequesterIDs, a2a.MethodGetTaskPushNotificationConfig,
			func(id string) any { return &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID} }},
		{"ListTaskPushNotificationConfigs", tasklife.RequesterIDs, a2a.MethodListTaskPushNotificationConfigs,
			func(id string) any { return &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id} }},
		{"DeleteTaskPushNotificationConfig", tasklife.RequesterIDs, a2a.MethodDeleteTaskPushNotificationConfig,
			func(id string) any { return &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID} }},
		{"a follow-up over HTTP", tasklife.ResponderIDs, a2a.MethodSendMessage,
			func(id string) any { return &a2a.SendMessageRequest{Message: msg(id, "", "take over")} }},
		{"a streamed follow-up over HTTP", tasklife.ResponderIDs, a2a.MethodSendStreamingMessage,
			func(id string) any { return &a2a.SendMessageRequest{Message: msg(id, "", "take over")} }},
		{"a follow-up with a push config over HTTP", tasklife.ResponderIDs, a2a.MethodSendMessage,
			func(id string) any {
				return &a2a.SendMessageRequest{Message: msg(id, "", "take over"),
					Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: hook("", "", "https://hooks.example/bob")}}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unknown := uuid.NewString()
			want := soleError(t, f.callAs("bob", tc.ids, tc.method, tc.params(unknown)))
			got := soleError(t, f.callAs("bob", tc.ids, tc.method, tc.params(mine)))
			if got.Token != a2a.TokenTaskNotFound || got.Token != want.Token ||
				got.Message != strings.ReplaceAll(want.Message, unknown, mine) {
				t.Fatalf("bob got %s %q; for an unknown task %s %q", got.Token, got.Message, want.Token, want.Message)
			}
		})
	}
	// Over MQTT an unknown task id starts a task (the requester makes
	// ids, docs/protocol.md §4.2); another caller's is refused as over
	// HTTP.
	for _, method := range []a2a.Method{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
		e := soleError(t, f.callAs("bob", tasklife.RequesterIDs, method, &a2a.SendMessageRequest{Message: msg(mine, "", "take over")}))
		if e.Token != a2a.TokenTaskNotFound || e.Message != "task "+mine+" not found" {
			t.Fatalf("%s over MQTT: %s %q", method, e.Token, e.Message)
		}
	}

	// Nothing bob did reached alice's task.
	task := taskOf(t, f.callAs("alice", tasklife.RequesterIDs, a2a.MethodGetTask, &a2a.GetTaskRequest{ID: mine})[0])
	if task.Status.State != a2a.TaskStateInputRequired || len(task.History) != 2 {
		t.Fatalf("alice's task after bob's calls: %s, %d messages", task.Status.State, len(task.History))
	}
	list := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callAs("alice", tasklife.RequesterIDs,
		a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: mine}))
	if len(list.Configs) != 1 || list.Configs[0] != cfg {
		t.Fatalf("alice's configs after bob's calls: %+v, want %+v", list.Configs, cfg)
	}
	// Alice resumes her task.
	if task := taskOf(t, f.callAs("alice", tasklife.RequesterIDs, a2a.MethodSendMessage,
		&a2a.SendMessageRequest{Message: msg(mine, ctxID, "the first")})[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("alice's resume: %s", task.Status.State)
	}
	if got := f.listAs("alice", ""); taskIDs(got) != mine {
		t.Fatalf("alice lists %s", taskIDs(got))
	}
}

// ListTasks lists the caller's tasks alone, whatever its filter, and its
// totalSize counts those.
func TestListTasksListsTheCallersTasksAlone(t *testing.T) {
	f := newFixture(t, echo(nil), WithVerifier(byToken), WithClock(ticking()))
	ctxID := uuid.NewString()
	var alices, bobs []string
	for i := range 5 {
		who, id := "alice", uuid.NewString()
		if i%2 == 1 {
			who = "bob"
		}
		c := ctxID
		if i == 4 {
			c = ""
		}
		taskOf(t, f.callAs(who, tasklife.RequesterIDs, a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(id, c, "hi")})[0])
		if who == "alice" {
			alices = append([]string{id}, alices...)
		} else {
			bobs = append([]string{id}, bobs...)
		}
	}
	for _, tc := range []struct {
		name, token, ctxID, want string
		total                    int32
	}{
		{"alice", "alice", "", strings.Join(alices, ","), 3},
		{"bob", "bob", "", strings.Join(bobs, ","), 2},
		{"alice in the shared context id", "alice", ctxID, strings.Join(alices[1:], ","), 2},
		{"bob in the shared context id", "bob", ctxID, strings.Join(bobs, ","), 2},
		{"a caller of no task", "carol", "", "", 0},
		{"a caller of no task in the context", "carol", ctxID, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := f.listAs(tc.token, tc.ctxID)
			if taskIDs(got) != tc.want || got.TotalSize != tc.total {
				t.Fatalf("listed %s (total %d), want %s (total %d)", taskIDs(got), got.TotalSize, tc.want, tc.total)
			}
		})
	}
}

// A context is its callers': a message from another caller naming it
// starts a task of its own there, as in a new context, and its turn sees
// none of the others' tasks.
func TestAnotherCallersContextIsANewOneToTheCaller(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	f := newFixture(t, HandlerFunc(func(ctx context.Context, turn *Turn) error {
		earlier, err := turn.ContextTasks(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		seen = append(seen, len(earlier))
		mu.Unlock()
		return nil
	}), WithVerifier(byToken), WithClock(ticking()))
	ctxID := uuid.NewString()
	for _, who := range []string{"alice", "alice", "bob", "bob", "alice"} {
		if task := taskOf(t, f.callAs(who, tasklife.RequesterIDs, a2a.MethodSendMessage,
			&a2a.SendMessageRequest{Message: msg(uuid.NewString(), ctxID, "hi")})[0]); task.ContextID != ctxID {
			t.Fatalf("%s's task in context %s", who, task.ContextID)
		}
	}
	// Each turn saw the earlier tasks of its own caller in the context.
	mu.Lock()
	got := fmt.Sprint(seen)
	mu.Unlock()
	if got != "[0 1 0 1 2]" {
		t.Fatalf("earlier tasks seen by each turn: %s, want [0 1 0 1 2]", got)
	}
	if a, b := f.listAs("alice", ctxID), f.listAs("bob", ctxID); a.TotalSize != 3 || b.TotalSize != 2 {
		t.Fatalf("alice lists %d in the context, bob %d", a.TotalSize, b.TotalSize)
	}
}

// ticking is a clock that moves a millisecond each time it is read, so
// that tasks created one after the other are listed in that order.
func ticking() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}

// A running turn is its caller's: another caller can neither subscribe to
// it nor cancel it, and the turn goes on to its end.
func TestAnotherCallersRunningTurnIsNotFound(t *testing.T) {
	release := make(chan struct{})
	f := newFixture(t, HandlerFunc(func(ctx context.Context, turn *Turn) error {
		if err := turn.Working(ctx, "busy"); err != nil {
			return err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return turn.Complete(ctx, "done")
	}), WithVerifier(byToken))
	id := uuid.NewString()
	task := taskOf(t, f.callAs("alice", tasklife.RequesterIDs, a2a.MethodSendMessage,
		&a2a.SendMessageRequest{Message: msg(id, "", "work"), Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})[0])
	if task.Status.State == a2a.TaskStateCompleted {
		t.Fatal("the turn ended before it was released")
	}
	for _, tc := range []struct {
		method a2a.Method
		params any
	}{
		{a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{ID: id}},
		{a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: id}},
		{a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(id, "", "more")}},
	} {
		if e := soleError(t, f.callAs("bob", tasklife.RequesterIDs, tc.method, tc.params)); e.Token != a2a.TokenTaskNotFound {
			t.Fatalf("bob's %s of alice's running turn: %s %q", tc.method, e.Token, e.Message)
		}
	}
	// Alice's subscription gets the task as it stands, then the end.
	done := make(chan []Reply, 1)
	go func() {
		done <- f.callAs("alice", tasklife.RequesterIDs, a2a.MethodSubscribeToTask, &a2a.SubscribeToTaskRequest{ID: id})
	}()
	waitFor(t, "alice's subscription attached", func() bool {
		r := f.srv.activeRun(id)
		if r == nil {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.subs) > 0
	})
	close(release)
	items := itemKinds(t, <-done)
	if len(items) < 2 || !strings.HasPrefix(items[0], "task:") || items[len(items)-1] != "status:TASK_STATE_COMPLETED" {
		t.Fatalf("alice's subscription: %v", items)
	}
}

// On an agent where some calls carry an identity and some none (a
// transport that authenticates some peers, Call.Caller): a task created
// without one is everyone's; a caller's task is hidden from anonymous
// calls.
func TestTasksWithoutAPrincipalAreEveryones(t *testing.T) {
	f := newFixture(t, echo(nil), WithClock(ticking()))
	anonymous, alices := uuid.NewString(), uuid.NewString()
	taskOf(t, f.send(msg(anonymous, "", "hi"))[0])
	f.caller = Caller{Subject: "alice"}
	taskOf(t, f.send(msg(alices, "", "hi"))[0])
	if got, err := f.srv.Store().Get(context.Background(), alices); err != nil || got.Principal != "alice" {
		t.Fatalf("alice's task records %q: %v", got.Principal, err)
	}
	for _, tc := range []struct {
		name   string
		caller Caller
		id     string
		found  bool
		list   string
	}{
		{"alice reads the anonymous task", Caller{Subject: "alice"}, anonymous, true, alices + "," + anonymous},
		{"alice reads hers", Caller{Subject: "alice"}, alices, true, alices + "," + anonymous},
		{"an anonymous call reads the anonymous task", Caller{}, anonymous, true, anonymous},
		{"an anonymous call does not read alice's", Caller{}, alices, false, anonymous},
		{"bob does not read alice's", Caller{Subject: "bob"}, alices, false, anonymous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.caller = tc.caller
			rs := f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: tc.id})
			if found := rs[0].Err == nil; found != tc.found {
				t.Fatalf("found %v (%v), want %v", found, rs[0].Err, tc.found)
			}
			l := resultOf[a2a.ListTasksResponse](t, f.call(a2a.MethodListTasks, &a2a.ListTasksRequest{}))
			if taskIDs(l) != tc.list {
				t.Fatalf("lists %s, want %s", taskIDs(l), tc.list)
			}
		})
	}
	// A task created without an identity stays everyone's when a caller
	// resumes it.
	f.caller = Caller{}
	ask := uuid.NewString()
	taskOf(t, f.send(msg(ask, "", "ask"))[0])
	f.caller = Caller{Subject: "alice"}
	if task := taskOf(t, f.send(msg(ask, "", "the first"))[0]); task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("alice's resume of an anonymous task: %s", task.Status.State)
	}
	if got, _ := f.srv.Store().Get(context.Background(), ask); got.Principal != "" {
		t.Fatalf("the anonymous task became %q's", got.Principal)
	}
}

// Each store keeps the principal the runtime records: the tasks created
// over the server are scoped in Memory and Bolt alike.
func TestTasksAreScopedInEveryStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) taskstore.Store
	}{
		{"memory", func(*testing.T) taskstore.Store { return taskstore.NewMemory(nil) }},
		{"bolt", func(t *testing.T) taskstore.Store {
			s, err := taskstore.OpenBolt(t.TempDir()+"/tasks.db", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, echo(nil), WithVerifier(byToken), WithStore(tc.store(t)))
			id := uuid.NewString()
			taskOf(t, f.callAs("alice", tasklife.RequesterIDs, a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(id, "", "hi")})[0])
			if e := soleError(t, f.callAs("bob", tasklife.RequesterIDs, a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id})); e.Token != a2a.TokenTaskNotFound {
				t.Fatalf("bob: %s", e.Token)
			}
			if l := f.listAs("bob", ""); len(l.Tasks) != 0 || l.TotalSize != 0 {
				t.Fatalf("bob lists %s", taskIDs(l))
			}
			if l := f.listAs("alice", ""); taskIDs(l) != id {
				t.Fatalf("alice lists %s", taskIDs(l))
			}
		})
	}
}
