package mqtt

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestAsleepAgentOverMQTTQueuesAndTheRequesterIsToldOnce: the offline
// profile lives in the runtime, so an asleep agent served over MQTT queues
// too: the requester gets requester.Queued for the task id it made (never
// resent), and GetTask over MQTT finds the task COMPLETED after the wake
// (docs/protocol.md §7).
func TestAsleepAgentOverMQTTQueuesAndTheRequesterIsToldOnce(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		q, _, err := inbox.OpenBolt(filepath.Join(t.TempDir(), "queue.db"), inbox.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		o, err := agent.NewOffline(agent.OfflineConfig{Mode: offline.ReachabilityModeUnavailableStoreForward, StoreForward: true, Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		srv := echoServer(t, agent.WithOffline(o))
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "sleeper", Card: testCard("sleeper"), Server: srv})
		c := startClient(t, b.URL(), "req")
		ctx := testCtx(t)
		to := requester.To(requester.Target{Agent: "sleeper"})
		req := requester.TextMessage("read the meter", "", "")
		_, err = c.SendMessage(ctx, req, to)
		var qd *requester.Queued
		if !errors.As(err, &qd) {
			t.Fatalf("SendMessage: %v, want requester.Queued", err)
		}
		if qd.TaskID == "" {
			t.Fatal("queued without a task id")
		}
		if st, _ := o.Stats(ctx); st.Messages != 1 {
			t.Fatalf("%d records queued, want 1 (sent once)", st.Messages)
		}
		o.SetAwake(true)
		for {
			tk, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: qd.TaskID}, to)
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status.State == a2a.TaskStateCompleted {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("task %s: %s", qd.TaskID, tk.Status.State)
			case <-time.After(10 * time.Millisecond):
			}
		}
		if st, _ := o.Stats(context.Background()); st.Delivered != 1 {
			t.Errorf("%d delivered", st.Delivered)
		}
	})
}
