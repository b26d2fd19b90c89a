/*
Package pginbox is an inbox.Store, the offline queue of an agent that is
not always reachable (docs/protocol.md §7), on PostgreSQL (through
github.com/jackc/pgx/v5): for agents whose queue must outlive a machine,
or be shared by several instances of the agent (a pool, handover
instances). It keeps what inbox.Bolt keeps, under the same contract
(agent/inbox/inboxtest runs one suite against both), and adds Notify, a
wake when another instance enqueues.

# Opening

	q, err := pginbox.Open(ctx, "postgres://agent@db.example:5432/a2a?sslmode=verify-full", pginbox.Options{Migrate: true})
	if err != nil {
		return err
	}
	defer q.Close()

Open takes a DSN as pgx reads it: a postgres:// URL or key=value pairs,
with PostgreSQL's PG* environment variables and password file for what
it leaves out (PostgreSQL's documentation, "Connection Strings"; pgx's
pgconn.ParseConfig; pgxpool.ParseConfig for the pool's pool_max_conns and
the like). OpenPool takes a *pgxpool.Pool the caller configured, and
leaves it open on Close. The queue's tables are those of the connection's
search_path: a DSN can choose a schema (?search_path=a2a, a run-time
parameter), and two schemas are two queues. The queue may share a
database, and a schema, with the task store of
agent/taskstore/pgstore.

# Schema and migrations

The schema is versioned: the SQL files of the package's migrations
directory (migrations/0001_inbox.sql, ...), embedded in the program, each
applied once and in order. SchemaVersion is the last one's number.
Migrate applies those a database lacks, in one transaction taken under an
advisory lock (instances starting together apply them once; pgstore's
migrations take the same lock), and records the version in the table
a2abind_schema, component "inbox" (pgstore's row is "taskstore"); Version
reads it. Open refuses a database whose schema is newer than
SchemaVersion, and, unless Options.Migrate is set, one that is older:
both with a *SchemaError naming the two versions. A migration is never
edited once released; a change of the schema is a new file.

The tables: a2a_inbox (one row a pending record, its ids as bytea, as a Go
string may hold bytes text cannot, indexed by their SHA-256 so that an id
of any length fits; since version 2, whether its payload is sealed and the
length of the request it holds), a2a_inbox_replay (the replay cache: the SHA-256 of
each key and its Until), a2a_inbox_totals (the count and bytes of the
records and the count of the keys, as sums over 16 slots) and the
sequence a2a_inbox_seq (the Seqs: increasing, never reused; a refused
enqueue takes none, one whose transaction fails after its insert leaves
a gap).

# Bounds

What a sender can grow is bounded over the whole queue, whichever
instance enqueues:

  - the bounds of each Enqueue (offline.QueueBounds: messages, bytes,
    pending messages per peer, checked in the order of reach.Fits). Enqueues
    take turns (each locks the same row of a2a_inbox_totals until it
    commits) and check the bounds against the committed totals, so
    concurrent enqueues never pass them, even from several instances.
    Takes, removals and expiries do not wait for enqueues: an enqueue
    that checks while one of them is under way still counts what it
    removes, until it commits (the enqueue may be refused, never
    admitted past a bound). Untake puts records back without checking
    the bounds, as the bbolt store does;
  - the replay cache: Options.MaxReplay keys (default
    inbox.DefaultMaxReplay, 100,000); once it holds that many, enqueues
    are refused with kind messages until keys expire (Expired);
  - a payload of MaxPayloadBytes at most (a bytea holds 1 GB), refused
    with an error.

Records are not deleted when they expire: Expired lists them and the
agent removes them (Remove), as with the bbolt store.

# Secrets

A record's payload is the queued request whole: its message, and the push
config it carries with its token and credentials. With Options.Keys (a
*sealed.Ring, package agent/sealed) each payload is sealed with
AES-256-GCM before it is written, bound to the record's peer and ids
(which stay in clear: the store indexes them), and opened when read;
without a ring it is written in clear. A record counts the length of its
request against MaxBytes, sealed or not. Rows written in clear are read
as they are (a record lives no longer than its time to live, so a queue
is all sealed a RecordTTL after the ring is given); a row sealed with a
key the ring lacks, or read without a ring, is an error naming its Seq
(sealed.ErrUnknownKey, inbox.ErrNoKeys), and is still removed by Remove
(docs/guide.md, "Secrets at rest"). Deleted rows stay in the table's dead
tuples until VACUUM, and in the write-ahead log and its archives.

# Several instances

Instances of an agent may share a queue, and so Stores: each record is
handed to exactly one of them. Next reads what is committed; Take claims
the records it is given with SELECT ... FOR UPDATE SKIP LOCKED and
deletes them in the same statement: a record another Store's Take holds
at that moment, or has deleted, is reported missing at once, without
waiting. Of two instances reading the same records and taking them, one
takes each record and the other finds it missing, as it would a record
removed by CancelTask; an instance whose Take fails leaves its records
pending, and a later Next returns them. Remove waits for a Take holding
one of its records, and returns only those it deleted. A replay key
entered by two instances at once is entered once: the second Take waits
for the first's commit and reports its record replayed.

Records are taken in the order of their Seqs, but instances take and run
them at the same time: the bbolt store's guarantee that queued turns run
one after the other, in queue order, holds within one instance only.

Transactions lock rows in a fixed order (records and replay keys by
their keys, a row of the totals last), and one that PostgreSQL aborts
all the same to break a deadlock, or for a serialization failure, is
run again, up to 5 times. Each Store has its pool (Open's, or the
caller's) and, once Notify is called, one connection more.

Enqueue, and Untake when it puts records back, notify the queue's channel
(NOTIFY, sent when their transaction commits): Notify returns a channel
that receives a value then, in every Store of the queue that called it,
from a connection of its own that listens (LISTEN), connected again when
it is lost. The channel name is a2a_inbox_ followed by the object id of
the table a2a_inbox, so that the queues of two schemas of one database
wake only their own Stores.

# Delivery: what is at most once

A record is deleted by Take, with its replay key entered, in one
committed transaction before the agent hands it to its handler (the split
path of docs/protocol.md §7.7): an instance that crashes between Take and
the handler loses that record (at most once); one that stops gracefully
puts what it took and did not hand back (Untake). Everything else is kept
as PostgreSQL keeps committed data: a record is on the server when
Enqueue returns, with the durability of the server's settings
(synchronous_commit, synchronous replication); the replay cache, with the
records, survives a restart of the agent, of the server, and the loss of
an instance.

# Time

Enqueued is the store's clock (Options.Now, the machine's by default).
Times are kept to the microsecond (PostgreSQL's timestamptz); Enqueue
returns the record with its times so truncated, as Next returns it.
Instances sharing a queue should keep their clocks synchronised: the
expiries compare their times.
*/
package pginbox
