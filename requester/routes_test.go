package requester_test

import (
	"sync"
	"testing"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/jsonrpc"
	"github.com/a2abind/a2abind/requester"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// stepClock is a clock moved by the test only.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The route of a task not seen finished is forgotten (and deleted from
// the saved routes) once unused for longer than RouteIdleExpiry; a use
// restarts its idle time; the route of a finished task is bounded by count
// only. The clock is injected: nothing sleeps.
func TestRoutesOfIdleTasksExpire(t *testing.T) {
	const day = 24 * time.Hour
	cases := []struct {
		name   string
		expiry time.Duration // 0: the default
		state  string        // of the task, as the replies show it
		steps  []time.Duration
		// touch: an operation on the task after each step but the last
		touch  bool
		routed bool
	}{
		{"unused past the default expiry", 0, "TASK_STATE_INPUT_REQUIRED", []time.Duration{7*day + time.Second}, false, false},
		{"unused within the default expiry", 0, "TASK_STATE_WORKING", []time.Duration{7 * day}, false, true},
		{"used now and then", 0, "TASK_STATE_INPUT_REQUIRED", []time.Duration{6 * day, 6 * day, 6 * day}, true, true},
		{"a configured expiry", time.Hour, "TASK_STATE_AUTH_REQUIRED", []time.Duration{time.Hour + time.Second}, false, false},
		{"a negative expiry keeps them", -1, "TASK_STATE_INPUT_REQUIRED", []time.Duration{365 * day}, false, true},
		{"a finished task is bounded by count, not age", 0, "TASK_STATE_COMPLETED", []time.Duration{365 * day}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &stepClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
			saved := &handover.MemStore{}
			s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingMQTT, IDs: tasklife.RequesterIDs, NeedsTarget: true, Retry: fast()},
				answer: func(_ int, req *requester.Request, deliver func(*requester.Reply)) error {
					id := req.TaskID
					var payload []byte
					if req.Method == a2a.MethodGetTask {
						payload = result(req, taskJSON(id, tc.state))
					} else {
						payload = result(req, `{"task":`+taskJSON(id, tc.state)+`}`)
					}
					// The card agent hands the task over to b-c1.
					deliver(&requester.Reply{Payload: payload, Responders: []string{"b-c1"}})
					return nil
				}}
			c, err := requester.New(s, requester.Config{Routes: saved, RouteIdleExpiry: tc.expiry, Clock: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.SendMessage(ctx(t), requester.TextMessage("hi", "", ""), requester.ToAgent("b"))
			if err != nil {
				t.Fatal(err)
			}
			id := res.Task.ID
			if target, ok := c.Route(id); !ok || target.Agent != "b-c1" {
				t.Fatalf("route after the handover: %v %v", target, ok)
			}
			for i, d := range tc.steps {
				clk.advance(d)
				if tc.touch && i < len(tc.steps)-1 {
					if _, err := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: id}); err != nil {
						t.Fatal(err)
					}
				}
			}
			_, routed := c.Route(id)
			stored, _ := saved.LoadRoutes()
			if routed != tc.routed || (len(stored) == 1) != tc.routed || (len(c.Routes()) == 1) != tc.routed {
				t.Fatalf("routed %v, %d saved, want routed %v", routed, len(stored), tc.routed)
			}
		})
	}
}

// Routes restored from the store at start have their idle time run from
// then.
func TestRestoredRoutesExpireFromTheRestart(t *testing.T) {
	clk := &stepClock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	saved := &handover.MemStore{}
	tbl := handover.NewTable()
	if _, err := tbl.Start("task-1", "b"); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Save(saved); err != nil {
		t.Fatal(err)
	}
	s := &scriptTransport{binding: requester.Binding{Errors: jsonrpc.BindingMQTT, IDs: tasklife.RequesterIDs, NeedsTarget: true, Retry: fast()}}
	c, err := requester.New(s, requester.Config{Routes: saved, RouteIdleExpiry: time.Hour, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour)
	if _, ok := c.Route("task-1"); !ok {
		t.Fatal("forgotten within the expiry")
	}
	clk.advance(time.Second)
	if _, ok := c.Route("task-1"); ok {
		t.Fatal("kept past the expiry")
	}
	if stored, _ := saved.LoadRoutes(); len(stored) != 0 {
		t.Fatalf("%d routes still saved", len(stored))
	}
}
