package mqtt_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
	"github.com/a2abind/a2abind/transport/mqtt/broker"
)

// An agent that upper-cases text, served over MQTT through the embedded
// broker, and a requester that sends it one message.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	b, err := broker.Start(ctx, broker.Config{}) // 127.0.0.1, a free port
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	// The runtime: one handler, whatever the transport.
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		a := a2a.Artifact{ArtifactID: "shout", Parts: []a2a.Part{{Content: a2a.PartText(strings.ToUpper(t.Text()))}}}
		return t.Artifact(ctx, a, agent.ArtifactOptions{LastChunk: true}) // returning nil completes the task
	}))
	defer srv.Close(context.Background())

	// The responder: Client ID acme/lab/shouter, retained card online.
	card, err := agentcard.New(agentcard.Config{Name: "Shouter", Description: "Upper-cases text",
		Interfaces: []a2a.AgentInterface{a2amqtt.Interface(b.URL())}})
	if err != nil {
		log.Fatal(err)
	}
	ag, err := a2amqtt.NewAgent(ctx, a2amqtt.AgentConfig{Connection: a2amqtt.Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "shouter", Card: card, Server: srv})
	if err != nil {
		log.Fatal(err)
	}
	defer ag.Close(context.Background())

	// The requester.
	c, err := a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: a2amqtt.Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "asker"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())

	res, err := c.SendMessage(ctx, requester.TextMessage("hello, agent", "", ""), requester.ToAgent("shouter"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Task.Status.State)
	fmt.Println(res.Task.Artifacts[0].Parts[0].Content)
	// Output:
	// TASK_STATE_COMPLETED
	// HELLO, AGENT
}
