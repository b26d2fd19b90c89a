/*
Package reach decides what an agent does with an inbound message given its
reachability: accept it live, queue it for later delivery, or refuse it, and
what to answer when it does not accept it live.

It implements the offline store-and-forward profile of docs/protocol.md §7:
reachability modes (§7.1), the asleep signal (§7.2), queue bounds (§7.3),
backpressure (§7.4) and the wake-storm advice (§7.8).
The modes are offline.ReachabilityMode: AlwaysAvailable accepts; SessionOnly
accepts while a session is active and never queues; PeriodicallyAvailable
accepts inside its published windows and may queue outside them;
UnavailableStoreForward refuses live processing and may queue. A refusal or
a queued message is answered with agent_asleep (HTTP 503), carrying
retryAfterSec when the next window is known; queued is true only after the
enqueue succeeded. An enqueue refused by a queue bound is answered with
asleep_queue_full (HTTP 507 for the global caps, 429 for the per-peer cap),
never with agent_asleep.

Wake windows are jittered per agent (HourlyWake, StableUnit) so that agents
sharing a schedule do not all wake at once, and the retryAfterSec given to
senders can be spread over the start of the window (Availability.RetrySpread)
so that they do not all retry at its first second.

Everything here is a pure function of its arguments: the time is passed in
and randomness is injected.
*/
package reach
