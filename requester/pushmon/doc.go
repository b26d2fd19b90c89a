/*
Package pushmon is the requester side of push notifications: a task monitor
that cannot let a task end unobserved (docs/protocol.md §8; A2A v1.0 §3.5,
§3.1.7 and §4.3).

A Monitor wraps a requester.Client (any transport) and a webhook Receiver
that you serve over HTTP at Config.ReceiverURL:

	m, err := pushmon.New(c.Client, pushmon.Config{ReceiverURL: "https://me.example.com/a2a/push"})
	http.Handle("/a2a/push", m.Receiver())
	go m.Run(ctx) // real time; tests call m.Tick with a fake clock instead
	w, err := m.Send(ctx, requester.TextMessage("long job", "", ""))
	for u := range w.Updates() {
		// u.Item: the reply's task, then pushes and polled tasks, in order
	}
	task, err := w.Wait(ctx) // err: *pushbind.OrphanError when the end went unobserved

Send fuses sending and binding: it puts a TaskPushNotificationConfig (a fresh
random token, the receiver URL) into the SendMessage itself
(SendMessageConfiguration.taskPushNotificationConfig), so the config is
registered atomically with the task and never late (docs/protocol.md §8.2).
From then on the task has a statemachines/pushbind Binding that the Monitor
drives:

  - every push the Receiver accepts (token, body and task checked) is an
    acknowledgement of the binding, and an Update of the Watch;
  - the per-task reconciliation poll (GetTask) runs in every binding state
    until the task ends, whatever the webhook's health: every 60 s while the
    webhook is primary, every 15 s while polling is (docs/protocol.md §8.4,
    §8.6; Config.Timings);
  - each poll reads the agent's delivery report from the task's metadata
    (DeliveryReportKey): a dead or refused config makes the binding dead and
    is registered again once with CreateTaskPushNotificationConfig; if it
    dies again, polling alone carries the task;
  - a terminal state reached while no live channel was bound (the webhook
    not verified and the polls not on schedule across the transition) ends
    the Watch with a *pushbind.OrphanError (errors.Is(err,
    pushbind.ErrTaskOrphaned)), never in silence.

All timing goes through Config.Now: Run drives the Monitor with real timers,
and a test drives it with a fake clock and explicit Tick calls.

Everything is bounded, with documented defaults: the tasks tracked
(Config.MaxTasks), the updates queued per Watch (Config.QueueSize), the body
of a push (Config.MaxBodyBytes), the calls in flight (Config.MaxInFlight)
and the time each may take (Config.CallTimeout).
*/
package pushmon
