-- Schema version 2 of the PostgreSQL task store (agent/taskstore/pgstore):
-- the principal that created each task (taskstore.Record.Principal, the
-- verified identity of its caller; '' for a task created without one),
-- which alone sees the task (docs/protocol.md §15). The tasks kept under
-- version 1 were created before principals were recorded: they have none,
-- and stay everyone's.
ALTER TABLE a2a_tasks ADD COLUMN principal text NOT NULL DEFAULT '';

-- List of one caller's tasks (and of those without a principal), newest
-- first.
CREATE INDEX a2a_tasks_principal ON a2a_tasks (principal, created DESC, id);
