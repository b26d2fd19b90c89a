package requester_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// scriptTransport is a Transport whose attempts are answered by a
// function of the attempt number and the request: the rules under test
// are the Client's, whatever carries the bytes (transport/mqtt and
// transport/http test the real carriers).
type scriptTransport struct {
	binding requester.Binding
	answer  func(n int, req *requester.Request, deliver func(*requester.Reply)) error

	mu   sync.Mutex
	reqs []*requester.Request
}

func (s *scriptTransport) Binding() requester.Binding  { return s.binding }
func (s *scriptTransport) Close(context.Context) error { return nil }
func (s *scriptTransport) requests() []*requester.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs
}

func (s *scriptTransport) Send(_ context.Context, req *requester.Request, deliver func(*requester.Reply)) (func(), error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	s.mu.Unlock()
	if err := s.answer(n, req, deliver); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// fast is a retry profile for tests; nothing asserts on time.
func fast() mqttbind.RetryProfile {
	return mqttbind.RetryProfile{ReplyFirstTimeout: 5 * time.Second, StreamIdleTimeout: 5 * time.Second, MaxAttempts: 3,
		RetryBackoff: []time.Duration{time.Millisecond}}
}

func newClient(t *testing.T, s *scriptTransport) *requester.Client {
	t.Helper()
	if s.binding.Retry.MaxAttempts == 0 {
		s.binding.Retry = fast()
	}
	c, err := requester.New(s, requester.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// result encodes a JSON-RPC response to req holding a task.
func result(req *requester.Request, task string) []byte {
	b, _ := jsonrpc.EncodeResult(json.RawMessage(`"`+req.ID+`"`), json.RawMessage(task))
	return b
}

func taskJSON(id, state string) string {
	return `{"id":"` + id + `","contextId":"c","status":{"state":"` + state + `"}}`
}

// TestPrepareMakesIDsByBinding: where the requester makes Task.id (MQTT) a
// new task gets a UUIDv4; where the server makes it (HTTP) none is sent.
// Either way a messageId and the user role are filled in, the same for
// every attempt, and the caller's request is left as it was.
func TestPrepareMakesIDsByBinding(t *testing.T) {
	for _, ids := range []tasklife.IDOrigin{tasklife.RequesterIDs, tasklife.ResponderIDs} {
		s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingHTTP, IDs: ids},
			answer: func(n int, req *requester.Request, deliver func(*requester.Reply)) error {
				if n == 1 {
					return errors.New("not accepted")
				}
				deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON("t", "TASK_STATE_COMPLETED")+`}`)})
				return nil
			}}
		c := newClient(t, s)
		req := requester.TextMessage("hi", "", "")
		req.Message.MessageID, req.Message.Role = "", ""
		if _, err := c.SendMessage(ctx(t), req); err != nil {
			t.Fatal(err)
		}
		if req.Message.MessageID != "" || req.Message.TaskID != "" || req.Message.Role != "" {
			t.Fatalf("the caller's message was changed: %+v", req.Message)
		}
		reqs := s.requests()
		if len(reqs) != 2 {
			t.Fatalf("%d attempts, want 2", len(reqs))
		}
		first := reqs[0].Params.(*a2a.SendMessageRequest).Message
		second := reqs[1].Params.(*a2a.SendMessageRequest).Message
		if first.MessageID == "" || first.MessageID != second.MessageID || first.TaskID != second.TaskID || first.Role != a2a.RoleUser {
			t.Fatalf("attempts carry %+v and %+v: want one messageId and task id, role user", first, second)
		}
		if reqs[0].ID == reqs[1].ID {
			t.Fatal("both attempts carry the same JSON-RPC id / Correlation Data")
		}
		if wantTask := ids == tasklife.RequesterIDs; (first.TaskID != "") != wantTask {
			t.Fatalf("IDs %v: taskId %q", ids, first.TaskID)
		}
	}
}

// A message that has every id the binding needs is sent with those ids,
// and one that lacks one gets it on a copy; either way the caller's
// request stays as it was.
func TestPrepareSendsACompleteMessageAsItIs(t *testing.T) {
	cases := []struct {
		name     string
		ids      tasklife.IDOrigin
		taskID   string
		wantTask func(string) bool // of the task id sent
	}{
		{"server-made task ids, a new task", tasklife.ResponderIDs, "", func(id string) bool { return id == "" }},
		{"server-made task ids, a follow-up", tasklife.ResponderIDs, "t-1", func(id string) bool { return id == "t-1" }},
		{"requester-made task ids, a follow-up", tasklife.RequesterIDs, "t-1", func(id string) bool { return id == "t-1" }},
		{"requester-made task ids, a new task gets one", tasklife.RequesterIDs, "", func(id string) bool { return len(id) == 36 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingHTTP, IDs: tc.ids},
				answer: func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
					deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON("t-1", "TASK_STATE_COMPLETED")+`}`), End: true})
					return nil
				}}
			c := newClient(t, s)
			req := requester.TextMessage("hi", tc.taskID, "ctx-1")
			before := *req.Message
			if _, err := c.SendMessage(ctx(t), req); err != nil {
				t.Fatal(err)
			}
			if m := req.Message; m.MessageID != before.MessageID || m.TaskID != before.TaskID || m.Role != before.Role || m.ContextID != before.ContextID {
				t.Fatalf("the caller's message was changed: %+v, was %+v", m, before)
			}
			sent := s.requests()[0].Params.(*a2a.SendMessageRequest).Message
			if sent.MessageID != before.MessageID || sent.ContextID != "ctx-1" || sent.Role != a2a.RoleUser || !tc.wantTask(sent.TaskID) {
				t.Fatalf("sent %+v", sent)
			}
		})
	}
}

// Replies that come after the operation took its answer, more than its
// buffer holds, never block their transport: while the operation reads,
// and once it has ended.
func TestLateRepliesDoNotBlockTheTransport(t *testing.T) {
	for _, late := range []int{1, 4, 5, 64} {
		t.Run(strconv.Itoa(late)+" late replies", func(t *testing.T) {
			done := make(chan struct{})
			s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingHTTP, IDs: tasklife.ResponderIDs},
				answer: func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
					go func() {
						defer close(done)
						for range 1 + late {
							deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON("t-1", "TASK_STATE_COMPLETED")+`}`)})
						}
					}()
					return nil
				}}
			c := newClient(t, s)
			res, err := c.SendMessage(ctx(t), requester.TextMessage("hi", "", ""))
			if err != nil || res.Task == nil || res.Task.ID != "t-1" {
				t.Fatalf("%+v %v", res, err)
			}
			<-done // the transport's deliveries all returned
		})
	}
}

// TestErrors: what ends an operation and how it reaches the caller.
func TestErrors(t *testing.T) {
	cases := []struct {
		name     string
		binding  requester.Binding
		answer   func(n int, req *requester.Request, deliver func(*requester.Reply)) error
		opts     []requester.CallOption
		want     error
		attempts int
		also     error // a second error the chain holds
	}{
		{"a failed attempt is not retried", requester.Binding{},
			func(_ int, _ *requester.Request, deliver func(*requester.Reply)) error {
				deliver(&requester.Reply{Failed: errors.New("401 Unauthorized")})
				return nil
			}, nil, nil, 1, nil},
		{"refused attempts run out", requester.Binding{},
			func(_ int, _ *requester.Request, deliver func(*requester.Reply)) error {
				deliver(&requester.Reply{Refused: errors.New("503 Service Unavailable")})
				return nil
			}, nil, requester.ErrUnreachable, 3, nil},
		{"a protocol error comes back by token", requester.Binding{Errors: jsonrpc.BindingHTTP},
			func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
				b, _ := jsonrpc.EncodeError(json.RawMessage(`"`+req.ID+`"`), a2a.NewError(a2a.TokenTaskNotFound, "no such task"), jsonrpc.BindingHTTP)
				deliver(&requester.Reply{Payload: b})
				return nil
			}, nil, a2a.ErrTaskNotFound, 1, nil},
		{"a retryable error is retried", requester.Binding{Errors: jsonrpc.BindingMQTT},
			func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
				b, _ := jsonrpc.EncodeError(json.RawMessage(`"`+req.ID+`"`), a2a.NewError(a2a.TokenResponderUnavailable, "busy"), jsonrpc.BindingMQTT)
				deliver(&requester.Reply{Payload: b})
				return nil
			}, nil, a2a.ErrResponderUnavailable, 3, requester.ErrUnreachable},
		{"a result that breaks its schema", requester.Binding{},
			func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
				deliver(&requester.Reply{Payload: result(req, `{"task":{"id":"t"}}`)})
				return nil
			}, nil, a2a.ErrInvalidAgentResponse, 1, nil},
		{"a last reply that is not JSON-RPC", requester.Binding{},
			func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
				deliver(&requester.Reply{Payload: []byte(`{"jsonrpc":"2.0","id":"` + req.ID + `"}`), End: true})
				return nil
			}, nil, a2a.ErrInvalidAgentResponse, 1, nil},
		{"no target where the binding needs one", requester.Binding{NeedsTarget: true},
			func(int, *requester.Request, func(*requester.Reply)) error { return nil }, nil, requester.ErrNoTarget, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &scriptTransport{binding: tc.binding, answer: tc.answer}
			c := newClient(t, s)
			_, err := c.SendMessage(ctx(t), requester.TextMessage("hi", "", ""), tc.opts...)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if tc.also != nil && !errors.Is(err, tc.also) {
				t.Fatalf("error %v, want %v in its chain too", err, tc.also)
			}
			if n := len(s.requests()); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

// TestStreamsLoseNothing: a consumer slower than its stream gets every
// item, in order (the transport waits; nothing is dropped).
func TestStreamsLoseNothing(t *testing.T) {
	const items = 500
	s := &scriptTransport{binding: requester.Binding{IDs: tasklife.ResponderIDs}}
	s.answer = func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
		go func() {
			deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON("t", "TASK_STATE_WORKING")+`}`)})
			for i := range items {
				ev := `{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a` + strconv.Itoa(i) + `","parts":[{"text":"x"}]}}}`
				deliver(&requester.Reply{Payload: result(req, ev)})
			}
			deliver(&requester.Reply{Payload: result(req, `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`)})
		}()
		return nil
	}
	c := newClient(t, s)
	n := 0
	for it, err := range c.SendStreamingMessage(ctx(t), requester.TextMessage("go", "", "")) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := it.Payload.(*a2a.TaskArtifactUpdateEvent); ok {
			if want := "a" + strconv.Itoa(n); a.Artifact.ArtifactID != want {
				t.Fatalf("item %d is %s, want %s", n, a.Artifact.ArtifactID, want)
			}
			n++
			if n%50 == 0 {
				time.Sleep(time.Millisecond) // a slow consumer
			}
		}
	}
	if n != items {
		t.Fatalf("%d artifact items, want %d", n, items)
	}
}

// TestStreamCutIsRecoveredWithGetTask: a stream that ends before its final
// item is not sent again; the task id its first item gave is fetched.
func TestStreamCutIsRecoveredWithGetTask(t *testing.T) {
	s := &scriptTransport{binding: requester.Binding{IDs: tasklife.ResponderIDs}}
	s.answer = func(n int, req *requester.Request, deliver func(*requester.Reply)) error {
		switch req.Method {
		case a2a.MethodSendStreamingMessage:
			deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON("server-made", "TASK_STATE_WORKING")+`}`)})
			deliver(&requester.Reply{End: true})
		case a2a.MethodGetTask:
			if id := req.Params.(*a2a.GetTaskRequest).ID; id != "server-made" {
				deliver(&requester.Reply{Failed: errors.New("GetTask of " + id)})
				return nil
			}
			deliver(&requester.Reply{Payload: result(req, taskJSON("server-made", "TASK_STATE_COMPLETED"))})
		}
		return nil
	}
	c := newClient(t, s)
	var states []string
	for it, err := range c.SendStreamingMessage(ctx(t), requester.TextMessage("go", "", "")) {
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, string(it.Payload.(*a2a.Task).Status.State))
	}
	if got := strings.Join(states, ","); got != "TASK_STATE_WORKING,TASK_STATE_COMPLETED" {
		t.Fatalf("items %s", got)
	}
	var methods []string
	for _, r := range s.requests() {
		methods = append(methods, string(r.Method))
	}
	if got := strings.Join(methods, ","); got != "SendStreamingMessage,GetTask" {
		t.Fatalf("requests %s: a cut stream is never sent again", got)
	}
}
