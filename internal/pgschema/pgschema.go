/*
Package pgschema versions the PostgreSQL schemas of the stores
agent/taskstore/pgstore and agent/inbox/pginbox. Each store is a
Component: SQL migrations embedded in the program, numbered from 1, each
applied once and in order, and its version recorded in the table
a2abind_schema under the component's name. Stores sharing a database (and
a search_path schema) share that table, a row each.

Migrate applies the migrations a database lacks in one transaction, under
a transaction-level advisory lock (PostgreSQL's pg_advisory_xact_lock)
whose key every component takes: instances starting together, of one
store or of both, take turns, and each migration is applied once. A
database whose version of a component is newer than the program knows is
left alone; the component's Err reports it, as it reports an older one
to Check when the migrations are not to be applied.
*/
package pgschema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Table is the statement creating the version table: a row a component,
// its version and when that version was applied.
const Table = `CREATE TABLE IF NOT EXISTS a2abind_schema (
    component text PRIMARY KEY,
    version   integer NOT NULL,
    applied   timestamptz NOT NULL DEFAULT now()
)`

// lockKey is the key of the advisory lock that serialises the migrations
// of every component across processes.
const lockKey = 0x613261_62696e64 // "a2a" "bind"

// Dir is the directory of a Component's Files that holds its migrations.
const Dir = "migrations"

// DB is what Migrate and Version need of a database: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx have it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Component is the schema of one store.
type Component struct {
	// Name is the component's row in a2abind_schema ("taskstore").
	Name string
	// Package begins the component's errors ("pgstore").
	Package string
	// What names the store in Message ("task store").
	What string
	// Files holds the migrations, Dir/NNNN_name.sql, numbered from 1
	// without a gap (an embed.FS of migrations/*.sql).
	Files fs.FS
	// Known is the version the store reads and writes: the number of its
	// last migration.
	Known int
	// Err is the error of a database whose version of the component is
	// not Known: the store's *SchemaError.
	Err func(database int) error
}

// migration is one versioned SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads the component's files, in order, checking their
// numbers: from 1 without a gap, the last one Known.
func (c Component) migrations() ([]migration, error) {
	entries, err := fs.ReadDir(c.Files, Dir)
	if err != nil {
		return nil, fmt.Errorf("%s: migrations: %w", c.Package, err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("%s: migration %s is not named NNNN_name.sql", c.Package, e.Name())
		}
		if v != len(out)+1 {
			return nil, fmt.Errorf("%s: migration %s: version %d, want %d", c.Package, e.Name(), v, len(out)+1)
		}
		b, err := fs.ReadFile(c.Files, path.Join(Dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("%s: migration %s: %w", c.Package, e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	if len(out) != c.Known {
		return nil, fmt.Errorf("%s: %d migrations, SchemaVersion is %d", c.Package, len(out), c.Known)
	}
	return out, nil
}

// Message is the text of the component's SchemaError: the two versions,
// and what to do.
func (c Component) Message(database, known int) string {
	if database > known {
		return fmt.Sprintf("%s: the database's %s schema is version %d, newer than version %d, the newest this program knows: "+
			"run a release that knows it, or use another database", c.Package, c.What, database, known)
	}
	return fmt.Sprintf("%[1]s: the database's %[2]s schema is version %[3]d, this program needs version %[4]d: "+
		"apply the migrations first (%[1]s.Migrate; or %[1]s.Options.Migrate to apply them when the store opens)",
		c.Package, c.What, database, known)
}

// Version returns the component's version in a database: 0 when none of
// its migrations was applied.
func (c Component) Version(ctx context.Context, db DB) (int, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.Package, err)
	}
	defer tx.Rollback(ctx)
	return c.version(ctx, tx)
}

func (c Component) version(ctx context.Context, tx pgx.Tx) (int, error) {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('a2abind_schema') IS NOT NULL").Scan(&exists); err != nil {
		return 0, fmt.Errorf("%s: schema version: %w", c.Package, err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := tx.QueryRow(ctx, "SELECT version FROM a2abind_schema WHERE component = $1", c.Name).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("%s: schema version: %w", c.Package, err)
	}
	return v, nil
}

// Migrate brings the component's schema in a database to Known (see
// MigrateTo).
func (c Component) Migrate(ctx context.Context, db DB) (from int, err error) {
	return c.MigrateTo(ctx, db, c.Known)
}

// MigrateTo applies the component's migrations up to version to that a
// database lacks, in one transaction under the advisory lock, records the
// version, and returns the version it found. Concurrent calls wait for
// each other: one applies, the others find the schema current. A database
// whose version is newer than Known is left alone, with Err's error; one
// at to or past it is left as it is. The stores migrate to Known; their
// tests migrate to an earlier version to make a database an earlier
// release left.
func (c Component) MigrateTo(ctx context.Context, db DB, to int) (from int, err error) {
	ms, err := c.migrations()
	if err != nil {
		return 0, err
	}
	if to < 0 || to > len(ms) {
		return 0, fmt.Errorf("%s: migrate to version %d: the versions are 1 to %d", c.Package, to, len(ms))
	}
	newer := false
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, Table); err != nil {
			return err
		}
		if from, err = c.version(ctx, tx); err != nil {
			return err
		}
		if from > c.Known {
			newer = true
			return errors.New("newer schema")
		}
		if from >= to {
			return nil
		}
		for _, m := range ms[from:to] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO a2abind_schema (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, applied = now()`, c.Name, to)
		return err
	})
	switch {
	case newer:
		return from, c.Err(from)
	case err != nil:
		return from, fmt.Errorf("%s: migrate: %w", c.Package, err)
	}
	return from, nil
}

// Check is what a store does as it opens: with migrate, Migrate;
// without, Err's error unless the database's version is Known.
func (c Component) Check(ctx context.Context, db DB, migrate bool) error {
	if migrate {
		_, err := c.Migrate(ctx, db)
		return err
	}
	v, err := c.Version(ctx, db)
	if err == nil && v != c.Known {
		err = c.Err(v)
	}
	return err
}

// PlanCacheMode is the plan_cache_mode Open gives its connections unless
// the DSN names one: the stores' statements are prepared once a
// connection and find their rows by index whatever their arguments, so a
// generic plan serves every execution, where PostgreSQL would otherwise
// plan each execution of a statement anew while it judges custom plans
// cheaper (PostgreSQL's "PREPARE" and plan_cache_mode). Planning the
// store's statements cost more than running them.
const PlanCacheMode = "force_generic_plan"

// Open connects a pool to the database dsn names (a postgres:// URL or
// key=value pairs, as pgxpool.ParseConfig reads it) and opens a store on
// it with open; when open fails, the pool is closed. Its connections use
// PlanCacheMode unless the DSN sets plan_cache_mode.
func Open[S any](ctx context.Context, c Component, dsn string, open func(*pgxpool.Pool) (S, error)) (S, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		var none S
		return none, fmt.Errorf("%s: %w", c.Package, err)
	}
	if _, set := cfg.ConnConfig.RuntimeParams["plan_cache_mode"]; !set {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = PlanCacheMode
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		var none S
		return none, fmt.Errorf("%s: %w", c.Package, err)
	}
	s, err := open(pool)
	if err != nil {
		pool.Close()
	}
	return s, err
}
