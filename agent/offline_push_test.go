package agent

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// offlinePushFixture is an asleep agent with store-and-forward and push
// notifications through a fakeNotifier.
func offlinePushFixture(t *testing.T) (*fixture, *Offline, *fakeNotifier) {
	t.Helper()
	q, _, err := inbox.OpenBolt(filepath.Join(t.TempDir(), "queue.db"), inbox.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	o, err := NewOffline(OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	f, n := pushFixture(t, &turnLog{}, PushConfig{}, WithOffline(o), WithClock(c.Now))
	f.ids = tasklife.ResponderIDs
	return f, o, n
}

// A message queued while the agent sleeps keeps the push config it
// carries, with the id the server gave it: GetTaskPushNotificationConfig
// and ListTaskPushNotificationConfigs answer from the queued message
// (a config it does not carry is task_not_found, a change of its configs
// unsupported_operation, the delete of another config {}); the task the
// delivery creates has that config, under the same id, and its events are
// pushed to it. A queued message canceled before delivery leaves its task
// CANCELED with the config, and that final status is pushed.
func TestAQueuedMessageKeepsItsPushConfig(t *testing.T) {
	f, o, n := offlinePushFixture(t)
	queue := func(text string) string {
		t.Helper()
		rs := f.sendWithHook(pushCaps, a2a.MethodSendMessage, msg("", "", text), hook("", "", "https://hooks.example/a"), false)
		return queuedTaskID(t, rs[0])
	}
	id := queue("later")

	list := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs,
		&a2a.ListTaskPushNotificationConfigsRequest{TaskID: id}))
	if len(list.Configs) != 1 || list.Configs[0].ID == "" || list.Configs[0].TaskID != id || list.Configs[0].URL != "https://hooks.example/a" ||
		list.Configs[0].Token != "tok-" {
		t.Fatalf("configs of the queued task: %+v, want the one its message carries, with an id and the task's id", list.Configs)
	}
	cfg := list.Configs[0]
	got := resultOf[a2a.TaskPushNotificationConfig](t, f.callCaps(pushCaps, a2a.MethodGetTaskPushNotificationConfig,
		&a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID}))
	if got != cfg {
		t.Fatalf("get %+v, want %+v", got, cfg)
	}
	for _, tc := range []struct {
		name   string
		method a2a.Method
		params any
		want   a2a.Token
		says   string
	}{
		{"get of a config the message does not carry", a2a.MethodGetTaskPushNotificationConfig,
			&a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: "other"}, a2a.TokenTaskNotFound, "has no push-notification config"},
		{"create", a2a.MethodCreateTaskPushNotificationConfig, hook(id, "", "https://hooks.example/b"), a2a.TokenUnsupportedOperation, "offline queue"},
		{"delete of its config", a2a.MethodDeleteTaskPushNotificationConfig,
			&a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: cfg.ID}, a2a.TokenUnsupportedOperation, "offline queue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := soleError(t, f.callCaps(pushCaps, tc.method, tc.params))
			if e.Token != tc.want || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("%s %q, want %s saying %q", e.Token, e.Message, tc.want, tc.says)
			}
		})
	}
	if r := resultOf[map[string]any](t, f.callCaps(pushCaps, a2a.MethodDeleteTaskPushNotificationConfig,
		&a2a.DeleteTaskPushNotificationConfigRequest{TaskID: id, ID: "other"})); len(r) != 0 {
		t.Fatalf("delete of another config answered %v, want {}", r)
	}
	if all := n.all(); len(all) != 0 {
		t.Fatalf("notified while queued: %+v", all)
	}

	// Canceled while queued: CANCELED with its config, which gets the
	// final status.
	canceled := queue("never mind")
	ccfg := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs,
		&a2a.ListTaskPushNotificationConfigsRequest{TaskID: canceled})).Configs[0]
	if got := taskOf(t, f.call(a2a.MethodCancelTask, &a2a.CancelTaskRequest{ID: canceled})[0]); got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %s", got.Status.State)
	}
	after := resultOf[a2a.ListTaskPushNotificationConfigsResponse](t, f.callCaps(pushCaps, a2a.MethodListTaskPushNotificationConfigs,
		&a2a.ListTaskPushNotificationConfigsRequest{TaskID: canceled}))
	if len(after.Configs) != 1 || after.Configs[0] != ccfg {
		t.Fatalf("configs of the task canceled while queued: %+v, want %+v", after.Configs, ccfg)
	}
	if got := n.items(ccfg.ID); !slices.Equal(got, []string{"status:TASK_STATE_CANCELED"}) {
		t.Fatalf("pushed to the canceled task's config: %v", got)
	}

	// Delivered: the task has the config under the same id, and its
	// events are pushed to it.
	o.SetAwake(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs := f.call(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id})
		if rs[0].Err == nil && taskOf(t, rs[0]).Status.State == a2a.TaskStateCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued task was not completed: %+v", rs[0])
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec, err := f.srv.Store().Get(context.Background(), id)
	if err != nil || len(rec.PushConfigs) != 1 || rec.PushConfigs[0] != cfg {
		t.Fatalf("the delivered task's configs: %+v %v, want %+v", rec.PushConfigs, err, cfg)
	}
	if got := n.items(cfg.ID); len(got) == 0 || got[len(got)-1] != "status:TASK_STATE_COMPLETED" {
		t.Fatalf("pushed to the delivered task's config: %v", got)
	}
}
