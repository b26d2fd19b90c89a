package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
)

// notice is one Notify call as fakeNotifier saw it.
type notice struct {
	cfg  a2a.TaskPushNotificationConfig
	item string // as itemKind names it
	task string // the event's taskId
}

// fakeNotifier records what the runtime hands a Notifier (the Notifier is
// the boundary between the runtime and a sender such as agent/webhook).
type fakeNotifier struct {
	mu      sync.Mutex
	notices []notice
	forgot  []string // taskID/configID
}

func (n *fakeNotifier) Notify(cfg a2a.TaskPushNotificationConfig, ev *a2a.StreamResponse) {
	nt := notice{cfg: cfg}
	switch p := ev.Payload.(type) {
	case *a2a.TaskStatusUpdateEvent:
		nt.item, nt.task = "status:"+string(p.Status.State), p.TaskID
	case *a2a.TaskArtifactUpdateEvent:
		nt.item, nt.task = "artifact:"+p.Artifact.ArtifactID, p.TaskID
	case *a2a.Task:
		nt.item, nt.task = "task:"+string(p.Status.State), p.ID
	default:
		nt.item = fmt.Sprintf("%T", p)
	}
	n.mu.Lock()
	n.notices = append(n.notices, nt)
	n.mu.Unlock()
}

func (n *fakeNotifier) Forget(taskID, configID string) {
	n.mu.Lock()
	n.forgot = append(n.forgot, taskID+"/"+configID)
	n.mu.Unlock()
}

// items returns the items notified to a config, in order.
func (n *fakeNotifier) items(configID string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, nt := range n.notices {
		if nt.cfg.ID == configID {
			out = append(out, nt.item)
		}
	}
	return out
}

func (n *fakeNotifier) all() []notice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]notice(nil), n.notices...)
}

func (n *fakeNotifier) forgotten() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.forgot...)
}

var yes, no = true, false

// pushCaps is a card that declares push notifications (and streaming).
var pushCaps = &a2a.AgentCapabilities{PushNotifications: &yes, Streaming: &yes}

// callCaps serves a request as a transport serving a card with caps would.
func (f *fixture) callCaps(caps *a2a.AgentCapabilities, method a2a.Method, params any) []Reply {
	f.t.Helper()
	return f.serve(Call{IDs: f.ids, Caller: f.caller, Capabilities: caps}, method, params)
}

// pushFixture is a server with push notifications through a fakeNotifier.
func pushFixture(t *testing.T, h Handler, cfg PushConfig, opts ...Option) (*fixture, *fakeNotifier) {
	n := &fakeNotifier{}
	cfg.Notifier = n
	return newFixture(t, h, append([]Option{WithPush(cfg)}, opts...)...), n
}

func resultOf[T any](t *testing.T, replies []Reply) T {
	t.Helper()
	var v T
	if len(replies) != 1 || replies[0].Err != nil || !replies[0].Final {
		t.Fatalf("want one final result, got %+v", replies)
	}
	if err := json.Unmarshal(replies[0].Result.(json.RawMessage), &v); err != nil {
		t.Fatalf("%v: %s", err, replies[0].Result)
	}
	return v
}

func hook(taskID, id, url string) *a2a.TaskPushNotificationConfig {
	return &a2a.TaskPushNotificationConfig{TaskID: taskID, ID: id, URL: url, Token: "tok-" + id}
}

// sendWithHook sends a message carrying a push-notification config.
func (f *fixture) sendWithHook(caps *a2a.AgentCapabilities, method a2a.Method, m *a2a.Message, cfg *a2a.TaskPushNotificationConfig, immediately bool) []Reply {
	f.t.Helper()
	return f.callCaps(caps, method, &a2a.SendMessageRequest{Message: m,
		Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: cfg, ReturnImmediately: immediately}})
}

// The four push-notification config methods (A2A v1.0 §3.1.7–§3.1.10) and
// their errors.
func TestPushConfigMethods(t *testing.T) {
	f, n := pushFixture(t, echo(nil), PushConfig{})
	id := uuid.NewString()
	taskOf(t, f.send(msg(id, "", "ask"))[0]) // waits for input
	unknown := uuid.NewString()

	made := resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, "", "https://hooks.example/a")))
	if made.ID == "" || made.TaskID != id || made.URL != "https://hooks.example/a" || made.Token != "tok-" {
		t.Fatalf("created %+v: want the stored config with an id the server made", made)
	}
	named := resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, "mine", "https://hooks.example/b")))
	if named.ID != "mine" {
		t.Fatalf("created %+v: want the requester's id kept", named)
	}
	got := resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: made.ID}))
	if got != made {
		t.Fatalf("get %+v, want %+v", got, made)
	}
	list := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}))
	if len(list.Configs) != 2 || list.Configs[0].ID != made.ID || list.Configs[1].ID != "mine" || list.NextPageToken != "" {
		t.Fatalf("list %+v", list)
	}
	page := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id, PageSize: 1}))
	if len(page.Configs) != 1 || page.Configs[0].ID != made.ID || page.NextPageToken == "" {
		t.Fatalf("first page %+v", page)
	}
	page = resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs,
		&a2a.ListTaskPushNotificationConfigsRequest{TaskID: id, PageSize: 1, PageToken: page.NextPageToken}))
	if len(page.Configs) != 1 || page.Configs[0].ID != "mine" || page.NextPageToken != "" {
		t.Fatalf("second page %+v", page)
	}
	// Replacing a config keeps one per id.
	resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, "mine", "https://hooks.example/c")))
	list = resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}))
	if len(list.Configs) != 2 || list.Configs[1].URL != "https://hooks.example/c" {
		t.Fatalf("after replacing: %+v", list)
	}

	for i := range 2 { // idempotent
		if r := resultOf[map[string]any](t, f.callCaps(pushCaps, a2a.MethodDeleteTaskPushNotificationConfig, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: made.ID})); len(r) != 0 {
			t.Fatalf("delete %d answered %v, want {}", i, r)
		}
	}
	if got := n.forgotten(); strings.Join(got, ",") != id+"/mine,"+id+"/"+made.ID {
		t.Fatalf("forgotten %v: want the replaced config, then the deleted one once", got)
	}

	for _, tc := range []struct {
		name   string
		method a2a.Method
		params any
		want   a2a.Token
		says   string
	}{
		{"get of a deleted config", a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: made.ID}, a2a.TokenTaskNotFound, "has no push-notification config"},
		{"get of an unknown config", a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: "nope"}, a2a.TokenTaskNotFound, "has no push-notification config"},
		{"create on an unknown task", a2a.MethodCreateTaskPushNotificationConfig, hook(unknown, "", "https://hooks.example/a"), a2a.TokenTaskNotFound, unknown},
		{"get on an unknown task", a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: unknown, ID: "mine"}, a2a.TokenTaskNotFound, unknown},
		{"list on an unknown task", a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: unknown}, a2a.TokenTaskNotFound, unknown},
		{"delete on an unknown task", a2a.MethodDeleteTaskPushNotificationConfig, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: unknown, ID: "mine"}, a2a.TokenTaskNotFound, unknown},
		{"create without a task", a2a.MethodCreateTaskPushNotificationConfig, hook("", "", "https://hooks.example/a"), a2a.TokenInvalidParams, "taskId is required"},
		{"a bad page token", a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id, PageToken: "x"}, a2a.TokenInvalidParams, "page token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := soleError(t, f.callCaps(pushCaps, tc.method, tc.params))
			if e.Token != tc.want || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("%s %q, want %s saying %q", e.Token, e.Message, tc.want, tc.says)
			}
		})
	}
}

// Webhook URLs must be absolute https URLs; http only to a loopback host,
// and only with AllowLoopbackHTTP.
func TestWebhookURLsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name     string
		loopback bool
		url      string
		says     string // "" for accepted
	}{
		{"https", false, "https://hooks.example/a2a?k=v", ""},
		{"http to a public host", false, "http://hooks.example/a2a", "http is not accepted"},
		{"http to loopback, not allowed", false, "http://127.0.0.1:8080/hook", "http is not accepted"},
		{"http to loopback, allowed", true, "http://127.0.0.1:8080/hook", ""},
		{"http to IPv6 loopback, allowed", true, "http://[::1]:8080/hook", ""},
		{"http to localhost, allowed", true, "http://localhost:8080/hook", ""},
		{"http to a public host, loopback allowed", true, "http://hooks.example/a2a", "not a loopback address"},
		{"http to a private address, loopback allowed", true, "http://10.0.0.1/hook", "not a loopback address"},
		{"a relative URL", false, "/hook", "absolute https URL"},
		{"no host", false, "https:///hook", "absolute https URL"},
		{"another scheme", false, "ftp://hooks.example/a", "not a ftp URL"},
		{"an opaque URL", false, "mailto:ops@example.com", "absolute https URL"},
		{"credentials in the URL", false, "https://user:pw@hooks.example/a", "must not carry credentials"},
		{"not a URL", false, "https://[::1", "absolute https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := pushFixture(t, echo(nil), PushConfig{AllowLoopbackHTTP: tc.loopback})
			id := uuid.NewString()
			f.send(msg(id, "", "ask"))
			replies := f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, "", tc.url))
			if tc.says == "" {
				resultOf[a2a.TaskPushNotificationConfig](t, replies)
				return
			}
			e := soleError(t, replies)
			if e.Token != a2a.TokenInvalidParams || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("%s %q, want invalid_params saying %q", e.Token, e.Message, tc.says)
			}
			// The same config inside a message is refused the same way,
			// and no task is created.
			other := uuid.NewString()
			e = soleError(t, f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(other, "", "hello"), hook("", "", tc.url), false))
			if e.Token != a2a.TokenInvalidParams || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("in a message: %s %q, want invalid_params saying %q", e.Token, e.Message, tc.says)
			}
			if _, err := f.srv.Store().Get(context.Background(), other); !errors.Is(err, taskstore.ErrNotFound) {
				t.Fatalf("a task was created for a refused config: %v", err)
			}
		})
	}
}

// A task has at most MaxConfigsPerTask configs (default 10); one more is
// invalid_params naming the limit, and replacing one does not count.
func TestPushConfigsPerTaskAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{"default", 0, DefaultMaxPushConfigsPerTask},
		{"set", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := pushFixture(t, echo(nil), PushConfig{MaxConfigsPerTask: tc.max})
			id := uuid.NewString()
			f.send(msg(id, "", "ask"))
			create := func(cfgID string) []Reply {
				return f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, cfgID, "https://hooks.example/"+cfgID))
			}
			for i := range tc.want {
				resultOf[a2a.TaskPushNotificationConfig](t, create(fmt.Sprint("c", i)))
			}
			e := soleError(t, create("one-more"))
			if e.Token != a2a.TokenInvalidParams || !strings.Contains(e.Message, fmt.Sprintf("limit of %d per task", tc.want)) {
				t.Fatalf("%s %q, want invalid_params naming the limit", e.Token, e.Message)
			}
			resultOf[a2a.TaskPushNotificationConfig](t, create("c0"))
			// A resume carrying a new config is refused too, and the task
			// is not resumed.
			e = soleError(t, f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "answer"), hook("", "in-message", "https://hooks.example/m"), false))
			if e.Token != a2a.TokenInvalidParams || !strings.Contains(e.Message, "limit") {
				t.Fatalf("a resume past the limit: %s %q", e.Token, e.Message)
			}
			rec, _ := f.srv.Store().Get(context.Background(), id)
			if rec.Task.Status.State != a2a.TaskStateInputRequired || len(rec.PushConfigs) != tc.want {
				t.Fatalf("after a refused resume: %s, %d configs", rec.Task.Status.State, len(rec.PushConfigs))
			}
		})
	}
}

// A push call is served only by a server with WithPush whose card (the
// call's Capabilities) declares pushNotifications: otherwise the four
// methods and a message carrying a config are answered
// push_notification_not_supported, never ignored.
func TestPushIsGatedByTheCardAndTheServer(t *testing.T) {
	// In this order: the get finds the config the create made.
	type pushCall struct {
		name   string
		method a2a.Method
		params any
	}
	calls := func(taskID string) []pushCall {
		withHook := func() *a2a.SendMessageRequest {
			return &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "hello"),
				Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: hook("", "", "https://hooks.example/a")}}
		}
		return []pushCall{
			{"create", a2a.MethodCreateTaskPushNotificationConfig, hook(taskID, "c", "https://hooks.example/a")},
			{"get", a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: taskID, ID: "c"}},
			{"list", a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: taskID}},
			{"delete", a2a.MethodDeleteTaskPushNotificationConfig, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: taskID, ID: "c"}},
			{"send with a config", a2a.MethodSendMessage, withHook()},
			{"stream with a config", a2a.MethodSendStreamingMessage, withHook()},
		}
	}
	for _, tc := range []struct {
		name     string
		push     bool
		caps     *a2a.AgentCapabilities
		refused  bool
		mentions string
	}{
		{"no push, no card", false, nil, true, "sends no push notifications"},
		{"no push, a card declaring it", false, pushCaps, true, "sends no push notifications"},
		{"push, a card not declaring it", true, &a2a.AgentCapabilities{Streaming: &yes}, true, "capabilities.pushNotifications"},
		{"push, a card declaring it false", true, &a2a.AgentCapabilities{Streaming: &yes, PushNotifications: &no}, true, "capabilities.pushNotifications"},
		{"push, a card declaring it", true, pushCaps, false, ""},
		{"push, no card", true, nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			var n *fakeNotifier
			if tc.push {
				f, n = pushFixture(t, echo(nil), PushConfig{})
			} else {
				f = newFixture(t, echo(nil))
			}
			id := uuid.NewString()
			f.send(msg(id, "", "ask"))
			for _, c := range calls(id) {
				name := c.name
				replies := f.callCaps(tc.caps, c.method, c.params)
				last := replies[len(replies)-1]
				if !tc.refused {
					if last.Err != nil {
						t.Fatalf("%s: %+v", name, last.Err)
					}
					continue
				}
				e := soleError(t, replies)
				if e.Token != a2a.TokenPushNotificationNotSupported || !strings.Contains(e.Message, tc.mentions) {
					t.Fatalf("%s: %s %q, want push_notification_not_supported saying %q", name, e.Token, e.Message, tc.mentions)
				}
			}
			if n != nil && tc.refused && len(n.all()) != 0 {
				t.Fatalf("a refused call notified: %+v", n.all())
			}
			// A message without a config is served whatever the card says.
			if task := taskOf(t, f.callCaps(tc.caps, a2a.MethodSendMessage, &a2a.SendMessageRequest{Message: msg(uuid.NewString(), "", "plain")})[0]); task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("a plain message: %+v", task.Status)
			}
		})
	}
}

// gate is a handler that reports progress, then waits for its release
// before sending an artifact and completing.
type gate struct {
	working chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{working: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) ServeTurn(ctx context.Context, t *Turn) error {
	if err := t.Working(ctx, "on it"); err != nil {
		return err
	}
	g.working <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := t.Artifact(ctx, a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText("one")}}}, ArtifactOptions{}); err != nil {
		return err
	}
	if err := t.Artifact(ctx, a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{{Content: a2a.PartText("two")}}}, ArtifactOptions{Append: true, LastChunk: true}); err != nil {
		return err
	}
	return t.Complete(ctx, "")
}

// waitFor polls until cond holds (bounded by a generous deadline, not
// timed).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A config sent with the message is stored with the task it creates; every
// status and artifact update of the task is then notified to each config,
// in event order, with the config as stored. A config created while the
// turn runs gets the events after it; a deleted one gets nothing more and
// is forgotten. The Task a stream begins with is not notified.
func TestNotifyFollowsTheTaskEventsInOrder(t *testing.T) {
	for _, method := range []a2a.Method{a2a.MethodSendMessage, a2a.MethodSendStreamingMessage} {
		t.Run(string(method), func(t *testing.T) {
			g := newGate()
			f, n := pushFixture(t, g, PushConfig{})
			id := uuid.NewString()
			done := make(chan []Reply, 1)
			go func() {
				done <- f.sendWithHook(pushCaps, method, msg(id, "", "hello"), hook("", "", "https://hooks.example/first"), false)
			}()
			<-g.working
			list := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}))
			if len(list.Configs) != 1 || list.Configs[0].TaskID != id || list.Configs[0].ID == "" || list.Configs[0].URL != "https://hooks.example/first" {
				t.Fatalf("the config sent with the message: %+v", list)
			}
			first := list.Configs[0].ID
			resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, "second", "https://hooks.example/second")))
			close(g.release)
			replies := <-done
			if last := replies[len(replies)-1]; last.Err != nil {
				t.Fatal(last.Err)
			}
			if got, want := strings.Join(n.items(first), ","), "status:TASK_STATE_WORKING,artifact:a1,artifact:a1,status:TASK_STATE_COMPLETED"; got != want {
				t.Fatalf("first config got %s\nwant %s", got, want)
			}
			if got, want := strings.Join(n.items("second"), ","), "artifact:a1,artifact:a1,status:TASK_STATE_COMPLETED"; got != want {
				t.Fatalf("config created while running got %s\nwant %s", got, want)
			}
			tokens := map[string]string{first: "tok-", "second": "tok-second"}
			for _, nt := range n.all() {
				if nt.task != id || nt.cfg.TaskID != id || nt.cfg.Token != tokens[nt.cfg.ID] {
					t.Fatalf("notice %+v for task %s: want the config as stored", nt, id)
				}
			}
			// Both configs, interleaved event by event: every event goes to
			// each config before the next event.
			var order []string
			for _, nt := range n.all() {
				order = append(order, nt.item)
			}
			want := "status:TASK_STATE_WORKING,artifact:a1,artifact:a1,artifact:a1,artifact:a1,status:TASK_STATE_COMPLETED,status:TASK_STATE_COMPLETED"
			if got := strings.Join(order, ","); got != want {
				t.Fatalf("notices in order %s\nwant %s", got, want)
			}
		})
	}
}

// A deleted config is forgotten and gets no later event; a canceled task's
// final status is notified, whether a turn runs or the task waits for input.
func TestDeletedConfigsAndCanceledTasks(t *testing.T) {
	t.Run("delete while running", func(t *testing.T) {
		g := newGate()
		f, n := pushFixture(t, g, PushConfig{})
		id := uuid.NewString()
		f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "hello"), hook("", "gone", "https://hooks.example/a"), true)
		<-g.working
		resultOf[map[string]any](t, f.callCaps(pushCaps, a2a.MethodDeleteTaskPushNotificationConfig, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: "gone"}))
		close(g.release)
		waitFor(t, "the task completes", func() bool {
			rec, err := f.srv.Store().Get(context.Background(), id)
			return err == nil && rec.Task.Status.State == a2a.TaskStateCompleted
		})
		if got := strings.Join(n.items("gone"), ","); got != "status:TASK_STATE_WORKING" {
			t.Fatalf("a config deleted after the first event got %s", got)
		}
		if got := n.forgotten(); len(got) != 1 || got[0] != id+"/gone" {
			t.Fatalf("forgotten %v", got)
		}
	})
	t.Run("cancel a running task", func(t *testing.T) {
		g := newGate()
		f, n := pushFixture(t, g, PushConfig{})
		id := uuid.NewString()
		f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "hello"), hook("", "c", "https://hooks.example/a"), true)
		<-g.working
		taskOf(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: id})[0])
		if got := strings.Join(n.items("c"), ","); got != "status:TASK_STATE_WORKING,status:TASK_STATE_CANCELED" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("cancel a task waiting for input", func(t *testing.T) {
		f, n := pushFixture(t, echo(nil), PushConfig{})
		id := uuid.NewString()
		f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "ask"), hook("", "c", "https://hooks.example/a"), false)
		taskOf(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: id})[0])
		if got := strings.Join(n.items("c"), ","); got != "status:TASK_STATE_INPUT_REQUIRED,status:TASK_STATE_CANCELED" {
			t.Fatalf("got %s", got)
		}
	})
	t.Run("a resume carrying a config", func(t *testing.T) {
		f, n := pushFixture(t, echo(nil), PushConfig{})
		id := uuid.NewString()
		f.send(msg(id, "", "ask"))
		f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "this one"), hook("", "late", "https://hooks.example/a"), false)
		if got := strings.Join(n.items("late"), ","); got != "status:TASK_STATE_WORKING,artifact:a1,status:TASK_STATE_COMPLETED" {
			t.Fatalf("got %s", got)
		}
	})
}

// createFails is a store whose Create fails after the checks a store makes.
type createFails struct{ taskstore.Store }

func (createFails) Create(context.Context, taskstore.Record) (taskstore.Record, error) {
	return taskstore.Record{}, errors.New("disk full")
}

// The config sent with a message is created with the task, in one write: a
// store that fails it leaves neither, and nothing is notified.
func TestAFailedCreateLeavesNeitherTaskNorConfig(t *testing.T) {
	st := taskstore.NewMemory(nil)
	f, n := pushFixture(t, echo(nil), PushConfig{}, WithStore(createFails{st}))
	id := uuid.NewString()
	e := soleError(t, f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "hello"), hook("", "c", "https://hooks.example/a"), false))
	if e.Token != a2a.TokenInternalError || !strings.Contains(e.Message, "disk full") {
		t.Fatalf("%s %q", e.Token, e.Message)
	}
	if _, err := st.Get(context.Background(), id); !errors.Is(err, taskstore.ErrNotFound) {
		t.Fatalf("the task exists: %v", err)
	}
	if e := soleError(t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id})); e.Token != a2a.TokenTaskNotFound {
		t.Fatalf("list: %s", e.Token)
	}
	if e := soleError(t, f.callCaps(pushCaps, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: "c"})); e.Token != a2a.TokenTaskNotFound {
		t.Fatalf("get: %s", e.Token)
	}
	if got := n.all(); len(got) != 0 {
		t.Fatalf("notified: %+v", got)
	}
}

// deliveryOf reads a config's entry of the push-delivery metadata of a
// task as a requester gets it.
func deliveryOf(t *testing.T, task a2a.Task, configID string) (map[string]any, bool) {
	t.Helper()
	all, ok := task.Metadata[PushDeliveryMetadataKey].(map[string]any)
	if !ok {
		return nil, false
	}
	d, ok := all[configID].(map[string]any)
	return d, ok
}

// The Notifier's reports are recorded on the task, the latest per config,
// and shown to requesters in GetTask's and ListTasks's Task.metadata.
func TestPushReportsAreShownOnTheTask(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f, _ := pushFixture(t, echo(nil), PushConfig{})
	id := uuid.NewString()
	taskOf(t, f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(id, "", "hello"), hook("", "c1", "https://hooks.example/a"), false)[0])
	resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodCreateTaskPushNotificationConfig, hook(id, "c2", "https://hooks.example/b")))
	get := func() a2a.Task { return taskOf(t, f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id})[0]) }
	if _, ok := get().Metadata[PushDeliveryMetadataKey]; ok {
		t.Fatal("a task nothing was reported on shows deliveries")
	}

	for _, tc := range []struct {
		name   string
		report PushReport
		want   map[string]any // c1's entry
	}{
		{"failing", PushReport{TaskID: id, ConfigID: "c1", State: PushFailing, Status: 503, Reason: "HTTP 503", At: now},
			map[string]any{"state": "failing", "status": 503.0, "reason": "HTTP 503", "dropped": 0.0, "at": "2026-11-29T10:00:00Z"}},
		{"the same state later keeps its time", PushReport{TaskID: id, ConfigID: "c1", State: PushFailing, Status: 503, Reason: "HTTP 503", At: now.Add(time.Minute)},
			map[string]any{"state": "failing", "status": 503.0, "reason": "HTTP 503", "dropped": 0.0, "at": "2026-11-29T10:00:00Z"}},
		{"dead replaces it", PushReport{TaskID: id, ConfigID: "c1", State: PushDead, Status: 410, Reason: "HTTP 410 Gone", At: now.Add(2 * time.Minute)},
			map[string]any{"state": "dead", "status": 410.0, "reason": "HTTP 410 Gone", "dropped": 0.0, "at": "2026-11-29T10:02:00Z"}},
		{"a report on an unknown config is dropped", PushReport{TaskID: id, ConfigID: "nope", State: PushDelivered, Status: 200, At: now},
			map[string]any{"state": "dead", "status": 410.0, "reason": "HTTP 410 Gone", "dropped": 0.0, "at": "2026-11-29T10:02:00Z"}},
		{"a report on an unknown task is dropped", PushReport{TaskID: uuid.NewString(), ConfigID: "c1", State: PushDelivered, At: now},
			map[string]any{"state": "dead", "status": 410.0, "reason": "HTTP 410 Gone", "dropped": 0.0, "at": "2026-11-29T10:02:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.srv.PushReport(tc.report)
			got, ok := deliveryOf(t, get(), "c1")
			if !ok || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("c1's delivery %v, want %v", got, tc.want)
			}
			all := get().Metadata[PushDeliveryMetadataKey].(map[string]any)
			if _, ok := all["nope"]; ok || len(all) != 1 {
				t.Fatalf("deliveries %v: want one entry, c1's", all)
			}
		})
	}

	t.Run("one entry per config, however many reports", func(t *testing.T) {
		for i := range 50 {
			f.srv.PushReport(PushReport{TaskID: id, ConfigID: "c2", State: PushOverflow, Dropped: i + 1, Reason: "queue full", At: now})
		}
		rec, _ := f.srv.Store().Get(context.Background(), id)
		if len(rec.PushDeliveries) != 2 {
			t.Fatalf("%d reports kept for 2 configs", len(rec.PushDeliveries))
		}
		got, _ := deliveryOf(t, get(), "c2")
		if got["state"] != "overflow" || got["dropped"] != 50.0 {
			t.Fatalf("c2's delivery %v", got)
		}
	})
	t.Run("ListTasks shows them too", func(t *testing.T) {
		l := resultOf[a2a.ListTasksResponse](t, f.call(a2a.MethodListTasks, &a2a.ListTasksRequest{}))
		if len(l.Tasks) != 1 {
			t.Fatalf("%d tasks", len(l.Tasks))
		}
		if got, ok := deliveryOf(t, l.Tasks[0], "c1"); !ok || got["state"] != "dead" {
			t.Fatalf("c1 in ListTasks: %v", got)
		}
	})
	t.Run("a deleted config's entry goes with it", func(t *testing.T) {
		resultOf[map[string]any](t, f.callCaps(pushCaps, a2a.MethodDeleteTaskPushNotificationConfig, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: "c1"}))
		if _, ok := deliveryOf(t, get(), "c1"); ok {
			t.Fatal("the deleted config's delivery is still shown")
		}
		if _, ok := deliveryOf(t, get(), "c2"); !ok {
			t.Fatal("c2's delivery went with c1's")
		}
	})
	t.Run("the stored task's own metadata is left alone", func(t *testing.T) {
		rec, _ := f.srv.Store().Get(context.Background(), id)
		if _, ok := rec.Task.Metadata[PushDeliveryMetadataKey]; ok {
			t.Fatal("the reports were written into the stored task")
		}
	})
}

// The Server is a PushReporter; PushReporterFunc adapts a function.
func TestPushReporterFuncForwards(t *testing.T) {
	var got PushReport
	var r PushReporter = PushReporterFunc(func(p PushReport) { got = p })
	r.PushReport(PushReport{TaskID: "t", ConfigID: "c", State: PushRefused})
	if got.State != PushRefused {
		t.Fatalf("%+v", got)
	}
}

// A task the store drops on its own (evicted for room, expired waiting
// for input) has its configs forgotten by the Notifier, so that nothing
// is delivered for a task GetTask no longer knows; a task dropped without
// configs, or a config of a task kept, is not forgotten.
func TestConfigsOfDroppedTasksAreForgotten(t *testing.T) {
	for _, kind := range []string{"memory", "bolt"} {
		t.Run(kind, func(t *testing.T) {
			var mu sync.Mutex
			clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			now := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				clock = clock.Add(time.Millisecond)
				return clock
			}
			opts := []taskstore.Option{taskstore.MaxTasks(3), taskstore.ExpireInterruptedAfter(time.Hour)}
			var st taskstore.Store = taskstore.NewMemory(now, opts...)
			if kind == "bolt" {
				b, err := taskstore.OpenBolt(t.TempDir()+"/tasks.db", now, 0, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				st = b
			}
			f, n := pushFixture(t, echo(nil), PushConfig{}, WithStore(st))
			done, waiting, plain := uuid.NewString(), uuid.NewString(), uuid.NewString()
			taskOf(t, f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(done, "", "hello"), hook("", "c-done", "https://hooks.example/a"), false)[0])
			taskOf(t, f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg(waiting, "", "ask"), hook("", "c-wait", "https://hooks.example/b"), false)[0])
			taskOf(t, f.send(msg(plain, "", "hello"))[0])
			if got := n.forgotten(); len(got) != 0 {
				t.Fatalf("forgotten before any drop: %v", got)
			}
			// A fourth task evicts the finished task changed least
			// recently: the one with a config.
			taskOf(t, f.send(msg(uuid.NewString(), "", "hello"))[0])
			if e := soleError(t, f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: done})); e.Token != a2a.TokenTaskNotFound {
				t.Fatalf("the evicted task: %s", e.Token)
			}
			if got := n.forgotten(); strings.Join(got, ",") != done+"/c-done" {
				t.Fatalf("forgotten %v after the eviction, want %s/c-done", got, done)
			}
			// The next evicts the plain one: nothing to forget.
			taskOf(t, f.send(msg(uuid.NewString(), "", "hello"))[0])
			if got := n.forgotten(); len(got) != 1 {
				t.Fatalf("forgotten %v after a task without configs was evicted", got)
			}
			// An hour on, the task waiting for input has expired.
			mu.Lock()
			clock = clock.Add(2 * time.Hour)
			mu.Unlock()
			if kind == "bolt" {
				// Bolt drops what expired on its next write.
				taskOf(t, f.send(msg(uuid.NewString(), "", "hello"))[0])
			}
			if e := soleError(t, f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: waiting})); e.Token != a2a.TokenTaskNotFound {
				t.Fatalf("the expired task: %s", e.Token)
			}
			if got := n.forgotten(); strings.Join(got, ",") != done+"/c-done,"+waiting+"/c-wait" {
				t.Fatalf("forgotten %v after the expiry", got)
			}
		})
	}
}

// TestCheckCard: a card may declare pushNotifications only for a server
// with WithPush.
func TestCheckCard(t *testing.T) {
	yes, no := true, false
	card := func(push *bool) *a2a.AgentCard {
		return &a2a.AgentCard{Capabilities: &a2a.AgentCapabilities{PushNotifications: push}}
	}
	plain := NewServer(HandlerFunc(func(context.Context, *Turn) error { return nil }))
	pushing := NewServer(HandlerFunc(func(context.Context, *Turn) error { return nil }), WithPush(PushConfig{Notifier: &fakeNotifier{}}))
	t.Cleanup(func() { plain.Close(context.Background()); pushing.Close(context.Background()) })
	cases := []struct {
		name string
		srv  *Server
		card *a2a.AgentCard
		ok   bool
	}{
		{"push declared, served", pushing, card(&yes), true},
		{"push declared, not served", plain, card(&yes), false},
		{"push declared false", plain, card(&no), true},
		{"push left out", plain, card(nil), true},
		{"no capabilities", plain, &a2a.AgentCard{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.srv.CheckCard(c.card); (err == nil) != c.ok {
				t.Fatalf("CheckCard = %v, want ok %v", err, c.ok)
			}
		})
	}
}
