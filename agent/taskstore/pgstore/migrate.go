package pgstore

import (
	"context"
	"embed"

	"github.com/a2abind/a2abind/internal/pgschema"
)

// SchemaVersion is the version of the database schema this package reads
// and writes: that of its last migration (migrations/NNNN_name.sql).
const SchemaVersion = 3

//go:embed migrations/*.sql
var migrationFiles embed.FS

// schema is the task store's schema, its row in a2abind_schema
// "taskstore".
var schema = pgschema.Component{Name: "taskstore", Package: "pgstore", What: "task store",
	Files: migrationFiles, Known: SchemaVersion,
	Err: func(v int) error { return &SchemaError{Database: v, Known: SchemaVersion} }}

// DB is what Migrate and Version need of a database: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx have it (a Begin method).
type DB = pgschema.DB

// SchemaError reports a database whose task store schema this package
// cannot use as it is: newer than SchemaVersion (written by a later
// release), or older (its migrations not applied).
type SchemaError struct {
	// Database is the database's schema version (0: none).
	Database int
	// Known is SchemaVersion.
	Known int
}

// Error names both versions and what to do.
func (e *SchemaError) Error() string { return schema.Message(e.Database, e.Known) }

// Newer reports whether the database's schema is newer than this package
// knows.
func (e *SchemaError) Newer() bool { return e.Database > e.Known }

// Version returns the task store schema version of a database: 0 when no
// migration was applied.
func Version(ctx context.Context, db DB) (int, error) { return schema.Version(ctx, db) }

// Migrate brings the task store schema of a database to SchemaVersion,
// applying the migrations it lacks in one transaction, and returns the
// version it found. Concurrent calls (several instances starting with
// Options.Migrate, or pginbox.Migrate on the same database) wait for each
// other: one applies, the others find the schema current. A database
// whose schema is newer is left alone, with a *SchemaError.
func Migrate(ctx context.Context, db DB) (from int, err error) { return schema.Migrate(ctx, db) }
