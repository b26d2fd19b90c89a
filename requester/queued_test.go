package requester_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/offline"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
)

// offlineErr is an offline-profile error with its details as an agent
// sets them.
func offlineErr(tok a2a.Token, data map[string]any) *a2a.Error {
	e := a2a.NewError(tok, "asleep")
	e.Data = data
	return e
}

// replyWith answers every attempt with e laid out for the binding.
func replyWith(e *a2a.Error, b jsonrpc.Binding) func(int, *requester.Request, func(*requester.Reply)) error {
	return func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
		p, err := jsonrpc.EncodeError(json.RawMessage(`"`+req.ID+`"`), e, b)
		if err != nil {
			return err
		}
		deliver(&requester.Reply{Payload: p, End: true})
		return nil
	}
}

// TestQueuedEndsTheOperation: agent_asleep with queued true is *Queued at
// once, in every shape an agent may answer with (the offline object over
// MQTT, ErrorInfo metadata over HTTP, an offline body the HTTP transport
// read); agent_asleep with queued false is retried like any retryable
// answer, and asleep_queue_full stays an *a2a.Error, retried after backing
// off (docs/protocol.md §6.1, §7).
func TestQueuedEndsTheOperation(t *testing.T) {
	queued := map[string]any{"queued": true, "retryAfterSec": 1800, "taskId": "t-9", "contextId": "c-9"}
	wantQueued := &requester.Queued{TaskID: "t-9", ContextID: "c-9", RetryAfter: 1800 * time.Second, HasRetryAfter: true, Message: "asleep"}
	cases := []struct {
		name     string
		binding  jsonrpc.Binding
		answer   func(int, *requester.Request, func(*requester.Reply)) error
		queued   *requester.Queued // nil: not queued
		token    a2a.Token         // the *a2a.Error in the chain otherwise
		kind     offline.QueueFullKind
		attempts int
	}{
		{"queued, offline object over MQTT", jsonrpc.BindingMQTT,
			replyWith(offlineErr(a2a.TokenAgentAsleep, queued), jsonrpc.BindingMQTT), wantQueued, "", "", 1},
		{"queued, ErrorInfo over HTTP", jsonrpc.BindingHTTP,
			replyWith(offlineErr(a2a.TokenAgentAsleep, queued), jsonrpc.BindingHTTP), wantQueued, "", "", 1},
		{"queued, an offline body read by the transport", jsonrpc.BindingHTTP,
			func(_ int, _ *requester.Request, deliver func(*requester.Reply)) error {
				deliver(&requester.Reply{Err: offlineErr(a2a.TokenAgentAsleep, map[string]any{"queued": true, "retryAfterSec": float64(1800),
					"taskId": "t-9", "contextId": "c-9"}), End: true})
				return nil
			}, wantQueued, "", "", 1},
		{"queued without a wait or a task id", jsonrpc.BindingHTTP,
			replyWith(offlineErr(a2a.TokenAgentAsleep, map[string]any{"queued": true}), jsonrpc.BindingHTTP),
			&requester.Queued{Message: "asleep"}, "", "", 1},
		{"queued on the second attempt", jsonrpc.BindingMQTT,
			func(n int, req *requester.Request, deliver func(*requester.Reply)) error {
				if n == 1 {
					return errors.New("not accepted")
				}
				return replyWith(offlineErr(a2a.TokenAgentAsleep, queued), jsonrpc.BindingMQTT)(n, req, deliver)
			}, wantQueued, "", "", 2},
		{"asleep, not queued, over MQTT: retried", jsonrpc.BindingMQTT,
			replyWith(offlineErr(a2a.TokenAgentAsleep, map[string]any{"queued": false}), jsonrpc.BindingMQTT),
			nil, a2a.TokenAgentAsleep, "", 3},
		{"asleep, not queued, over HTTP: retried", jsonrpc.BindingHTTP,
			replyWith(offlineErr(a2a.TokenAgentAsleep, map[string]any{"queued": false}), jsonrpc.BindingHTTP),
			nil, a2a.TokenAgentAsleep, "", 3},
		{"queue full, peer, over HTTP: retried, kind kept", jsonrpc.BindingHTTP,
			replyWith(offlineErr(a2a.TokenAsleepQueueFull, map[string]any{"queued": false, "kind": "peer"}), jsonrpc.BindingHTTP),
			nil, a2a.TokenAsleepQueueFull, offline.QueueFullKindPeer, 3},
		{"queue full, messages, read by the transport", jsonrpc.BindingHTTP,
			func(_ int, _ *requester.Request, deliver func(*requester.Reply)) error {
				deliver(&requester.Reply{Err: offlineErr(a2a.TokenAsleepQueueFull, map[string]any{"queued": false, "kind": "messages"}), End: true})
				return nil
			}, nil, a2a.TokenAsleepQueueFull, offline.QueueFullKindMessages, 3},
		{"queued:true on another token is no Queued", jsonrpc.BindingMQTT,
			replyWith(offlineErr(a2a.TokenAsleepQueueFull, map[string]any{"queued": true, "kind": "bytes"}), jsonrpc.BindingMQTT),
			nil, a2a.TokenAsleepQueueFull, offline.QueueFullKindBytes, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scriptTransport{binding: requester.Binding{Errors: tc.binding}, answer: tc.answer}
			c := newClient(t, s)
			_, err := c.SendMessage(ctx(t), requester.TextMessage("hi", "", ""))
			if n := len(s.requests()); n != tc.attempts {
				t.Fatalf("%d attempts, want %d (%v)", n, tc.attempts, err)
			}
			var q *requester.Queued
			if tc.queued != nil {
				if !errors.As(err, &q) || *q != *tc.queued {
					t.Fatalf("error %#v, want %#v", err, tc.queued)
				}
				if !errors.Is(err, a2a.ErrAgentAsleep) || errors.Is(err, requester.ErrUnreachable) {
					t.Fatalf("%v: want errors.Is ErrAgentAsleep, not ErrUnreachable", err)
				}
				return
			}
			if errors.As(err, &q) {
				t.Fatalf("%v read as Queued", err)
			}
			var e *a2a.Error
			if !errors.As(err, &e) || e.Token != tc.token || !errors.Is(err, requester.ErrUnreachable) {
				t.Fatalf("error %v, want %s after the attempts ran out", err, tc.token)
			}
			if d, _ := jsonrpc.OfflineDetails(e); d.Kind != tc.kind {
				t.Fatalf("details %+v, want kind %q", d, tc.kind)
			}
		})
	}
}

// TestAsleepRetryAfterFromErrorInfo: over HTTP the retryAfterSec of an
// agent_asleep not queued comes as ErrorInfo metadata (a string); the next
// attempt still waits at least that long.
func TestAsleepRetryAfterFromErrorInfo(t *testing.T) {
	var mu sync.Mutex
	var sent []time.Time
	s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingHTTP}}
	s.answer = func(n int, req *requester.Request, deliver func(*requester.Reply)) error {
		mu.Lock()
		sent = append(sent, time.Now())
		mu.Unlock()
		if n == 1 {
			return replyWith(offlineErr(a2a.TokenAgentAsleep, map[string]any{"queued": false, "retryAfterSec": 1}), jsonrpc.BindingHTTP)(n, req, deliver)
		}
		deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON("t", "TASK_STATE_COMPLETED")+`}`), End: true})
		return nil
	}
	c := newClient(t, s)
	if _, err := c.SendMessage(ctx(t), requester.TextMessage("hi", "", "")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 || sent[1].Sub(sent[0]) < time.Second {
		t.Fatalf("attempts at %v: want 2, the second at least 1 s after the first", sent)
	}
}

func TestQueuedError(t *testing.T) {
	cases := []struct {
		q    requester.Queued
		want string
	}{
		{requester.Queued{TaskID: "t", RetryAfter: 90 * time.Second, HasRetryAfter: true}, "agent_asleep: the message is queued as task t; retry after 90 s"},
		{requester.Queued{Message: "zzz"}, "agent_asleep: the message is queued: zzz"},
	}
	for _, tc := range cases {
		if got := tc.q.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
