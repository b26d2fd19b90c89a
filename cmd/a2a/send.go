package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/cmd/a2a/internal/demo"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("send", "--broker URL --org O --unit U (--to ID | --pool P) [--stream] [--context C] [--task T] [--timeout D] [--json] TEXT",
		"a2a send --broker mqtt://127.0.0.1:1883 --org acme --unit lab --to echo hello", stderr)
	brokerURL := fs.String("broker", "", "broker URL: mqtt://host:port or tcp://host:port (mqtts:// or ssl:// for TLS)")
	org := fs.String("org", "", "org_id")
	unit := fs.String("unit", "", "unit_id")
	to := fs.String("to", "", "agent_id to send to")
	pool := fs.String("pool", "", "pool_id to send to instead of an agent")
	stream := fs.Bool("stream", false, "SendStreamingMessage: print each stream item as it arrives")
	contextID := fs.String("context", "", "contextId of the conversation to continue (default: a new one)")
	taskID := fs.String("task", "", "taskId to resume after INPUT_REQUIRED (default: a new task)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	as := fs.String("as", "", "the requester's own agent_id (default: send-<random>)")
	bearer := fs.String("token", "", "OAuth 2.0 access token, sent as a2a-authorization")
	routesFile := fs.String("routes", "", "handover routing state file (default: $XDG_STATE_HOME/a2a/routes.json)")
	if err := parse(fs, args); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	switch {
	case *brokerURL == "":
		return fail(2, "--broker is required")
	case (*to == "") == (*pool == ""):
		return fail(2, "give exactly one of --to and --pool")
	case text == "":
		return fail(2, "the message TEXT is missing")
	}
	if *as == "" {
		*as = "send-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	}
	ids := []string{"org", *org, "unit", *unit, "as", *as}
	if *to != "" {
		ids = append(ids, "to", *to)
	}
	if *pool != "" {
		ids = append(ids, "pool", *pool)
	}
	if err := checkIDs(ids...); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"task", *taskID}, {"context", *contextID}} {
		if f.v != "" && !mqttbind.ValidUUID(f.v) {
			return fail(2, "--%s: %q is not a UUID", f.name, f.v)
		}
	}
	if *routesFile == "" {
		p, err := defaultRoutesPath()
		if err != nil {
			return fail(1, "%v", err)
		}
		*routesFile = p
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: a2amqtt.Connection{Broker: *brokerURL}, Org: *org, Unit: *unit, ID: *as, Requester: requester.Config{Routes: fileRoutes{*routesFile}}})
	if err != nil {
		return fail(1, "%v", err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		c.Close(cctx)
	}()

	if *contextID == "" {
		*contextID = uuid.NewString()
	}
	msg := &a2a.Message{MessageID: uuid.NewString(), TaskID: *taskID, ContextID: *contextID, Role: a2a.RoleUser,
		Parts: []a2a.Part{{Content: a2a.PartText(text)}}}
	if msg.TaskID == "" {
		msg.TaskID = uuid.NewString()
	}
	target := requester.Target{Agent: *to, Pool: *pool}
	opts := []requester.CallOption{requester.To(target)}
	if *bearer != "" {
		opts = append(opts, requester.WithBearer(*bearer))
	}
	p := &printer{w: stdout, json: *asJSON}
	var final *a2a.Task
	if *stream {
		for it, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}, opts...) {
			if err != nil {
				return sendError(err)
			}
			p.item(it)
			final = p.apply(final, it)
		}
	} else {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg}, opts...)
		if err != nil {
			return sendError(err)
		}
		if res.Message != nil {
			p.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: res.Message}, Responder: res.Responder})
			return nil
		}
		p.item(requester.Item{StreamResponse: a2a.StreamResponse{Payload: res.Task}, Responder: res.Responder})
		final = res.Task
	}
	if final == nil || final.Status == nil {
		return fail(1, "no task state received")
	}
	p.summary(final)
	switch final.Status.State {
	case a2a.TaskStateCompleted, a2a.TaskStateInputRequired:
		return nil
	}
	return fail(1, "task %s ended %s", final.ID, final.Status.State)
}

func sendError(err error) error {
	var e *a2a.Error
	if errors.As(err, &e) {
		return fail(1, "%s (code %d): %s", e.Token, e.Code, e.Message)
	}
	return fail(1, "%v", err)
}

// printer writes replies for people or as JSON lines.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) item(it requester.Item) {
	if p.json {
		raw, _ := it.StreamResponse.MarshalJSON()
		b, _ := json.Marshal(struct {
			Responder string          `json:"responder,omitempty"`
			Item      json.RawMessage `json:"item"`
		}{it.Responder, raw})
		fmt.Fprintln(p.w, string(b))
		return
	}
	if it.Responder != "" {
		fmt.Fprintf(p.w, "responder   %s\n", it.Responder)
	}
	switch x := it.Payload.(type) {
	case *a2a.Task:
		fmt.Fprintf(p.w, "task        %s  context %s  %s\n", x.ID, x.ContextID, demo.StateOf(x.Status))
		for _, a := range x.Artifacts {
			fmt.Fprintf(p.w, "artifact    %s: %s\n", a.ArtifactID, demo.PartsText(a.Parts))
		}
		if x.Status != nil && x.Status.Message != nil {
			fmt.Fprintf(p.w, "message     %s\n", agent.TextOf(x.Status.Message))
		}
	case *a2a.TaskStatusUpdateEvent:
		line := demo.StateOf(x.Status)
		if x.Status != nil && x.Status.Message != nil {
			line += ": " + agent.TextOf(x.Status.Message)
		}
		fmt.Fprintf(p.w, "status      %s\n", line)
	case *a2a.TaskArtifactUpdateEvent:
		verb := "artifact"
		if x.Append {
			verb = "artifact+"
		}
		fmt.Fprintf(p.w, "%-11s %s: %s\n", verb, x.Artifact.ArtifactID, demo.PartsText(x.Artifact.Parts))
	case *a2a.Message:
		fmt.Fprintf(p.w, "message     %s\n", agent.TextOf(x))
	}
}

// apply follows the task's state through a stream.
func (p *printer) apply(t *a2a.Task, it requester.Item) *a2a.Task {
	switch x := it.Payload.(type) {
	case *a2a.Task:
		return x
	case *a2a.TaskStatusUpdateEvent:
		if t == nil {
			t = &a2a.Task{ID: x.TaskID, ContextID: x.ContextID}
		}
		t.Status = x.Status
	}
	return t
}

func (p *printer) summary(t *a2a.Task) {
	if p.json {
		b, _ := json.Marshal(map[string]string{"taskId": t.ID, "contextId": t.ContextID, "state": string(t.Status.State)})
		fmt.Fprintln(p.w, string(b))
		return
	}
	fmt.Fprintf(p.w, "ended       %s\n", t.Status.State)
	fmt.Fprintf(p.w, "follow up   --task %s --context %s\n", t.ID, t.ContextID)
}
