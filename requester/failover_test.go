package requester_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// fleet is a scripted pool "workers" whose members share their tasks:
// the pool's request topic is answered by the member named next, each
// member's direct topic by that member unless it is dead (its attempts
// are not accepted, as with no connection to it), and the reply names
// its member in a2a-responder-agent-id, as pool members do. A message
// with the text "ask" gets INPUT_REQUIRED, anything else COMPLETED.
type fleet struct {
	mu       sync.Mutex
	next     string          // the member the pool hands the next request to
	dead     map[string]bool // members gone
	poolDead bool            // no member takes pooled requests
}

func (f *fleet) answer(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
	f.mu.Lock()
	member := req.Target.Agent
	if req.Target.Pool != "" {
		if f.poolDead {
			f.mu.Unlock()
			return errors.New("no member of the pool takes the request")
		}
		member = f.next
	}
	dead := f.dead[member]
	f.mu.Unlock()
	if dead {
		return errors.New(member + " is gone")
	}
	state := "TASK_STATE_COMPLETED"
	var text a2a.PartText
	if p, ok := req.Params.(*a2a.SendMessageRequest); ok {
		text, _ = p.Message.Parts[0].Content.(a2a.PartText)
	}
	if text == "ask" {
		state = "TASK_STATE_INPUT_REQUIRED"
	}
	body := taskJSON(req.TaskID, state)
	if req.Method != a2a.MethodGetTask {
		body = `{"task":` + body + `}`
	}
	deliver(&requester.Reply{Payload: result(req, body), Responders: []string{member}})
	return nil
}

// targets lists where the requests went, from the nth on.
func targets(s *scriptTransport, from int) string {
	var out []string
	for _, r := range s.requests()[from:] {
		out = append(out, r.Target.String())
	}
	return strings.Join(out, ",")
}

// Pool failover (docs/protocol.md §4.6.1): a pooled task's member dies
// while the task waits for input; the follow-up goes where
// Config.PoolFailover says, with one Task.id and messageId for every
// attempt, and the route is saved as it changes.
func TestPoolFailover(t *testing.T) {
	cases := []struct {
		name     string
		failover bool
		poolDead bool
		// want: where the follow-up's attempts went, its error, the
		// member that answered it, the route afterwards
		attempts  string
		err       error
		responder string
		route     handover.Target
	}{
		{"failover off: the profile's rule, reported unreachable", false, false,
			"agent/m1,agent/m1,agent/m1", requester.ErrUnreachable, "", handover.Target{Agent: "m1"}},
		{"failover on: the profile runs out against m1, then the pool, where m2 takes it", true, false,
			"agent/m1,agent/m1,agent/m1,pool/workers", nil, "m2", handover.Target{Agent: "m2"}},
		{"failover on, the pool gone too: reported once the pool's profile runs out", true, true,
			"agent/m1,agent/m1,agent/m1,pool/workers,pool/workers,pool/workers", requester.ErrUnreachable, "", handover.Target{Pool: "workers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fleet{next: "m1", dead: map[string]bool{}}
			s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingMQTT, IDs: tasklife.RequesterIDs, NeedsTarget: true, Retry: fast()}, answer: f.answer}
			saved := &handover.MemStore{}
			c, err := requester.New(s, requester.Config{Routes: saved, PoolFailover: tc.failover})
			if err != nil {
				t.Fatal(err)
			}
			asked, err := c.SendMessage(ctx(t), requester.TextMessage("ask", "", "c"), requester.ToPool("workers"))
			if err != nil || asked.Responder != "m1" || asked.Task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("%+v %v", asked, err)
			}
			if got := targets(s, 0); got != "pool/workers" {
				t.Fatalf("the first request went to %s", got)
			}
			f.mu.Lock()
			f.dead["m1"], f.next, f.poolDead = true, "m2", tc.poolDead
			f.mu.Unlock()

			before := len(s.requests())
			done, err := c.SendMessage(ctx(t), requester.TextMessage("blue", asked.Task.ID, "c"), requester.ToPool("workers"))
			if got := targets(s, before); got != tc.attempts {
				t.Fatalf("the follow-up went to %s, want %s", got, tc.attempts)
			}
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("error %v, want %v", err, tc.err)
			case tc.err == nil && (err != nil || done.Responder != tc.responder || done.Task.Status.State != a2a.TaskStateCompleted):
				t.Fatalf("%+v %v, want completed by %s", done, err, tc.responder)
			}
			var msgIDs, taskIDs []string
			for _, r := range s.requests()[before:] {
				m := r.Params.(*a2a.SendMessageRequest).Message
				msgIDs, taskIDs = append(msgIDs, m.MessageID), append(taskIDs, m.TaskID)
			}
			if len(slices.Compact(slices.Clone(msgIDs))) != 1 || len(slices.Compact(slices.Clone(taskIDs))) != 1 || taskIDs[0] != asked.Task.ID {
				t.Fatalf("the follow-up's attempts carry messageIds %v and taskIds %v", msgIDs, taskIDs)
			}
			if got, _ := c.Route(asked.Task.ID); got != tc.route {
				t.Fatalf("route %v, want %v", got, tc.route)
			}
			stored, _ := saved.LoadRoutes()
			if len(stored) != 1 || stored[0].Target() != tc.route {
				t.Fatalf("saved routes %+v, want one to %v", stored, tc.route)
			}
		})
	}
}

// After a failover whose pool was gone too, the task's operations go to
// the pool: a later GetTask is not tried on the dead member again, and the
// member that answers becomes the responder. No second failover follows
// without a new selection: that member's own loss is the next one.
func TestPoolFailoverNeedsANewSelection(t *testing.T) {
	f := &fleet{next: "m1", dead: map[string]bool{}}
	s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingMQTT, IDs: tasklife.RequesterIDs, NeedsTarget: true, Retry: fast()}, answer: f.answer}
	c, err := requester.New(s, requester.Config{PoolFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := c.SendMessage(ctx(t), requester.TextMessage("ask", "", "c"), requester.ToPool("workers"))
	if err != nil {
		t.Fatal(err)
	}
	id := asked.Task.ID
	f.mu.Lock()
	f.dead["m1"], f.poolDead = true, true
	f.mu.Unlock()
	if _, err := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: id}); !errors.Is(err, requester.ErrUnreachable) {
		t.Fatalf("GetTask with the whole pool gone: %v", err)
	}
	f.mu.Lock()
	f.poolDead, f.next = false, "m3"
	f.mu.Unlock()
	before := len(s.requests())
	task, err := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: id})
	if err != nil || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v %v", task, err)
	}
	if got := targets(s, before); got != "pool/workers" {
		t.Fatalf("GetTask went to %s", got)
	}
	if got, _ := c.Route(id); got != (handover.Target{Agent: "m3"}) {
		t.Fatalf("route %v after m3 answered", got)
	}
	// m3 dies as well: one more failover, to m2.
	f.mu.Lock()
	f.dead["m3"], f.next = true, "m2"
	f.mu.Unlock()
	before = len(s.requests())
	if _, err := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: id}); err != nil {
		t.Fatal(err)
	}
	if got := targets(s, before); got != "agent/m3,agent/m3,agent/m3,pool/workers" {
		t.Fatalf("GetTask went to %s", got)
	}
}

// PoolFailover changes nothing for a task that is not pooled: a handover
// target that stays unreachable falls back to the card agent once.
func TestPoolFailoverLeavesHandoverAlone(t *testing.T) {
	f := &fleet{dead: map[string]bool{}}
	var handedOver bool
	s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingMQTT, IDs: tasklife.RequesterIDs, NeedsTarget: true, Retry: fast()}}
	s.answer = func(n int, req *requester.Request, deliver func(*requester.Reply)) error {
		if req.Target.Agent == "b" && !handedOver {
			// The card agent hands the task over to b-c1, then b-c1 dies.
			handedOver = true
			deliver(&requester.Reply{Payload: result(req, `{"task":`+taskJSON(req.TaskID, "TASK_STATE_INPUT_REQUIRED")+`}`), Responders: []string{"b-c1"}})
			f.mu.Lock()
			f.dead["b-c1"] = true
			f.mu.Unlock()
			return nil
		}
		return f.answer(n, req, deliver)
	}
	c, err := requester.New(s, requester.Config{PoolFailover: true})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := c.SendMessage(ctx(t), requester.TextMessage("ask", "", "c"), requester.ToAgent("b"))
	if err != nil || asked.Responder != "b-c1" {
		t.Fatalf("%+v %v", asked, err)
	}
	done, err := c.SendMessage(ctx(t), requester.TextMessage("blue", asked.Task.ID, "c"), requester.ToAgent("b"))
	if err != nil || done.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%+v %v", done, err)
	}
	if got := targets(s, 1); got != "agent/b-c1,agent/b-c1,agent/b-c1,agent/b" {
		t.Fatalf("the follow-up went to %s", got)
	}
	if r := c.Routes(); len(r) != 1 || r[0].State != fsm.HandoverStateFallenBack {
		t.Fatalf("routes %+v", r)
	}
}
