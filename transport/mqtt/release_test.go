package mqtt

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/a2abind/a2abind/agent"
)

// TestRequestBytesReleasedDuringTheTurn checks that a request's payload is
// not kept alive by the agent while its turn runs: with the handler still
// blocked, the payload's memory is collected.
func TestRequestBytesReleasedDuringTheTurn(t *testing.T) {
	b := startBroker(t, false)
	entered, unblock := make(chan struct{}), make(chan struct{})
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, _ *agent.Turn) error {
		close(entered)
		<-unblock
		return nil
	}))
	t.Cleanup(func() { srv.Close(context.Background()) })
	a := startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "o", Unit: "u", ID: "release", Card: testCard("R"), Server: srv})

	released := make(chan struct{})
	func() {
		payload := sendPayload(t, newMessage(strings.Repeat("x", 1<<20)))
		runtime.AddCleanup(&payload[0], func(ch chan struct{}) { close(ch) }, released)
		a.onPublish(paho.PublishReceived{Packet: &paho.Publish{Topic: a.requestTopic, QoS: 1, Payload: payload,
			Properties: &paho.PublishProperties{ResponseTopic: "$a2a/v1/reply/o/u/nobody/r", CorrelationData: []byte("c1")}}})
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not start")
	}
	deadline := time.After(10 * time.Second)
	for collected := false; !collected; {
		runtime.GC()
		select {
		case <-released:
			collected = true
		case <-deadline:
			close(unblock)
			t.Fatal("the request's payload is still referenced while the turn runs")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(unblock)
}
