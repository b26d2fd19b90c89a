package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/storetest"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

// open opens a store on dsn, closed when the test ends.
func open(t *testing.T, dsn string, o Options) *Store {
	t.Helper()
	s, err := Open(ctx, dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func options(c storetest.Config) Options {
	return Options{Migrate: true, Now: c.Now, MaxTasks: c.MaxTasks, MaxBytes: c.MaxBytes,
		ExpireInterruptedAfter: c.ExpireInterruptedAfter, KeepFinishedFor: c.KeepFinishedFor}
}

// The contract of every store, each case on a schema of its own, then
// the store's totals checked against its rows.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c storetest.Config) taskstore.Store {
		return open(t, pgtest.NewSchema(t), options(c))
	}, storetest.WithCheck(func(t *testing.T, s taskstore.Store) { checkTotals(t, s.(*Store)) }))
}

// checkTotals checks that the totals match the rows, and each row's size
// and phase its columns.
func checkTotals(t *testing.T, s *Store) {
	t.Helper()
	var tasks, bytes, rows, size, badSize, badPhase int64
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT coalesce(sum(tasks), 0)::bigint FROM a2a_task_totals),
		(SELECT coalesce(sum(bytes), 0)::bigint FROM a2a_task_totals),
		(SELECT count(*) FROM a2a_tasks),
		(SELECT coalesce(sum(size), 0)::bigint FROM a2a_tasks),
		(SELECT count(*) FROM a2a_tasks WHERE size <> octet_length(task) + coalesce(octet_length(push), 0) + octet_length(id)
			+ octet_length(context_id) + octet_length(owner) + octet_length(principal) + coalesce((SELECT sum(octet_length(m)) FROM unnest(message_ids) m), 0)),
		(SELECT count(*) FROM a2a_tasks WHERE phase <> CASE
			WHEN state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED') THEN 2
			WHEN state IN ('TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED') THEN 1 ELSE 0 END)`).
		Scan(&tasks, &bytes, &rows, &size, &badSize, &badPhase)
	if err != nil {
		t.Fatal(err)
	}
	if tasks != rows || bytes != size || badSize != 0 || badPhase != 0 {
		t.Fatalf("totals %d tasks %d bytes, rows %d tasks %d bytes; %d rows of a wrong size, %d of a wrong phase", tasks, bytes, rows, size, badSize, badPhase)
	}
}

// Two stores on one database (two instances of an agent) updating one
// task take turns: fn never runs for both at once, and no update is lost.
func TestTwoStoresUpdatingOneTaskLoseNothing(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	a, b := open(t, dsn, Options{Migrate: true}), open(t, dsn, Options{Migrate: true})
	if _, err := a.Create(ctx, taskstore.Record{Task: a2a.Task{ID: "t1", ContextID: "c1",
		Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}}); err != nil {
		t.Fatal(err)
	}
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	const writers, each = 8, 5
	for i := range writers {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for j := range each {
				_, err := s.Update(ctx, "t1", func(r *taskstore.Record) error {
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					defer inside.Add(-1)
					r.MessageIDs = append(r.MessageIDs, fmt.Sprintf("w%d-%d", i, j))
					r.Task.History = append(r.Task.History, a2a.Message{MessageID: fmt.Sprintf("w%d-%d", i, j), Role: a2a.RoleUser,
						Parts: []a2a.Part{{Content: a2a.PartText("x")}}})
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []*Store{a, b} {
		r, err := s.Get(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.MessageIDs) != writers*each || len(r.Task.History) != writers*each {
			t.Fatalf("%d message ids and %d messages after %d updates", len(r.MessageIDs), len(r.Task.History), writers*each)
		}
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("fn ran for two updates at once %d times", n)
	}
	checkTotals(t, a)
}

// The bounds are those of the database, whichever store writes.
func TestBoundsAreSharedByTheStoresOfADatabase(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	a, b := open(t, dsn, Options{Migrate: true, MaxTasks: 4}), open(t, dsn, Options{Migrate: true, MaxTasks: 4})
	for i := range 4 {
		s := a
		if i%2 == 1 {
			s = b
		}
		if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: fmt.Sprint("t", i), ContextID: "c",
			Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{a, b} {
		if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: "more", ContextID: "c"}}); !errors.Is(err, taskstore.ErrFull) {
			t.Fatalf("a fifth task: %v", err)
		}
	}
	if _, err := a.Update(ctx, "t3", func(r *taskstore.Record) error {
		r.Task.Status.State = a2a.TaskStateCompleted
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, taskstore.Record{Task: a2a.Task{ID: "more", ContextID: "c"}}); err != nil {
		t.Fatalf("a task evicting one another store finished: %v", err)
	}
	if _, err := a.Get(ctx, "t3"); !errors.Is(err, taskstore.ErrNotFound) {
		t.Fatalf("the evicted task: %v", err)
	}
	checkTotals(t, a)
}

// Only the RememberExpired most recent expiries are remembered.
func TestRememberedExpiriesAreBounded(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := open(t, pgtest.NewSchema(t), Options{Migrate: true, Now: clock, ExpireInterruptedAfter: time.Minute, RememberExpired: 3})
	for i := range 3 {
		if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: fmt.Sprint("t", i), ContextID: "c",
			Status: &a2a.TaskStatus{State: a2a.TaskStateInputRequired}}}); err != nil {
			t.Fatal(err)
		}
		advance(time.Second)
	}
	// Each write drops the waiting tasks that have expired: t0 alone,
	// then t1, then t2 with its context (four expiries).
	advance(time.Minute - 2*time.Second)
	for range 3 {
		if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: fmt.Sprint("x", now.Unix()), ContextID: "other",
			Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}}); err != nil {
			t.Fatal(err)
		}
		advance(time.Second)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM a2a_task_expiries").Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d expiries remembered: %v", n, err)
	}
	if _, err := s.Get(ctx, "t0"); !errors.Is(err, taskstore.ErrNotFound) || errors.Is(err, taskstore.ErrExpired) {
		t.Fatalf("the oldest expiry is forgotten: %v", err)
	}
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.Get(ctx, id); !errors.Is(err, taskstore.ErrExpired) {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if _, err := s.Context(ctx, "c"); !errors.Is(err, taskstore.ErrExpired) {
		t.Fatalf("the context: %v", err)
	}
}

// Open checks the task store's schema (the versioning itself is
// internal/pgschema's, tested there): a database without it is refused
// unless Options.Migrate applies it, one newer either way, with a
// *SchemaError naming both versions. OpenPool leaves the caller's pool
// open.
func TestOpenChecksTheSchemaVersion(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	_, err := Open(ctx, dsn, Options{})
	var se *SchemaError
	if !errors.As(err, &se) || *se != (SchemaError{Database: 0, Known: SchemaVersion}) || se.Newer() ||
		!strings.HasPrefix(err.Error(), fmt.Sprintf("pgstore: the database's task store schema is version 0, this program needs version %d: ", SchemaVersion)) {
		t.Fatalf("a database without the schema: %v", err)
	}
	pool := open(t, dsn, Options{Migrate: true}).pool
	if v, err := Version(ctx, pool); v != SchemaVersion || err != nil {
		t.Fatalf("version after Options.Migrate: %d %v", v, err)
	}
	s, err := OpenPool(ctx, pool, Options{})
	if err != nil {
		t.Fatalf("a migrated database: %v", err)
	}
	s.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("Close closed the caller's pool: %v", err)
	}
	newer := SchemaVersion + 1
	if _, err := pool.Exec(ctx, "UPDATE a2abind_schema SET version = $1 WHERE component = 'taskstore'", newer); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, Options{Migrate: true}); !errors.As(err, &se) || se.Database != newer || !se.Newer() ||
		!strings.Contains(err.Error(), fmt.Sprintf("task store schema is version %d, newer than version %d", newer, SchemaVersion)) {
		t.Fatalf("a newer schema: %v", err)
	}
	if from, err := Migrate(ctx, pool); from != newer || !errors.As(err, &se) || se.Database != newer {
		t.Fatalf("migrate a newer schema: %d %v", from, err)
	}
}

// A database a release of schema version 1 left, tasks in it, is refused
// without Options.Migrate, naming both versions; migrated, it has
// version 2, its tasks kept with no principal (everyone's), and the index
// of the principals.
func TestAVersion1DatabaseIsMigratedKeepingItsTasks(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	body, err := (&a2a.Task{ID: "old", ContextID: "c1", Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}).AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The schema and a task as version 1 wrote them.
	size := len(body) + len("old") + len("c1") + len("m1")
	if _, err := schema.MigrateTo(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO a2a_tasks (id, context_id, state, phase, created, updated, size, owner, message_ids, task, push)
		VALUES ('old', 'c1', 'TASK_STATE_WORKING', 0, now(), now(), $1, '', '{m1}', $2, NULL)`, size, body); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE a2a_task_totals SET tasks = 1, bytes = $1 WHERE slot = 0`, size); err != nil {
		t.Fatal(err)
	}

	_, err = Open(ctx, dsn, Options{})
	var se *SchemaError
	if !errors.As(err, &se) || se.Database != 1 || se.Known != SchemaVersion || se.Newer() ||
		!strings.Contains(err.Error(), fmt.Sprintf("version 1, this program needs version %d", SchemaVersion)) || !strings.Contains(err.Error(), "Migrate") {
		t.Fatalf("a version 1 database without Migrate: %v", err)
	}
	s := open(t, dsn, Options{Migrate: true})
	if v, err := Version(ctx, pool); v != SchemaVersion || err != nil {
		t.Fatalf("version after the migration: %d %v", v, err)
	}
	got, err := s.Get(ctx, "old")
	if err != nil || got.Principal != "" || !got.HasMessage("m1") || got.Task.Status.State != a2a.TaskStateWorking {
		t.Fatalf("the task kept: %+v %v", got, err)
	}
	if p, err := s.List(ctx, taskstore.Filter{Scoped: true, VisibleTo: "alice"}); err != nil || ids(p) != "old" {
		t.Fatalf("alice's listing: %+v %v", p, err)
	}
	if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: "new", ContextID: "c1"}, Principal: "alice"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.List(ctx, taskstore.Filter{Scoped: true, VisibleTo: "bob"}); ids(p) != "old" {
		t.Fatalf("bob's listing: %s", ids(p))
	}
	var indexed, unscoped bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('a2a_tasks_principal') IS NOT NULL, to_regclass('a2a_tasks_created') IS NOT NULL").
		Scan(&indexed, &unscoped); err != nil || !indexed || unscoped {
		t.Fatalf("the index of the principals (want it): %v; of every principal's tasks (version 3 drops it): %v; %v", indexed, unscoped, err)
	}
	checkTotals(t, s)
}

// ids returns the task ids of a page, in its order.
func ids(p taskstore.Page) string {
	var out []string
	for _, r := range p.Records {
		out = append(out, r.Task.ID)
	}
	return strings.Join(out, ",")
}

// The store's tables are those of the connection's search_path, which a
// DSN may set: two schemas of one database are two stores.
func TestTheDSNChoosesTheSchema(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	admin, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA one; CREATE SCHEMA two"); err != nil {
		t.Fatal(err)
	}
	one := open(t, dsn+"&search_path=one", Options{Migrate: true})
	two := open(t, dsn+"&search_path=two", Options{Migrate: true})
	if _, err := one.Create(ctx, taskstore.Record{Task: a2a.Task{ID: "t1", ContextID: "c1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := two.Get(ctx, "t1"); !errors.Is(err, taskstore.ErrNotFound) {
		t.Fatalf("the other schema's task: %v", err)
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM one.a2a_tasks").Scan(&n); err != nil || n != 1 {
		t.Fatalf("one.a2a_tasks: %d %v", n, err)
	}
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM public.a2abind_schema").Scan(&n); err == nil {
		t.Fatal("a version table in public")
	}
}

// Ids are keys of B-tree indexes: one longer than MaxIDBytes is refused
// with a clear error matching invalid params, and stores nothing.
func TestLongIDsAreRefused(t *testing.T) {
	s := open(t, pgtest.NewSchema(t), Options{Migrate: true})
	long := strings.Repeat("x", MaxIDBytes+1)
	for _, r := range []taskstore.Record{{Task: a2a.Task{ID: long, ContextID: "c"}}, {Task: a2a.Task{ID: "t", ContextID: long}}} {
		_, err := s.Create(ctx, r)
		if !errors.Is(err, ErrIDTooLong) || !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), fmt.Sprint(MaxIDBytes+1, " bytes")) {
			t.Fatalf("an id of %d bytes: %v", MaxIDBytes+1, err)
		}
	}
	if p, err := s.List(ctx, taskstore.Filter{}); err != nil || p.Total != 0 {
		t.Fatalf("refused tasks were kept: %+v %v", p, err)
	}
	// The longest ids fit the indexes, even as random characters that
	// PostgreSQL cannot compress.
	rnd := rand.New(rand.NewPCG(1, 2))
	random := func() string {
		b := make([]byte, MaxIDBytes)
		for i := range b {
			b[i] = byte(' ' + rnd.IntN(95))
		}
		return string(b)
	}
	if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: random(), ContextID: random()}}); err != nil {
		t.Fatalf("ids of %d bytes: %v", MaxIDBytes, err)
	}
	if _, err := s.Get(ctx, long); !errors.Is(err, taskstore.ErrNotFound) {
		t.Fatalf("get of a long id: %v", err)
	}
	checkTotals(t, s)
}

// Creates at the bound from two stores at once each evict a finished task
// of their own (FOR UPDATE SKIP LOCKED), none refused while finished
// tasks are left, and the store stays at its bound.
func TestConcurrentCreatesAtTheBoundEvictOneEach(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	const bound, creates = 20, 16
	a, b := open(t, dsn, Options{Migrate: true, MaxTasks: bound}), open(t, dsn, Options{Migrate: true, MaxTasks: bound})
	for i := range bound {
		if _, err := a.Create(ctx, taskstore.Record{Task: a2a.Task{ID: fmt.Sprint("done", i), ContextID: "c",
			Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted}}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range creates {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if _, err := s.Create(ctx, taskstore.Record{Task: a2a.Task{ID: fmt.Sprint("new", i), ContextID: "c",
				Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}}}); err != nil {
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	p, err := a.List(ctx, taskstore.Filter{PageSize: 100})
	if err != nil || p.Total != bound {
		t.Fatalf("%d tasks kept, bound %d: %v", p.Total, bound, err)
	}
	p, _ = a.List(ctx, taskstore.Filter{State: a2a.TaskStateWorking, PageSize: 100})
	if p.Total != creates {
		t.Fatalf("%d new tasks kept of %d", p.Total, creates)
	}
	checkTotals(t, a)
}

// The statements that read tasks by phase use the index of the waiting
// and finished tasks (version 3 made it partial): eviction, the sweep.
func TestPhaseStatementsUseThePartialIndex(t *testing.T) {
	s := open(t, pgtest.NewSchema(t), Options{Migrate: true})
	// Enough rows that a sequential scan is not the cheaper plan.
	if _, err := s.pool.Exec(ctx, `INSERT INTO a2a_tasks (`+columns+`)
		SELECT 't' || i, 'c', 'TASK_STATE_WORKING', (i % 3)::smallint, now(), now() + i * interval '1 hour' - interval '10 hours', 1, '', '', '{}', '\x7b7d', NULL
		FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE a2a_tasks"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT id FROM a2a_tasks WHERE phase = 2 AND id <> 'x' ORDER BY updated, id LIMIT 1",
		"SELECT id FROM a2a_tasks WHERE (phase = 1 AND updated < now()) OR (phase = 2 AND updated < now()) ORDER BY updated, id LIMIT 1000",
	} {
		var plan strings.Builder
		rows, err := s.pool.Query(ctx, "EXPLAIN "+q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		rows.Close()
		if !strings.Contains(plan.String(), "a2a_tasks_phase") {
			t.Errorf("%s\nplanned without a2a_tasks_phase:\n%s", q, plan.String())
		}
	}
}
