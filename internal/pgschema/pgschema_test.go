package pgschema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

// versionError is the tests' components' Err.
type versionError struct{ database int }

func (e *versionError) Error() string { return fmt.Sprint("version ", e.database) }

// component is a component named name whose migrations are the SQL
// given, 0001_m.sql, 0002_m.sql, ...
func component(name string, sql ...string) Component {
	files := fstest.MapFS{}
	for i, q := range sql {
		files[fmt.Sprintf("%s/%04d_m.sql", Dir, i+1)] = &fstest.MapFile{Data: []byte(q)}
	}
	return Component{Name: name, Package: "pgtestpkg", What: name + " store", Files: files, Known: len(sql),
		Err: func(v int) error { return &versionError{v} }}
}

// pool connects to dsn, closed when the test ends.
func pool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// tables lists the tables of the connection's schema.
func tables(t *testing.T, db *pgxpool.Pool) []string {
	t.Helper()
	rows, err := db.Query(ctx, "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// wantVersionError checks that err is c's Err of version v.
func wantVersionError(t *testing.T, what string, err error, v int) {
	t.Helper()
	var ve *versionError
	if !errors.As(err, &ve) || ve.database != v {
		t.Fatalf("%s: %v, want the component's error of version %d", what, err, v)
	}
}

// Migrate applies the migrations a database lacks, once and in order,
// records the version, and returns the one it found; MigrateTo stops at
// a version and never goes back. Check refuses every version but Known
// unless it migrates.
func TestMigrateAppliesTheMissingMigrationsOnce(t *testing.T) {
	db := pool(t, pgtest.NewSchema(t))
	// Each migration fails if it runs twice, or before the one before it.
	c := component("alpha", "CREATE TABLE alpha1 (n int)", "CREATE TABLE alpha2 (n int); INSERT INTO alpha1 VALUES (2)",
		"ALTER TABLE alpha2 ADD COLUMN m int")
	if v, err := c.Version(ctx, db); v != 0 || err != nil {
		t.Fatalf("version of an empty database: %d %v", v, err)
	}
	wantVersionError(t, "check of an empty database", c.Check(ctx, db, false), 0)
	if got := tables(t, db); len(got) != 0 {
		t.Fatalf("a check created %v", got)
	}
	if from, err := c.MigrateTo(ctx, db, 1); from != 0 || err != nil {
		t.Fatalf("migrate to 1: %d %v", from, err)
	}
	if got := tables(t, db); !slices.Equal(got, []string{"a2abind_schema", "alpha1"}) {
		t.Fatalf("tables at version 1: %v", got)
	}
	if v, err := c.Version(ctx, db); v != 1 || err != nil {
		t.Fatalf("version after migrating to 1: %d %v", v, err)
	}
	wantVersionError(t, "check of version 1", c.Check(ctx, db, false), 1)
	if from, err := c.Migrate(ctx, db); from != 1 || err != nil {
		t.Fatalf("migrate from 1: %d %v", from, err)
	}
	for _, to := range []int{3, 1, 0} {
		if from, err := c.MigrateTo(ctx, db, to); from != 3 || err != nil {
			t.Fatalf("migrate a current schema to %d: %d %v", to, from, err)
		}
	}
	if err := c.Check(ctx, db, false); err != nil {
		t.Fatalf("check of a current schema: %v", err)
	}
	if err := c.Check(ctx, db, true); err != nil {
		t.Fatalf("check and migrate a current schema: %v", err)
	}
	var n, rows int
	if err := db.QueryRow(ctx, "SELECT (SELECT version FROM a2abind_schema WHERE component = 'alpha'), (SELECT count(*) FROM alpha1)").
		Scan(&n, &rows); err != nil || n != 3 || rows != 1 {
		t.Fatalf("version %d, %d rows of alpha1: %v", n, rows, err)
	}
	for _, to := range []int{-1, 4} {
		if _, err := c.MigrateTo(ctx, db, to); err == nil || !strings.Contains(err.Error(), "the versions are 1 to 3") {
			t.Fatalf("migrate to %d: %v", to, err)
		}
	}
}

// A database whose version is newer than Known is left alone, whether the
// store migrates or checks: Err's error, naming its version.
func TestANewerSchemaIsLeftAlone(t *testing.T) {
	db := pool(t, pgtest.NewSchema(t))
	c := component("alpha", "CREATE TABLE alpha1 (n int)")
	if _, err := c.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "UPDATE a2abind_schema SET version = 5 WHERE component = 'alpha'"); err != nil {
		t.Fatal(err)
	}
	from, err := c.Migrate(ctx, db)
	if from != 5 {
		t.Fatalf("migrate found version %d", from)
	}
	wantVersionError(t, "migrate", err, 5)
	wantVersionError(t, "check and migrate", c.Check(ctx, db, true), 5)
	wantVersionError(t, "check", c.Check(ctx, db, false), 5)
	if v, _ := c.Version(ctx, db); v != 5 {
		t.Fatalf("migrate changed a newer schema to %d", v)
	}
}

// A migration that fails leaves the database as it was: the migrations
// before it in the same call are not applied, no version is recorded.
func TestAFailedMigrationAppliesNothing(t *testing.T) {
	db := pool(t, pgtest.NewSchema(t))
	c := component("alpha", "CREATE TABLE alpha1 (n int)", "CREATE TABLE alpha2 (n no_such_type)")
	_, err := c.Migrate(ctx, db)
	if err == nil || !strings.HasPrefix(err.Error(), "pgtestpkg: migrate: migration 0002_m.sql: ") || !strings.Contains(err.Error(), "no_such_type") {
		t.Fatalf("migrate: %v", err)
	}
	if got := tables(t, db); len(got) != 0 {
		t.Fatalf("a failed migration left %v", got)
	}
	if v, err := c.Version(ctx, db); v != 0 || err != nil {
		t.Fatalf("version after a failed migration: %d %v", v, err)
	}
}

// Instances of two components starting together, each migrating, take
// turns under the one lock: each component's migrations are applied once,
// each has its row, and the row of a third is untouched.
func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	db := pool(t, dsn)
	if _, err := db.Exec(ctx, Table+"; INSERT INTO a2abind_schema (component, version) VALUES ('other', 7)"); err != nil {
		t.Fatal(err)
	}
	// Both components' first migrations create one table and add a row to
	// it: a row a migration applied.
	cs := []Component{
		component("alpha", "CREATE TABLE IF NOT EXISTS shared (n int); INSERT INTO shared VALUES (1)", "CREATE TABLE alpha2 (n int)"),
		component("beta", "CREATE TABLE IF NOT EXISTS shared (n int); INSERT INTO shared VALUES (2)"),
	}
	const each = 4
	froms := make([][]int, len(cs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range each * len(cs) {
		wg.Go(func() {
			c := i % len(cs)
			p, err := pgxpool.New(ctx, dsn)
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			from, err := cs[c].Migrate(ctx, p)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			froms[c] = append(froms[c], from)
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, c := range cs {
		slices.Sort(froms[i])
		want := slices.Repeat([]int{c.Known}, each)
		want[0] = 0
		if !slices.Equal(froms[i], want) {
			t.Fatalf("%s's migrations found versions %v: want one 0, the others %d", c.Name, froms[i], c.Known)
		}
	}
	rows, err := db.Query(ctx, "SELECT component || '=' || version FROM a2abind_schema ORDER BY component")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(got, []string{"alpha=2", "beta=1", "other=7"}) {
		t.Fatalf("a2abind_schema: %v, %v", got, err)
	}
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM shared").Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d rows of the shared table: %v", n, err)
	}
}

// The migrations are Dir/NNNN_name.sql, numbered from 1 without a gap, the
// last one Known; any other set fails Migrate before it reaches the
// database.
func TestMigrationsAreNumbered(t *testing.T) {
	file := func(sql string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(sql)} }
	c := Component{Package: "pgtestpkg", Known: 2, Files: fstest.MapFS{
		"migrations/0002_second.sql": file("SELECT 2"), "migrations/0001_first.sql": file("SELECT 1"),
	}}
	ms, err := c.migrations()
	if err != nil || len(ms) != 2 || ms[0] != (migration{1, "0001_first.sql", "SELECT 1"}) || ms[1] != (migration{2, "0002_second.sql", "SELECT 2"}) {
		t.Fatalf("migrations: %+v %v", ms, err)
	}
	for _, tc := range []struct {
		files fstest.MapFS
		known int
		want  string
	}{
		{fstest.MapFS{"other/0001_a.sql": file("")}, 1, "pgtestpkg: migrations: "},
		{fstest.MapFS{"migrations/0001.sql": file("")}, 1, "pgtestpkg: migration 0001.sql is not named NNNN_name.sql"},
		{fstest.MapFS{"migrations/one_a.sql": file("")}, 1, "pgtestpkg: migration one_a.sql is not named NNNN_name.sql"},
		{fstest.MapFS{"migrations/0001_a.txt": file("")}, 1, "pgtestpkg: migration 0001_a.txt is not named NNNN_name.sql"},
		{fstest.MapFS{"migrations/0001_a.sql": file(""), "migrations/0003_c.sql": file("")}, 2, "pgtestpkg: migration 0003_c.sql: version 3, want 2"},
		{fstest.MapFS{"migrations/0002_b.sql": file("")}, 1, "pgtestpkg: migration 0002_b.sql: version 2, want 1"},
		{fstest.MapFS{"migrations/0001_a.sql": file("")}, 2, "pgtestpkg: 1 migrations, SchemaVersion is 2"},
	} {
		c := Component{Package: "pgtestpkg", Known: tc.known, Files: tc.files}
		// No database: the files are read first.
		if _, err := c.Migrate(ctx, nil); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.files, err, tc.want)
		}
	}
}

// Message names the store, both versions, and what to do.
func TestMessage(t *testing.T) {
	c := component("alpha", "SELECT 1")
	for _, tc := range []struct {
		database, known int
		want            string
	}{
		{3, 2, "pgtestpkg: the database's alpha store schema is version 3, newer than version 2, the newest this program knows: " +
			"run a release that knows it, or use another database"},
		{1, 2, "pgtestpkg: the database's alpha store schema is version 1, this program needs version 2: " +
			"apply the migrations first (pgtestpkg.Migrate; or pgtestpkg.Options.Migrate to apply them when the store opens)"},
	} {
		if got := c.Message(tc.database, tc.known); got != tc.want {
			t.Errorf("Message(%d, %d) = %q, want %q", tc.database, tc.known, got, tc.want)
		}
	}
}

// Open passes a pool on the DSN's database to the store's open, and
// closes it when open fails; a DSN that does not parse, or a database
// that cannot be reached, is an error of the component's package.
func TestOpen(t *testing.T) {
	c := component("alpha", "SELECT 1")
	dsn := pgtest.NewSchema(t)
	var given *pgxpool.Pool
	s, err := Open(ctx, c, dsn, func(p *pgxpool.Pool) (string, error) { given = p; return "store", p.Ping(ctx) })
	if s != "store" || err != nil {
		t.Fatalf("Open = %q, %v", s, err)
	}
	if err := given.Ping(ctx); err != nil {
		t.Fatalf("the pool of an opened store: %v", err)
	}
	given.Close()
	failed := errors.New("refused")
	if _, err := Open(ctx, c, dsn, func(p *pgxpool.Pool) (string, error) { given = p; return "", failed }); err != failed {
		t.Fatalf("Open = %v, want open's error", err)
	}
	if err := given.Ping(ctx); err == nil || !strings.Contains(err.Error(), "closed pool") {
		t.Fatalf("the pool of a store that failed to open: %v", err)
	}
	if _, err := Open(ctx, c, "postgres://%zz", func(*pgxpool.Pool) (string, error) {
		t.Fatal("open called without a pool")
		return "", nil
	}); err == nil || !strings.HasPrefix(err.Error(), "pgtestpkg: ") {
		t.Fatalf("a DSN that does not parse: %v", err)
	}
	// A store's open checks the schema: with no server there, it fails.
	if _, err := Open(ctx, c, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5", func(p *pgxpool.Pool) (string, error) {
		given = p
		return "", c.Check(ctx, p, false)
	}); err == nil || !strings.HasPrefix(err.Error(), "pgtestpkg: ") {
		t.Fatalf("a DSN of no server: %v", err)
	}
	if err := given.Ping(ctx); err == nil || !strings.Contains(err.Error(), "closed pool") {
		t.Fatalf("the pool of no server: %v", err)
	}
}

// Open's connections plan the stores' statements once (PlanCacheMode),
// unless the DSN chooses plan_cache_mode itself.
func TestOpenSetsThePlanCacheMode(t *testing.T) {
	c := component("alpha", "SELECT 1")
	dsn := pgtest.NewSchema(t)
	sep := "&"
	if !strings.Contains(dsn, "?") {
		sep = "?"
	}
	for _, tc := range []struct{ name, dsn, want string }{
		{"by default", dsn, PlanCacheMode},
		{"as the DSN says", dsn + sep + "plan_cache_mode=force_custom_plan", "force_custom_plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mode string
			if _, err := Open(ctx, c, tc.dsn, func(p *pgxpool.Pool) (string, error) {
				defer p.Close()
				return "", p.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&mode)
			}); err != nil {
				t.Fatal(err)
			}
			if mode != tc.want {
				t.Fatalf("plan_cache_mode %q, want %q", mode, tc.want)
			}
		})
	}
}
