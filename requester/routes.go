package requester

import (
	"container/list"
	"errors"
	"fmt"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/fsm"
	"github.com/a2abind/a2abind/statemachines/handover"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// routeFor returns where the operation goes and starts the route of a new
// task.
func (c *Client) routeFor(r *call) (Target, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
	if r.taskID == "" {
		if c.binding.NeedsTarget && r.target == (Target{}) {
			return Target{}, ErrNoTarget
		}
		return r.target, nil
	}
	if t, ok := c.routes.Target(r.taskID); ok {
		c.touchLocked(r.taskID)
		return t, nil
	}
	var step handover.Step
	var err error
	switch {
	case r.target.Pool != "":
		step, err = c.routes.StartPooled(r.taskID, r.target.Pool)
	case r.target.Agent != "":
		step, err = c.routes.Start(r.taskID, r.target.Agent)
	case c.binding.NeedsTarget:
		return Target{}, fmt.Errorf("%w: task %s has no route yet", ErrNoTarget, r.taskID)
	default:
		// No agent named, nothing routed: the transport's own endpoint.
		return Target{}, nil
	}
	if err != nil {
		return Target{}, err
	}
	c.touchLocked(r.taskID)
	c.persist(r.taskID, step)
	return step.Target, nil
}

// fallBack applies a target that stayed unreachable through the retry
// profile: it returns FallBackToCardAgent when the task goes back to its
// card agent (once), FallBackToPool when a pooled task goes back to its
// pool (Config.PoolFailover), and 0 when the operation fails.
func (c *Client) fallBack(taskID string) fsm.HandoverOutput {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, routed := c.routes.Route(taskID); !routed {
		return 0
	}
	step, err := c.routes.Exhausted(taskID)
	if err != nil {
		return 0
	}
	c.persist(taskID, step)
	for _, o := range []fsm.HandoverOutput{fsm.HandoverOutputFallBackToCardAgent, fsm.HandoverOutputFallBackToPool} {
		if step.Outputs.Has(o) {
			return o
		}
	}
	return 0
}

// noteReply applies what a reply says about the operation's task, on the
// transport's goroutine before the operation is woken: the handover
// table's step for its a2a-responder-agent-id (saved when the step says
// so), and, when the reply shows the task finished, the bound on finished
// routes. A misrouted reply changes nothing but is marked.
func (c *Client) noteReply(ex *exchange, in *inbound) {
	if ex.taskID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, routed := c.routes.Route(ex.taskID); !routed {
		return
	}
	c.touchLocked(ex.taskID)
	step, err := c.routes.Reply(ex.taskID, in.responders)
	if err == nil {
		c.persist(ex.taskID, step)
		if step.Outputs.Has(fsm.HandoverOutputProtocolError) {
			in.misrouted = true
			return
		}
	}
	if id, state, ok := taskStateOf(in.value); ok {
		c.observeLocked(ex.taskID, id, state)
	}
}

// observeLocked notes the state a reply showed for the task an operation
// was about (a reply about another task is ignored): once the task is
// finished its route joins the bounded set of finished routes, and the
// oldest finished route beyond the bound is forgotten. Called with c.mu
// held.
func (c *Client) observeLocked(taskID, replyTaskID string, state a2a.TaskState) {
	if taskID == "" || replyTaskID != taskID {
		return
	}
	st, err := tasklife.StateOf(state)
	if err != nil || !st.Terminal() {
		return
	}
	if _, ok := c.routes.Route(taskID); !ok {
		return
	}
	if _, seen := c.finishedSet[taskID]; seen {
		return
	}
	c.finished = append(c.finished, taskID)
	c.finishedSet[taskID] = struct{}{}
	// Bounded by count from now on, not by age.
	c.going.remove(taskID)
	for len(c.finished) > max(c.cfg.FinishedRoutes, 0) {
		old := c.finished[0]
		c.finished[0] = ""
		c.finished = c.finished[1:]
		delete(c.finishedSet, old)
		c.routes.Forget(old)
		if c.cfg.Routes != nil {
			if err := c.cfg.Routes.DeleteRoute(old); err != nil {
				c.log.Error("requester: deleting a finished task's route", "task", old, "err", err)
			}
		}
	}
}

// persist saves a route when the step asks for it. Called with c.mu held.
func (c *Client) persist(taskID string, step handover.Step) {
	if c.cfg.Routes == nil || !step.Outputs.Has(fsm.HandoverOutputPersistRoute) {
		return
	}
	if r, ok := c.routes.Route(taskID); ok {
		if err := c.cfg.Routes.SaveRoute(r); err != nil {
			c.log.Error("requester: saving a handover route", "task", taskID, "err", err)
		}
	}
}

// ErrNoTarget reports an operation with no agent or pool to go to, on a
// transport that needs one (Binding.NeedsTarget).
var ErrNoTarget = errors.New("requester: name the agent or pool to send to (requester.To)")

// routeAges orders the routes of tasks not seen finished by their last
// use, so that the idle ones are found from the front.
type routeAges struct {
	order list.List // of *routeAge, least recently used first
	byID  map[string]*list.Element
}

// routeAge is when a task's route was last used.
type routeAge struct {
	taskID string
	at     time.Time
}

func newRouteAges() routeAges { return routeAges{byID: map[string]*list.Element{}} }

func (a *routeAges) remove(taskID string) {
	if e, ok := a.byID[taskID]; ok {
		a.order.Remove(e)
		delete(a.byID, taskID)
	}
}

// touchLocked notes a use of a task's route now, unless the task was seen
// finished. Called with c.mu held.
func (c *Client) touchLocked(taskID string) {
	if _, done := c.finishedSet[taskID]; done {
		return
	}
	now := c.cfg.Clock()
	if e, ok := c.going.byID[taskID]; ok {
		e.Value.(*routeAge).at = now
		c.going.order.MoveToBack(e)
		return
	}
	c.going.byID[taskID] = c.going.order.PushBack(&routeAge{taskID: taskID, at: now})
}

// expireLocked forgets the routes of tasks not seen finished and unused
// for longer than Config.RouteIdleExpiry, deleting them from Config.Routes
// too. Called with c.mu held.
func (c *Client) expireLocked() {
	if c.cfg.RouteIdleExpiry < 0 || c.going.order.Len() == 0 {
		// Nothing to expire: the clock is not read.
		return
	}
	cut := c.cfg.Clock().Add(-c.cfg.RouteIdleExpiry)
	for e := c.going.order.Front(); e != nil; e = c.going.order.Front() {
		age := e.Value.(*routeAge)
		if !age.at.Before(cut) {
			return
		}
		c.going.remove(age.taskID)
		c.routes.Forget(age.taskID)
		c.log.Debug("requester: route of an idle task forgotten", "task", age.taskID, "last used", age.at)
		if c.cfg.Routes != nil {
			if err := c.cfg.Routes.DeleteRoute(age.taskID); err != nil {
				c.log.Error("requester: deleting an idle task's route", "task", age.taskID, "err", err)
			}
		}
	}
}
