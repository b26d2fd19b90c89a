package requester

import (
	"errors"
	"fmt"

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
	if r.taskID == "" {
		if c.binding.NeedsTarget && r.target == (Target{}) {
			return Target{}, ErrNoTarget
		}
		return r.target, nil
	}
	if t, ok := c.routes.Target(r.taskID); ok {
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
	c.persist(r.taskID, step)
	return step.Target, nil
}

// fallBack applies a handover target that stayed unreachable through the
// retry profile: it reports whether the task goes back to its card agent
// (once).
func (c *Client) fallBack(taskID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, routed := c.routes.Route(taskID); !routed {
		return false
	}
	step, err := c.routes.Exhausted(taskID)
	if err != nil {
		return false
	}
	c.persist(taskID, step)
	return step.Outputs.Has(fsm.HandoverOutputFallBackToCardAgent)
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
