package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
)

// dbUsage is a2a db's synopsis and examples; dbHelp follows it.
const dbUsage = `usage: a2a db (migrate | status) [--dsn DSN] [--json]

example:
  a2a db status --dsn postgres://agent@db.example:5432/a2a
  a2a db migrate --dsn postgres://agent@db.example:5432/a2a
`

// dbHelp describes the subcommands, the DSN and the exit status.
const dbHelp = `
The database holds two components, each with its schema version: the task
store (taskstore: a2a agent --store postgres://...) and the offline queue
(inbox: a2a agent --queue postgres://...). Each subcommand prints a line
per component.

subcommands:
  migrate  apply the schema migrations the database lacks, each component's
           in one transaction (concurrent runs apply them once), and print
           "schema COMPONENT: version N -> M" or "schema COMPONENT: already
           at version N"
  status   print each component's schema version in the database and the
           version this a2a knows, and whether a migration is needed

--json prints one JSON object per component instead of the lines:
  migrate: {"component":C,"database":DSN,"from":N,"to":M,"applied":BOOL}
           (applied false: it was at version M already)
  status:  {"component":C,"database":DSN,"version":N,"known":M,"state":S}
           (S: current, migration_needed or newer)
and an error as {"error":{"token","code","message"}}: status's exit 3 is
{"error":{"token":"migration_needed","code":3,...}} after the components.

--dsn DSN (default $A2A_DSN) is the database a2a agent --store postgres://...
and --queue postgres://... use: a postgres:// or postgresql:// URL, or
keyword/value pairs ("host=db.example dbname=a2a user=agent"); a
search_path parameter (?search_path=SCHEMA) keeps the tables in a schema of
their own. The password is best left out of it (a password in --dsn shows
in ps and stays in the shell's history: a2a warns): $PGPASSWORD, or the
password file ~/.pgpass ($PGPASSFILE), as libpq reads them; the other PG*
variables fill in what the DSN leaves out. A connection attempt gives up
after 10 s unless the DSN sets connect_timeout. a2a never prints a
password: the DSN is shown with xxxxx in its place.

Exit status:
  0  migrate: every schema is current (migrations applied, or none needed);
     status: every schema is current
  3  status: a migration is needed (run a2a db migrate)
  1  an error: the database cannot be reached, or a schema is newer than
     this a2a knows
  2  a usage error
`

// schemaComponent is one a2abind store's schema in a database: its name
// in the version table (a2abind_schema), the version this a2a knows, its
// package's Migrate and Version, and its SchemaError for a version newer
// than known.
type schemaComponent struct {
	name    string
	known   int
	migrate func(context.Context, *pgx.Conn) (int, error)
	version func(context.Context, *pgx.Conn) (int, error)
	newer   func(v int) error
}

// schemaComponents are the components a2a db migrates and reports, in
// order.
var schemaComponents = []schemaComponent{
	{"taskstore", pgstore.SchemaVersion,
		func(ctx context.Context, c *pgx.Conn) (int, error) { return pgstore.Migrate(ctx, c) },
		func(ctx context.Context, c *pgx.Conn) (int, error) { return pgstore.Version(ctx, c) },
		func(v int) error { return &pgstore.SchemaError{Database: v, Known: pgstore.SchemaVersion} }},
	{"inbox", pginbox.SchemaVersion,
		func(ctx context.Context, c *pgx.Conn) (int, error) { return pginbox.Migrate(ctx, c) },
		func(ctx context.Context, c *pgx.Conn) (int, error) { return pginbox.Version(ctx, c) },
		func(v int) error { return &pginbox.SchemaError{Database: v, Known: pginbox.SchemaVersion} }},
}

// exitMigrationNeeded is a2a db status's exit status when the database
// lacks migrations.
const exitMigrationNeeded = 3

// runDB runs a2a db migrate and a2a db status.
func runDB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		io.WriteString(stderr, dbUsage+dbHelp)
		return fail(2, "the subcommand is missing: migrate or status")
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		io.WriteString(stdout, dbUsage+dbHelp)
		return nil
	case "migrate", "status":
	default:
		io.WriteString(stderr, dbUsage+dbHelp)
		return fail(2, "unknown subcommand %q: migrate or status", sub)
	}
	fs := newFlags("db "+sub, "[--dsn DSN] [--json]", "a2a db "+sub+" --dsn postgres://agent@db.example:5432/a2a", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), dbHelp+jsonHelp) }
	dsn := fs.String("dsn", "", "the PostgreSQL database: a postgres:// URL or keyword/value pairs (default $"+envDSN+
		"); the password from "+storePasswordHelp)
	asJSON := fs.Bool("json", false, "print one JSON object per component (see below); errors as {\"error\":{...}}")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	from, flagged := "--dsn", given(fs, "dsn")
	if !flagged {
		*dsn, from = os.Getenv(envDSN), "$"+envDSN
	}
	if *dsn == "" {
		return fail(2, "--dsn is required (or $%s): the PostgreSQL database", envDSN)
	}
	conn, s, err := pgConn(ctx, from, *dsn)
	if flagged && holdsPassword(*dsn) {
		warnPasswordIn(stderr, "a2a db "+sub, "the --dsn DSN", storePasswordHelp)
	}
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	out := &lineOut{w: stdout, json: *asJSON}
	if sub == "migrate" {
		for _, c := range schemaComponents {
			from, err := c.migrate(ctx, conn)
			if err != nil {
				return s.schemaError(err)
			}
			m := dbMigrated{Component: c.name, Database: s.shown, From: from, To: c.known, Applied: from != c.known}
			if from == c.known {
				out.emit(fmt.Sprintf("schema %s: already at version %d", c.name, from), m)
			} else {
				out.emit(fmt.Sprintf("schema %s: version %d -> %d", c.name, from, c.known), m)
			}
		}
		return nil
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "database %s\n", s.shown)
	}
	var newer error
	needed := false
	for _, c := range schemaComponents {
		v, err := c.version(ctx, conn)
		if err != nil {
			return s.schemaError(err)
		}
		state, token := "current", "current"
		switch {
		case v < c.known:
			state, token, needed = "migration needed (a2a db migrate)", "migration_needed", true
		case v > c.known:
			state, token = "newer than this a2a knows", "newer"
			if newer == nil {
				newer = s.schemaError(c.newer(v))
			}
		}
		out.emit(fmt.Sprintf("schema %s: version %d in the database, this a2a knows version %d: %s", c.name, v, c.known, state),
			dbStatus{Component: c.name, Database: s.shown, Version: v, Known: c.known, State: token})
	}
	switch {
	case newer != nil:
		return newer
	case needed:
		return &exitError{code: exitMigrationNeeded, token: "migration_needed"}
	}
	return nil
}

// dbMigrated is the a2a db migrate --json line of a component: the
// database (its password as xxxxx), the version it was at and the one it
// is at now, and whether migrations were applied.
type dbMigrated struct {
	Component string `json:"component"`
	Database  string `json:"database"`
	From      int    `json:"from"`
	To        int    `json:"to"`
	Applied   bool   `json:"applied"`
}

// dbStatus is the a2a db status --json line of a component: its version
// in the database, the one this a2a knows, and the state: current,
// migration_needed or newer.
type dbStatus struct {
	Component string `json:"component"`
	Database  string `json:"database"`
	Version   int    `json:"version"`
	Known     int    `json:"known"`
	State     string `json:"state"`
}
