// Package mqtt is the A2A-over-MQTT binding (profile 0.1) of a2abind, on
// MQTT v5 with github.com/eclipse/paho.golang (autopaho for connection
// management). Import it as a2amqtt:
//
//	import a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
//
// It is deliberately thin: it moves bytes between topics and the
// transport-independent agent runtime (package agent) and requester rules
// (package statemachines/...), and adds only what is about MQTT itself:
// topics, user properties, Response Topic and Correlation Data, retained
// cards and the Last Will. A request's a2a-authorization token and its
// Message Expiry become agent.Call.Token and Call.Deadline: the runtime's
// verifier (agent.WithVerifier) and deadline check apply to them as to any
// transport's.
//
//   - Agent serves an agent.Server: its Client ID is {org}/{unit}/{agent},
//     its Will is its card (retained, QoS 1, a2a-status=offline,
//     a2a-status-source=lwt), it publishes the retained card online after
//     every (re)connect and offline before a graceful disconnect, and
//     answers requests on its direct topic and, with a pool, on the shared
//     subscription $share/{group}/…/pool/{pool}.
//   - Client is a requester: its reply topic is subscribed before the first
//     request, replies are matched by Correlation Data, and it applies the
//     retry profile and the handover routing of the profile.
//   - Watch follows the discovery topics of an org/unit and reports
//     presence changes.
//
// # Getting started
//
// The package example runs an agent and a requester on the embedded
// broker (package broker) in one program. The guide, docs/guide.md (https://github.com/a2abind/a2abind/blob/main/docs/guide.md),
// shows the same on mosquitto, the topics and user properties at a
// glance, and serving one agent over MQTT and HTTP at once; package
// agentcard builds the card an Agent publishes.
//
// # Reconnects
//
// autopaho reconnects whenever a connection is lost, and the binding makes
// every connection up ready before it counts on it: an Agent subscribes
// its request topics and publishes its card online (the announce, in that
// order, so nobody sees it online before it listens), a Client subscribes
// its reply topic, a Watch its discovery filter, each waiting for the
// broker's acknowledgement (a SUBACK granting every filter, the card's
// PUBACK) within Connection.ConnectTimeout. A connection where any of it
// fails (refused, not acknowledged in time) would stay connected but deaf,
// so it is dropped (its network connection closed: the broker publishes
// the Will) and made again, until it succeeds. On the first connection a
// refusal (the CONNECT's, a subscription's, the card's, a capability
// missing: see "Refusals and capabilities") fails NewAgent, NewClient or
// Watch at once (the caller learns why); later failures are logged, once
// per burst.
//
// After the connection was once ready, a refusal that retrying cannot
// change (a SUBACK or PUBACK 0x87 not authorized, 0x8F topic filter
// invalid, 0x90 topic name invalid, 0x99 payload format invalid, 0x9E,
// 0xA1 or 0xA2 not supported: MQTT v5 §3.4.2.1, §3.9.3), such as a broker
// restarted with an ACL that no longer lets an agent publish its card or
// subscribe its request topic, a CONNACK refusing the client's
// credentials, identity or Will (0x84-0x87, 0x8A, 0x8C, 0x95, 0x99, 0x9A,
// 0x9B: §3.2.2.2), or a capability the binding needs no longer offered,
// stops the connection for good: it is
// dropped without DISCONNECT (the broker publishes the Will: watchers see
// the agent offline), never made again, and the refusal is logged once at
// ERROR on the caller's logger. Agent.Done, Client.Done and Watcher.Done
// are then closed, and Err returns the *SubscribeError, *PublishError,
// *ConnectError or *CapabilityError;
// publishes fail with ErrStopped, and Close returns nil at once. A program
// should stop (or alert) on Done, as a2a agent and a2a watch do. Other
// refusals (0x80, 0x83, 0x97 quota exceeded, such as the embedded
// broker's card rate limit) may pass later, and keep the connection
// being made again with the backoff below.
//
// The first reconnect after a connection that stayed up 10 s once ready
// goes at once. After a connection that went down sooner, above all a
// session taken over again and again (another connection with the same
// Client ID, which the broker answers with DISCONNECT 0x8E, MQTT v5
// §3.1.4: someone connecting with the agent's Client ID, or a duplicate of
// the agent started by mistake), the wait doubles from 100 ms to at most
// 2 s, with jitter: a burst of takeovers never makes a client give up
// nor spin, and once it stops the client is back within about 2 s (plus
// its subscriptions and announce). Takeovers are logged at warning level
// once per burst: the first at once, then how many more once none came
// for 5 s (or every minute while they go on); mosquitto 2.0.11 closes a
// session taken over without DISCONNECT, and there the burst is logged,
// the same way, as connections lost. Two live clients with one
// Client ID take the session from each other every 2 s or so until one of
// them stops; then the other stays. The embedded broker
// (transport/mqtt/broker) keeps exactly one live session per Client ID
// through any such burst; docs/protocol.md §3.1 describes the phases.
//
// Connection callbacks never block; subscriptions are (re)made on every
// connection up, as autopaho requires. Each connection reads the broker
// through a buffer (paho reads a packet in several small reads) and keeps
// its unacknowledged publishes in a session store that encodes them only if
// a resumed session resends them. A Client decodes each reply on the
// connection's goroutine before it wakes the operation waiting for it:
// what runs between one reply and the next request is what a back-to-back
// caller pays for most (docs/benchmarks.md, "Third round").
//
// # Refusals and capabilities
//
// A refusal is an error naming its reason code, the code's MQTT v5 name
// (ReasonName) and what was refused: *ConnectError (CONNACK; the broker
// was reached, so it is not ErrBrokerUnreachable), *PublishError with the
// topic, *SubscribeError with the filter, *DisconnectError. A request
// whose publish the broker refuses ends its operation at once with the
// *PublishError, unless the refusal says "not now" (0x97 quota exceeded,
// 0x91 packet identifier in use): those, like a publish with no
// connection, count as attempts the retry profile repeats. IsRefusal
// tells a refusal from a failure that waiting may cure.
//
// Every CONNACK's capabilities (MQTT v5 §3.2.2.3) are kept
// (Agent.BrokerCapabilities, Client.BrokerCapabilities,
// Watcher.BrokerCapabilities) and logged at Info on the caller's logger,
// on the first connection and whenever a reconnect's differ. They are
// checked before anything is sent: a maximum QoS of 0, an Agent with a
// Pool on a broker without shared subscriptions, a Watch without wildcard
// subscriptions, a card without retained messages are a *CapabilityError;
// a publish over the broker's Maximum Packet Size is not sent
// (*PacketTooLargeError). paho applies the Receive Maximum itself; the
// binding uses no topic aliases. docs/protocol.md §12.1 says what the
// embedded broker and mosquitto announce.
package mqtt
