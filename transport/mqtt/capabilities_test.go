package mqtt

import (
	"context"
	"errors"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// An agent whose card does not declare streaming refuses the streaming
// methods over MQTT as it does over HTTP (the runtime enforces the card,
// A2A v1.0 §3.3.4), and still answers SendMessage; an updated card is
// enforced from then on.
func TestAgentEnforcesItsCardCapabilities(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	card := testCard("Plain")
	no := false
	card.Capabilities = &a2a.AgentCapabilities{Streaming: &no}
	ag := startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "plain", Card: card, Server: echoServer(t)})
	c := startClient(t, b.URL(), "asker")
	ctx := testCtx(t)
	streamErr := func() error {
		for _, err := range c.SendStreamingMessage(ctx, requester.TextMessage("x", "", ""), requester.ToAgent("plain")) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := streamErr(); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("stream to an agent that does not stream: %v, want unsupported_operation", err)
	}
	if res, err := c.SendMessage(ctx, requester.TextMessage("x", "", ""), requester.ToAgent("plain")); err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage: %+v %v", res, err)
	}
	if err := ag.UpdateCard(context.Background(), testCard("Streaming now")); err != nil {
		t.Fatal(err)
	}
	if err := streamErr(); err != nil {
		t.Fatalf("stream after the card declares streaming: %v", err)
	}
}
