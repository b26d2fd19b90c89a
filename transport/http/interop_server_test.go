package http_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	a2ahttp "github.com/a2abind/a2abind/transport/http"
)

// goClient resolves the agent's card from its base URL with a2a-go's card
// resolver (GET /.well-known/agent-card.json) and makes an a2a-go client
// from it, which picks the card's JSONRPC interface and sends
// A2A-Version 1.0.
func goClient(t *testing.T, base string, opts ...a2aclient.FactoryOption) *a2aclient.Client {
	t.Helper()
	ctx := srvCtx(t)
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(card.SupportedInterfaces) != 1 || card.SupportedInterfaces[0].ProtocolBinding != goa2a.TransportProtocolJSONRPC ||
		card.SupportedInterfaces[0].ProtocolVersion != "1.0" || !card.Capabilities.Streaming {
		t.Fatalf("a2a-go read the card as %+v", card)
	}
	c, err := a2aclient.NewFromCard(ctx, card, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func goText(text string) *goa2a.SendMessageRequest {
	return &goa2a.SendMessageRequest{Message: goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart(text))}
}

// goSend sends a message through c and returns the task it answers with.
func goSend(t *testing.T, c *a2aclient.Client, req *goa2a.SendMessageRequest) *goa2a.Task {
	t.Helper()
	res, err := c.SendMessage(srvCtx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	tk, ok := res.(*goa2a.Task)
	if !ok {
		t.Fatalf("result %T, want a task", res)
	}
	return tk
}

// The official Go SDK's JSON-RPC client drives this server through the
// A2A v1.0 stories.
func TestInteropA2AGoClient(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	c := goClient(t, a.base)
	ctx := srvCtx(t)

	var first *goa2a.Task
	t.Run("SendMessage", func(t *testing.T) {
		first = goSend(t, c, goText("hello"))
		if first.Status.State != goa2a.TaskStateCompleted || first.ID == "" || first.ContextID == "" ||
			len(first.Artifacts) != 1 || first.Artifacts[0].Parts[0].Text() != "hello" {
			t.Fatalf("%+v", first)
		}
	})
	t.Run("GetTask", func(t *testing.T) {
		tk, err := c.GetTask(ctx, &goa2a.GetTaskRequest{ID: first.ID})
		if err != nil {
			t.Fatal(err)
		}
		if tk.ID != first.ID || tk.Status.State != goa2a.TaskStateCompleted {
			t.Fatalf("%+v", tk)
		}
	})
	t.Run("ListTasks", func(t *testing.T) {
		l, err := c.ListTasks(ctx, &goa2a.ListTasksRequest{ContextID: first.ContextID})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tasks) != 1 || l.Tasks[0].ID != first.ID || l.TotalSize != 1 {
			t.Fatalf("%+v", l)
		}
	})
	t.Run("SendStreamingMessage", func(t *testing.T) {
		var events []goa2a.Event
		for ev, err := range c.SendStreamingMessage(ctx, goText("streamed")) {
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, ev)
		}
		if len(events) < 2 {
			t.Fatalf("%d events", len(events))
		}
		tk, ok := events[0].(*goa2a.Task)
		if !ok {
			t.Fatalf("the stream begins with %T", events[0])
		}
		last, ok := events[len(events)-1].(*goa2a.TaskStatusUpdateEvent)
		if !ok || last.TaskID != tk.ID || last.Status.State != goa2a.TaskStateCompleted {
			t.Fatalf("the stream ends with %#v", events[len(events)-1])
		}
		var text string
		for _, ev := range events {
			if au, ok := ev.(*goa2a.TaskArtifactUpdateEvent); ok {
				text += au.Artifact.Parts[0].Text()
			}
		}
		if text != "streamed" {
			t.Fatalf("artifact %q", text)
		}
	})
	t.Run("CancelTask", func(t *testing.T) {
		req := goText("slow")
		req.Config = &goa2a.SendMessageConfig{ReturnImmediately: true}
		tk := goSend(t, c, req)
		if tk.Status.State.Terminal() {
			t.Fatalf("%+v", tk)
		}
		canceled, err := c.CancelTask(ctx, &goa2a.CancelTaskRequest{ID: tk.ID})
		if err != nil {
			t.Fatal(err)
		}
		if canceled.Status.State != goa2a.TaskStateCanceled {
			t.Fatalf("%+v", canceled)
		}
		// Canceling again answers with the canceled task (idempotent).
		again, err := c.CancelTask(ctx, &goa2a.CancelTaskRequest{ID: tk.ID})
		if err != nil || again.Status.State != goa2a.TaskStateCanceled {
			t.Fatalf("%v %+v", err, again)
		}
	})
	t.Run("SubscribeToTask", func(t *testing.T) {
		req := goText("slow")
		req.Config = &goa2a.SendMessageConfig{ReturnImmediately: true}
		tk := goSend(t, c, req)
		var states []goa2a.TaskState
		n := 0
		for ev, err := range c.SubscribeToTask(ctx, &goa2a.SubscribeToTaskRequest{ID: tk.ID}) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 1 {
				first, ok := ev.(*goa2a.Task)
				if !ok || first.ID != tk.ID {
					t.Fatalf("the stream begins with %#v", ev)
				}
				if _, err := c.CancelTask(ctx, &goa2a.CancelTaskRequest{ID: tk.ID}); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if su, ok := ev.(*goa2a.TaskStatusUpdateEvent); ok {
				states = append(states, su.Status.State)
			}
		}
		if len(states) == 0 || states[len(states)-1] != goa2a.TaskStateCanceled {
			t.Fatalf("states %v", states)
		}
	})
	t.Run("multi-turn", func(t *testing.T) {
		tk := goSend(t, c, goText("ask"))
		if tk.Status.State != goa2a.TaskStateInputRequired || tk.Status.Message.Parts[0].Text() != "which one?" {
			t.Fatalf("%+v", tk)
		}
		follow := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("blue"))
		follow.TaskID, follow.ContextID = tk.ID, tk.ContextID
		done := goSend(t, c, &goa2a.SendMessageRequest{Message: follow})
		if done.ID != tk.ID || done.ContextID != tk.ContextID || done.Status.State != goa2a.TaskStateCompleted ||
			done.Status.Message.Parts[0].Text() != "got: blue" {
			t.Fatalf("%+v", done)
		}

		// The task is finished: a further message is unsupported_operation
		// (-32004), which a2a-go reads as its ErrUnsupportedOperation.
		late := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("green"))
		late.TaskID, late.ContextID = tk.ID, tk.ContextID
		_, err := c.SendMessage(ctx, &goa2a.SendMessageRequest{Message: late})
		if !errors.Is(err, goa2a.ErrUnsupportedOperation) || !strings.Contains(err.Error(), "terminal state") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		if _, err := c.GetTask(ctx, &goa2a.GetTaskRequest{ID: "no-such-task"}); !errors.Is(err, goa2a.ErrTaskNotFound) {
			t.Fatalf("GetTask: %v", err)
		}
		m := goa2a.NewMessage(goa2a.MessageRoleUser, goa2a.NewTextPart("hi"))
		m.TaskID = "no-such-task"
		if _, err := c.SendMessage(ctx, &goa2a.SendMessageRequest{Message: m}); !errors.Is(err, goa2a.ErrTaskNotFound) {
			t.Fatalf("SendMessage: %v", err)
		}
		for _, err := range c.SendStreamingMessage(ctx, &goa2a.SendMessageRequest{Message: m}) {
			if !errors.Is(err, goa2a.ErrTaskNotFound) {
				t.Fatalf("SendStreamingMessage: %v", err)
			}
		}
	})
	t.Run("push notifications", func(t *testing.T) {
		_, err := c.CreateTaskPushConfig(ctx, &goa2a.PushConfig{TaskID: goa2a.TaskID(first.ID), URL: "https://example.com/hook"})
		if !errors.Is(err, goa2a.ErrPushNotificationNotSupported) {
			t.Fatalf("Create: %v", err)
		}
		err = c.DeleteTaskPushConfig(ctx, &goa2a.DeleteTaskPushConfigRequest{TaskID: goa2a.TaskID(first.ID), ID: "c1"})
		if !errors.Is(err, goa2a.ErrPushNotificationNotSupported) {
			t.Fatalf("Delete: %v", err)
		}
	})
	t.Run("extended card", func(t *testing.T) {
		// a2a-go answers ErrExtendedCardNotConfigured itself, without a
		// request, when the card does not declare the capability; this
		// agent's card does, and its runtime has one.
		ext := srvCard("http://127.0.0.1/extended", true, true)
		ext.Name = "tester, extended"
		b := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithExtendedCard(ext))
		if err := b.h.UpdateCard(srvCard(b.endpoint, true, true)); err != nil {
			t.Fatal(err)
		}
		card, err := goClient(t, b.base).GetExtendedAgentCard(ctx, &goa2a.GetExtendedAgentCardRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if card.Name != "tester, extended" {
			t.Fatalf("%+v", card)
		}
	})
}

// versionOverride makes an a2a-go client send another A2A-Version.
type versionOverride struct {
	a2aclient.PassthroughInterceptor
	version string
}

func (v versionOverride) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	req.ServiceParams["A2A-Version"] = []string{v.version}
	return ctx, nil, nil
}

// An A2A-Version other than 1.0 is refused with version_not_supported,
// which a2a-go reads as its ErrVersionNotSupported, on the unary and the
// streaming path alike.
func TestInteropVersionRefused(t *testing.T) {
	a := startSrvAgent(t, a2ahttp.HandlerConfig{})
	c := goClient(t, a.base, a2aclient.WithCallInterceptors(versionOverride{version: "0.3"}))
	ctx := srvCtx(t)
	if _, err := c.SendMessage(ctx, goText("hello")); !errors.Is(err, goa2a.ErrVersionNotSupported) {
		t.Fatalf("SendMessage: %v", err)
	}
	n := 0
	for _, err := range c.SendStreamingMessage(ctx, goText("hello")) {
		n++
		if !errors.Is(err, goa2a.ErrVersionNotSupported) {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d stream items", n)
	}

	// A request without the header, as a raw client sends it.
	resp := post(t, a.endpoint, req("GetTask", `{"id":"x"}`), map[string]string{"A2A-Version": ""})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if r := parseResp(t, b, "1"); resp.StatusCode != http.StatusOK || r.Err == nil || r.Err.Code != -32009 {
		t.Fatalf("HTTP %d %s", resp.StatusCode, b)
	}
}

// A bearer token sent through a2a-go reaches the runtime's verifier.
func TestInteropBearerToken(t *testing.T) {
	verifier := agent.VerifierFunc(func(_ context.Context, token string, _ a2a.Method) (agent.Caller, error) {
		if token != "s3cret" {
			return agent.Caller{}, errors.New("no")
		}
		return agent.Caller{Subject: "alice"}, nil
	})
	a := startSrvAgent(t, a2ahttp.HandlerConfig{}, agent.WithVerifier(verifier))
	ctx := srvCtx(t)

	anon := goClient(t, a.base)
	if _, err := anon.SendMessage(ctx, goText("hello")); !errors.Is(err, goa2a.ErrUnauthenticated) || !strings.Contains(err.Error(), "bearer token") {
		// This binding's unauthenticated has a2a-go's own code (-31401),
		// so its client recognises it.
		t.Fatalf("without a token: %v", err)
	}
	authed := goClient(t, a.base, a2aclient.WithCallInterceptors(bearer{token: "s3cret"}))
	if tk := goSend(t, authed, goText("hello")); tk.Status.State != goa2a.TaskStateCompleted {
		t.Fatalf("%+v", tk)
	}
}

type bearer struct {
	a2aclient.PassthroughInterceptor
	token string
}

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	req.ServiceParams["Authorization"] = []string{"Bearer " + b.token}
	return ctx, nil, nil
}
