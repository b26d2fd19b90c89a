-- Schema version 1 of the PostgreSQL offline queue (agent/inbox/pginbox).
-- pginbox.Migrate applies it in one transaction and records the version in
-- a2abind_schema (component 'inbox'). Never edit a migration once
-- released: add the next one.

-- The Seqs of the records: increasing, never reused (a record put back by
-- Untake keeps its own).
CREATE SEQUENCE a2a_inbox_seq AS bigint MINVALUE 1;

-- One row a pending record. The ids are bytea: a Go string may hold any
-- bytes (a NUL, invalid UTF-8), which text cannot. They are indexed by
-- their SHA-256 (sha256(bytea), immutable) rather than themselves, so that
-- an id of any length fits a B-tree entry; the queries compare the ids
-- too.
CREATE TABLE a2a_inbox (
    seq        bigint PRIMARY KEY,     -- Record.Seq
    peer       bytea NOT NULL,         -- the sender's verified identity ('' anonymous)
    message_id bytea NOT NULL,         -- the messageId ('' none)
    task_id    bytea NOT NULL,
    context_id bytea NOT NULL,
    payload    bytea NOT NULL,         -- the request as received; its length counts against MaxBytes
    enqueued   timestamptz NOT NULL,
    expires    timestamptz NOT NULL
);
-- Duplicates: the pending record of a peer's message.
CREATE INDEX a2a_inbox_message ON a2a_inbox (sha256(message_id), seq) WHERE message_id <> '\x'::bytea;
-- The per-peer bound: a peer's pending records.
CREATE INDEX a2a_inbox_peer ON a2a_inbox (sha256(peer));
-- Lookup: a task's oldest pending record.
CREATE INDEX a2a_inbox_task ON a2a_inbox (sha256(task_id), seq) WHERE task_id <> '\x'::bytea;
-- Expired.
CREATE INDEX a2a_inbox_expires ON a2a_inbox (expires, seq);

-- The replay cache: the keys of the objects delivered, each as its
-- SHA-256, kept until their Until passes.
CREATE TABLE a2a_inbox_replay (
    key   bytea PRIMARY KEY,
    until timestamptz NOT NULL
);
CREATE INDEX a2a_inbox_replay_until ON a2a_inbox_replay (until);

-- The count and bytes of the pending records and the count of replay keys,
-- as sums over 16 slots. Slot 0 is the enqueues': an enqueue locks it for
-- its transaction, so that enqueues take turns and check the bounds
-- exactly. Takes, removals, untakes and expiries add their changes to one
-- of the others, chosen at random, and never wait for an enqueue.
CREATE TABLE a2a_inbox_totals (
    slot     smallint PRIMARY KEY,
    messages bigint NOT NULL DEFAULT 0,
    bytes    bigint NOT NULL DEFAULT 0,
    replay   bigint NOT NULL DEFAULT 0
);
INSERT INTO a2a_inbox_totals (slot) SELECT generate_series(0, 15);
