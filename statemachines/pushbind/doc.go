/*
Package pushbind watches the delivery channels of a task, per taskId, for the
client that owns a push-notification receiver, so that no task reaches a
terminal state unobserved without an orphan report.

It implements docs/protocol.md §8 (push-notification binding: permission
versus binding, the binding states, polling as reconciliation, the three
ways to orphan a task) and A2A v1.0 §3.5 and §4.3. The card's
capabilities.pushNotifications is permission, never a binding: only a
TaskPushNotificationConfig registered for this taskId, before or with the
first transition out of SUBMITTED, binds delivery. The binding goes unbound,
registered, acknowledged, and becomes suspect (not acknowledged within the
expected window, registered late, or a failed delivery) or dead (the
receiver answered 404, 410 or another 4xx). Polling with GetTask is the
reconciliation channel and its timer runs in every state until the task
ends, whatever the webhook's health.

The invariant: a terminal state is durable only if a live, verified channel
was bound at the moment of the transition. A channel is live when it is a
webhook that acknowledged a push within the expected window, or polling kept
on schedule across the transition (the terminal state was found within one
reconciliation interval, plus a grace, of being reached).
A terminal state found otherwise ends the binding in Orphaned with the
RaiseOrphaned decision: an error to surface (Binding.Err), never silence.

The transitions are the generated table generated/fsm.PushBindingStep
(schema/fsm/pushbind.json); this package evaluates its guards from times and
status codes and keeps the timers. A Binding does no I/O and reads no clock:
every method takes now, and the caller calls Tick at Decision.Wake (or
sooner). Every method first applies an expected transition window that ran
out before now, so a late timer never lets an unverified webhook count as
live.
*/
package pushbind
