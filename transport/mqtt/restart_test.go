package mqtt

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestBrokerRestartRecoversThroughTheRetryProfile: a broker restart (with
// persistence) loses the reply of a request in progress; the requester's
// retry profile republishes with the same Task.id, and dedup by Task.id
// answers it with the task, never creating a second one.
func TestBrokerRestartRecoversThroughTheRetryProfile(t *testing.T) {
	for _, name := range mqtttest.BrokerNames() {
		t.Run(name, func(t *testing.T) {
			b := mqtttest.Start(t, name, mqtttest.WithPersistence())
			store := taskstore.NewMemory(nil)
			started := make(chan struct{}, 4)
			release := make(chan struct{})
			var runs atomic.Int32
			srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
				runs.Add(1)
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				return turn.Artifact(ctx, a2a.Artifact{ArtifactID: "r", Parts: []a2a.Part{{Content: a2a.PartText("done")}}}, agent.ArtifactOptions{LastChunk: true})
			}), agent.WithStore(store))
			t.Cleanup(func() { srv.Close(context.Background()) })
			startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "slow", Card: testCard("Slow"), Server: srv})
			profile := mqttbind.RetryProfile{ReplyFirstTimeout: 2 * time.Second, StreamIdleTimeout: 5 * time.Second, MaxAttempts: 5,
				BackoffJitter: 0.2, RetryBackoff: []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, time.Second}}
			c := startClient(t, b.URL(), "req", func(cfg *ClientConfig) { cfg.Requester.Retry = profile })

			type outcome struct {
				res *requester.Result
				err error
			}
			done := make(chan outcome, 1)
			msg := &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("work")}}}
			go func() {
				res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg}, requester.To(requester.Target{Agent: "slow"}))
				done <- outcome{res, err}
			}()
			<-started
			b.Restart()
			close(release)
			o := <-done
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.res.Task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%+v", o.res.Task.Status)
			}
			page, err := store.List(context.Background(), taskstore.Filter{})
			if err != nil || page.Total != 1 || runs.Load() != 1 {
				t.Fatalf("%d tasks stored, handler ran %d times: dedup by Task.id must keep one", page.Total, runs.Load())
			}
		})
	}
}
