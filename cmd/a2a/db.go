package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
)

// dbUsage is a2a db's synopsis and examples; dbHelp follows it.
const dbUsage = `usage: a2a db (migrate | status) [--dsn DSN]

example:
  a2a db status --dsn postgres://agent@db.example:5432/a2a
  a2a db migrate --dsn postgres://agent@db.example:5432/a2a
`

// dbHelp describes the subcommands, the DSN and the exit status.
const dbHelp = `
subcommands:
  migrate  apply the task store's schema migrations the database lacks, in
           one transaction (concurrent runs apply them once), and print
           "schema taskstore: version N -> M" or "schema taskstore: already
           at version N"
  status   print the schema version in the database and the version this
           a2a knows, and whether a migration is needed

--dsn DSN (default $A2A_DSN) is the database a2a agent --store postgres://...
uses: a postgres:// or postgresql:// URL, or keyword/value pairs
("host=db.example dbname=a2a user=agent"); a search_path parameter
(?search_path=SCHEMA) keeps the tables in a schema of their own. The password is best left out of it
(a password in --dsn shows in ps and stays in the shell's history: a2a
warns): $PGPASSWORD, or the password file ~/.pgpass ($PGPASSFILE), as
libpq reads them; the other PG* variables fill in what the DSN leaves out.
A connection attempt gives up after 10 s unless the DSN sets
connect_timeout. a2a never prints a password: the DSN is shown with xxxxx
in its place.

Exit status:
  0  migrate: the schema is current (migrations applied, or none needed);
     status: the schema is current
  3  status: a migration is needed (run a2a db migrate)
  1  an error: the database cannot be reached, or its schema is newer than
     this a2a knows
  2  a usage error
`

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
	fs := newFlags("db "+sub, "[--dsn DSN]", "a2a db "+sub+" --dsn postgres://agent@db.example:5432/a2a", stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() { defaultUsage(); io.WriteString(fs.Output(), dbHelp) }
	dsn := fs.String("dsn", "", "the PostgreSQL database: a postgres:// URL or keyword/value pairs (default $"+envDSN+
		"); the password from "+storePasswordHelp)
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fail(2, "unexpected argument %q", fs.Arg(0))
	}
	from := "--dsn"
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "dsn" })
	if !given {
		*dsn, from = os.Getenv(envDSN), "$"+envDSN
	}
	if *dsn == "" {
		return fail(2, "--dsn is required (or $%s): the PostgreSQL database", envDSN)
	}
	conn, s, err := pgConn(ctx, from, *dsn)
	if given && len(s.secrets) > 0 {
		warnPasswordIn(stderr, "a2a db "+sub, "the --dsn DSN", storePasswordHelp)
	}
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if sub == "migrate" {
		from, err := pgstore.Migrate(ctx, conn)
		if err != nil {
			return s.schemaError(err)
		}
		if from == pgstore.SchemaVersion {
			fmt.Fprintf(stdout, "schema taskstore: already at version %d\n", from)
		} else {
			fmt.Fprintf(stdout, "schema taskstore: version %d -> %d\n", from, pgstore.SchemaVersion)
		}
		return nil
	}
	v, err := pgstore.Version(ctx, conn)
	if err != nil {
		return s.schemaError(err)
	}
	fmt.Fprintf(stdout, "database %s\n", s.shown)
	switch {
	case v == pgstore.SchemaVersion:
		fmt.Fprintf(stdout, "schema taskstore: version %d in the database, this a2a knows version %d: current\n", v, pgstore.SchemaVersion)
		return nil
	case v < pgstore.SchemaVersion:
		fmt.Fprintf(stdout, "schema taskstore: version %d in the database, this a2a knows version %d: migration needed (a2a db migrate)\n", v, pgstore.SchemaVersion)
		return &exitError{code: exitMigrationNeeded}
	}
	fmt.Fprintf(stdout, "schema taskstore: version %d in the database, this a2a knows version %d: newer than this a2a knows\n", v, pgstore.SchemaVersion)
	return s.schemaError(&pgstore.SchemaError{Database: v, Known: pgstore.SchemaVersion})
}
