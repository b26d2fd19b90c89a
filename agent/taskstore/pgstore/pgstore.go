package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgschema"
	"github.com/a2abind/a2abind/statemachines/tasklife"
)

// Options configure a Store. The zero value has the defaults of the other
// stores.
type Options struct {
	// Migrate applies the migrations the database lacks when the store
	// opens (Migrate). Without it Open refuses a database whose schema is
	// older than SchemaVersion.
	Migrate bool
	// Now is the store's clock (nil: time.Now).
	Now func() time.Time
	// MaxTasks bounds the tasks kept (0: taskstore.DefaultMaxTasks;
	// less than 0: no bound).
	MaxTasks int
	// MaxBytes bounds the bytes of the tasks kept (0:
	// taskstore.DefaultMaxBytes; less than 0: no bound).
	MaxBytes int64
	// ExpireInterruptedAfter drops a task waiting for input or
	// authentication unchanged for longer (0:
	// taskstore.DefaultIdleExpiry; less than 0: never).
	ExpireInterruptedAfter time.Duration
	// KeepFinishedFor drops a task finished for longer (0 or less: kept
	// until evicted).
	KeepFinishedFor time.Duration
	// RememberExpired is how many expiries of tasks and contexts are
	// remembered, the most recent (0: taskstore.RememberExpired; less than
	// 0: none).
	RememberExpired int
	// Keys seals the tokens and credentials of the tasks' push configs
	// before they are written, and opens them when read
	// (taskstore.SealSecrets says what is sealed and how). Without it they
	// are written in clear. Rows written in clear are read, and sealed on
	// their next write or by Reseal; instances sharing a database should
	// share the ring (docs/guide.md, "Secrets at rest").
	Keys *sealed.Ring
}

// Store is a taskstore.Store on PostgreSQL. It is safe for concurrent use,
// and several Stores, in one process or many, may share a database.
type Store struct {
	pool *pgxpool.Pool
	// own is set when Open made the pool: Close closes it.
	own      bool
	now      func() time.Time
	maxTasks int64
	maxBytes int64
	idle     time.Duration
	keep     time.Duration
	remember int
	keys     *sealed.Ring
	watch    taskstore.Watchers
	// nextSweep is the time of the store's clock, in Unix nanoseconds,
	// from which a write sweeps again (sweepEvery).
	nextSweep atomic.Int64
}

// sweepEvery is how often, by the store's clock, writes sweep the expired
// tasks: a write sweeps when the last sweep is older, or when a bound would
// refuse it. Tasks expired meanwhile are answered as expired by the reads
// and left out of the listings, as before they are swept.
const sweepEvery = time.Second

// The phases of a task, column phase.
const (
	phaseGoing    = 0
	phaseWaiting  = 1
	phaseFinished = 2
)

// MaxIDBytes is the longest task id and context id the store takes: they
// are keys of its B-tree indexes, whose entries PostgreSQL keeps within
// about a third of a page. Memory and Bolt stores have no such bound.
const MaxIDBytes = 1024

// ErrIDTooLong is matched (errors.Is) by the error of a Create whose task
// id or context id is longer than MaxIDBytes. It matches
// a2a.ErrInvalidParams: the id came from the request.
var ErrIDTooLong = a2a.NewError(a2a.TokenInvalidParams, "pgstore: id longer than MaxIDBytes")

// totalSlots is the number of rows of a2a_task_totals (migration 1).
const totalSlots = 64

// Open connects to the database dsn names and opens the store on it; Close
// closes the connections. Unless the DSN sets plan_cache_mode, the
// connections use force_generic_plan: the store's statements, prepared
// once a connection, find their rows by index whatever their arguments,
// and PostgreSQL would otherwise plan each execution anew.
func Open(ctx context.Context, dsn string, o Options) (*Store, error) {
	return pgschema.Open(ctx, schema, dsn, func(pool *pgxpool.Pool) (*Store, error) {
		s, err := OpenPool(ctx, pool, o)
		if err == nil {
			s.own = true
		}
		return s, err
	})
}

// OpenPool opens the store on a pool the caller keeps: Close leaves it
// open. It checks the schema version (see Options.Migrate). Give the
// pool's connections plan_cache_mode=force_generic_plan (a run-time
// parameter of its configuration) to save the planning Open saves.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, o Options) (*Store, error) {
	if err := schema.Check(ctx, pool, o.Migrate); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, now: o.Now, maxTasks: int64(o.MaxTasks), maxBytes: o.MaxBytes,
		idle: o.ExpireInterruptedAfter, keep: max(o.KeepFinishedFor, 0), remember: o.RememberExpired, keys: o.Keys}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxTasks == 0 {
		s.maxTasks = taskstore.DefaultMaxTasks
	}
	if s.maxBytes == 0 {
		s.maxBytes = taskstore.DefaultMaxBytes
	}
	if s.idle == 0 {
		s.idle = taskstore.DefaultIdleExpiry
	}
	if s.remember == 0 {
		s.remember = taskstore.RememberExpired
	}
	s.maxTasks, s.maxBytes, s.idle, s.remember = max(s.maxTasks, 0), max(s.maxBytes, 0), max(s.idle, 0), max(s.remember, 0)
	return s, nil
}

// Close implements taskstore.Store: it closes the pool if Open made it.
func (s *Store) Close() error {
	if s.own {
		s.pool.Close()
	}
	return nil
}

// WatchDrops implements taskstore.DropWatcher for the tasks this Store
// drops, told once the transaction that dropped them committed.
func (s *Store) WatchDrops(fn func(taskstore.Dropped)) (stop func()) { return s.watch.Add(fn) }

// clock is the time of a change, to the microsecond PostgreSQL keeps.
func (s *Store) clock() time.Time { return s.now().Truncate(time.Microsecond) }

// row is a task as stored.
type row struct {
	id, contextID, state string
	phase                int16
	created, updated     time.Time
	size                 int64
	owner                string
	principal            string
	messageIDs           []string
	task                 []byte // nil when not read
	push                 []byte // nil for none
}

// columns are those of row, in its order.
const columns = "id, context_id, state, phase, created, updated, size, owner, principal, message_ids, task, push"

// headColumns are columns without the task.
const headColumns = "id, context_id, state, phase, created, updated, size, owner, principal, message_ids, NULL::bytea, push"

func (r *row) scan(sc pgx.Row) error {
	return sc.Scan(&r.id, &r.contextID, &r.state, &r.phase, &r.created, &r.updated, &r.size, &r.owner, &r.principal, &r.messageIDs, &r.task, &r.push)
}

// pushRecord is the stored form of a task's push configs and reports.
// With a key ring the configs are stored without their secrets, which
// Secrets holds sealed, one value per config (taskstore.SealPushSecrets);
// without one, or in a row written before the ring was given, Secrets is
// absent and the configs hold their secrets.
type pushRecord struct {
	Configs    []a2a.TaskPushNotificationConfig `json:"configs,omitempty"`
	Deliveries []taskstore.PushDelivery         `json:"deliveries,omitempty"`
	Secrets    [][]byte                         `json:"secrets,omitempty"`
}

func (p *pushRecord) encode() ([]byte, error) {
	if len(p.Configs) == 0 && len(p.Deliveries) == 0 {
		return nil, nil
	}
	return json.Marshal(p)
}

// encodePush is the stored form of the push configs and reports of the
// task taskID, the configs' secrets sealed with keys (nil: in clear).
func encodePush(keys *sealed.Ring, taskID string, cs []a2a.TaskPushNotificationConfig, ds []taskstore.PushDelivery) ([]byte, error) {
	p := pushRecord{Deliveries: ds}
	var err error
	if p.Configs, p.Secrets, err = taskstore.SealPushSecrets(keys, taskID, cs); err != nil {
		return nil, err
	}
	return p.encode()
}

func decodePush(b []byte) (pushRecord, error) {
	var p pushRecord
	if len(b) == 0 {
		return p, nil
	}
	err := json.Unmarshal(b, &p)
	return p, err
}

// pushConfigIDs returns the config ids of a stored push value.
func pushConfigIDs(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var p struct {
		Configs []struct {
			ID string `json:"id"`
		} `json:"configs"`
	}
	if json.Unmarshal(b, &p) != nil {
		return nil
	}
	var ids []string
	for _, c := range p.Configs {
		ids = append(ids, c.ID)
	}
	return ids
}

// phaseOf classifies a task state.
func phaseOf(st a2a.TaskState) int16 {
	s, err := tasklife.StateOf(st)
	switch {
	case err != nil:
		return phaseGoing
	case s.Terminal():
		return phaseFinished
	case s.IsResumable():
		return phaseWaiting
	}
	return phaseGoing
}

// encodeRow makes the stored form of a record.
func (s *Store) encodeRow(r *taskstore.Record) (row, error) {
	return s.encodeRowWith(r, nil)
}

// encodeRowWith is encodeRow with the task's encoding given (nil: made
// here).
func (s *Store) encodeRowWith(r *taskstore.Record, task []byte) (row, error) {
	if task == nil {
		var err error
		if task, err = r.Task.AppendJSON(nil); err != nil {
			return row{}, fmt.Errorf("pgstore: %w", err)
		}
	}
	push, err := encodePush(s.keys, r.Task.ID, r.PushConfigs, r.PushDeliveries)
	if err != nil {
		return row{}, fmt.Errorf("pgstore: %w", err)
	}
	w := row{id: r.Task.ID, contextID: r.Task.ContextID, created: r.Created, updated: r.Updated, owner: r.Owner,
		principal: r.Principal, messageIDs: r.MessageIDs, task: task, push: push}
	if w.messageIDs == nil {
		w.messageIDs = []string{} // the column is NOT NULL
	}
	if r.Task.Status != nil {
		w.state = string(r.Task.Status.State)
	}
	w.phase = phaseOf(a2a.TaskState(w.state))
	w.size = w.sizeOf()
	return w, nil
}

// sizeOf is what the task counts against MaxBytes.
func (r *row) sizeOf() int64 {
	n := len(r.task) + len(r.push) + len(r.id) + len(r.contextID) + len(r.owner) + len(r.principal)
	for _, m := range r.messageIDs {
		n += len(m)
	}
	return int64(n)
}

// record decodes a stored task, opening its push configs' secrets with
// keys.
func (r *row) record(keys *sealed.Ring) (taskstore.Record, error) {
	out := taskstore.Record{Owner: r.owner, Principal: r.principal, Created: r.created, Updated: r.updated}
	if len(r.messageIDs) > 0 {
		out.MessageIDs = r.messageIDs
	}
	if err := out.Task.UnmarshalJSON(r.task); err != nil {
		return taskstore.Record{}, fmt.Errorf("pgstore: task %s: %w", r.id, err)
	}
	p, err := decodePush(r.push)
	if err != nil {
		return taskstore.Record{}, fmt.Errorf("pgstore: task %s: %w", r.id, err)
	}
	if out.PushConfigs, err = taskstore.OpenPushSecrets(keys, r.id, p.Configs, p.Secrets); err != nil {
		return taskstore.Record{}, fmt.Errorf("pgstore: %w", err)
	}
	out.PushDeliveries = p.Deliveries
	return out, nil
}

// gone reports whether a stored task has expired at now though no write
// has deleted it yet: it is answered as deleted, a waiting task with its
// *ExpiredError.
func (s *Store) gone(r *row, now time.Time) (bool, error) {
	switch {
	case s.idle > 0 && r.phase == phaseWaiting && r.updated.Before(now.Add(-s.idle)):
		return true, &taskstore.ExpiredError{ID: r.id, At: r.updated.Add(s.idle)}
	case s.keep > 0 && r.phase == phaseFinished && r.updated.Before(now.Add(-s.keep)):
		return true, taskstore.ErrNotFound
	}
	return false, nil
}

// querier runs a query: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// missing is the error for a task or context ('t', 'c') id the store
// does not hold: an *ExpiredError while its expiry is remembered.
func missing(ctx context.Context, q querier, kind, id string) error {
	var at time.Time
	err := q.QueryRow(ctx, "SELECT at FROM a2a_task_expiries WHERE kind = $1 AND id = $2", kind, id).Scan(&at)
	switch {
	case err == nil:
		return &taskstore.ExpiredError{ID: id, Context: kind == "c", At: at}
	case errors.Is(err, pgx.ErrNoRows):
		return taskstore.ErrNotFound
	}
	return fmt.Errorf("pgstore: %w", err)
}

// Get implements taskstore.Store. A task that expired waiting for input is
// answered with an *ExpiredError while the store remembers it.
func (s *Store) Get(ctx context.Context, id string) (taskstore.Record, error) {
	var r row
	err := r.scan(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM a2a_tasks WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return taskstore.Record{}, missing(ctx, s.pool, "t", id)
	}
	if err != nil {
		return taskstore.Record{}, fmt.Errorf("pgstore: %w", err)
	}
	if gone, err := s.gone(&r, s.now()); gone {
		return taskstore.Record{}, err
	}
	return r.record(s.keys)
}

// tx is a write transaction of the store.
type tx struct {
	s   *Store
	ctx context.Context
	tx  *pipeTx
	now time.Time
	// tasks and bytes are the change of the totals so far, written to one
	// slot when the transaction ends.
	tasks, bytes int64
	// seen is set once lock read the totals as committed, seenTasks and
	// seenBytes.
	seen                 bool
	seenTasks, seenBytes int64
	// later are the statements sent with COMMIT.
	later []statement
	// dropped are the tasks it dropped, told once it committed.
	dropped []taskstore.Dropped
	// answer is returned once the transaction committed.
	answer error
}

// errUnchanged ends a transaction that has nothing to write.
var errUnchanged = errors.New("pgstore: unchanged")

// write sweeps the expired tasks, then runs fn in a transaction, adds its
// change to the totals and commits; then it tells the watchers of the
// tasks dropped and returns tx.answer. An error of fn rolls it back.
func (s *Store) write(ctx context.Context, fn func(t *tx) error) error {
	return s.writeRetrying(ctx, true, fn)
}

// writeRetrying is write. When the bounds refuse a change (ErrFull) of a
// write that did not sweep, expired tasks not swept yet may hold the
// room: it sweeps, then, with retry set, runs fn again in a new
// transaction (Update leaves it unset: its caller's function runs once,
// and its caller may retry).
func (s *Store) writeRetrying(ctx context.Context, retry bool, fn func(t *tx) error) error {
	now := s.clock()
	swept, err := s.sweepDue(ctx, now, false)
	if err != nil {
		return err
	}
	err = s.writeTx(ctx, now, fn)
	if !swept && errors.Is(err, taskstore.ErrFull) {
		if _, serr := s.sweepDue(ctx, now, true); serr != nil || !retry {
			return err
		}
		err = s.writeTx(ctx, now, fn)
	}
	return err
}

// sweepDue sweeps (sweep) when the last sweep is sweepEvery old at now, or
// with force; it reports whether it swept. Writes running at once leave
// the sweep to one of them.
func (s *Store) sweepDue(ctx context.Context, now time.Time, force bool) (bool, error) {
	if s.idle <= 0 && s.keep <= 0 {
		return true, nil
	}
	next := s.nextSweep.Load()
	if !force && (now.UnixNano() < next || !s.nextSweep.CompareAndSwap(next, now.Add(sweepEvery).UnixNano())) {
		return false, nil
	}
	if force {
		s.nextSweep.Store(now.Add(sweepEvery).UnixNano())
	}
	if err := s.sweep(ctx, now); err != nil {
		s.nextSweep.Store(0) // the next write tries again
		return false, err
	}
	return true, nil
}

// writeTx is write's transaction.
func (s *Store) writeTx(ctx context.Context, now time.Time, fn func(t *tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	t := &tx{s: s, ctx: ctx, now: now, tx: &pipeTx{conn: conn}}
	if err := fn(t); err != nil {
		t.tx.rollback(ctx)
		return err
	}
	if err := t.tx.commit(ctx, t.later, t.tasks, t.bytes, rand.IntN(totalSlots)); err != nil {
		t.tx.rollback(ctx)
		return err
	}
	s.watch.Tell(t.dropped)
	return t.answer
}

// wrap marks a database error as the store's; the store's own errors
// (ErrFull, ErrNotFound, ExpiredError, the caller's) pass as they are.
func wrap(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) || errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("pgstore: %w", err)
	}
	return err
}

// sweepSQL deletes the tasks whose time is up, remembers the expiries of
// the waiting ones and of the contexts they leave empty, and takes them
// off the totals, in one statement: $1 and $2 are the cut-offs of the
// waiting and the finished tasks, $3 the idle expiry in microseconds, $4
// whether to remember, $5 a totals slot.
const sweepSQL = `WITH gone AS (
    DELETE FROM a2a_tasks t
    USING (SELECT id FROM a2a_tasks
           WHERE (phase = 1 AND updated < $1) OR (phase = 2 AND updated < $2)
           ORDER BY updated, id LIMIT 1000
           FOR UPDATE SKIP LOCKED) d
    WHERE t.id = d.id
    RETURNING t.id, t.context_id, t.phase, t.updated, t.size, t.push
), expired AS (
    SELECT 't' AS kind, id, updated + $3::bigint * interval '1 microsecond' AS at FROM gone WHERE phase = 1
    UNION ALL
    SELECT 'c', context_id, max(updated) + $3::bigint * interval '1 microsecond' FROM gone g
    WHERE phase = 1 AND context_id <> ''
      AND NOT EXISTS (SELECT 1 FROM a2a_tasks t WHERE t.context_id = g.context_id AND t.id NOT IN (SELECT id FROM gone))
    GROUP BY context_id
), remembered AS (
    INSERT INTO a2a_task_expiries (kind, id, at)
    SELECT kind, id, at FROM expired WHERE $4 ORDER BY kind, id
    ON CONFLICT (kind, id) DO UPDATE SET at = EXCLUDED.at, seq = EXCLUDED.seq
    RETURNING 1
), counted AS (
    UPDATE a2a_task_totals SET tasks = tasks - g.n, bytes = bytes - g.b
    FROM (SELECT count(*) AS n, coalesce(sum(size), 0) AS b FROM gone) g
    WHERE slot = $5 AND g.n > 0
    RETURNING 1
)
SELECT id, context_id, push, (SELECT count(*) FROM remembered) FROM gone`

// trimSQL forgets the expiries older than the $1 most recent.
const trimSQL = `DELETE FROM a2a_task_expiries WHERE (kind, id) IN (
    SELECT kind, id FROM a2a_task_expiries
    WHERE seq < (SELECT seq FROM a2a_task_expiries ORDER BY seq DESC OFFSET $1 - 1 LIMIT 1)
    FOR UPDATE SKIP LOCKED)`

// never is a cut-off no task is older than.
var never = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// sweep deletes the tasks whose time is up at now: those waiting unchanged
// for longer than the idle expiry (remembered as expired) and, with a
// retention, those finished for longer than it. It is a statement of its
// own, before the transaction of a change, which so never waits for it.
// Tasks another transaction holds are left to a later sweep.
func (s *Store) sweep(ctx context.Context, now time.Time) error {
	if s.idle <= 0 && s.keep <= 0 {
		return nil
	}
	waitCut, finCut := never, never
	if s.idle > 0 {
		waitCut = now.Add(-s.idle)
	}
	if s.keep > 0 {
		finCut = now.Add(-s.keep)
	}
	rows, err := s.pool.Query(ctx, sweepSQL, waitCut, finCut, s.idle.Microseconds(), s.remember > 0, rand.IntN(totalSlots))
	if err != nil {
		return fmt.Errorf("pgstore: sweep: %w", err)
	}
	collect := s.watch.Active()
	var dropped []taskstore.Dropped
	var remembered int64
	for rows.Next() {
		var d taskstore.Dropped
		var push []byte
		if err := rows.Scan(&d.TaskID, &d.ContextID, &push, &remembered); err != nil {
			rows.Close()
			return fmt.Errorf("pgstore: sweep: %w", err)
		}
		if collect {
			d.PushConfigIDs = pushConfigIDs(push)
			dropped = append(dropped, d)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pgstore: sweep: %w", err)
	}
	if remembered > 0 {
		if _, err := s.pool.Exec(ctx, trimSQL, s.remember); err != nil {
			return fmt.Errorf("pgstore: sweep: %w", err)
		}
	}
	s.watch.Tell(dropped)
	return nil
}

// totals returns the count and bytes of the tasks, as committed (when
// the transaction locked a task, as they were then) plus the change of t
// so far.
func (t *tx) totals() (tasks, bytes int64, err error) {
	if t.seen {
		return t.seenTasks + t.tasks, t.seenBytes + t.bytes, nil
	}
	err = t.tx.QueryRow(t.ctx, "SELECT coalesce(sum(tasks), 0)::bigint, coalesce(sum(bytes), 0)::bigint FROM a2a_task_totals").Scan(&tasks, &bytes)
	return tasks + t.tasks, bytes + t.bytes, err
}

// victim is a finished task eviction may delete.
type victim struct {
	id, contextID string
	updated       time.Time
	size          int64
	push          []byte
}

// makeRoom evicts finished tasks other than keep, the least recently
// changed first, until the store is within its bounds once more tasks and
// moreBytes bytes are added (which the caller then adds to t). With refuse
// set, it evicts nothing and returns an ErrFull error when that cannot be
// done; otherwise it evicts what it can. Finished tasks other
// transactions hold are passed over.
func (t *tx) makeRoom(more int, moreBytes int64, keep string, refuse bool) error {
	s := t.s
	if s.maxTasks <= 0 && s.maxBytes <= 0 {
		return nil
	}
	tasks, bytes, err := t.totals()
	if err != nil {
		return err
	}
	needTasks, needBytes := int64(0), int64(0)
	if s.maxTasks > 0 {
		needTasks = tasks + int64(more) - s.maxTasks
	}
	if s.maxBytes > 0 {
		needBytes = bytes + moreBytes - s.maxBytes
	}
	if needTasks <= 0 && needBytes <= 0 {
		return nil
	}
	var chosen []victim
	var freedTasks, freedBytes int64
	after, afterID := never, ""
	for freedTasks < needTasks || freedBytes < needBytes {
		// Each row read is locked until the transaction ends, and passed
		// over by concurrent evictions: read about as many as needed (the
		// bytes by the tasks' average size).
		n := max(needTasks-freedTasks, 1)
		if left := needBytes - freedBytes; left > 0 && tasks > 0 {
			n = max(n, left/max(bytes/tasks, 1)+1)
		}
		rows, err := t.tx.Query(t.ctx, `SELECT id, context_id, updated, size, push FROM a2a_tasks
			WHERE phase = 2 AND id <> $1 AND (updated, id) > ($2, $3)
			ORDER BY updated, id LIMIT $4 FOR UPDATE SKIP LOCKED`, keep, after, afterID, min(n, 1000))
		if err != nil {
			return err
		}
		read := 0
		for rows.Next() && (freedTasks < needTasks || freedBytes < needBytes) {
			var v victim
			if err := rows.Scan(&v.id, &v.contextID, &v.updated, &v.size, &v.push); err != nil {
				rows.Close()
				return err
			}
			read++
			chosen = append(chosen, v)
			freedTasks++
			freedBytes += v.size
			after, afterID = v.updated, v.id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if read == 0 {
			break
		}
	}
	if refuse && (freedTasks < needTasks || freedBytes < needBytes) {
		return taskstore.FullError(s.maxTasks, s.maxBytes, tasks, bytes, more, moreBytes)
	}
	if len(chosen) == 0 {
		return nil
	}
	ids := make([]string, len(chosen))
	for i, v := range chosen {
		ids[i] = v.id
	}
	if _, err := t.tx.Exec(t.ctx, "DELETE FROM a2a_tasks WHERE id = ANY($1)", ids); err != nil {
		return err
	}
	t.tasks -= freedTasks
	t.bytes -= freedBytes
	if s.watch.Active() {
		for _, v := range chosen {
			t.dropped = append(t.dropped, taskstore.Dropped{TaskID: v.id, ContextID: v.contextID, PushConfigIDs: pushConfigIDs(v.push)})
		}
	}
	return nil
}

// Create implements taskstore.Store. A new task past the bounds evicts
// finished tasks, or is refused with ErrFull. A task or context id longer
// than MaxIDBytes is refused with ErrIDTooLong.
func (s *Store) Create(ctx context.Context, r taskstore.Record) (taskstore.Record, error) {
	return s.CreateEncoded(ctx, r, nil)
}

// CreateEncoded implements taskstore.EncodedWriter: Create with enc, the
// task's encoding, stored as it is (nil: Create encodes the task).
func (s *Store) CreateEncoded(ctx context.Context, r taskstore.Record, enc []byte) (taskstore.Record, error) {
	if len(r.Task.ID) > MaxIDBytes {
		return taskstore.Record{}, fmt.Errorf("%w: a task id of %d bytes (at most %d)", ErrIDTooLong, len(r.Task.ID), MaxIDBytes)
	}
	if len(r.Task.ContextID) > MaxIDBytes {
		return taskstore.Record{}, fmt.Errorf("%w: a context id of %d bytes (at most %d)", ErrIDTooLong, len(r.Task.ContextID), MaxIDBytes)
	}
	for {
		out, err := s.create(ctx, r, enc)
		// The task holding the id went between the insert and the read:
		// the id is free again.
		if !errors.Is(err, errRetry) {
			return out, err
		}
	}
}

// errRetry ends a Create whose id was taken and is free again.
var errRetry = errors.New("pgstore: retry")

// createSQL inserts a task when its id is free and the store, as
// committed, has room for it once it evicted the finished tasks, least
// recently changed first, the count bound needs (passing over those other
// transactions hold), and forgets the expiries of its id and context, in
// one statement, its own transaction, which also adds the change to the
// totals. It returns a row whose first column is 1 (the other columns
// NULL) and one per task evicted (id, context id, size, push; the first
// column NULL). When it inserts nothing it fails with division_by_zero
// (SQLSTATE 22012), the first row's 1/0, and so changes nothing: a
// statement that fails is undone whole, its WITH clauses included
// (PostgreSQL's "Data-Modifying Statements in WITH"). $1 to $12 are the
// columns, $13 and $14 the bounds (0: none), $15 a totals slot.
const createSQL = `WITH tot AS (
    SELECT coalesce(sum(tasks), 0)::bigint AS n, coalesce(sum(bytes), 0)::bigint AS b FROM a2a_task_totals
), victims AS (
    SELECT id FROM a2a_tasks
    WHERE phase = 2 AND id <> $1::text
    ORDER BY updated, id
    LIMIT (SELECT CASE WHEN $13::bigint = 0 THEN 0 ELSE greatest(n + 1 - $13::bigint, 0) END FROM tot)
    FOR UPDATE SKIP LOCKED
), evicted AS (
    DELETE FROM a2a_tasks t USING victims v WHERE t.id = v.id
    RETURNING t.id, t.context_id, t.size, t.push
), ins AS (
    INSERT INTO a2a_tasks (` + columns + `)
    SELECT $1::text, $2::text, $3::text, $4::smallint, $5::timestamptz, $6::timestamptz, $7::bigint, $8::text, $9::text,
        $10::text[], $11::bytea, $12::bytea
    FROM tot
    WHERE ($13::bigint = 0 OR tot.n - (SELECT count(*) FROM evicted) + 1 <= $13::bigint)
      AND ($14::bigint = 0 OR tot.b - (SELECT coalesce(sum(size), 0) FROM evicted) + $7::bigint <= $14::bigint)
    ON CONFLICT (id) DO NOTHING
    RETURNING 1
), forget AS (
    DELETE FROM a2a_task_expiries
    WHERE ((kind = 't' AND id = $1::text) OR (kind = 'c' AND id = $2::text)) AND EXISTS (SELECT 1 FROM ins)
), counted AS (
    UPDATE a2a_task_totals SET tasks = tasks + 1 - (SELECT count(*) FROM evicted),
        bytes = bytes + $7::bigint - (SELECT coalesce(sum(size), 0) FROM evicted)
    WHERE slot = $15 AND EXISTS (SELECT 1 FROM ins)
)
SELECT 1 / (SELECT count(*) FROM ins), NULL::text, NULL::text, NULL::bigint, NULL::bytea
UNION ALL
SELECT NULL, id, context_id, size, push FROM evicted`

// errSlow is the error of a Create that createSQL could not make: Create
// takes the general way.
var errSlow = errors.New("pgstore: create the general way")

// createFast is Create in one statement, createSQL: errSlow when it stored
// nothing. w is r encoded; createFast sets the times of both.
func (s *Store) createFast(ctx context.Context, r *taskstore.Record, w *row) error {
	now := s.clock()
	if _, err := s.sweepDue(ctx, now, false); err != nil {
		return err
	}
	r.Created, r.Updated = now, now
	w.created, w.updated = now, now
	rows, err := s.pool.Query(ctx, createSQL, w.id, w.contextID, w.state, w.phase, w.created, w.updated, w.size, w.owner,
		w.principal, w.messageIDs, w.task, w.push, s.maxTasks, s.maxBytes, rand.IntN(totalSlots))
	if err != nil {
		return err
	}
	defer rows.Close()
	collect := s.watch.Active()
	var dropped []taskstore.Dropped
	for rows.Next() {
		var n *int64
		var id, contextID *string
		var size *int64
		var push []byte
		if err := rows.Scan(&n, &id, &contextID, &size, &push); err != nil {
			return err
		}
		if n == nil && collect {
			dropped = append(dropped, taskstore.Dropped{TaskID: *id, ContextID: *contextID, PushConfigIDs: pushConfigIDs(push)})
		}
	}
	rows.Close()
	var pgErr *pgconn.PgError
	if err := rows.Err(); errors.As(err, &pgErr) && pgErr.Code == "22012" {
		return errSlow
	} else if err != nil {
		return err
	}
	s.watch.Tell(dropped)
	return nil
}

func (s *Store) create(ctx context.Context, r taskstore.Record, enc []byte) (taskstore.Record, error) {
	// Most tasks are new, and fit or take a finished task's room: one
	// statement.
	// The times are set by the way taken; the rest of the row does not
	// depend on them.
	w, err := s.encodeRowWith(&r, enc)
	if err != nil {
		return taskstore.Record{}, wrap(err)
	}
	err = s.createFast(ctx, &r, &w)
	if !errors.Is(err, errSlow) {
		if err != nil {
			return taskstore.Record{}, wrap(err)
		}
		return r, nil
	}
	// The id is taken, or room must be made: a transaction.
	var existing taskstore.Record
	err = s.write(ctx, func(t *tx) error {
		r.Created, r.Updated = t.now, t.now
		w.created, w.updated = t.now, t.now
		tag, err := t.tx.Exec(ctx, `INSERT INTO a2a_tasks (`+columns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (id) DO NOTHING`,
			w.id, w.contextID, w.state, w.phase, w.created, w.updated, w.size, w.owner, w.principal, w.messageIDs, w.task, w.push)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var old row
			err := old.scan(t.tx.QueryRow(ctx, "SELECT "+columns+" FROM a2a_tasks WHERE id = $1", w.id))
			if errors.Is(err, pgx.ErrNoRows) {
				return errRetry
			}
			if err != nil {
				return err
			}
			if existing, err = old.record(s.keys); err != nil {
				return err
			}
			return taskstore.ErrExists
		}
		if err := t.makeRoom(1, w.size, w.id, true); err != nil {
			return err
		}
		t.tasks++
		t.bytes += w.size
		// A new task under an expired id, or in an expired context, is
		// new: neither is answered expired any more.
		_, err = t.tx.Exec(ctx, "DELETE FROM a2a_task_expiries WHERE (kind = 't' AND id = $1) OR (kind = 'c' AND id = $2)", w.id, w.contextID)
		return err
	})
	switch {
	case errors.Is(err, taskstore.ErrExists):
		return existing, err
	case err != nil:
		return taskstore.Record{}, wrap(err)
	}
	return r, nil
}

// lock reads a task's row for a change, holding it until the transaction
// ends, and the totals as committed (totals); with task unset the task
// itself is not read. A task the store does not hold, or that has
// expired, is t.answer, and found is false.
func (t *tx) lock(id string, task bool) (r row, found bool, err error) {
	cols := columns
	if !task {
		cols = headColumns
	}
	var tasks, bytes int64
	err = t.tx.QueryRow(t.ctx, "SELECT "+cols+`, tot.n, tot.b
		FROM a2a_tasks, (SELECT coalesce(sum(tasks), 0)::bigint AS n, coalesce(sum(bytes), 0)::bigint AS b FROM a2a_task_totals) tot
		WHERE id = $1 FOR UPDATE OF a2a_tasks`, id).
		Scan(&r.id, &r.contextID, &r.state, &r.phase, &r.created, &r.updated, &r.size, &r.owner, &r.principal, &r.messageIDs, &r.task, &r.push, &tasks, &bytes)
	if errors.Is(err, pgx.ErrNoRows) {
		// The sweep before the transaction may just have expired it.
		t.answer = missing(t.ctx, t.tx, "t", id)
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, err
	}
	t.seen, t.seenTasks, t.seenBytes = true, tasks, bytes
	if gone, err := t.s.gone(&r, t.now); gone {
		t.answer = err
		return row{}, false, nil
	}
	return r, true, nil
}

// put stores w over old, which it grows by w.size - old.size bytes: with
// bounded set, a change that grows the task is refused when the store
// cannot make room for it; otherwise finished tasks are evicted until the
// store is within its bounds, if it can be.
func (t *tx) put(old, w *row, bounded bool) error {
	grow := w.size - old.size
	if err := t.makeRoom(0, grow, w.id, bounded && grow > 0); err != nil {
		return err
	}
	// Sent with COMMIT: nothing the transaction does depends on it.
	t.later = append(t.later, statement{`UPDATE a2a_tasks SET state = $2, phase = $3, updated = $4, size = $5, owner = $6,
		principal = $7, message_ids = $8, task = coalesce($9, task), push = $10 WHERE id = $1`,
		[]any{w.id, w.state, w.phase, w.updated, w.size, w.owner, w.principal, w.messageIDs, w.task, w.push}})
	t.bytes += grow
	return nil
}

// Update implements taskstore.Store. fn runs while the task's row is
// locked: concurrent changes of the task, from this Store or another on
// the database, wait for it. An update that grows the task is refused with
// ErrFull when evicting finished tasks cannot keep the store within
// MaxBytes.
func (s *Store) Update(ctx context.Context, id string, fn func(*taskstore.Record) error) (taskstore.Record, error) {
	var out taskstore.Record
	err := s.writeRetrying(ctx, false, func(t *tx) error {
		old, found, err := t.lock(id, true)
		if err != nil || !found {
			return err
		}
		r, err := old.record(s.keys)
		if err != nil {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
		if r.Task.ID != id {
			return errors.New("pgstore: Update may not change the task id")
		}
		if r.Task.ContextID != old.contextID {
			return errors.New("pgstore: Update may not change the context id")
		}
		r.Updated = t.now
		w, err := s.encodeRow(&r)
		if err != nil {
			return err
		}
		if err := t.put(&old, &w, true); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		return taskstore.Record{}, wrap(err)
	}
	return out, nil
}

// replaceSQL replaces the task of a row when it is held, in the context
// given, not expired at the cut-offs ($6 waiting, $7 finished: never for
// none), and the bytes bound ($8, 0 for none) has room for its growth, in
// one statement, its own transaction, which also adds the growth to the
// totals slot $9. The row is locked first (FOR UPDATE in WITH), so the
// growth is reckoned from the version the update replaces. It returns 1
// when it replaced the task, else 0 and changes nothing. $1 is the id, $2
// the context id, $3 the task, $4 and $5 its state and phase, $10 the time.
const replaceSQL = `WITH old AS (
    SELECT id, octet_length(task)::bigint AS tlen FROM a2a_tasks
    WHERE id = $1::text AND context_id = $2::text
      AND NOT (phase = 1 AND updated < $6::timestamptz) AND NOT (phase = 2 AND updated < $7::timestamptz)
    FOR UPDATE
), tot AS (
    SELECT coalesce(sum(bytes), 0)::bigint AS b FROM a2a_task_totals
), upd AS (
    UPDATE a2a_tasks t SET task = $3::bytea, state = $4::text, phase = $5::smallint, updated = $10::timestamptz,
        size = t.size - old.tlen + octet_length($3::bytea)
    FROM old, tot
    WHERE t.id = old.id
      AND ($8::bigint = 0 OR octet_length($3::bytea) <= old.tlen OR tot.b + octet_length($3::bytea) - old.tlen <= $8::bigint)
    RETURNING octet_length($3::bytea) - old.tlen AS grow
), counted AS (
    UPDATE a2a_task_totals SET bytes = bytes + (SELECT grow FROM upd) WHERE slot = $9 AND EXISTS (SELECT 1 FROM upd)
)
SELECT count(*) FROM upd`

// replaceFast is ReplaceTask in one statement, replaceSQL; it reports
// whether it replaced the task. The general way answers the rest: a task
// the store does not hold or that expired, another context, a growth that
// needs finished tasks evicted.
func (s *Store) replaceFast(ctx context.Context, task *a2a.Task, body []byte) (bool, error) {
	now := s.clock()
	if _, err := s.sweepDue(ctx, now, false); err != nil {
		return false, err
	}
	waitCut, finCut := never, never
	if s.idle > 0 {
		waitCut = now.Add(-s.idle)
	}
	if s.keep > 0 {
		finCut = now.Add(-s.keep)
	}
	state := ""
	if task.Status != nil {
		state = string(task.Status.State)
	}
	var n int64
	err := s.pool.QueryRow(ctx, replaceSQL, task.ID, task.ContextID, body, state, phaseOf(a2a.TaskState(state)),
		waitCut, finCut, s.maxBytes, rand.IntN(totalSlots), now).Scan(&n)
	return n == 1, err
}

// ReplaceTask implements taskstore.Replacer: the stored task is not read.
// It is never refused for the store's bounds.
func (s *Store) ReplaceTask(ctx context.Context, task a2a.Task) error {
	body, err := task.AppendJSON(nil)
	if err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return s.ReplaceTaskEncoded(ctx, task, body)
}

// ReplaceTaskEncoded implements taskstore.EncodedWriter: ReplaceTask with
// body, the task's encoding, stored as it is.
func (s *Store) ReplaceTaskEncoded(ctx context.Context, task a2a.Task, body []byte) error {
	// Most replacements are of a task held, live, in room: one statement.
	if done, err := s.replaceFast(ctx, &task, body); done || err != nil {
		return wrap(err)
	}
	return wrap(s.write(ctx, func(t *tx) error {
		old, found, err := t.lock(task.ID, false)
		if err != nil || !found {
			return err
		}
		if task.ContextID != old.contextID {
			return errors.New("pgstore: ReplaceTask may not change the context id")
		}
		w := old
		w.task, w.updated, w.state = body, t.now, ""
		if task.Status != nil {
			w.state = string(task.Status.State)
		}
		w.phase = phaseOf(a2a.TaskState(w.state))
		w.size = w.sizeOf()
		return t.put(&old, &w, false)
	}))
}

// SetPushDelivery implements taskstore.DeliverySetter: one transaction
// that rewrites the task's push configs and reports, without reading the
// task, and leaves its Updated time as it is.
func (s *Store) SetPushDelivery(ctx context.Context, id string, d taskstore.PushDelivery) (bool, error) {
	err := s.write(ctx, func(t *tx) error {
		old, found, err := t.lock(id, false)
		if err != nil || !found {
			return err
		}
		p, err := decodePush(old.push)
		if err != nil {
			return err
		}
		next, changed := taskstore.WithDelivery(p.Configs, p.Deliveries, d)
		if !changed {
			return errUnchanged
		}
		p.Deliveries = next
		if err := s.reseal(id, &p); err != nil {
			return err
		}
		push, err := p.encode()
		if err != nil {
			return err
		}
		grow := int64(len(push) - len(old.push))
		if err := t.makeRoom(0, grow, id, false); err != nil {
			return err
		}
		if _, err := t.tx.Exec(ctx, "UPDATE a2a_tasks SET push = $2, size = size + $3 WHERE id = $1", id, push, grow); err != nil {
			return err
		}
		t.bytes += grow
		return nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return false, nil
	case err != nil:
		return false, wrap(err)
	}
	return true, nil
}

// reseal seals the push configs' secrets of the task id again with the
// current key of the store's ring: those in clear and those of another
// key. Without a ring they are left as they are.
func (s *Store) reseal(id string, p *pushRecord) error {
	var err error
	if p.Configs, p.Secrets, _, err = taskstore.ResealPushSecrets(s.keys, id, p.Configs, p.Secrets); err != nil {
		return fmt.Errorf("pgstore: %w", err)
	}
	return nil
}

// resealBatch is how many tasks Reseal reads a statement.
const resealBatch = 200

// Reseal seals again, with the current key of Options.Keys, the push
// configs' secrets of every task holding them in clear or sealed with
// another key, and returns how many tasks it rewrote: once it returned,
// the other keys may leave the ring of every instance. It reads the tasks
// with push configs resealBatch at a time, and rewrites those that need
// it in a transaction a batch, each row locked; the tasks, their Updated
// times and their places are left as they are. Without a ring it does
// nothing.
func (s *Store) Reseal(ctx context.Context) (int, error) {
	if s.keys == nil {
		return 0, nil
	}
	n, after := 0, ""
	for {
		rows, err := s.pool.Query(ctx, "SELECT id, push FROM a2a_tasks WHERE push IS NOT NULL AND id > $1 ORDER BY id LIMIT $2", after, resealBatch)
		if err != nil {
			return n, fmt.Errorf("pgstore: reseal: %w", err)
		}
		var stale []string
		read := 0
		var id string
		var push []byte
		if _, err := pgx.ForEachRow(rows, []any{&id, &push}, func() error {
			read++
			after = id
			if p, err := decodePush(push); err != nil || taskstore.StalePushSecrets(s.keys, p.Configs, p.Secrets) {
				stale = append(stale, id)
			}
			return nil
		}); err != nil {
			return n, fmt.Errorf("pgstore: reseal: %w", err)
		}
		if len(stale) > 0 {
			done := 0
			err := s.write(ctx, func(t *tx) error {
				done = 0
				for _, id := range stale {
					old, found, err := t.lock(id, false)
					t.answer = nil // gone meanwhile: nothing to seal
					if err != nil {
						return err
					}
					if !found {
						continue
					}
					p, err := decodePush(old.push)
					if err != nil {
						return fmt.Errorf("pgstore: task %s: %w", id, err)
					}
					if !taskstore.StalePushSecrets(s.keys, p.Configs, p.Secrets) {
						continue
					}
					if err := s.reseal(id, &p); err != nil {
						return err
					}
					next, err := p.encode()
					if err != nil {
						return err
					}
					grow := int64(len(next) - len(old.push))
					if _, err := t.tx.Exec(ctx, "UPDATE a2a_tasks SET push = $2, size = size + $3 WHERE id = $1", id, next, grow); err != nil {
						return err
					}
					t.bytes += grow
					done++
				}
				// Sealed secrets are longer than clear ones: finished
				// tasks are evicted if the store is past its bounds.
				return t.makeRoom(0, 0, "", false)
			})
			if err != nil {
				return n, fmt.Errorf("pgstore: reseal: %w", wrap(err))
			}
			n += done
		}
		if read < resealBatch {
			return n, nil
		}
	}
}

// List implements taskstore.Store: newest first (by creation, then id),
// filtered and paged by the database; tasks expired but not yet deleted
// are left out. Page tokens are offsets into that order, as in the other
// stores.
func (s *Store) List(ctx context.Context, f taskstore.Filter) (taskstore.Page, error) {
	size := f.PageSize
	if size <= 0 {
		size = taskstore.DefaultPageSize
	}
	start := 0
	if f.PageToken != "" {
		n, err := strconv.Atoi(f.PageToken)
		if err != nil || n < 0 {
			return taskstore.Page{}, taskstore.ErrBadPageToken
		}
		start = n
	}
	where, args := s.listWhere(f, s.now())
	rows, err := s.pool.Query(ctx, "SELECT "+columns+", count(*) OVER () FROM a2a_tasks WHERE "+where+
		" ORDER BY created DESC, id LIMIT "+strconv.Itoa(size)+" OFFSET "+strconv.Itoa(start), args...)
	if err != nil {
		return taskstore.Page{}, fmt.Errorf("pgstore: %w", err)
	}
	var page taskstore.Page
	total := -1
	for rows.Next() {
		var r row
		var n int
		if err := rows.Scan(&r.id, &r.contextID, &r.state, &r.phase, &r.created, &r.updated, &r.size, &r.owner, &r.principal, &r.messageIDs, &r.task, &r.push, &n); err != nil {
			rows.Close()
			return taskstore.Page{}, fmt.Errorf("pgstore: %w", err)
		}
		rec, err := r.record(s.keys)
		if err != nil {
			rows.Close()
			return taskstore.Page{}, err
		}
		total = n
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return taskstore.Page{}, fmt.Errorf("pgstore: %w", err)
	}
	if total < 0 {
		// An empty page: count the matches to judge the token.
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM a2a_tasks WHERE "+where, args...).Scan(&total); err != nil {
			return taskstore.Page{}, fmt.Errorf("pgstore: %w", err)
		}
		if start > total {
			return taskstore.Page{}, taskstore.ErrBadPageToken
		}
	}
	page.Total = total
	if end := start + len(page.Records); end < total {
		page.NextPageToken = strconv.Itoa(end)
	}
	return page, nil
}

// listWhere is the condition of a listing and its arguments: the filter's
// fields that are set, and not expired at now.
func (s *Store) listWhere(f taskstore.Filter, now time.Time) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.ContextID != "" {
		conds = append(conds, "context_id = "+arg(f.ContextID))
	}
	if f.State != "" {
		conds = append(conds, "state = "+arg(string(f.State)))
	}
	if !f.UpdatedAfter.IsZero() {
		conds = append(conds, "updated >= "+arg(f.UpdatedAfter))
	}
	if f.Scoped {
		// taskstore.Visible: the caller's tasks and those of no principal.
		if f.VisibleTo == "" {
			conds = append(conds, "principal = ''")
		} else {
			conds = append(conds, "principal IN ('', "+arg(f.VisibleTo)+")")
		}
	}
	if s.idle > 0 {
		conds = append(conds, "NOT (phase = 1 AND updated < "+arg(now.Add(-s.idle))+")")
	}
	if s.keep > 0 {
		conds = append(conds, "NOT (phase = 2 AND updated < "+arg(now.Add(-s.keep))+")")
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// Context implements taskstore.Store. Tasks that have expired are left
// out; a context whose last task expired waiting for input is answered
// with an *ExpiredError while the store remembers it.
func (s *Store) Context(ctx context.Context, id string) (taskstore.ContextInfo, error) {
	if id == "" {
		return taskstore.ContextInfo{}, taskstore.ErrNotFound
	}
	now := s.now()
	rows, err := s.pool.Query(ctx, "SELECT id, phase, updated, principal FROM a2a_tasks WHERE context_id = $1 ORDER BY created, id", id)
	if err != nil {
		return taskstore.ContextInfo{}, fmt.Errorf("pgstore: %w", err)
	}
	info := taskstore.ContextInfo{ID: id}
	// expiredAt is the latest expiry of the context's tasks that expired
	// but are not deleted yet.
	var expiredAt time.Time
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.phase, &r.updated, &r.principal); err != nil {
			rows.Close()
			return taskstore.ContextInfo{}, fmt.Errorf("pgstore: %w", err)
		}
		switch gone, err := s.gone(&r, now); {
		case errors.Is(err, taskstore.ErrExpired):
			if at := r.updated.Add(s.idle); at.After(expiredAt) {
				expiredAt = at
			}
		case !gone:
			info.TaskIDs = append(info.TaskIDs, r.id)
			info.Tasks = append(info.Tasks, taskstore.ContextTask{ID: r.id, Principal: r.principal, Updated: r.updated})
			if r.updated.After(info.LastActive) {
				info.LastActive = r.updated
			}
		}
	}
	if err := rows.Err(); err != nil {
		return taskstore.ContextInfo{}, fmt.Errorf("pgstore: %w", err)
	}
	switch {
	case len(info.TaskIDs) > 0:
		return info, nil
	case !expiredAt.IsZero():
		return taskstore.ContextInfo{}, &taskstore.ExpiredError{ID: id, Context: true, At: expiredAt}
	}
	return taskstore.ContextInfo{}, missing(ctx, s.pool, "c", id)
}

var (
	_ taskstore.Store          = (*Store)(nil)
	_ taskstore.Replacer       = (*Store)(nil)
	_ taskstore.DeliverySetter = (*Store)(nil)
	_ taskstore.DropWatcher    = (*Store)(nil)
	_ taskstore.EncodedWriter  = (*Store)(nil)
)
