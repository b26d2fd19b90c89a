package http_test

import (
	"errors"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/offline"
)

// TestInteropA2AGoReadsTheAsleepAnswer: the official Go SDK's client reads
// nothing but HTTP 200 JSON-RPC answers; an agent that answers asleep with
// JSON-RPC errors gives it the same facts: the ErrorInfo reason
// AGENT_ASLEEP, and queued and the task to poll in its metadata; the task
// is then readable with the same client (docs/protocol.md §7.2).
func TestInteropA2AGoReadsTheAsleepAnswer(t *testing.T) {
	a, o := asleepAgent(t, agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true,
		Answer: offline.AsleepAnswerJSONRPC})
	ctx := srvCtx(t)
	c := goClient(t, a.base, a2aclient.WithCallInterceptors(bearer{token: "peer-a"}))
	_, err := c.SendMessage(ctx, goText("hello"))
	var ge *goa2a.Error
	if !errors.As(err, &ge) {
		t.Fatalf("SendMessage: %T %v, want an *a2a.Error", err, err)
	}
	// a2a-go keeps the ErrorInfo metadata but names the error by its code
	// (-32003: push notification not supported): the token is in the
	// metadata's error member.
	md, _ := ge.ErrorInfo().Value["metadata"].(map[string]string)
	taskID := md["taskId"]
	if md["error"] != "agent_asleep" || md["queued"] != "true" || taskID == "" {
		t.Fatalf("metadata %v", md)
	}
	tk, err := c.GetTask(ctx, &goa2a.GetTaskRequest{ID: goa2a.TaskID(taskID)})
	if err != nil || tk.Status.State != goa2a.TaskStateSubmitted {
		t.Fatalf("GetTask of the queued task: %v %v", tk, err)
	}
	o.SetAwake(true)
	for {
		tk, err = c.GetTask(ctx, &goa2a.GetTaskRequest{ID: goa2a.TaskID(taskID)})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status.State == goa2a.TaskStateCompleted {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: %s", taskID, tk.Status.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
