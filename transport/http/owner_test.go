package http_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// nopNotifier is a Notifier that sends nothing: the push-notification
// config methods are served, and no webhook is called.
type nopNotifier struct{}

func (nopNotifier) Notify(a2a.TaskPushNotificationConfig, *a2a.StreamResponse) {}
func (nopNotifier) Forget(string, string)                                      {}

// Over HTTP, with the bearer token of each request (the Authorization
// header) verified, tasks belong to their callers (docs/protocol.md §15):
// bob, with a token of his own, gets task_not_found for alice's task from
// every method, with the message of an unknown task, and ListTasks shows
// him none of hers; alice still reaches it.
func TestTasksBelongToTheirCallersOverHTTP(t *testing.T) {
	byToken := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		switch token {
		case "tok-alice", "tok-bob":
			return agent.Caller{Subject: strings.TrimPrefix(token, "tok-")}, nil
		}
		return agent.Caller{}, a2a.NewError(a2a.TokenUnauthenticated, "unknown token")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv := agent.NewServer(srvHandler(nil), agent.WithVerifier(byToken), agent.WithPush(agent.PushConfig{Notifier: nopNotifier{}}))
	t.Cleanup(func() { srv.Close(context.Background()) })
	card := srvCard(base+"/a2a", true, false)
	push := true
	card.Capabilities.PushNotifications = &push
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: card})
	if err != nil {
		t.Fatal(err)
	}
	go h.Serve(ln, "/a2a")
	t.Cleanup(func() { h.Close(context.Background()) })
	alice, bob := cliClient(t, a2ahttp.ClientConfig{URL: base}), cliClient(t, a2ahttp.ClientConfig{URL: base})
	ctx := srvCtx(t)
	as := func(who string) requester.CallOption { return requester.WithBearer("tok-" + who) }

	res, err := alice.SendMessage(ctx, requester.TextMessage("ask", "", ""), as("alice"))
	if err != nil || res.Task == nil || res.Task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task: %+v %v", res, err)
	}
	mine := res.Task
	cfg, err := alice.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: mine.ID, URL: "https://hooks.example/alice"}, as("alice"))
	if err != nil {
		t.Fatal(err)
	}

	// Each call, by bob, on alice's task and on an id no task has: the
	// answers are the same.
	for _, tc := range []struct {
		name string
		call func(id string) error
	}{
		{"GetTask", func(id string) error {
			_, err := bob.GetTask(ctx, &a2a.GetTaskRequest{ID: id}, as("bob"))
			return err
		}},
		{"CancelTask", func(id string) error {
			_, err := bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id}, as("bob"))
			return err
		}},
		{"SubscribeToTask", func(id string) error {
			for _, err := range bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}, as("bob")) {
				return err
			}
			return errors.New("an empty stream")
		}},
		{"CreateTaskPushNotificationConfig", func(id string) error {
			_, err := bob.CreateTaskPushNotificationConfig(ctx, &a2a.TaskPushNotificationConfig{TaskID: id, ID: cfg.ID, URL: "https://hooks.example/bob"}, as("bob"))
			return err
		}},
		{"GetTaskPushNotificationConfig", func(id string) error {
			_, err := bob.GetTaskPushNotificationConfig(ctx, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID}, as("bob"))
			return err
		}},
		{"ListTaskPushNotificationConfigs", func(id string) error {
			_, err := bob.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}, as("bob"))
			return err
		}},
		{"DeleteTaskPushNotificationConfig", func(id string) error {
			return bob.DeleteTaskPushNotificationConfig(ctx, &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID}, as("bob"))
		}},
		{"a follow-up message", func(id string) error {
			_, err := bob.SendMessage(ctx, requester.TextMessage("the first", id, ""), as("bob"))
			return err
		}},
		{"a streamed follow-up message", func(id string) error {
			for _, err := range bob.SendStreamingMessage(ctx, requester.TextMessage("the first", id, ""), as("bob")) {
				return err
			}
			return errors.New("an empty stream")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unknown := uuid.NewString()
			var got, want *a2a.Error
			if err := tc.call(mine.ID); !errors.As(err, &got) || got.Token != a2a.TokenTaskNotFound {
				t.Fatalf("bob on alice's task: %v, want task_not_found", err)
			}
			if err := tc.call(unknown); !errors.As(err, &want) || want.Token != a2a.TokenTaskNotFound {
				t.Fatalf("bob on an unknown task: %v", err)
			}
			if got.Message != strings.ReplaceAll(want.Message, unknown, mine.ID) {
				t.Fatalf("bob on alice's task: %q; on an unknown task: %q", got.Message, want.Message)
			}
		})
	}

	// ListTasks: each sees their own, in a context id they share too.
	bobs, err := bob.SendMessage(ctx, requester.TextMessage("hello", "", mine.ContextID), as("bob"))
	if err != nil || bobs.Task.ContextID != mine.ContextID {
		t.Fatalf("bob's task in the same context id: %+v %v", bobs, err)
	}
	for _, who := range []struct {
		name string
		c    *a2ahttp.Client
		want string
	}{{"alice", alice, mine.ID}, {"bob", bob, bobs.Task.ID}} {
		for _, ctxID := range []string{"", mine.ContextID} {
			l, err := who.c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: ctxID}, as(who.name))
			if err != nil || len(l.Tasks) != 1 || l.Tasks[0].ID != who.want || l.TotalSize != 1 {
				t.Fatalf("%s lists %+v (context %q): %v", who.name, l, ctxID, err)
			}
		}
	}

	// Alice's task is as she left it, and she resumes it.
	got, err := alice.GetTask(ctx, &a2a.GetTaskRequest{ID: mine.ID}, as("alice"))
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task after bob's calls: %+v %v", got, err)
	}
	if l, err := alice.ListTaskPushNotificationConfigs(ctx, &a2a.ListTaskPushNotificationConfigsRequest{TaskID: mine.ID}, as("alice")); err != nil ||
		len(l.Configs) != 1 || l.Configs[0].URL != "https://hooks.example/alice" {
		t.Fatalf("alice's configs after bob's calls: %+v %v", l, err)
	}
	done, err := alice.SendMessage(ctx, requester.TextMessage("the first", mine.ID, mine.ContextID), as("alice"))
	if err != nil || done.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("alice's resume: %+v %v", done, err)
	}
}
