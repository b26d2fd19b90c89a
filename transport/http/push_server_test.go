package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// postNotifier is a minimal agent.Notifier for these tests: it POSTs each
// notification to the config's URL from one goroutine, in order, and
// reports delivered on 2xx and dead otherwise to the server. (agent/webhook
// is the real one; here the transport is what is tested.)
type postNotifier struct {
	reporter agent.PushReporter
	queue    chan posted
	done     chan struct{}
}

type posted struct {
	cfg  a2a.TaskPushNotificationConfig
	body []byte
}

func newPostNotifier(t *testing.T) *postNotifier {
	n := &postNotifier{queue: make(chan posted, 1024), done: make(chan struct{})}
	go func() {
		defer close(n.done)
		for p := range n.queue {
			req, err := http.NewRequest(http.MethodPost, p.cfg.URL, bytes.NewReader(p.body))
			if err != nil {
				continue
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("A2A-Notification-Token", p.cfg.Token)
			r := agent.PushReport{TaskID: p.cfg.TaskID, ConfigID: p.cfg.ID, State: agent.PushDelivered, At: time.Now()}
			resp, err := http.DefaultClient.Do(req)
			switch {
			case err != nil:
				r.State, r.Reason = agent.PushFailing, err.Error()
			default:
				resp.Body.Close()
				r.Status = resp.StatusCode
				if resp.StatusCode/100 != 2 {
					r.State, r.Reason = agent.PushDead, resp.Status
				}
			}
			n.reporter.PushReport(r)
		}
	}()
	t.Cleanup(func() { close(n.queue); <-n.done })
	return n
}

func (n *postNotifier) Notify(cfg a2a.TaskPushNotificationConfig, ev *a2a.StreamResponse) {
	b, err := ev.MarshalJSON()
	if err != nil {
		return
	}
	n.queue <- posted{cfg: cfg, body: b}
}

func (n *postNotifier) Forget(string, string) {}

// hookReceiver is a webhook on loopback that answers every POST with
// status and records what it received.
type hookReceiver struct {
	ts     *httptest.Server
	mu     sync.Mutex
	got    []string // "token item"
	status int
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	h := &hookReceiver{status: status}
	h.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var item a2a.StreamResponse
		kind := "undecodable"
		if item.UnmarshalJSON(b) == nil {
			switch p := item.Payload.(type) {
			case *a2a.TaskStatusUpdateEvent:
				kind = "status:" + string(p.Status.State)
			case *a2a.TaskArtifactUpdateEvent:
				kind = "artifact:" + p.Artifact.ArtifactID
			case *a2a.Task:
				kind = "task"
			}
		}
		h.mu.Lock()
		h.got = append(h.got, r.Header.Get("A2A-Notification-Token")+" "+kind)
		h.mu.Unlock()
		w.WriteHeader(h.status)
	}))
	t.Cleanup(h.ts.Close)
	return h
}

func (h *hookReceiver) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// pushCard is the test card declaring push notifications.
func pushCard(endpoint string) *a2a.AgentCard {
	c := srvCard(endpoint, true, false)
	yes := true
	c.Capabilities.PushNotifications = &yes
	return c
}

// startPushAgent serves srvHandler with push notifications (http to
// loopback allowed) through a postNotifier, with card.
func startPushAgent(t *testing.T, card func(endpoint string) *a2a.AgentCard) *srvAgent {
	t.Helper()
	var srv *agent.Server
	n := newPostNotifier(t)
	n.reporter = agent.PushReporterFunc(func(r agent.PushReport) { srv.PushReport(r) })
	srv = agent.NewServer(srvHandler(nil), agent.WithPush(agent.PushConfig{Notifier: n, AllowLoopbackHTTP: true}))
	a := startSrvAgent(t, a2ahttp.HandlerConfig{Server: srv, Card: card("http://127.0.0.1:1/a2a")})
	t.Cleanup(func() { srv.Close(context.Background()) })
	// The card names the endpoint, known once the listener is.
	if err := a.h.UpdateCard(card(a.endpoint)); err != nil {
		t.Fatal(err)
	}
	return a
}

// A card may declare capabilities.pushNotifications only for a server that
// serves them (agent.WithPush): NewHandler and UpdateCard refuse it
// otherwise, and keep the card they had.
func TestHandlerTakesAPushCardOnlyForAServerWithPush(t *testing.T) {
	withPush := agent.NewServer(srvHandler(nil), agent.WithPush(agent.PushConfig{Notifier: &postNotifier{}}))
	without := agent.NewServer(srvHandler(nil))
	t.Cleanup(func() { withPush.Close(context.Background()); without.Close(context.Background()) })
	for _, tc := range []struct {
		name string
		srv  *agent.Server
		card *a2a.AgentCard
		want string // "" for accepted
	}{
		{"push server, push card", withPush, pushCard("http://x/a2a"), ""},
		{"push server, plain card", withPush, srvCard("http://x/a2a", true, false), ""},
		{"plain server, plain card", without, srvCard("http://x/a2a", true, false), ""},
		{"plain server, push card", without, pushCard("http://x/a2a"), "agent.WithPush"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: tc.srv, Card: tc.card})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				h.Close(context.Background())
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pushNotifications") {
				t.Fatalf("err %v, want one naming pushNotifications and %q", err, tc.want)
			}
		})
	}
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: without, Card: srvCard("http://x/a2a", true, false)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if err := h.UpdateCard(pushCard("http://x/a2a")); err == nil || !strings.Contains(err.Error(), "pushNotifications") {
		t.Fatalf("UpdateCard with a push card on a server without push: %v", err)
	}
}

// Over real loopback HTTP, with the repository's own client: a config sent
// with the message is created with the task, the webhook receives the
// task's updates in order, the four config methods work, and GetTask shows
// what became of each webhook (accepted, or refused with 410).
func TestPushNotificationsOverHTTP(t *testing.T) {
	a := startPushAgent(t, pushCard)
	ok := newHookReceiver(t, http.StatusOK)
	gone := newHookReceiver(t, http.StatusGone)
	ctx := srvCtx(t)
	c := cliClient(t, a2ahttp.ClientConfig{URL: a.base})

	send := requester.TextMessage("hello", "", "")
	send.Configuration = &a2a.SendMessageConfiguration{TaskPushNotificationConfig: &a2a.TaskPushNotificationConfig{URL: ok.ts.URL + "/hook", Token: "ok-token"}}
	res, err := c.SendMessage(ctx, send)
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	list, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id})
	if err != nil || len(list.Configs) != 1 || list.Configs[0].TaskID != id || list.Configs[0].ID == "" {
		t.Fatalf("the config sent with the message: %+v %v", list, err)
	}
	okID := list.Configs[0].ID
	waitFor(t, "the webhook gets the task's updates", func() bool { return len(ok.received()) == 2 })
	if got := strings.Join(ok.received(), ","); got != "ok-token artifact:echo,ok-token status:TASK_STATE_COMPLETED" {
		t.Fatalf("the webhook received %s", got)
	}
	waitFor(t, "GetTask shows the delivery", func() bool { return deliveryState(t, c, id, okID) == "delivered" })

	// A config registered on a task waiting for input gets the rest: its
	// webhook answers 410, and GetTask says the binding is dead.
	asked, err := c.SendMessage(ctx, requester.TextMessage("ask", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	made, err := c.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: asked.Task.ID, ID: "rotated", URL: gone.ts.URL, Token: "gone-token"})
	if err != nil || made.ID != "rotated" || made.TaskID != asked.Task.ID {
		t.Fatalf("create: %+v %v", made, err)
	}
	if got, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: asked.Task.ID, ID: "rotated"}); err != nil || *got != *made {
		t.Fatalf("get: %+v %v", got, err)
	}
	if _, err := c.SendMessage(ctx, requester.TextMessage("the blue one", asked.Task.ID, asked.Task.ContextID)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "GetTask shows the dead webhook", func() bool { return deliveryState(t, c, asked.Task.ID, "rotated") == "dead" })
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: asked.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	d := task.Metadata[agent.PushDeliveryMetadataKey].(map[string]any)["rotated"].(map[string]any)
	if d["status"] != 410.0 || !strings.Contains(d["reason"].(string), "410") {
		t.Fatalf("the dead webhook's entry: %v", d)
	}
	if _, err := time.Parse(time.RFC3339, d["at"].(string)); err != nil {
		t.Fatalf("at: %v", err)
	}

	// Delete is idempotent and answers {}; a deleted config is not found.
	for range 2 {
		if err := c.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: asked.Task.ID, ID: "rotated"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: asked.Task.ID, ID: "rotated"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("get of a deleted config: %v", err)
	}
	if _, err := c.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: "3f0b1c9e-0000-4000-8000-000000000000"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("list on an unknown task: %v", err)
	}
	// The raw answers: {} for a delete, invalid_params for a webhook that
	// is not https nor loopback.
	r := call(t, a.endpoint, req("DeleteTaskPushNotificationConfig", `{"taskId":"`+id+`","id":"`+okID+`"}`), nil)
	if r.Err != nil || string(r.Result) != "{}" {
		t.Fatalf("delete answered %s %+v", r.Result, r.Err)
	}
	r = call(t, a.endpoint, req("CreateTaskPushNotificationConfig", `{"taskId":"`+id+`","url":"http://hooks.example/a"}`), nil)
	if r.Err == nil || r.Err.Code != -32602 || !strings.Contains(r.Err.Message, "loopback") {
		t.Fatalf("a plain-http public webhook: %+v", r.Err)
	}
}

// A server with push behind a card that does not declare it refuses every
// push call, a message carrying a config included, and creates no task.
func TestAPushServerBehindACardWithoutPushRefusesPushCalls(t *testing.T) {
	a := startPushAgent(t, func(endpoint string) *a2a.AgentCard { return srvCard(endpoint, true, false) })
	hook := newHookReceiver(t, http.StatusOK)
	for _, tc := range []struct{ method, params string }{
		{"SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"taskPushNotificationConfig":{"url":"` + hook.ts.URL + `"}}}`},
		{"CreateTaskPushNotificationConfig", `{"taskId":"t","url":"` + hook.ts.URL + `"}`},
		{"GetTaskPushNotificationConfig", `{"taskId":"t","id":"c"}`},
		{"ListTaskPushNotificationConfigs", `{"taskId":"t"}`},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"t","id":"c"}`},
	} {
		t.Run(tc.method, func(t *testing.T) {
			r := call(t, a.endpoint, req(tc.method, tc.params), nil)
			if r.Err == nil || r.Err.Code != -32003 || r.Err.reason() != "PUSH_NOTIFICATION_NOT_SUPPORTED" {
				t.Fatalf("%s: %s %+v", tc.method, r.Result, r.Err)
			}
		})
	}
	r := call(t, a.endpoint, req("ListTasks", `{}`), nil)
	var l struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(r.Result, &l); err != nil || len(l.Tasks) != 0 {
		t.Fatalf("tasks after refused calls: %s %v", r.Result, err)
	}
	if got := hook.received(); len(got) != 0 {
		t.Fatalf("the webhook received %v", got)
	}
}

// deliveryState is the state GetTask shows for a config's webhook.
func deliveryState(t *testing.T, c *a2ahttp.Client, taskID, configID string) string {
	t.Helper()
	task, err := c.GetTask(srvCtx(t), &a2a.GetTaskRequest{ID: taskID})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := task.Metadata[agent.PushDeliveryMetadataKey].(map[string]any)
	d, _ := all[configID].(map[string]any)
	s, _ := d["state"].(string)
	return s
}

// waitFor polls until cond holds, bounded by the test's context.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := srvCtx(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
