package mqtt

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/google/uuid"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// TestFullWorkerPoolAnswersResponderUnavailable: a full worker pool answers -32004
// responder_unavailable at once instead of queueing the request.
func TestFullWorkerPoolAnswersResponderUnavailable(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}), agent.WithMaxTurns(1))
		t.Cleanup(func() { srv.Close(context.Background()) })
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "busy", Card: testCard("Busy"), Server: srv})
		reply := "$a2a/v1/reply/acme/lab/req/" + uuid.NewString()
		rc := dialRaw(t, b.URL(), "acme/lab/req-edge", reply)
		topic := "$a2a/v1/request/acme/lab/busy"

		rc.request(t, topic, reply, sendPayload(t, newMessage("first")))
		<-started
		rc.request(t, topic, reply, sendPayload(t, newMessage("second")))
		r := decodeRPC(t, rc.next(t, reply).payload)
		if r.Error == nil || r.Error.Code != -32004 || !strings.Contains(string(r.Error.Data), `"a2a_error":"responder_unavailable"`) {
			t.Fatalf("full pool: %+v", r.Error)
		}
		close(release)
		if r := decodeRPC(t, rc.next(t, reply).payload); r.Error != nil {
			t.Fatalf("first request: %+v", r.Error)
		}

	})
}

// TestRequestExpiredBeforeProcessing: a request whose Message Expiry runs
// out while the agent is still checking it (here: a slow token verifier) is
// answered -32003 request_expired, not processed.
func TestRequestExpiredBeforeProcessing(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var ran atomic.Int32
		slow := agent.VerifierFunc(func(ctx context.Context, token string, _ a2a.Method) (agent.Caller, error) {
			time.Sleep(1500 * time.Millisecond)
			return agent.Caller{Subject: "s"}, nil
		})
		srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error { ran.Add(1); return nil }), agent.WithVerifier(slow))
		t.Cleanup(func() { srv.Close(context.Background()) })
		startAgent(t, AgentConfig{Connection: Connection{Broker: b.URL()}, Org: "acme", Unit: "lab", ID: "slowauth", Card: testCard("S"), Server: srv})
		reply := "$a2a/v1/reply/acme/lab/req/" + uuid.NewString()
		rc := dialRaw(t, b.URL(), "acme/lab/req-exp", reply)
		one := uint32(1)
		if _, err := rc.cm.Publish(testCtx(t), &paho.Publish{Topic: "$a2a/v1/request/acme/lab/slowauth", QoS: 1, Payload: sendPayload(t, newMessage("late")),
			Properties: &paho.PublishProperties{ResponseTopic: reply, CorrelationData: []byte("c1"), MessageExpiry: &one,
				User: userProps("a2a-authorization", "Bearer t")}}); err != nil {
			t.Fatal(err)
		}
		r := decodeRPC(t, rc.next(t, reply).payload)
		if r.Error == nil || r.Error.Code != -32003 || !strings.Contains(string(r.Error.Data), `"a2a_error":"request_expired"`) || ran.Load() != 0 {
			t.Fatalf("expired request: %+v (handler ran %d times)", r.Error, ran.Load())
		}
	})
}

// TestStreamRecoveryAndDuplicates: a stream item delivered twice (QoS 1
// redelivery) is yielded once; a stream that stalls is never republished
// but recovered with GetTask.
func TestStreamRecoveryAndDuplicates(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var mu sync.Mutex
		var methods []string
		record := func(m string) { mu.Lock(); methods = append(methods, m); mu.Unlock() }
		rawResponder(t, b.URL(), "staller", func(n int, req message) ([]byte, []string, bool) {
			id := jsonID(req.payload)
			if strings.Contains(string(req.payload), `"GetTask"`) {
				record("GetTask")
				tid := strings.Split(strings.Split(string(req.payload), `"params":{"id":"`)[1], `"`)[0]
				return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"id":"` + tid + `","status":{"state":"TASK_STATE_COMPLETED"}}}`), nil, true
			}
			record("SendStreamingMessage")
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"task":{"id":"` + taskIDOf(req.payload) + `","status":{"state":"TASK_STATE_WORKING"}}}}`), nil, true
		})
		// The responder above answers each request once; a second copy of
		// the same item is published by hand.
		c := startClient(t, b.URL(), "a")
		var kinds []string
		first := true
		for it, err := range c.SendStreamingMessage(testCtx(t), &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("x")}}}}, requester.To(requester.Target{Agent: "staller"})) {
			if err != nil {
				t.Fatal(err)
			}
			task := it.Payload.(*a2a.Task)
			kinds = append(kinds, string(task.Status.State))
			if first {
				first = false
				// Redeliver the same item on the same correlation.
				dup := dialRaw(t, b.URL(), "acme/lab/dup")
				c.tr.mu.Lock()
				var corr string
				for k := range c.tr.inflight {
					corr = k
				}
				c.tr.mu.Unlock()
				payload := []byte(`{"jsonrpc":"2.0","id":"` + corr + `","result":{"task":{"id":"` + task.ID + `","status":{"state":"TASK_STATE_WORKING"}}}}`)
				dup.cm.Publish(testCtx(t), &paho.Publish{Topic: c.ReplyTopic(), QoS: 1, Payload: payload,
					Properties: &paho.PublishProperties{CorrelationData: []byte(corr)}})
			}
		}
		if got := strings.Join(kinds, ","); got != "TASK_STATE_WORKING,TASK_STATE_COMPLETED" {
			t.Fatalf("items %s: want the working task once, then the task from GetTask", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(methods, ","); got != "SendStreamingMessage,GetTask" {
			t.Fatalf("requests %s: a stalled stream is never republished", got)
		}
	})
}

// TestResultBreakingItsSchemaIsInvalidAgentResponse: a reply whose envelope
// is well formed but whose result breaks the result's schema ends the
// operation with invalid_agent_response, for a blocking send, a stream and
// a one-reply method alike; the reply is not ignored and not retried.
func TestResultBreakingItsSchemaIsInvalidAgentResponse(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		var answered atomic.Int32
		rawResponder(t, b.URL(), "broken", func(n int, req message) ([]byte, []string, bool) {
			answered.Add(1)
			// A task whose status has no state, in each method's result form.
			result := `{"task":{"id":"` + taskIDOf(req.payload) + `","status":{}}}`
			if strings.Contains(string(req.payload), `"GetTask"`) {
				result = `{"id":"x","status":{}}`
			}
			return []byte(`{"jsonrpc":"2.0","id":` + jsonID(req.payload) + `,"result":` + result + `}`), nil, true
		})
		c := startClient(t, b.URL(), "a")
		msg := func() *a2a.Message { return &a2a.Message{Parts: []a2a.Part{{Content: a2a.PartText("x")}}} }
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"SendMessage", func() error {
				_, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg()}, requester.To(requester.Target{Agent: "broken"}))
				return err
			}},
			{"SendStreamingMessage", func() error {
				for _, err := range c.SendStreamingMessage(testCtx(t), &a2a.SendMessageRequest{Message: msg()}, requester.To(requester.Target{Agent: "broken"})) {
					if err != nil {
						return err
					}
				}
				return nil
			}},
			{"GetTask", func() error {
				_, err := c.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: uuid.NewString()}, requester.To(requester.Target{Agent: "broken"}))
				return err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := answered.Load()
				err := tc.call()
				var e *a2a.Error
				if !errors.As(err, &e) || e.Token != a2a.TokenInvalidAgentResponse {
					t.Fatalf("err = %v, want invalid_agent_response", err)
				}
				if got := answered.Load() - before; got != 1 {
					t.Fatalf("%d requests answered, want 1 (no retry after an invalid result)", got)
				}
			})
		}
		if n := c.IgnoredReplies(); n != 0 {
			t.Fatalf("%d replies ignored: an invalid result is an answer, not a protocol error", n)
		}
	})
}
