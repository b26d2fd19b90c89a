-- Schema version 1 of the PostgreSQL task store (agent/taskstore/pgstore).
-- pgstore.Migrate applies it in one transaction and records the version in
-- a2abind_schema (component 'taskstore'). Never edit a migration once
-- released: add the next one.

-- One row a task: the columns List, the bounds and the expiries read, and
-- the task itself as the other stores encode it (A2A v1.0 JSON).
CREATE TABLE a2a_tasks (
    id          text PRIMARY KEY,      -- Task.id
    context_id  text NOT NULL,         -- Task.contextId ('' for none)
    state       text NOT NULL,         -- Task.status.state ('' for none)
    phase       smallint NOT NULL,     -- 0 going, 1 waiting for input or authentication, 2 finished
    created     timestamptz NOT NULL,
    updated     timestamptz NOT NULL,  -- the last change; idle expiry, retention and eviction run from it
    size        bigint NOT NULL,       -- the bytes the task counts against MaxBytes
    owner       text NOT NULL,         -- the agent serving the task after a handover ('' for its creator)
    message_ids text[] NOT NULL,       -- the messages accepted for the task, oldest first
    task        bytea NOT NULL,        -- the task's JSON encoding
    push        bytea                  -- its push-notification configs and delivery reports as JSON; NULL for none
);

-- List: newest first, and a context's tasks oldest first.
CREATE INDEX a2a_tasks_created ON a2a_tasks (created DESC, id);
CREATE INDEX a2a_tasks_context ON a2a_tasks (context_id, created, id);
-- Eviction, idle expiry and retention: the tasks of a phase in the order of
-- their last change.
CREATE INDEX a2a_tasks_phase ON a2a_tasks (phase, updated, id);

-- The count and bytes of the tasks, as sums over 64 slots: a transaction
-- adds its change to one slot, so writers of different tasks seldom wait
-- for the same row.
CREATE TABLE a2a_task_totals (
    slot  smallint PRIMARY KEY,
    tasks bigint NOT NULL DEFAULT 0,
    bytes bigint NOT NULL DEFAULT 0
);
INSERT INTO a2a_task_totals (slot) SELECT generate_series(0, 63);

-- The most recent expiries (RememberExpired) of tasks left waiting for
-- input or authentication, and of the contexts whose last task went so:
-- a message to one is answered "expired" rather than "unknown".
CREATE TABLE a2a_task_expiries (
    kind text NOT NULL,                -- 't' a task, 'c' a context
    id   text NOT NULL,
    at   timestamptz NOT NULL,         -- when it expired
    seq  bigserial NOT NULL,           -- the order they were remembered in
    PRIMARY KEY (kind, id)
);
CREATE INDEX a2a_task_expiries_seq ON a2a_task_expiries (seq);
