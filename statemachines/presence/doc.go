/*
Package presence keeps the discovery subscriber's table of agents: for every
agent seen on a discovery topic, its latest Agent Card, whether it is online,
offline or of unknown liveness, who said so (the agent, its Last Will or the
broker), since when, and whether it was ever seen online.

It implements the subscriber side of the A2A-over-MQTT 0.1 presence rules:
its user story 09 (presence lifecycle: the subscriber state table and its
failure cases), the profile's sections Presence and Liveness, Discovery
Subscriber Behavior and Optional Broker-Managed Status, and docs/protocol.md
§3 and §11 ("broker status source": any status source other than agent or
lwt is broker-managed). The transitions are the generated table
generated/fsm.PresenceStep (schema/fsm/presence.json); this package turns a
discovery message into one of its events and applies the decisions.

A Tracker is fed one discovery message at a time, as the transport received
it: its topic, its payload and its user properties as plain key/value pairs
(no MQTT client types). It does no I/O, starts no goroutine and reads no clock:
the caller passes the time of receipt. It is not safe for concurrent use;
a transport serialises the messages of one subscription anyway.

Status is advisory. No state of this table is a reason to skip or shorten
request retries: an agent reported offline may already be back.
*/
package presence
