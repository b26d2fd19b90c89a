package pginbox

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The migrations follow agent/taskstore/pgstore's: embedded SQL files
// numbered from 1, applied in one transaction under an advisory lock, the
// version recorded in the table a2abind_schema under the store's own
// component. Both stores may share a database, each with its row.

// SchemaVersion is the version of the database schema this package reads
// and writes: that of its last migration (migrations/NNNN_name.sql).
const SchemaVersion = 2

// component names the offline queue's row in the version table.
const component = "inbox"

// versionTable records the schema version of each a2abind store in a
// database (the statement pgstore runs too).
const versionTable = `CREATE TABLE IF NOT EXISTS a2abind_schema (
    component text PRIMARY KEY,
    version   integer NOT NULL,
    applied   timestamptz NOT NULL DEFAULT now()
)`

// migrationLock is the key of the transaction-level advisory lock that
// serialises Migrate across processes (PostgreSQL's
// pg_advisory_xact_lock). It is pgstore's key: the two stores' migrations
// take turns too, as both create a2abind_schema.
const migrationLock = 0x613261_62696e64 // "a2a" "bind"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one versioned SQL file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations reads the embedded files, in order: each named NNNN_what.sql,
// numbered from 1 without a gap, the last one SchemaVersion.
func migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("pginbox: migration %s is not named NNNN_name.sql", e.Name())
		}
		if v != len(out)+1 {
			return nil, fmt.Errorf("pginbox: migration %s: version %d, want %d", e.Name(), v, len(out)+1)
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	if len(out) != SchemaVersion {
		return nil, fmt.Errorf("pginbox: %d migrations, SchemaVersion is %d", len(out), SchemaVersion)
	}
	return out, nil
}

// DB is what Migrate and Version need of a database: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx have it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// SchemaError reports a database whose offline queue schema this package
// cannot use as it is: newer than SchemaVersion (written by a later
// release), or older (its migrations not applied).
type SchemaError struct {
	// Database is the database's schema version (0: none).
	Database int
	// Known is SchemaVersion.
	Known int
}

// Error names both versions and what to do.
func (e *SchemaError) Error() string {
	if e.Database > e.Known {
		return fmt.Sprintf("pginbox: the database's offline queue schema is version %d, newer than version %d, the newest this program knows: "+
			"run a release that knows it, or use another database", e.Database, e.Known)
	}
	return fmt.Sprintf("pginbox: the database's offline queue schema is version %d, this program needs version %d: "+
		"apply the migrations first (pginbox.Migrate; or pginbox.Options.Migrate to apply them when the store opens)", e.Database, e.Known)
}

// Newer reports whether the database's schema is newer than this package
// knows.
func (e *SchemaError) Newer() bool { return e.Database > e.Known }

// Version returns the offline queue schema version of a database: 0 when
// no migration was applied.
func Version(ctx context.Context, db DB) (int, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("pginbox: %w", err)
	}
	defer tx.Rollback(ctx)
	return version(ctx, tx)
}

func version(ctx context.Context, tx pgx.Tx) (int, error) {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('a2abind_schema') IS NOT NULL").Scan(&exists); err != nil {
		return 0, fmt.Errorf("pginbox: schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := tx.QueryRow(ctx, "SELECT version FROM a2abind_schema WHERE component = $1", component).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("pginbox: schema version: %w", err)
	}
	return v, nil
}

// Migrate brings the offline queue schema of a database to SchemaVersion,
// applying the migrations it lacks in one transaction, and returns the
// version it found. Concurrent calls (several instances starting with
// Options.Migrate, or pgstore.Migrate on the same database) wait for each
// other: one applies, the others find the schema current. A database whose
// schema is newer is left alone, with a *SchemaError.
func Migrate(ctx context.Context, db DB) (from int, err error) {
	ms, err := migrations()
	if err != nil {
		return 0, err
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, versionTable); err != nil {
			return err
		}
		if from, err = version(ctx, tx); err != nil {
			return err
		}
		if from > SchemaVersion {
			return &SchemaError{Database: from, Known: SchemaVersion}
		}
		for _, m := range ms[from:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if from == SchemaVersion {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO a2abind_schema (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, applied = now()`, component, SchemaVersion)
		return err
	})
	var se *SchemaError
	if errors.As(err, &se) {
		return from, err
	}
	if err != nil {
		return from, fmt.Errorf("pginbox: migrate: %w", err)
	}
	return from, nil
}
