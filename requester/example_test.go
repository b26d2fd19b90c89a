package requester_test

import (
	"context"
	"fmt"
	"net"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// A requester talks to an agent through any transport; here the agent is
// served over HTTP on a loopback port, and the same calls work over MQTT
// with transport/mqtt.NewClient (plus requester.ToAgent to name the agent).
func Example() {
	ctx := context.Background()

	// The agent: a handler that asks once for input, then completes.
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, t *agent.Turn) error {
		if !t.Resumed {
			return t.AskInput(ctx, "hello to whom?")
		}
		return t.Complete(ctx, "hello, "+t.Text())
	}))
	defer srv.Close(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	url := "http://" + ln.Addr().String()
	streaming := false
	h, err := a2ahttp.NewHandler(a2ahttp.HandlerConfig{Server: srv, Card: &a2a.AgentCard{
		Name: "greeter", Description: "greets", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{a2ahttp.JSONRPCInterface(url + "/a2a")},
		Capabilities:        &a2a.AgentCapabilities{Streaming: &streaming},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "greet", Name: "Greet", Description: "greets", Tags: []string{"greeting"}}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	go h.Serve(ln, "/a2a")
	defer h.Close(ctx)

	// The requester: resolve the card, then a two-turn conversation.
	c, err := a2ahttp.NewClient(ctx, a2ahttp.ClientConfig{URL: url})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	conv := c.NewConversation(requester.Target{})
	first, err := conv.Turn(ctx, "greet")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(first.Task.Status.State, agent.TextOf(first.Task.Status.Message))
	second, err := conv.Resume(ctx, first.Task.ID, "world")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(second.Task.Status.State, agent.TextOf(second.Task.Status.Message))
	// Output:
	// TASK_STATE_INPUT_REQUIRED hello to whom?
	// TASK_STATE_COMPLETED hello, world
}
