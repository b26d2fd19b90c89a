// Package refagent is the reference agent of the a2a command and its demo:
// an echo agent whose behaviour is chosen by the text of the message,
// served over MQTT (with a spawned instance {id}-c1 that serves the tasks
// it hands over), over HTTP (the A2A JSON-RPC binding), or both at once.
package refagent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agentcard"
	"github.com/a2abind/a2abind/generated/a2a"
)

// Handler returns the reference agent's behaviour for agent self, which
// hands tasks over to spawned ("" for none). The behaviour is chosen by the
// text of the message (README, "the reference agent"):
//
//   - any text: a COMPLETED task with one artifact echoing the text;
//   - text beginning "ask": INPUT_REQUIRED with a question, and the
//     follow-up completes the task;
//   - text beginning "handover": the task goes to the spawned instance
//     {id}-c1, which asks a question and completes the task on the
//     follow-up; an agent without a spawned instance (the instance itself,
//     or an agent served over HTTP alone), and any "handover" sent over HTTP
//     (agent.ErrNoHandover: no reply can name a new responder), keeps the
//     task and asks the same question itself;
//   - text beginning "fail": FAILED; "slow N": completes after N seconds.
//
// Every completed artifact says how many earlier tasks share its context,
// and names the caller's subject when a verifier gave one.
// Work is streamed as WORKING and two artifact chunks, so a streaming
// request sees the whole progression.
func Handler(self, spawned string) agent.HandlerFunc {
	return func(ctx context.Context, t *agent.Turn) error {
		text := strings.TrimSpace(t.Text())
		if t.Resumed {
			return finish(ctx, t, "answer received: "+text)
		}
		word := strings.ToLower(strings.SplitN(text, " ", 2)[0])
		switch word {
		case "ask":
			return t.AskInput(ctx, self+" asks: which option do you want?")
		case "handover":
			if spawned == "" {
				return t.AskInput(ctx, self+" has no spawned instance to hand over to and keeps this task: what size do you need?")
			}
			if err := t.Handover(ctx, spawned); errors.Is(err, agent.ErrNoHandover) {
				// Over HTTP: nobody could be told, so the task stays here.
				return t.AskInput(ctx, self+" cannot hand this task over on this binding and keeps it: what size do you need?")
			} else if err != nil {
				return err
			}
			return t.AskInput(ctx, spawned+" took over this task: what size do you need?")
		case "fail":
			return t.Fail(ctx, self+" failed as asked")
		case "slow":
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(text, strings.SplitN(text, " ", 2)[0])))
			if err := t.Working(ctx, fmt.Sprintf("%s works for %d s", self, n)); err != nil {
				return err
			}
			select {
			case <-time.After(time.Duration(n) * time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return finish(ctx, t, "echo: "+text)
	}
}

// Version is the version the reference agent's card states.
const Version = "0.1.0"

// finish streams the result as WORKING and two artifact chunks; returning
// nil then completes the task.
func finish(ctx context.Context, t *agent.Turn, text string) error {
	if err := t.Working(ctx, "working on it"); err != nil {
		return err
	}
	earlier, err := t.ContextTasks(ctx)
	if err != nil {
		return err
	}
	chunks := []string{text, fmt.Sprintf(" (earlier tasks in this context: %d)", len(earlier))}
	if t.Caller.Subject != "" {
		// Only an agent with a verifier has subjects (a2a agent --tokens).
		chunks[1] += " (caller: " + t.Caller.Subject + ")"
	}
	for i, c := range chunks {
		a := a2a.Artifact{ArtifactID: "result", Name: "result", Parts: []a2a.Part{{Content: a2a.PartText(c)}}}
		if err := t.Artifact(ctx, a, agent.ArtifactOptions{Append: i > 0, LastChunk: i == len(chunks)-1}); err != nil {
			return err
		}
	}
	return nil
}

// BearerScheme is the name of the card's security scheme when the agent
// requires a bearer token.
const BearerScheme = "bearer"

// RequireBearer states in card that every call needs a bearer token in the
// Authorization header (HTTP) or the a2a-authorization user property
// (MQTT): an HTTP Bearer security scheme (A2A v1.0, AgentCard
// securitySchemes) required by the whole agent.
func RequireBearer(card *a2a.AgentCard) {
	card.SecuritySchemes = map[string]a2a.SecurityScheme{
		BearerScheme: {Scheme: &a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "a token the agent accepts (a2a agent --tokens): Authorization over HTTP, a2a-authorization over MQTT"}},
	}
	card.SecurityRequirements = []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{BearerScheme: {List: []string{}}}}}
}

// MQTTInterface is the card's entry for the agent served over MQTT
// through the broker at brokerURL (docs/protocol.md, the Agent Card).
func MQTTInterface(brokerURL string) a2a.AgentInterface {
	return a2a.AgentInterface{URL: brokerURL, ProtocolBinding: agentcard.BindingMQTT, ProtocolVersion: agentcard.ProtocolVersion}
}

// Card is the reference agent's card, listing interfaces in order of
// preference (A2A v1.0 §8.3.1); handsOver says whether the agent has a
// spawned instance {id}-c1 to hand tasks to.
func Card(id string, handsOver bool, interfaces ...a2a.AgentInterface) *a2a.AgentCard {
	yes := true
	handover := "'handover' hands the task to " + id + "-c1"
	if !handsOver {
		handover = "'handover' is answered by " + id + " itself (no spawned instance)"
	}
	return &a2a.AgentCard{
		Name:                id,
		Description:         "a2abind reference agent: echoes text; 'ask' asks for input, " + handover + ", 'fail' fails, 'slow N' takes N seconds.",
		SupportedInterfaces: interfaces,
		Provider:            &a2a.AgentProvider{URL: "https://github.com/a2abind/a2abind", Organization: "a2abind"},
		Version:             Version,
		Capabilities:        &a2a.AgentCapabilities{Streaming: &yes},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills: []a2a.AgentSkill{
			{ID: "echo", Name: "Echo", Description: "Echoes the text back as an artifact.", Tags: []string{"echo"}, Examples: []string{"hello"}},
			{ID: "multi-turn", Name: "Multi-turn", Description: "Asks a question and completes on the answer; hands tasks over.", Tags: []string{"input-required", "handover"}, Examples: []string{"ask me", "handover"}},
		},
	}
}
