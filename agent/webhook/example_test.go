package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/webhook"
	"github.com/a2abind/a2abind/generated/a2a"
)

// A sender delivers a task's updates to the webhook of its config and
// reports what became of the binding.
func Example() {
	got := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("A2A-Notification-Token")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	reports := make(chan agent.PushReport, 4)
	s, err := webhook.New(webhook.Config{
		Reporter:      agent.PushReporterFunc(func(r agent.PushReport) { reports <- r }),
		AllowLoopback: true, // the receiver is on this machine
	})
	if err != nil {
		panic(err)
	}
	defer s.Close(context.Background())

	cfg := a2a.TaskPushNotificationConfig{ID: "cfg-1", TaskID: "task-1", URL: receiver.URL, Token: "t0k3n"}
	ev := &a2a.StreamResponse{Payload: &a2a.TaskStatusUpdateEvent{TaskID: "task-1", ContextID: "ctx-1",
		Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}}
	s.Notify(cfg, ev)

	fmt.Println("token:", <-got)
	r := <-reports
	fmt.Println(r.ConfigID, r.State, r.Status)
	// Output:
	// token: t0k3n
	// cfg-1 delivered 204
}
