package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
	"github.com/a2abind/a2abind/internal/pgtest"
)

// dbSecret is the password the tests put in DSNs: pgtest's nodes trust
// every local connection, so it is never checked, and it must never be
// printed.
const dbSecret = "Sekr3t-pw"

// withPassword returns a pgtest DSN with dbSecret as its password.
func withPassword(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), dbSecret)
	return u.String()
}

// noSecret fails the test when an output holds dbSecret.
func noSecret(t *testing.T, outs ...string) {
	t.Helper()
	for _, o := range outs {
		if strings.Contains(o, dbSecret) {
			t.Fatalf("the password is printed:\n%s", o)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	cases := []struct {
		dsn, shown string
		secrets    []string
	}{
		{"postgres://agent:SEKRET@db/a2a", "postgres://agent:xxxxx@db/a2a", []string{"SEKRET"}},
		{"postgres://agent@db/a2a?sslmode=verify-full", "postgres://agent@db/a2a?sslmode=verify-full", nil},
		{"postgres://", "postgres://", nil},
		{"postgresql://agent:SE%40KRET@db:5432/a2a?sslmode=disable", "postgresql://agent:xxxxx@db:5432/a2a?sslmode=disable", []string{"SE%40KRET", "SE@KRET"}},
		{"postgres://db/a2a?user=agent&password=SEKRET&search_path=a2a", "postgres://db/a2a?user=agent&password=xxxxx&search_path=a2a", []string{"SEKRET"}},
		{"postgres://a:SEKRET@h1:5432,h2:5433/a2a?sslpassword=KEYPASS", "postgres://a:xxxxx@h1:5432,h2:5433/a2a?sslpassword=xxxxx", []string{"SEKRET", "KEYPASS"}},
		{"postgres://a:SEK/RET@db/a2a", "postgres://a:xxxxx@db/a2a", []string{"SEK/RET"}},
		{"postgres://a:SEKRET@%zz/a2a", "postgres://a:xxxxx@%zz/a2a", []string{"SEKRET"}},
		{"host=db password=SEKRET dbname=a2a", "host=db password=xxxxx dbname=a2a", []string{"SEKRET"}},
		{`host=db password = 'SE KR\'ET' dbname=a2a`, "host=db password=xxxxx dbname=a2a", []string{"SE KR'ET"}},
		{"sslpassword=KEYPASS host=db PASSWORD=SEKRET", "sslpassword=xxxxx host=db PASSWORD=xxxxx", []string{"KEYPASS", "SEKRET"}},
		{"host=db user=agent", "host=db user=agent", nil},
	}
	for _, c := range cases {
		shown, secrets := redactDSN(c.dsn)
		if shown != c.shown {
			t.Errorf("redactDSN(%q) shows %q, want %q", c.dsn, shown, c.shown)
		}
		for _, s := range c.secrets {
			if !slices.Contains(secrets, s) {
				t.Errorf("redactDSN(%q): secrets %q lack %q", c.dsn, secrets, s)
			}
		}
		if len(c.secrets) == 0 && len(secrets) > 0 {
			t.Errorf("redactDSN(%q): secrets %q, want none", c.dsn, secrets)
		}
	}
	if got := scrubSecrets("failed:\n\tSE%40KRET and SE@KRET", []string{"SE@KRET"}); got != "failed: xxxxx and xxxxx" {
		t.Errorf("scrubSecrets: %q", got)
	}
}

// usageCase is a command line that must fail: exit code, and what
// stderr must say.
type usageCase struct {
	name string
	env  []string
	args []string
	code int
	want []string
}

// checkUsageErrors runs each case: the exit status is the one wanted, the
// error is one line at the end of stderr naming what is wanted, no panic,
// and no output holds dbSecret. $A2A_STORE, $A2A_QUEUE, $A2A_PG and
// $PGPASSWORD are empty unless a case sets them.
func checkUsageErrors(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, append([]string{envStore + "=", envQueue + "=", envPG + "=", "PGPASSWORD="}, c.env...), c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Fatalf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "a2a "+c.args[0]+": ") || strings.Contains(r.stderr, "panic") {
				t.Fatalf("the error is not one line at the end:\n%s", r.stderr)
			}
			noSecret(t, r.stdout, r.stderr)
		})
	}
}

// TestDBUsageErrors: a2a db without a usable subcommand or DSN is a usage
// error (exit 2) with the usage; a database that cannot be reached is
// exit 1, naming the flag or the variable and the DSN redacted.
func TestDBUsageErrors(t *testing.T) {
	unreachable := "postgres://postgres:" + dbSecret + "@127.0.0.1:1/none?sslmode=disable"
	checkUsageErrors(t, []usageCase{
		{"db without a subcommand", nil, []string{"db"}, 2, []string{"usage: a2a db", "the subcommand is missing"}},
		{"db with an unknown subcommand", nil, []string{"db", "upgrade"}, 2, []string{"usage: a2a db", `unknown subcommand "upgrade"`}},
		{"db without a DSN", []string{envDSN + "="}, []string{"db", "status"}, 2, []string{"--dsn is required (or $A2A_DSN)"}},
		{"db with an argument", nil, []string{"db", "migrate", "--dsn", "postgres://", "now"}, 2, []string{`unexpected argument "now"`}},
		{"db with another scheme", nil, []string{"db", "status", "--dsn", "mysql://a:" + dbSecret + "@db/x"}, 2, []string{"--dsn mysql://a:xxxxx@db/x: not a postgres://"}},
		{"db with a DSN that does not parse", nil, []string{"db", "status", "--dsn", "postgres://u:" + dbSecret + "@%zz/db"}, 2, []string{"--dsn", "cannot parse"}},
		{"db unreachable", nil, []string{"db", "status", "--dsn", unreachable}, 1, []string{"--dsn postgres://postgres:xxxxx@127.0.0.1:1/none", "connect"}},
		{"db unreachable by keywords", nil, []string{"db", "migrate", "--dsn", "host=127.0.0.1 port=1 user=postgres password=" + dbSecret + " sslmode=disable"}, 1, []string{"--dsn host=127.0.0.1 port=1 user=postgres password=xxxxx sslmode=disable", "connect"}},
		{"db unreachable by $A2A_DSN", []string{envDSN + "=" + unreachable}, []string{"db", "migrate"}, 1, []string{"$A2A_DSN postgres://postgres:xxxxx@127.0.0.1:1/none", "connect"}},
	})
}

// TestDBMigrateAndStatus: a2a db status finds a new database lacking the
// migrations of both components, the task store and the offline queue
// (exit 3), a2a db migrate applies them, status is then current (exit 0),
// and migrate again has nothing to do; a database with one component
// current still needs a migration for the other. A schema newer than the
// binary knows is an error (exit 1) naming both versions, for status and
// migrate alike, whichever component it is. The DSN's password is never
// printed, and a password in --dsn is warned about.
func TestDBMigrateAndStatus(t *testing.T) {
	plain := pgtest.NewDatabase(t)
	dsn := withPassword(t, plain)
	shown, _ := redactDSN(dsn)
	env := []string{envDSN + "=", "PGPASSWORD="}
	known, inboxKnown := pgstore.SchemaVersion, pginbox.SchemaVersion
	steps := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string
	}{
		{"status on a new database: migration needed", nil, []string{"status", "--dsn", dsn}, exitMigrationNeeded,
			fmt.Sprintf("database %s\nschema taskstore: version 0 in the database, this a2a knows version %d: migration needed (a2a db migrate)\n"+
				"schema inbox: version 0 in the database, this a2a knows version %d: migration needed (a2a db migrate)\n", shown, known, inboxKnown)},
		{"migrate applies", nil, []string{"migrate", "--dsn", dsn}, 0,
			fmt.Sprintf("schema taskstore: version 0 -> %d\nschema inbox: version 0 -> %d\n", known, inboxKnown)},
		{"status is then current", nil, []string{"status", "--dsn", dsn}, 0,
			fmt.Sprintf("database %s\nschema taskstore: version %d in the database, this a2a knows version %d: current\n"+
				"schema inbox: version %d in the database, this a2a knows version %d: current\n", shown, known, known, inboxKnown, inboxKnown)},
		{"migrate again: already at the version", nil, []string{"migrate", "--dsn", dsn}, 0,
			fmt.Sprintf("schema taskstore: already at version %d\nschema inbox: already at version %d\n", known, inboxKnown)},
		{"status by $A2A_DSN", []string{envDSN + "=" + plain}, []string{"status"}, 0, "current\n"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := runCLI(t, append(env, s.env...), append([]string{"db"}, s.args...)...)
			if r.code != s.code || !strings.HasSuffix(r.stdout, s.stdout) {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, s.code, r.stdout, s.stdout, r.stderr)
			}
			warned := strings.Contains(r.stderr, "a2a db "+s.args[0]+": warning: the --dsn DSN holds a password")
			if given := slices.Contains(s.args, "--dsn"); warned != given {
				t.Fatalf("password in --dsn %v, warned %v:\n%s", given, warned, r.stderr)
			}
			noSecret(t, r.stdout, r.stderr)
		})
	}

	t.Run("one component current, the other not: migration needed", func(t *testing.T) {
		half := pgtest.NewDatabase(t)
		setSchemaVersion(t, half, known) // the task store's alone
		r := runCLI(t, env, "db", "status", "--dsn", half)
		want := fmt.Sprintf("schema taskstore: version %d in the database, this a2a knows version %d: current\n"+
			"schema inbox: version 0 in the database, this a2a knows version %d: migration needed (a2a db migrate)\n", known, known, inboxKnown)
		if r.code != exitMigrationNeeded || !strings.HasSuffix(r.stdout, want) {
			t.Fatalf("exit %d, want %d; stdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, exitMigrationNeeded, r.stdout, want, r.stderr)
		}
	})

	t.Run("a newer schema is refused, naming both versions", func(t *testing.T) {
		for _, c := range []struct{ component, what string }{{"inbox", "offline queue"}, {"taskstore", "task store"}} {
			v := map[string]int{"taskstore": known, "inbox": inboxKnown}[c.component] + 98
			setComponentVersion(t, plain, c.component, v)
			want := fmt.Sprintf("the database's %s schema is version %d, newer than version %d, the newest this a2a knows", c.what, v, v-98)
			for _, args := range [][]string{
				{"db", "status", "--dsn", dsn},
				{"db", "migrate", "--dsn", dsn},
			} {
				r := runCLI(t, env, args...)
				if r.code != 1 || !strings.Contains(r.stderr, want) {
					t.Fatalf("%s %v: exit %d, want 1 with %q\n%s%s", c.component, args, r.code, want, r.stdout, r.stderr)
				}
				if args[1] == "status" && !strings.Contains(r.stdout, fmt.Sprintf("schema %s: version %d in the database, this a2a knows version %d: newer than this a2a knows\n", c.component, v, v-98)) {
					t.Fatalf("status does not report the newer %s schema:\n%s", c.component, r.stdout)
				}
				noSecret(t, r.stdout, r.stderr)
			}
		}
	})
}

// setComponentVersion records version as component's schema version
// ("taskstore", "inbox") in the database of dsn, once that component's
// migrations are applied.
func setComponentVersion(t *testing.T, dsn, component string, version int) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	migrate := pgstore.Migrate
	if component == "inbox" {
		migrate = func(ctx context.Context, db pgstore.DB) (int, error) { return pginbox.Migrate(ctx, db) }
	}
	if _, err := migrate(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), "UPDATE a2abind_schema SET version = $1 WHERE component = $2", version, component); err != nil {
		t.Fatal(err)
	}
}

// setSchemaVersion records version as the task store schema's in the
// database of dsn, whose migrations were applied.
func setSchemaVersion(t *testing.T, dsn string, version int) {
	t.Helper()
	setComponentVersion(t, dsn, "taskstore", version)
}

// passwordNode starts a PostgreSQL node of the test's own that asks for
// a password (scram-sha-256) over TCP, the superuser's being dbSecret. It
// returns a DSN without the password, a password file (PGPASSFILE) that
// holds it, and the name of a password file that does not exist.
func passwordNode(t *testing.T) (dsn, passfile, none string) {
	t.Helper()
	ctx := context.Background()
	node := pgtest.Start(t)
	admin, err := pgx.Connect(ctx, node.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "ALTER ROLE "+pgtest.Superuser+" PASSWORD '"+dbSecret+"'"); err != nil {
		t.Fatal(err)
	}
	hba := filepath.Join(node.Dir(), "data", "pg_hba.conf")
	if err := os.WriteFile(hba, []byte("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	dsn = node.DSN("postgres")
	// The postmaster reloads pg_hba.conf once signalled: wait until a
	// connection without a password is refused.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Password = ""
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			break
		}
		c.Close(ctx)
		if time.Now().After(deadline) {
			t.Fatal("pg_hba.conf was not reloaded")
		}
	}
	host, port, err := net.SplitHostPort(node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	passfile = filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(passfile, []byte(host+":"+port+":*:"+pgtest.Superuser+":"+dbSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none = filepath.Join(t.TempDir(), "none")
	return dsn, passfile, none
}

// TestPostgresPasswordFromTheEnvironment: on a node that asks for a
// password, a2a db connects with a DSN without one through $PGPASSWORD or
// a password file ($PGPASSFILE), as libpq reads them; without a password,
// or with a wrong one, it is refused (exit 1). The password is never
// printed.
func TestPostgresPasswordFromTheEnvironment(t *testing.T) {
	dsn, passfile, none := passwordNode(t)
	cases := []struct {
		name string
		env  []string
		code int
		want string
	}{
		{"no password", []string{"PGPASSWORD=", "PGPASSFILE=" + none}, 1, "--dsn " + dsn + ": "},
		{"a wrong $PGPASSWORD", []string{"PGPASSWORD=wrong", "PGPASSFILE=" + none}, 1, "password authentication failed"},
		{"$PGPASSWORD", []string{"PGPASSWORD=" + dbSecret, "PGPASSFILE=" + none}, exitMigrationNeeded, "migration needed"},
		{"$PGPASSFILE", []string{"PGPASSWORD=", "PGPASSFILE=" + passfile}, exitMigrationNeeded, "migration needed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, append([]string{envDSN + "="}, c.env...), "db", "status", "--dsn", dsn)
			if r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", r.code, c.code, c.want, r.stdout, r.stderr)
			}
			// The password comes from the environment, not the DSN.
			if strings.Contains(r.stderr, "warning") {
				t.Fatalf("warned of a password in --dsn:\n%s", r.stderr)
			}
			noSecret(t, r.stdout, r.stderr)
		})
	}
}
