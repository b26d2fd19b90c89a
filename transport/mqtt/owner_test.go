package mqtt

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
)

// nopNotifier is a Notifier that sends nothing: the push-notification
// config methods are served, and no webhook is called.
type nopNotifier struct{}

func (nopNotifier) Notify(a2a.TaskPushNotificationConfig, *a2a.StreamResponse) {}
func (nopNotifier) Forget(string, string)                                      {}

// Over MQTT, with the bearer token of each request (a2a-authorization)
// verified, tasks belong to their callers (docs/protocol.md §15): bob,
// another requester with a token of his own, gets task_not_found for
// alice's task from every method, as for a task the agent does not hold,
// and ListTasks shows him none of hers; alice still reaches it.
func TestTasksBelongToTheirCallersOverMQTT(t *testing.T) {
	b := startBroker(t, false)
	byToken := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		switch token {
		case "tok-alice", "tok-bob":
			return agent.Caller{Subject: strings.TrimPrefix(token, "tok-")}, nil
		}
		return agent.Caller{}, a2a.NewError(a2a.TokenUnauthenticated, "unknown token")
	})
	srv := echoServerWith(t, refHandler("vault"), agent.WithVerifier(byToken), agent.WithPush(agent.PushConfig{Notifier: nopNotifier{}}))
	card := testCard("Vault")
	card.Capabilities.PushNotifications = new(bool)
	*card.Capabilities.PushNotifications = true
	startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "vault", Card: card, Server: srv})
	alice, bob := startClient(t, b.URL(), "alice", defaultProfile), startClient(t, b.URL(), "bob", defaultProfile)
	ctx := testCtx(t)
	as := func(who string) []requester.CallOption {
		return []requester.CallOption{requester.WithBearer("tok-" + who), requester.ToAgent("vault")}
	}

	res, err := alice.SendMessage(ctx, requester.TextMessage("ask", uuid.NewString(), ""), as("alice")...)
	if err != nil || res.Task == nil || res.Task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task: %+v %v", res, err)
	}
	mine := res.Task
	cfg, err := alice.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: mine.ID, URL: "https://hooks.example/alice"}, as("alice")...)
	if err != nil {
		t.Fatal(err)
	}

	// Each call, by bob, on alice's task and on an id no task has.
	cases := []struct {
		name string
		call func(id string) error
		// unknownStarts is set where an unknown id is not an error: over
		// MQTT the requester makes task ids, and a message naming a new
		// one starts a task (docs/protocol.md §4.2).
		unknownStarts bool
	}{
		{"GetTask", func(id string) error {
			_, err := bob.GetTask(ctx, &a2a.GetTaskRequest{ID: id}, as("bob")...)
			return err
		}, false},
		{"CancelTask", func(id string) error {
			_, err := bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}, as("bob")...)
			return err
		}, false},
		{"SubscribeToTask", func(id string) error {
			for _, err := range bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}, as("bob")...) {
				return err
			}
			return errors.New("an empty stream")
		}, false},
		{"CreateTaskPushNotificationConfig", func(id string) error {
			_, err := bob.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: id, ID: cfg.ID, URL: "https://hooks.example/bob"}, as("bob")...)
			return err
		}, false},
		{"GetTaskPushNotificationConfig", func(id string) error {
			_, err := bob.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID}, as("bob")...)
			return err
		}, false},
		{"ListTaskPushNotificationConfigs", func(id string) error {
			_, err := bob.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}, as("bob")...)
			return err
		}, false},
		{"DeleteTaskPushNotificationConfig", func(id string) error {
			return bob.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID}, as("bob")...)
		}, false},
		{"a follow-up message", func(id string) error {
			_, err := bob.SendMessage(ctx, requester.TextMessage("the first", id, ""), as("bob")...)
			return err
		}, true},
		{"a streamed follow-up message", func(id string) error {
			for _, err := range bob.SendStreamingMessage(ctx, requester.TextMessage("the first", id, ""), as("bob")...) {
				return err
			}
			return errors.New("an empty stream")
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *a2a.Error
			if err := tc.call(mine.ID); !errors.As(err, &got) || got.Token != a2a.TokenTaskNotFound {
				t.Fatalf("bob on alice's task: %v, want task_not_found", err)
			}
			want := "task " + mine.ID + " not found"
			if !tc.unknownStarts {
				unknown := uuid.NewString()
				var e *a2a.Error
				if err := tc.call(unknown); !errors.As(err, &e) || e.Token != a2a.TokenTaskNotFound {
					t.Fatalf("bob on an unknown task: %v", err)
				}
				want = strings.ReplaceAll(e.Message, unknown, mine.ID)
			}
			if got.Message != want {
				t.Fatalf("bob on alice's task: %q; on an unknown task: %q", got.Message, want)
			}
		})
	}

	// ListTasks: each sees their own.
	bobs, err := bob.SendMessage(ctx, requester.TextMessage("hello", uuid.NewString(), mine.ContextID), as("bob")...)
	if err != nil || bobs.Task.ContextID != mine.ContextID {
		t.Fatalf("bob's task in the same context id: %+v %v", bobs, err)
	}
	for _, who := range []struct{ name, want string }{{"alice", mine.ID}, {"bob", bobs.Task.ID}} {
		c := alice
		if who.name == "bob" {
			c = bob
		}
		for _, ctxID := range []string{"", mine.ContextID} {
			l, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID}, as(who.name)...)
			if err != nil || len(l.Tasks) != 1 || l.Tasks[0].ID != who.want || l.TotalSize != 1 {
				t.Fatalf("%s lists %+v (context %q): %v", who.name, l, ctxID, err)
			}
		}
	}

	// Alice's task is as she left it, and she resumes it.
	got, err := alice.GetTask(ctx, &a2a.GetTaskRequest{ID: mine.ID}, as("alice")...)
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task after bob's calls: %+v %v", got, err)
	}
	if l, err := alice.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: mine.ID}, as("alice")...); err != nil ||
		len(l.Configs) != 1 || l.Configs[0].URL != "https://hooks.example/alice" {
		t.Fatalf("alice's configs after bob's calls: %+v %v", l, err)
	}
	done, err := alice.SendMessage(ctx, requester.TextMessage("the first", mine.ID, mine.ContextID), as("alice")...)
	if err != nil || done.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("alice's resume: %+v %v", done, err)
	}
}

// defaultProfile gives a client the profile's own retry timings, generous
// on a loaded machine.
func defaultProfile(cfg *ClientConfig) { cfg.Requester.Retry = mqttbind.DefaultRetryProfile() }

// echoServerWith is a server of h, closed when the test ends.
func echoServerWith(t *testing.T, h agent.Handler, opts ...agent.Option) *agent.Server {
	t.Helper()
	s := agent.NewServer(h, opts...)
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}
