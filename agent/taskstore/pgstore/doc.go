/*
Package pgstore is a taskstore.Store on PostgreSQL (through
github.com/jackc/pgx/v5), for agents whose tasks must outlive a machine or
be shared by several instances of the agent. It keeps what the Memory and
Bolt stores of agent/taskstore keep, under the same contract
(agent/taskstore/storetest runs one suite against all three), and
implements the same optional interfaces: taskstore.Replacer,
taskstore.DeliverySetter and taskstore.DropWatcher.

# Opening

	st, err := pgstore.Open(ctx, "postgres://agent@db.example:5432/a2a?sslmode=verify-full", pgstore.Options{Migrate: true})
	if err != nil {
		return err
	}
	defer st.Close()

Open takes a DSN as pgx reads it: a postgres:// URL or key=value pairs,
with PostgreSQL's PG* environment variables and password file for what it
leaves out (PostgreSQL's documentation, "Connection Strings"; pgx's
pgconn.ParseConfig; pgxpool.ParseConfig for the pool's pool_max_conns and
the like). OpenPool takes a *pgxpool.Pool the caller configured, and
leaves it open on Close. The store's tables are those of the
connection's search_path: a DSN can choose a schema
(?search_path=a2a, a run-time parameter).

# Schema and migrations

The schema is versioned: the SQL files of the package's migrations
directory (migrations/0001_tasks.sql, 0002_principal.sql, ...), embedded
in the program, each applied once and in order. SchemaVersion is the last one's number.
Migrate applies those a database lacks, in one transaction taken under an
advisory lock (instances starting together apply them once), and records
the version in the table a2abind_schema (component "taskstore"); Version
reads it. Open refuses a database whose schema is newer than
SchemaVersion, and, unless Options.Migrate is set, one that is older: both
with a *SchemaError naming the two versions. A migration is never edited
once released; a change of the schema is a new file. Version 2 adds the
principal that created each task (taskstore.Record.Principal, the caller
whose task it is: docs/protocol.md §15); the tasks a version 1 database
holds are migrated without one, and stay everyone's. Version 3 writes
fewer index entries: it drops the index of every principal's tasks by
creation time (the agent lists one caller's tasks, which the index of the
principals serves, and a listing of everyone's sorts at most MaxTasks
rows), and the index eviction and expiry read holds the waiting and
finished tasks alone.

The tables: a2a_tasks (one row a task: its id, context id, state, times,
owner, principal, accepted message ids and size as columns, indexed for
the listings, a caller's among them, and the expiries; the task and its
push configs as JSON), a2a_task_totals
(the count and bytes of the tasks) and a2a_task_expiries (the most recent
expiries).

# Several instances

Instances of an agent may share a database; they should share its options
too, as each applies its own. A change of a task (Update, ReplaceTask,
SetPushDelivery) locks the task's row (SELECT ... FOR UPDATE) for the
length of its transaction, so two instances changing one task take turns
and neither change is lost; Update's function runs while the row is
locked. Reads see what is committed. Deleting expired and evicted tasks
passes over the rows other transactions hold (FOR UPDATE SKIP LOCKED):
writers never wait for each other's housekeeping.

# Bounds

Every resource the store keeps is bounded, over the whole database, with
the defaults of the other stores (docs/protocol.md §14):

  - Options.MaxTasks tasks (default taskstore.DefaultMaxTasks) and
    Options.MaxBytes bytes (default taskstore.DefaultMaxBytes, 64 MiB).
    A task counts the length of its JSON encoding, of its push configs and
    reports encoded, and of its ids. Past a bound, a new task, or an
    Update growing one, evicts finished tasks, those changed least
    recently first, and is refused with an error matching
    taskstore.ErrFull, saying which bound, when no finished task is left
    to evict (nothing is stored; it may be retried once tasks finish or
    expire). ReplaceTask and SetPushDelivery are never refused; finished
    tasks are evicted after them until the store is within its bounds,
    if it can be.
  - A task waiting for input or authentication expires after
    Options.ExpireInterruptedAfter unchanged (default
    taskstore.DefaultIdleExpiry, a day), and is then answered with a
    *taskstore.ExpiredError (taskstore.ErrExpired), as is a context whose
    last task went so, while the store remembers it: the
    Options.RememberExpired most recent expiries (default
    taskstore.RememberExpired).
  - With Options.KeepFinishedFor, a task finished for longer is dropped.
  - Task and context ids are keys of B-tree indexes: Create refuses one
    longer than MaxIDBytes (1,024 bytes) with ErrIDTooLong, which matches
    a2a.ErrInvalidParams.

Expired tasks are deleted by the writes that follow, at most 1,000 a
statement, by one write a second (of the store's clock) and by a write
the bounds would refuse, before it is refused; reads leave them out
meanwhile, and a drop watcher hears of them once deleted. The count and bytes of the
tasks are checked, in the transaction of each change, as they are
committed (for a change of a task, when it locks the task's row): instances creating tasks at the same moment may each pass the
check, so the store can exceed MaxTasks by as many tasks as there are
concurrent writers (the connections of the instances' pools), and
MaxBytes by their sizes, until the next change evicts back within them.

# Time

Times are the store's clock (Options.Now, the machine's by default), kept
to the microsecond (PostgreSQL's timestamptz): instances sharing a database
should keep their clocks synchronised, as the expiries and the order of
the tasks read them.

# Secrets

With Options.Keys (a *sealed.Ring, package agent/sealed), the token and
the authentication credentials of each push config are sealed with
AES-256-GCM before they are written, in the push column, and opened when
read; the rest of the row is as without it (the task and its messages,
the configs' URLs and schemes). Without a ring they are stored in clear.
Rows written in clear are read as they are and sealed on their next write;
a row sealed with a key the ring lacks, or read without a ring, is an
error naming the task (sealed.ErrUnknownKey, taskstore.ErrNoKeys). Reseal
seals every row again with the current key, so that older keys can leave
the ring (docs/guide.md, "Secrets at rest"). Rows replaced keep their old
versions in the table's dead tuples until VACUUM, and in the write-ahead
log and its archives.

# Drops

WatchDrops tells the tasks this Store value dropped (evicted, expired,
past the retention), once the statement or transaction that dropped them
committed; a task another instance dropped is told to that instance's
watchers.
*/
package pgstore
