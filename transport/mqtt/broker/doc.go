/*
Package broker is an embedded MQTT v5 broker for tests, demos and small
deployments of the A2A-over-MQTT binding, built on
github.com/mochi-mqtt/server/v2.

	b, err := broker.Start(ctx, broker.Config{Status: true})
	if err != nil {
		return err
	}
	defer b.Close()
	// connect agents and requesters to b.URL() ("mqtt://127.0.0.1:PORT")

It listens on 127.0.0.1 on a free port unless [Config.Addr] says otherwise,
and supports what the binding needs: MQTT v5, retained messages (Agent
Cards), wills (the LWT card), shared subscriptions (agent pools on
$share/{group_id}/$a2a/v1/request/…/pool/…; mochi delivers $-prefixed
topics to them, Debian's mosquitto 2.0.11 does not) and, with
[Config.DataDir], on-disk persistence of sessions and retained messages.

Without [Config.PasswordFile] or TLS client certificates ([Config.TLS]) it
accepts every client and lets it do anything: replace or delete any
agent's card, subscribe to $a2a/# (or # under a root without $: see
Topic root) and read every request, bearer tokens included. [Start] says so in the log, at WARN. Keep such a broker on
loopback, for tests and demos; for anything else, secure it (next
section, and docs/protocol.md §13).

# Security

With a password file (mosquitto 2.0's password_file format: see
[PasswordFile]; a2a passwd and mosquitto_passwd write it) or verified TLS
client certificates (the certificate's Common Name is the user name), the
broker:

  - authenticates every client: a CONNECT without credentials gets CONNACK
    0x87 (not authorized), a wrong user name or password 0x86;
  - lets a user connect with one Client ID only, its user name (an empty
    Client ID is assigned the user name), unless the ACL file's clientid
    lines allow more; a refused CONNECT (0x87) takes over no session;
  - authorizes by the A2A identity the Client ID {org_id}/{unit_id}/{agent_id}
    names: a client publishes its own card and Will, requests to the agents
    and pools of its unit, replies to the requesters of its unit and its
    own events; it subscribes to its own request topic, its own reply tree,
    the discovery and event topics of its unit, and the pools of its unit
    through $share only. Anything else is refused: SUBACK 0x87, PUBACK (or
    PUBREC) 0x87 at QoS 1 (2), a QoS 0 publish dropped; none is forwarded.
    The A2A topics are those under [Config.Root] (see Topic root).
    [Config.ACLFile] adds rules in mosquitto's acl_file syntax (user,
    topic, pattern with %c and %u, read / write / readwrite / deny) and
    clientid lines;
  - runs the validating registry on the discovery topics under the root
    (also on its own with [Config.ValidateCards]): a card must be a valid
    Agent Card (the generated validator, generated/a2a), on the
    publisher's own topic, at most [Config.MaxCardSize] bytes (64 KiB), at
    most [Config.CardUpdatesPerMinute] updates a minute (10; the card last
    accepted on the topic, republished byte for byte, as a reconnecting
    agent does, is not an update), and, with [Config.TrustedJKU], carry a signature whose protected header names a
    trusted jku; a2a-status-source is the publisher's to set to agent only
    (lwt is its Will's, broker the broker's). Refusals: PUBACK 0x99 for a
    card that is not valid, 0x97 for size and rate (MQTT v5 §3.4.2.1 has no
    PUBACK 0x95 nor 0x96), 0x87 for a topic, a source or a signature the
    client may not claim; an empty payload from the owner (unregistration)
    always passes;
  - checks a Will at CONNECT by the same rules and refuses the CONNECT
    (0x87, 0x95 or 0x99) rather than keep a Will it would not publish;
  - speaks MQTT v5 only (the profile's version), as it does whenever the
    registry runs.

[Broker.Denials] counts every refusal. The log has them at WARN with the
client, the user and the topic, never a payload or a property value, and
rate-limited: per kind and source (the Client ID for publishes,
subscriptions and cards, the source address for connections and oversized
packets), the first 5 of a minute one by one, then one line
with the count when the minute ends or at [Broker.Close], so that a
hostile client cannot flood the log.

The limits apply with or without security: [Config.MaxPacketSize] (1 MiB)
for every packet, [Config.ConnectionRate] new connections and
[Config.MaxConnectionsPerAddress] open ones per source address,
[Config.MaxSessionExpiry] for disconnected sessions,
[Config.MaxPendingBytes] (128 MiB) for what a client has not read yet
(past it: DISCONNECT 0x97, counted as [Denials].PendingBytes), and
[Config.MaxInflight] and [Config.MaxPendingWrites] per client (below).

# Settings, and why

mochi (v2.7.9, its newest release) has defaults and defects that change
results without telling anyone, so [Start] sets:

  - Capabilities.Compatibilities.NoInheritedPropertiesOnAck = true. By
    default mochi copies a QoS 1 PUBLISH's user properties into its PUBACK;
    with properties present it also writes the reason byte, which it sets
    to 0x01 ("granted QoS 1"), not a valid PUBACK reason code, so strict
    clients drop the connection, and it echoes a2a-authorization (a bearer
    token) back to the sender. With the flag the PUBACK is the plain
    success acknowledgement.
  - MaximumInflight 65535 and MaximumClientWritesPending 32768 (both 8192 by
    default; see [Config.MaxInflight] and [Config.MaxPendingWrites]). mochi
    sends every retained message that matches a new subscription in one
    loop, in the subscriber's own goroutine, so none of the subscriber's
    PUBACKs are read until the loop ends: every QoS 1 match is in flight at
    once, and anything past MaximumInflight, or past a full write queue, is
    dropped with only a log line. At the defaults a subscriber to
    {root}/discovery/{org_id}/{unit_id}/+ receives 8,192 of 10,000 cards.
    The write queue is a channel allocated per client (8 bytes a slot), so
    it is the setting that costs memory.
  - MaximumMessageExpiryInterval 0 (86,400 s by default). mochi applies the
    maximum to messages that carry no Message Expiry Interval at all: it
    stamps one on every message it forwards and deletes retained messages
    once they are that old, so a default broker forgets every Agent Card a
    day after it was published. With 0 only expiry the publisher set
    applies.
  - PUBLISH packets keep their user properties for a client that sent
    Request Problem Information = 0. mochi drops the user properties of
    every packet to such a client, PUBLISH included, where MQTT v5 allows
    it only for packets other than PUBLISH, CONNACK and DISCONNECT; and
    paho.golang sends that 0 whenever ConnectProperties is set with
    RequestProblemInfo left false (autopaho does as soon as a session
    expiry is set), so its clients would never see an a2a-* property.
  - No send quota. For a client that announces a Receive Maximum, mochi
    looks for held-back deliveries after every packet it reads from the
    client, taking its in-flight table's read lock twice; a publisher asking
    for the write lock in between deadlocks both, and every later publisher
    to that client (seen here within seconds with eight QoS 1 publishers
    and one subscriber). With the quota at zero mochi does not hold
    deliveries back, which is a deviation: the broker does not limit what
    it sends to the client's Receive Maximum (paho.golang then stops
    reading until it has caught up; the TCP window does the rest).
  - Retained messages are stored and read under one lock. mochi writes a
    retained message's place in its topic tree under its own locks but
    reads it, to send the retained messages of a new wildcard
    subscription, under none: a discovery subscriber racing an agent's card
    or Will is a data race (the race detector reports it; unguarded, a torn
    string read). Delayed wills (Will Delay Interval) stay unguarded.
  - Session takeovers of one Client ID happen one at a time, and each
    completes before the new connection goes on. When a client connects
    with the Client ID of a connected one, mochi looks the Client ID up,
    closes the connection it finds and adds the new one, with nothing held
    across the three steps, and lets the old connection's goroutine tear it
    down while the new connection proceeds. Under a burst of connections
    with one Client ID (an agent reconnecting while someone else keeps
    connecting with its Client ID) two new connections could take over the
    same old one: one replaced the other in the client table, and the
    replaced one stayed open, receiving nothing and never taken over again.
    The old LWT card could be retained after the card the new connection
    has just published (discovery shows a connected agent offline), and the
    old goroutine could remove the Client ID from mochi's client table, and
    its subscriptions from the topic index, after the new connection was
    added (the new connection stays open but receives nothing). The broker
    lets one connection of a Client ID at a time take over; the new
    connection waits (after CONNACK, before its first packet is read, at
    most 10 s) until every earlier connection with its Client ID has been
    torn down, as mosquitto finishes the old connection first, is then put
    back into the client table, with its subscriptions, if a teardown
    removed them, and only then is the next connection let in. A new
    connection whose predecessors are not torn down in 10 s is
    disconnected (0x89, server busy) and connects again. mochi writes the
    DISCONNECT (0x8E) to the old connection under the lock of its writes,
    and a write to a client that stopped reading blocks until the
    connection's deadline (1.5 keep-alives; never with a keep-alive of 0):
    an old connection that has not taken its DISCONNECT within 1 s is
    closed, so a client that stops reading cannot keep a Client ID, an
    agent's, from being taken back. So a Client ID has exactly one live
    session, whatever the burst.
  - For clients, under [Config.Status], the broker sends no topic aliases
    (mochi would replace the topic of a repeated publish by an alias, which
    hides it from the status hook). mochi never offers aliases to clients
    (its CONNACK carries no Topic Alias Maximum), so nothing changes for
    publishers.
  - $SYS topics every 10 s instead of every second (each update reads
    runtime memory statistics).
  - The log handed to mochi is redacted. mochi logs whole packets: at WARN
    the packet of every malformed or refused PUBLISH or CONNECT ("error
    processing packet"), at ERROR the packet a hook refused, at DEBUG every
    delivery it could not make; a packet holds its payload and user
    properties (a2a-authorization), a CONNECT its password. The handler
    summarises packets and Wills (type, topic, sizes, property keys) and
    keeps nothing else of a value it does not know.
  - MaximumPacketSize [Config.MaxPacketSize], announced in CONNACK (mochi
    announces none). The connection follows the MQTT fixed headers of what
    a client sends, so a packet over the limit is never read: the client
    gets DISCONNECT 0x95 (mochi's own check closes the connection without
    one) and its Will fires. An oversized CONNECT is closed unanswered.
  - TopicAliasMaximum 0. mochi announces no Topic Alias Maximum, so clients
    may not send aliases (MQTT v5 §3.2.2.3.8), yet it accepted 65535 per
    client, each keeping a topic.
  - MaximumSessionExpiryInterval [Config.MaxSessionExpiry] (24 h; mochi's
    default keeps a disconnected session, its subscriptions and up to
    MaxInflight queued messages, forever).
  - Refused subscriptions are not persisted. mochi's bbolt hook stores
    every filter of a SUBSCRIBE, refused ones included, and reads them back
    as subscriptions at the next start.
  - An accepted connection past [Config.ConnectionRate] (per source address,
    [Config.ConnectionBurst] at once) or past
    [Config.MaxConnectionsPerAddress] open connections (1,000) is closed
    before anything is read. mochi allocates each connection's write queue
    ([Config.MaxPendingWrites] slots of 8 bytes, 256 KiB by default) as
    soon as it is accepted, before CONNECT: these limits are what bound
    that memory (1,000 connections of one address: 256 MiB).

The broker never waits for a client to read. mochi writes to a client
under the client's lock, which the goroutine reading that client's
packets takes too (to acknowledge them), and so does every publisher's
goroutine delivering to the client (to number the delivery); a write to a
client that does not read blocks on its full socket. So mochi stops
reading from a client as soon as a write to it blocks, and a client that
stops reading while it writes (paho.golang acknowledges a PUBLISH from the
path that reads, and that write waits behind its own large PUBLISH) never
reads again: with 64 requests of 1 MB in flight between two paho.golang
clients, both waited for each other until the keep-alive deadline (1.5
keep-alives, 45 s at 30 s; none with keep-alive 0) dropped the requester
with the replies in flight. And every publisher to a client that stopped
reading stopped with it. The connection mochi writes to is the package's
own: what the socket takes at once is written, the rest queued (no copy
and no hand-over while nothing is queued), and a goroutine of the
connection writes the queue out. The queue is bounded by
[Config.MaxPendingBytes]: a client that leaves more than that unread is
disconnected with DISCONNECT 0x97 (Quota exceeded) and a Reason String
naming the limit, written after everything it had not read yet; its Will
fires, and its session, if it has one, keeps its QoS 1 and 2 messages.
The one exception is the resend of a session's messages in flight when
its client reconnects: mochi writes them all at once, before it reads
anything from the client, and they can be more than the bound; those
writes wait for the client to read instead (past 10 s without the client
reading a byte, it is disconnected with 0x97). A closed connection writes
what was queued (a DISCONNECT, a CONNACK refusing the client) within 1 s,
then sends FIN and reads what the client still sends until it closes its
side (within the same second), so that a client still acknowledging gets
no RST that would cost it the DISCONNECT saying why.

The listener is the package's own: it arms a 30 s deadline for the CONNECT
packet (mochi's has none, and a connection that never sends CONNECT keeps a
goroutine forever and makes mochi's Close wait for it forever), and
[Broker.Close] disconnects the clients itself (mochi's way takes the
clients table's read lock twice, and deadlocks when a client is leaving at
the same moment), closes every connection and waits for every goroutine it
started.

mochi refuses a Will with an empty payload (CONNACK 0x82), where MQTT v5
allows one; no a2abind client sends one.

Four mochi behaviours remain, and clients must live with them:

  - Packet identifiers are one table per client for both directions (MQTT
    gives each direction its own), so a SUBSCRIBE or UNSUBSCRIBE whose
    identifier equals that of a delivery the client has not acknowledged
    yet is refused with reason code 0x91 (packet identifier in use), and an
    inbound QoS 1 PUBLISH with such an identifier makes mochi forget its
    own delivery (mochi issues #519 and #545). A client that subscribes
    while messages are arriving should retry a SUBSCRIBE refused with 0x91.
  - mochi sends SUBACK before the retained messages: a message published
    while a SUBSCRIBE is being handled can arrive twice, live and then as a
    retained message. Presence tables keyed by agent are unaffected.
  - A message handed to a session at the moment a new connection takes
    it over (the client reconnecting with its session) can be lost: mochi
    copies the session's messages in flight to the new connection, then
    clears the old connection's, and a message added in between is in
    neither. (Seen as the last of a flood missing when the client
    reconnected while it was being delivered.)
  - The retained messages of topics beginning with $ (other than $SYS)
    go to a new subscription whose filter begins with # or +, which MQTT
    v5 §4.7.2 forbids; live messages do not. On an open broker a #
    subscriber so receives every retained card under $a2a/v1; with
    authentication each delivery is checked, by §4.7.2's rule, and they
    are withheld.

# Broker-managed status

With [Config.Status] a hook implements the profile's optional broker-managed
status (A2A-over-MQTT 0.1, user story 09 phase 5). Whenever the broker sends
a PUBLISH on a discovery topic {root}/discovery/{org_id}/{unit_id}/{agent_id}
({root} is [Config.Root], $a2a/v1 by default) with a non-empty payload (a
live card, a retained card sent to a new subscription, a Will, a resent
in-flight message), it sets the user properties a2a-status (online while a
client with Client ID {org_id}/{unit_id}/{agent_id} is connected, else
offline) and a2a-status-source=broker, replacing any a2a-status and
a2a-status-source the publisher set and keeping every other property. It
does so as the packet is written to each subscriber, so the status is the
one at delivery time, never a stale one. Empty payloads (unregistrations),
and cards under another root, pass unchanged.

When the client {org_id}/{unit_id}/{agent_id} connects or disconnects
(DISCONNECT, a dropped connection, a keep-alive timeout, a session taken
over), the hook sends the retained card again to the subscribers, as a live
(non-retained) publish, with the new status; the retained card itself is
left as it was published. Because each change is followed by a send and the
status is read at delivery, the last card a subscriber receives always
carries the current status, whatever the interleaving:

  - graceful stop: the agent's own offline/agent card goes out (with the
    status of the moment), then the DISCONNECT leads to the retained card
    with offline/broker;
  - crash: the hook marks the client offline before mochi sends its Will, so
    the LWT card goes out offline/broker and is retained, and the card is
    then sent once more with offline/broker;
  - connect: the current retained card goes out online/broker right after
    CONNACK, before the agent's own publish (which also goes out
    online/broker).

The hook never blocks: its only work is a map look-up under a mutex and,
on connect and disconnect, one publish that mochi queues without waiting.

# Topic root

Every A2A topic begins with the topic root, $a2a/v1 in the profile.
[Config.Root] sets another, such as a2a/v1, for deployments whose other
brokers refuse $ topics: a deployment choice outside the profile
(docs/protocol.md §1.5). It must match the root of the agents and clients
using the broker (mqttbind.Root; the Root of transport/mqtt's configs,
--topic-root of the a2a commands), and peers that follow the profile
strictly neither see nor reach agents under another root. The broker's
A2A topics are then those under it: broker-managed status marks the cards
on {root}/discovery/..., the validating registry checks that tree, and the
identity rules grant topics under it. A topic under any other root, the
profile's included, is an ordinary topic to this broker: no status, no
registry (on an open broker anyone may publish any payload there), and,
with authentication, granted by the ACL file alone. [Start] logs a root
other than the profile's at INFO. [MosquittoACLUnder] writes mosquitto's
acl_file under a root.

Under a root without $ the A2A topics are ordinary topics to MQTT too: a
filter beginning with # or + matches them (MQTT v5 §4.7.2 sets apart only
topics beginning with $). On an open broker a # subscriber then receives
every A2A message, live ones included. The identity rules do not change:
a filter is granted only when every topic it matches is, so #, +/#, the
root's first level followed by /# (a2a/# for a2a/v1) and {root}/# are
refused to every identity, and each delivery is checked again. An ACL file
line granting # (topic read #), though, grants every A2A topic under such
a root, where under $a2a/v1 it grants none: deny the request and reply
trees beside it.
*/
package broker
