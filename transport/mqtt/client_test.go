package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// fastProfile keeps retry tests short; nothing asserts on time.
func fastProfile() mqttbind.RetryProfile {
	return mqttbind.RetryProfile{ReplyFirstTimeout: 400 * time.Millisecond, StreamIdleTimeout: 400 * time.Millisecond, MaxAttempts: 3,
		BackoffJitter: 0.2, RetryBackoff: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}}
}

func startClient(t *testing.T, brokerURL, id string, mod ...func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{Connection: Connection{Broker: brokerURL}, Org: "acme", Unit: "lab", ID: id, Requester: requester.Config{Retry: fastProfile()}}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := NewClient(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// refAgent behaves like the reference agent: "ask" asks for input,
// "stream" sends two artifacts, "handover" hands over to <id>-c1.
func refHandler(id string) agent.HandlerFunc {
	return func(ctx context.Context, t *agent.Turn) error {
		text := t.Text()
		switch {
		case t.Resumed:
			return t.Artifact(ctx, a2a.Artifact{ArtifactID: "answer", Parts: []a2a.Part{{Content: a2a.PartText("got " + text)}}}, agent.ArtifactOptions{LastChunk: true})
		case strings.HasPrefix(text, "ask"):
			return t.AskInput(ctx, "which one?")
		case strings.HasPrefix(text, "handover"):
			if err := t.Handover(ctx, id+"-c1"); err != nil {
				return err
			}
			return t.AskInput(ctx, id+"-c1 here: what size?")
		}
		if err := t.Working(ctx, "working"); err != nil {
			return err
		}
		earlier, err := t.ContextTasks(ctx)
		if err != nil {
			return err
		}
		for i := range 2 {
			a := a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{{Content: a2a.PartText(fmt.Sprintf("%s #%d (context tasks before: %d)", text, i, len(earlier)))}}}
			if err := t.Artifact(ctx, a, agent.ArtifactOptions{Append: i > 0, LastChunk: i == 1}); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestClientStories(t *testing.T) {
	forEachSite(t, func(t *testing.T, s site) {
		store := taskstore.NewMemory(nil)
		srv := agent.NewServer(refHandler("b"), agent.WithStore(store))
		t.Cleanup(func() { srv.Close(context.Background()) })
		startAgent(t, s.agent(AgentConfig{Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv}))
		// The spawned instance: own connection and Client ID, no card, same store.
		spawned := agent.NewServer(refHandler("b-c1"), agent.WithStore(store))
		t.Cleanup(func() { spawned.Close(context.Background()) })
		startAgent(t, s.agent(AgentConfig{Org: "acme", Unit: "lab", ID: "b-c1", Server: spawned}))
		c := startClient(t, s.conn.Broker, "a", s.client)
		ctx := testCtx(t)

		t.Run("02 single reply", func(t *testing.T) {
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}}, requester.To(requester.Target{Agent: "b"}))
			if err != nil || res.Task.Status.State != a2a.TaskStateCompleted || len(res.Task.Artifacts) != 1 {
				t.Fatalf("%+v %v", res, err)
			}
			if _, err := uuid.Parse(res.Task.ID); err != nil {
				t.Fatalf("requester-made Task.id %q", res.Task.ID)
			}
		})
		t.Run("03 stream: the task first, then updates, then the terminal status", func(t *testing.T) {
			var kinds []string
			for it, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("stream")}}}}, requester.To(requester.Target{Agent: "b"})) {
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, kindOf(it))
			}
			if got := strings.Join(kinds, ","); got != "task,status:TASK_STATE_WORKING,artifact,artifact,status:TASK_STATE_COMPLETED" {
				t.Fatal(got)
			}
		})
		t.Run("08 multi-turn: resume after input required, follow-up turns share the context", func(t *testing.T) {
			conv := c.NewConversation(requester.Target{Agent: "b"})
			first, err := conv.Turn(ctx, "ask me")
			if err != nil || first.Task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("%+v %v", first, err)
			}
			done, err := conv.Resume(ctx, first.Task.ID, "the red one")
			if err != nil || done.Task.ID != first.Task.ID || done.Task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%+v %v", done, err)
			}
			next, err := conv.Turn(ctx, "more")
			if err != nil || next.Task.ContextID != conv.ContextID || next.Task.ID == first.Task.ID {
				t.Fatalf("%+v %v", next, err)
			}
			if txt := string(next.Task.Artifacts[0].Parts[0].Content.(a2a.PartText)); !strings.Contains(txt, "context tasks before: 1") {
				t.Fatal(txt)
			}
			// Mismatched contextId for an existing task.
			_, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: first.Task.ID, ContextID: uuid.NewString(), Parts: []a2a.Part{{Content: a2a.PartText("x")}}}}, requester.To(requester.Target{Agent: "b"}))
			var e *a2a.Error
			if !errors.As(err, &e) || e.Token != a2a.TokenInvalidParams {
				t.Fatalf("%v", err)
			}
		})
		t.Run("07 handover: follow-ups go to the new owner", func(t *testing.T) {
			conv := c.NewConversation(requester.Target{Agent: "b"})
			res, err := conv.Turn(ctx, "handover please")
			if err != nil || res.Responder != "b-c1" || res.Task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("%+v %v", res, err)
			}
			if tgt, _ := c.Route(res.Task.ID); tgt.Agent != "b-c1" {
				t.Fatalf("route %+v", tgt)
			}
			done, err := conv.Resume(ctx, res.Task.ID, "large")
			if err != nil || done.Task.Status.State != a2a.TaskStateCompleted || done.Task.ID != res.Task.ID {
				t.Fatalf("%+v %v", done, err)
			}
			got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: res.Task.ID})
			if err != nil || got.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%v %v", got, err)
			}
		})
		t.Run("cancel, list and errors", func(t *testing.T) {
			res, _ := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("ask x")}}}}, requester.To(requester.Target{Agent: "b"}))
			canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: res.Task.ID})
			if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
				t.Fatalf("%v %v", canceled, err)
			}
			list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: res.Task.ContextID}, requester.ToAgent("b"))
			if err != nil || list.TotalSize != 1 {
				t.Fatalf("%+v %v", list, err)
			}
			_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: uuid.NewString()}, requester.To(requester.Target{Agent: "b"}))
			if !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Fatal(err)
			}
		})
	})
}

func kindOf(it requester.Item) string {
	switch p := it.Payload.(type) {
	case *a2a.Task:
		return "task"
	case *a2a.TaskStatusUpdateEvent:
		return "status:" + string(p.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact"
	case *a2a.Message:
		return "message"
	}
	return "?"
}

func TestClientPool(t *testing.T) {
	b := startBroker(t, false)
	store := taskstore.NewMemory(nil)
	for _, id := range []string{"w1", "w2"} {
		srv := agent.NewServer(refHandler(id), agent.WithStore(store))
		t.Cleanup(func() { srv.Close(context.Background()) })
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: id, Card: testCard(id), Server: srv, Pool: "workers"})
	}
	c := startClient(t, b.URL(), "a")
	ctx := testCtx(t)
	seen := map[string]bool{}
	for range 10 {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("ask job")}}}}, requester.To(requester.Target{Pool: "workers"}))
		if err != nil || res.Task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("%+v %v", res, err)
		}
		if res.Responder != "w1" && res.Responder != "w2" {
			t.Fatalf("pooled reply names %q", res.Responder)
		}
		seen[res.Responder] = true
		// The follow-up goes to the member's direct topic, not to the pool.
		if tgt, _ := c.Route(res.Task.ID); tgt.Agent != res.Responder {
			t.Fatalf("route %+v after responder %s", tgt, res.Responder)
		}
		done, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: res.Task.ID, ContextID: res.Task.ContextID, Parts: []a2a.Part{{Content: a2a.PartText("go")}}}}, requester.To(requester.Target{Pool: "workers"}))
		if err != nil || done.Task.Status.State != a2a.TaskStateCompleted || done.Responder != "" && done.Responder != res.Responder {
			t.Fatalf("%+v %v", done, err)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no pool member answered")
	}
}

// rawResponder answers requests on a topic by hand, to stage failures.
func rawResponder(t *testing.T, brokerURL, id string, answer func(n int, req message) (payload []byte, user []string, reply bool)) *rawClient {
	t.Helper()
	topic := "$a2a/v1/request/acme/lab/" + id
	rc := dialRaw(t, brokerURL, "acme/lab/"+id, topic)
	var n atomic.Int32
	rc.each(t, func(m message) {
		k := int(n.Add(1))
		payload, user, ok := answer(k, m)
		if !ok {
			return
		}
		rc.cm.Publish(context.Background(), &paho.Publish{Topic: m.response, QoS: 1, Payload: payload,
			Properties: &paho.PublishProperties{CorrelationData: m.corr, User: userProps(user...)}})
	})
	return rc
}

func TestClientRetriesWithFreshCorrelationAndStopsAtTheFirstReply(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var corrs []string
		got := make(chan struct{}, 10)
		rawResponder(t, b.URL(), "flaky", func(n int, req message) ([]byte, []string, bool) {
			corrs = append(corrs, string(req.corr))
			got <- struct{}{}
			if n < 2 {
				return nil, nil, false // the first attempt is lost
			}
			id := jsonID(req.payload)
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"task":{"id":"` + taskIDOf(req.payload) + `","status":{"state":"TASK_STATE_COMPLETED"}}}}`), nil, true
		})
		c := startClient(t, b.URL(), "a")
		res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("x")}}}}, requester.To(requester.Target{Agent: "flaky"}))
		if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		<-got
		<-got
		if len(corrs) != 2 || corrs[0] == corrs[1] {
			t.Fatalf("attempts %v: want two with fresh Correlation Data", corrs)
		}
	})
}

func TestClientUnreachableHandoverTargetFallsBackToTheCardAgent(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		// The card agent hands over to "gone", which never answers; after the
		// retry profile the client falls back to the card agent.
		var calls atomic.Int32
		rawResponder(t, b.URL(), "card", func(n int, req message) ([]byte, []string, bool) {
			calls.Add(1)
			id := jsonID(req.payload)
			state, user := "TASK_STATE_INPUT_REQUIRED", []string{mqttbind.PropResponderAgentID, "gone"}
			if n > 1 {
				state, user = "TASK_STATE_COMPLETED", nil
			}
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"task":{"id":"` + taskIDOf(req.payload) + `","status":{"state":"` + state + `"}}}}`), user, true
		})
		c := startClient(t, b.URL(), "a")
		ctx := testCtx(t)
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{ContextID: uuid.NewString(), Parts: []a2a.Part{{Content: a2a.PartText("x")}}}}, requester.To(requester.Target{Agent: "card"}))
		if err != nil || res.Responder != "gone" {
			t.Fatalf("%+v %v", res, err)
		}
		done, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{TaskID: res.Task.ID, ContextID: res.Task.ContextID, Parts: []a2a.Part{{Content: a2a.PartText("y")}}}}, requester.To(requester.Target{Agent: "card"}))
		if err != nil || done.Task.Status.State != a2a.TaskStateCompleted || calls.Load() != 2 {
			t.Fatalf("%+v %v (card agent calls %d)", done, err, calls.Load())
		}
		if tgt, _ := c.Route(res.Task.ID); tgt.Agent != "card" {
			t.Fatalf("route after fallback %+v", tgt)
		}
	})
}

func TestClientIgnoresUncorrelatedAndUnroutedReplies(t *testing.T) {
	b := startBroker(t, false)
	c := startClient(t, b.URL(), "a")
	// A stray reply on the client's reply topic.
	rc := dialRaw(t, b.URL(), "acme/lab/stray")
	rc.cm.Publish(testCtx(t), &paho.Publish{Topic: c.ReplyTopic(), QoS: 1, Payload: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`),
		Properties: &paho.PublishProperties{CorrelationData: []byte("nobody")}})
	// A pooled reply without a2a-responder-agent-id is a protocol error; the
	// member's second, proper reply is taken.
	pool := dialRaw(t, b.URL(), "acme/lab/m2", "$share/g/$a2a/v1/request/acme/lab/pool/p")
	pool.each(t, func(m message) {
		{
			id := jsonID(m.payload)
			body := []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"task":{"id":"` + taskIDOf(m.payload) + `","status":{"state":"TASK_STATE_COMPLETED"}}}}`)
			rt := m.response
			pool.cm.Publish(context.Background(), &paho.Publish{Topic: rt, QoS: 1, Payload: body, Properties: &paho.PublishProperties{CorrelationData: m.corr}})
			pool.cm.Publish(context.Background(), &paho.Publish{Topic: rt, QoS: 1, Payload: body, Properties: &paho.PublishProperties{CorrelationData: m.corr, User: userProps(mqttbind.PropResponderAgentID, "m2")}})
		}
	})
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("x")}}}}, requester.To(requester.Target{Pool: "p"}))
	if err != nil || res.Responder != "m2" {
		t.Fatalf("%+v %v", res, err)
	}
	// A broker may acknowledge the stray publish before forwarding it:
	// wait for it to be counted.
	for deadline := time.Now().Add(10 * time.Second); c.IgnoredReplies() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d replies ignored, want the stray one and the unnamed pooled one", c.IgnoredReplies())
		}
	}
}

// A long-lived requester does not keep a route for every task it ever sent:
// routes of finished tasks are kept up to ClientConfig.FinishedRoutes (and
// deleted from the route store beyond it); a task waiting for input keeps
// its route.
func TestClientForgetsTheRoutesOfOldFinishedTasks(t *testing.T) {
	b := mqtttest.StartEmbedded(t)
	srv := agent.NewServer(refHandler("b"))
	t.Cleanup(func() { srv.Close(context.Background()) })
	startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "b", Card: testCard("B"), Server: srv})
	saved := &handover.MemStore{}
	c := startClient(t, b.URL(), "a", func(cfg *ClientConfig) { cfg.Requester.FinishedRoutes = 2; cfg.Requester.Routes = saved })
	ctx := testCtx(t)

	waiting, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("ask")}}}}, requester.To(requester.Target{Agent: "b"}))
	if err != nil || waiting.Task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("%+v %v", waiting, err)
	}
	var done []string
	for range 4 {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("hi")}}}}, requester.To(requester.Target{Agent: "b"}))
		if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		done = append(done, res.Task.ID)
	}
	for i, id := range done {
		_, routed := c.Route(id)
		if want := i >= 2; routed != want {
			t.Errorf("finished task %d: routed %v, want %v", i, routed, want)
		}
	}
	if _, routed := c.Route(waiting.Task.ID); !routed {
		t.Error("the task waiting for input lost its route")
	}
	if n := len(c.Routes()); n != 3 {
		t.Errorf("%d routes kept, want 3", n)
	}
	kept, _ := saved.LoadRoutes()
	if len(kept) > 3 {
		t.Errorf("the route store holds %d routes, want at most 3", len(kept))
	}
	// A GetTask on a forgotten task goes where the caller says.
	if task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: done[0]}, requester.To(requester.Target{Agent: "b"})); err != nil || task.ID != done[0] {
		t.Fatalf("%+v %v", task, err)
	}
}
