-- Schema version 3 of the PostgreSQL task store (agent/taskstore/pgstore):
-- one index fewer to write on every insert and every change of a task.
-- The agent lists a caller's tasks alone (taskstore.Filter.Scoped), which
-- a2a_tasks_principal (principal, created DESC, id) serves; a listing of
-- every principal's tasks sorts the rows it reads, at most the store's
-- MaxTasks, instead of reading a2a_tasks_created in order.
DROP INDEX a2a_tasks_created;
