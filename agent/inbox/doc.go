/*
Package inbox is the durable offline queue of an agent that is not always
reachable (docs/protocol.md §7): messages refused live are stored here, in
order, until the agent wakes and delivers them.

A Store keeps the records, bounded by message count, total bytes and pending
messages per peer (offline.QueueBounds), each with a time to live, and a
replay cache of the object ids already delivered, which survives a restart
with the queue. Bolt is the store on an embedded database (go.etcd.io/bbolt,
one file per agent); its enqueues from concurrent senders are committed
together (group commit), and each returns only once its record is on disk.
It keeps the replay cache in memory, each key as a hash of fixed size, and
stores it as a log to which each delivery appends its keys together.

A queued record's payload is the request as received: its message and
the push config it carries, token and credentials included. Given a key
ring (BoltOptions.Keys, package agent/sealed), Bolt seals each payload with
AES-256-GCM before it is written; without one it is written in clear. The
peer and the ids stay in clear, as the store indexes them.

The rules of when to queue and what to answer are in statemachines/reach;
the agent runtime (package agent) applies them and uses a Store.
*/
package inbox
