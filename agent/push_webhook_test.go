package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/webhook"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// TestWebhookSenderKeepsNothingOfEndedTasks: 10,000 tasks, each created by
// a SendMessage carrying a push-notification config (as over HTTP: the
// agent makes the task ids) and completed at once,
// their pushes delivered over loopback HTTP by agent/webhook's Sender.
// The runtime calls Forget for none of them (Notifier); once every push is
// acknowledged the Sender keeps no config, and each task shows its
// delivery report.
func TestWebhookSenderKeepsNothingOfEndedTasks(t *testing.T) {
	const tasks, callers = 10_000, 8
	var pushes atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		pushes.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)

	var srv *agent.Server
	sender, err := webhook.New(webhook.Config{
		Reporter:      agent.PushReporterFunc(func(r agent.PushReport) { srv.PushReport(r) }),
		AllowLoopback: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv = agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		return turn.Complete(ctx, "done")
	}), agent.WithPush(agent.PushConfig{Notifier: sender, AllowLoopbackHTTP: true}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = srv.Close(ctx)
		_ = sender.Close(ctx)
	})

	ctx := context.Background()
	ids := make([]string, tasks)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := c; i < tasks; i += callers {
				payload := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{
					"message":{"messageId":"m-%d","role":"ROLE_USER","parts":[{"text":"go"}]},
					"configuration":{"taskPushNotificationConfig":{"url":%q,"token":"tok-%d"}}}}`, i, hook.URL+"/hook", i)
				req, _, perr := jsonrpc.DecodeRequest(payload)
				if perr != nil {
					t.Error(perr)
					return
				}
				err := srv.Serve(ctx, agent.Call{Request: req, IDs: tasklife.ResponderIDs}, agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
					if r.Err != nil {
						return r.Err
					}
					if task := taskOf(r.Result); task != nil && task.Status.State == a2a.TaskStateCompleted {
						ids[i] = task.ID
						return nil
					}
					return fmt.Errorf("reply %+v", r.Result)
				}))
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	deadline := time.Now().Add(time.Minute)
	for {
		st := sender.Stats()
		if st.Configs == 0 && st.Queued == 0 && st.InFlight == 0 && st.Delivered >= tasks {
			if st.Dead+st.Refused+st.Dropped+st.Discarded != 0 || st.Delivered != uint64(pushes.Load()) {
				t.Errorf("stats = %+v, %d pushes received", st, pushes.Load())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sender still keeps %d configs: %+v", st.Configs, st)
		}
		time.Sleep(time.Millisecond)
	}

	// The last report, made before the config was dropped, is on the task.
	var shown *a2a.Task
	for time.Now().Before(deadline) {
		req, _, perr := jsonrpc.DecodeRequest(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":%q}}`, ids[tasks-1]))
		if perr != nil {
			t.Fatal(perr)
		}
		if err := srv.Serve(ctx, agent.Call{Request: req}, agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
			shown = taskOf(r.Result)
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		if shown != nil && shown.Metadata[agent.PushDeliveryMetadataKey] != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	byConfig, _ := shown.Metadata[agent.PushDeliveryMetadataKey].(map[string]any)
	if len(byConfig) != 1 {
		t.Fatalf("task metadata = %v, want one delivery report", shown.Metadata)
	}
	for _, v := range byConfig {
		if d, _ := v.(map[string]any); d["state"] != string(agent.PushDelivered) {
			t.Errorf("delivery report = %v", v)
		}
	}
}

// taskOf is the task a reply holds, if any.
func taskOf(result any) *a2a.Task {
	switch v := result.(type) {
	case *a2a.Task:
		return v
	case *a2a.StreamResponse:
		t, _ := v.Payload.(*a2a.Task)
		return t
	case *a2a.SendMessageResponse:
		t, _ := v.Payload.(*a2a.Task)
		return t
	}
	return nil
}
