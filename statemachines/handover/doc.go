/*
Package handover keeps a requester's routing table: for every Task.id, where
its operations (follow-ups, retries, GetTask, CancelTask) are published.

It implements A2A-over-MQTT 0.1 sections Requester Behavior, Optional Task
Handover, Requester Retry and Timeout Profile and Optional Shared Subscription
Dispatch, user story 07 (task handover, with its failure cases) and
docs/protocol.md §9 and §4.6: the latest a2a-responder-agent-id received for
a Task.id wins, on any reply or stream item, pool or handover alike; a reply
without it changes nothing (except that a pooled reply must carry it); when
the retry profile is exhausted against a responder, the requester falls back
to the card agent once; a pooled task never goes back to the pool once a
responder is known, unless the requester allows pool failover
(Table.PoolFailover, a deployment choice for pools whose members share a
task store, docs/protocol.md §4.6.1): then a responder unreachable through
the retry profile (Exhausted) sends the task back to its pool, whose next
member to answer continues it. Task.id never changes. The transitions are
the generated table generated/fsm.HandoverStep (schema/fsm/handover.json).

A Table does no I/O: when a step's outputs include PersistRoute, the caller
saves the route (Table.Route) to its Store; Save and Restore copy the whole
table to and from one. It is not safe for concurrent use.
*/
package handover
