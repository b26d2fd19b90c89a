-- Schema version 3 of the PostgreSQL task store (agent/taskstore/pgstore):
-- fewer index entries to write when a task is created or changed.
--
-- The agent lists a caller's tasks alone (taskstore.Filter.Scoped), which
-- a2a_tasks_principal (principal, created DESC, id) serves; a listing of
-- every principal's tasks sorts the rows it reads, at most the store's
-- MaxTasks, instead of reading a2a_tasks_created in order.
DROP INDEX a2a_tasks_created;

-- Eviction, idle expiry and retention read the waiting (1) and finished (2)
-- tasks alone: a task going (0), as most are when created, has no entry.
DROP INDEX a2a_tasks_phase;
CREATE INDEX a2a_tasks_phase ON a2a_tasks (phase, updated, id) WHERE phase <> 0;
