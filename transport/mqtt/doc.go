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
// Connection callbacks never block; subscriptions are (re)made on every
// connection up, as autopaho requires. Each connection reads the broker
// through a buffer (paho reads a packet in several small reads) and keeps
// its unacknowledged publishes in a session store that encodes them only if
// a resumed session resends them. A Client decodes each reply on the
// connection's goroutine before it wakes the operation waiting for it:
// what runs between one reply and the next request is what a back-to-back
// caller pays for most (docs/benchmarks.md, "Third round").
package mqtt
