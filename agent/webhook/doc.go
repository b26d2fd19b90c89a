// Package webhook is the HTTP sender of A2A push notifications: an
// agent.Notifier that POSTs each status and artifact update of a task to the
// webhooks its push-notification configs name (A2A v1.0 §4.3, "push
// notification objects and delivery"; docs/protocol.md §8.7), and reports
// what became of each config through an agent.PushReporter.
//
// # Requests
//
// Every notification is one POST of the StreamResponse, encoded by the
// generated encoder of package generated/a2a, with
//
//	Content-Type: application/json
//	A2A-Notification-Token: <config token>        (when the config has one)
//	Authorization: <scheme> <credentials>          (when the config's authentication has credentials)
//
// (docs/protocol.md §11, "push token header"). A 2xx answer acknowledges it
// (A2A v1.0 §4.3.3). 5xx (but 501), 429, timeouts and connection errors are
// retried, up to Config.MaxRetries times, with exponential backoff between
// Config.RetryWaitMin and Config.RetryWaitMax; a Retry-After header (RFC 9110
// §10.2.3, seconds or an HTTP date) sets the wait instead, cut to
// RetryWaitMax so that no receiver parks a worker for longer. Each attempt,
// from dialling to the end of the answer, is bounded by Config.Timeout (an
// attempt cut by it is retried like a timeout). Any other
// answer (404, 410, every other 4xx, 501, a 3xx) makes the config dead, and
// so do exhausted retries: nothing more is sent to it until it is forgotten
// or notified with a different URL, token or authentication.
//
// # Address policy (A2A v1.0 §13.2)
//
// The webhook URL comes from the requester, so the Sender refuses to be
// turned against the agent's own network (server-side request forgery). It
// never delivers to a loopback address unless Config.AllowLoopback, to a
// private one (RFC 1918, RFC 4193 fc00::/7, carrier-grade NAT 100.64.0.0/10
// of RFC 6598) unless Config.AllowPrivate, nor ever to a link-local,
// multicast, broadcast or unspecified address. The check is made on the
// address actually dialled, after name resolution (in the dialer), so a
// name that resolves, or later re-resolves, to a forbidden address is
// refused too; a literal address in the URL is refused before any dial.
// Redirects are not followed: a 3xx answer makes the config dead. No proxy
// is used. A refused config is reported agent.PushRefused, with the reason,
// and never retried.
//
// # Order and isolation
//
// Notify only queues the update: it never waits for the network, a
// receiver, a full queue or the encoding, which the worker that delivers
// the update makes (the runtime never changes an update it handed over:
// agent.Notifier). Each config has its own queue, and
// at most one delivery of a config is under way at a time, so a config's
// notifications arrive in the order Notify was called (retries included: a
// notification is retried before the next one is sent). A pool of
// Config.Workers goroutines serves the queues in turn, one notification
// each, so a slow or dead receiver holds at most one worker while the other
// configs are delivered by the others.
//
// A config with nothing queued or under way waits Config.Linger (1 ms by
// default) after its next update before that delivery starts: the reply
// carrying the same update to the caller goes out first, and the agent's
// work on a request is not slowed by the deliveries it causes
// (docs/benchmarks.md, "Push: SendMessage with a binding"). Updates queued
// meanwhile follow without waiting again.
//
// # Overflow
//
// A config's queue holds Config.QueueSize notifications. When a new one
// finds it full, the OLDEST queued update that is not a terminal status
// (COMPLETED, FAILED, CANCELED or REJECTED) is dropped: a receiver that
// falls behind gets the latest state of the task, and the terminal status
// update is never dropped (the queue may grow past its bound by terminal
// updates only). Dropping is reported agent.PushOverflow with the running
// Dropped count at the first drop, then each time the count has doubled;
// when the queue has drained, an agent.PushDelivered report carries the
// final count.
//
// # Memory
//
// The Sender keeps state for a config from its first notification until
// the config settles, and then drops it:
//
//   - once its queue is empty and the last update it delivered, or gave up
//     on, was a terminal status (COMPLETED, FAILED, CANCELED or REJECTED:
//     the task ended and its webhook was told, or could not be);
//   - once it is dead or refused, after its report;
//   - when it is forgotten (Forget: the agent runtime calls it for a
//     config deleted or replaced, and for each config of a task its task
//     store evicted or expired) or abandoned by Close.
//
// A later notification of a dropped config makes it anew (a task's update
// after its terminal one is delivered), except for a dead or refused one:
// the Sender remembers up to Config.MaxDeadConfigs (10,000) of those, by a
// hash of their URL, token and authentication (never the secrets
// themselves), and discards their notifications as before, without a
// request or a report, until the config is forgotten or notified with a
// different URL, token or authentication. Past that bound the oldest is
// forgotten: an update for it is sent again, and the receiver's answer (or
// the address policy) makes it dead or refused again.
//
// At most Config.MaxConfigs (100,000) configs are kept at once. A config
// whose task waits (input or authentication required) stays idle, nothing
// queued or under way; past the bound, a new config evicts the config idle
// for longest, which is made anew, and reported on anew, if its task goes
// on. When none is idle, the new config's update is discarded and the
// config reported agent.PushRefused, with the reason, without being
// remembered: its next update is tried again. Stats shows the counts.
//
// # Reports
//
// Reports are made on changes only: the first acknowledged delivery
// (PushDelivered), the first failed attempt that will be retried
// (PushFailing), the first success after that, and PushDead, PushRefused and
// PushOverflow as above. They are made in order, from one goroutine of the
// Sender, never while Notify or Forget waits, so a PushReporter may call
// Notify and Forget. Nothing is reported for a config after Forget. The
// Logger gets the same reports; tokens, credentials and URLs are never
// logged or reported.
package webhook
