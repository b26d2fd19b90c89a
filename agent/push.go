package agent

import (
	"errors"
	"time"

	"github.com/a2abind/a2abind/generated/a2a"
)

// Notifier delivers a task's push notifications (A2A v1.0 §4.3) to the
// webhooks its push-notification configs name. The runtime calls Notify for
// every status and artifact update of a task that has configs, in the
// order of the task's events, and Forget when a config is deleted or
// replaced, and for each config of a task the task store drops on its own
// (evicted for room, expired waiting for input, past its retention), when
// the store tells it so (taskstore.DropWatcher: the stores of
// agent/taskstore do), so that nothing is delivered for a task GetTask no
// longer knows. It does not call Forget when a task ends: a Notifier bounds
// what it keeps itself (agent/webhook drops a config once its terminal
// update is delivered, among others).
// Notify must not block on the network: a Notifier queues, delivers in
// order per config, and reports what became of each binding through the
// PushReporter it was given (agent/webhook is the HTTP one).
type Notifier interface {
	// Notify queues ev for the webhook of cfg (cfg.TaskID is the task's).
	// Both are shared with the runtime, which never changes them
	// afterwards (cfg.Authentication included): a Notifier may keep ev
	// and encode it later, and must not change either.
	Notify(cfg a2a.TaskPushNotificationConfig, ev *a2a.StreamResponse)
	// Forget drops what is queued for a config and stops delivering to it.
	Forget(taskID, configID string)
}

// CheckCard checks a card the server is to be served under against what
// the server does: a card that declares capabilities.pushNotifications
// (A2A v1.0 §3.3.4) needs WithPush. Transports call it before they serve
// a card.
func (s *Server) CheckCard(c *a2a.AgentCard) error {
	if caps := c.Capabilities; caps != nil && caps.PushNotifications != nil && *caps.PushNotifications && !s.PushEnabled() {
		return errors.New("agent card: capabilities.pushNotifications is declared, but the server sends no push notifications (give it agent.WithPush, or leave the capability out)")
	}
	return nil
}

// PushState is the delivery state of one push-notification config, as the
// Notifier reports it.
type PushState string

// The push states a Notifier reports.
const (
	// PushDelivered: the webhook acknowledged a notification (2xx).
	PushDelivered PushState = "delivered"
	// PushFailing: deliveries fail (5xx, timeouts, connection refused)
	// and are retried; the binding is suspect.
	PushFailing PushState = "failing"
	// PushDead: the webhook answered 404, 410 or another 4xx, or retries
	// ran out: nothing more is sent to it. The task stays readable with
	// GetTask.
	PushDead PushState = "dead"
	// PushRefused: the agent refuses to deliver to this URL (an address
	// its policy forbids: loopback, private, link-local, multicast).
	PushRefused PushState = "refused"
	// PushOverflow: the config's queue was full and notifications were
	// dropped (Dropped says how many); later ones are still delivered.
	PushOverflow PushState = "overflow"
)

// PushReport is what a Notifier reports about one config.
type PushReport struct {
	TaskID, ConfigID string
	State            PushState
	// Status is the webhook's last HTTP status (0 when it gave none).
	Status int
	// Reason says why, in a few words, for a failing, dead, refused or
	// overflowing config.
	Reason string
	// Dropped counts the notifications dropped by overflow so far.
	Dropped int
	// At is when it happened.
	At time.Time
}

// PushReporter receives a Notifier's reports (the Server is one: it records
// them on the task, where the requester reads them with GetTask).
type PushReporter interface {
	PushReport(r PushReport)
}

// PushReporterFunc adapts a function to PushReporter. It lets a Notifier
// be made before the Server that records its reports:
//
//	var srv *agent.Server
//	n := newNotifier(agent.PushReporterFunc(func(r agent.PushReport) { srv.PushReport(r) }))
//	srv = agent.NewServer(h, agent.WithPush(agent.PushConfig{Notifier: n}))
//
// (newNotifier stands for the Notifier's constructor: it reports only
// about notifications, which the server hands it once it serves.)
type PushReporterFunc func(r PushReport)

// PushReport calls f.
func (f PushReporterFunc) PushReport(r PushReport) { f(r) }
