/*
Package retry runs a requester's retry and timeout profile for one logical
operation (a SendMessage, GetTask, CancelTask…): when to publish, when an
attempt has failed, how long to back off, and when to give up.

It implements the A2A-over-MQTT 0.1 Requester Retry and Timeout Profile
(Core conformance) and docs/protocol.md §4.4 and §11 ("correlation of
retries"). The defaults are
mqttbind.DefaultRetryProfile(): first-reply timeout 15 s, stream idle timeout
30 s, at most 3 attempts, backoff 1000, 2000, 4000 ms with ±20 % jitter, all
configurable. An attempt fails when its publish is not accepted, when no
correlated reply arrives within the first-reply timeout, or when the reply is
an error whose token is retry-eligible (generated/a2a ErrorInfo.Retryable:
request_expired and responder_unavailable are; transport_protocol_error and
unsupported_operation are not, whatever their codes). Retrying stops at the
first valid correlated reply, and never happens once a stream item has
arrived: a stalled stream is recovered with GetTask on the known Task.id.
Every attempt is published with fresh Correlation Data and the same Task.id;
every attempt's Correlation Data stays live until the first reply arrives.
A pooled request retries on the pool until a reply names its responder
(a2a-responder-agent-id), then on that responder's direct topic: the same
"latest responder wins" rule as statemachines/handover, which a requester
feeds the same replies.

An Operation is pure: no goroutine, no timer, no clock. Every method takes
now and returns a Decision: publish, wait until Wake and call Tick, recover
with GetTask, or finish with an Outcome. The jitter source is injected.
*/
package retry
