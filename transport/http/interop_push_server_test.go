package http_test

import (
	"errors"
	"net/http"
	"testing"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
)

// The official Go SDK's client manages push-notification configs on this
// server (A2A v1.0 §3.1.7–§3.1.10) and reads its answers: the created
// config with the id the server made, Get, List, the empty result of
// Delete, and task_not_found for a deleted config.
func TestInteropA2AGoClientPushConfigs(t *testing.T) {
	a := startPushAgent(t, pushCard)
	hook := newHookReceiver(t, http.StatusOK)
	c := goClient(t, a.base)
	ctx := srvCtx(t)
	task := goSend(t, c, goText("hello"))

	made, err := c.CreateTaskPushConfig(ctx, &goa2a.PushConfig{TaskID: task.ID, URL: hook.ts.URL, Token: "tok"})
	if err != nil || made.ID == "" || made.TaskID != task.ID || made.URL != hook.ts.URL || made.Token != "tok" {
		t.Fatalf("Create: %+v %v", made, err)
	}
	got, err := c.GetTaskPushConfig(ctx, &goa2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: made.ID})
	if err != nil || got.ID != made.ID || got.URL != made.URL {
		t.Fatalf("Get: %+v %v", got, err)
	}
	list, err := c.ListTaskPushConfigs(ctx, &goa2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(list) != 1 || list[0].ID != made.ID {
		t.Fatalf("List: %+v %v", list, err)
	}
	if err := c.DeleteTaskPushConfig(ctx, &goa2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: made.ID}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.GetTaskPushConfig(ctx, &goa2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: made.ID}); !errors.Is(err, goa2a.ErrTaskNotFound) {
		t.Fatalf("Get of a deleted config: %v", err)
	}
	if list, err := c.ListTaskPushConfigs(ctx, &goa2a.ListTaskPushConfigRequest{TaskID: task.ID}); err != nil || len(list) != 0 {
		t.Fatalf("List after Delete: %+v %v", list, err)
	}
}
