package main

// The task store of a2a agent: --store URL, --data DIR, $A2A_STORE. A
// DSN is printed redacted (dsn.go).

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
)

// envStore is the environment variable of a2a agent's task store; --store
// and --data take precedence.
const envStore = "A2A_STORE"

// envSecretsKeyFile is the default of --secrets-key-file.
const envSecretsKeyFile = "A2A_SECRETS_KEY_FILE"

// Kinds of task store.
const (
	storeMemory   = "memory"
	storeBolt     = "bolt"
	storePostgres = "postgres"
)

// storeSpec is a task store a2a agent is to open: its URL (raw, a
// PostgreSQL DSN for storePostgres), from "--store", "--data" or
// "$A2A_STORE".
type storeSpec struct {
	kind string
	// path is the bbolt file (storeBolt).
	path string
	dsnRef
}

// storeForms lists the forms of --store, for messages.
const storeForms = "memory, bolt:///ABSOLUTE/PATH, bolt://RELATIVE/PATH, postgres://... or postgresql://..."

// parseStore reads the value of --store or $A2A_STORE (from names which).
// Errors are usage errors (exit 2) naming from; none quotes a password.
func parseStore(from, raw string) (storeSpec, error) {
	s := storeSpec{dsnRef: newDSNRef(from, raw)}
	if raw == storeMemory {
		s.kind = storeMemory
		return s, nil
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return s, fail(2, "%s: %q is not a task store: give %s", from, s.shown, storeForms)
	}
	switch strings.ToLower(scheme) {
	case "bolt":
		p, err := url.PathUnescape(rest)
		switch {
		case err != nil:
			return s, fail(2, "%s %s: the path is not percent-encoded correctly: %v", from, s.shown, err)
		case p == "":
			return s, fail(2, "%s %s: no path: give bolt:///ABSOLUTE/PATH or bolt://RELATIVE/PATH, the bbolt database file", from, s.shown)
		case strings.ContainsAny(rest, "?#"):
			return s, fail(2, "%s %s: a bolt:// URL takes a path only (percent-encode ? and # in it)", from, s.shown)
		}
		s.kind, s.path = storeBolt, p
	case "postgres", "postgresql":
		s.kind = storePostgres
	default:
		return s, fail(2, "%s %s: unknown kind of task store %q: give %s", from, s.shown, scheme, storeForms)
	}
	return s, nil
}

// storeFlags are a2a agent's task store flags.
type storeFlags struct {
	fs             *flag.FlagSet
	store          *string
	migrate        *bool
	secretsKeyFile *string
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	return &storeFlags{fs: fs,
		store: fs.String("store", "", "keep tasks in memory, bolt://PATH (a bbolt file) or postgres://USER@HOST/DB (PostgreSQL, "+
			"the password from "+storePasswordHelp+"; see Task store below) (default: $"+envStore+", else memory)"),
		migrate: fs.Bool("migrate", false, "with a postgres:// store or queue: apply the schema migrations it lacks at start (as a2a db migrate)"),
		secretsKeyFile: fs.String("secrets-key-file", "", "seal push-notification tokens and credentials, and queued messages, at rest in a bolt:// or postgres:// "+
			"store and queue with the AES-256-GCM keys of this file: one 'ID BASE64' line a key, 32 bytes, the first the current one, the others older ones still read "+
			"(docs/guide.md, Secrets at rest) (default: $"+envSecretsKeyFile+", else secrets are stored in clear)"),
	}
}

// keys loads the key ring of --secrets-key-file (else $A2A_SECRETS_KEY_FILE):
// nil when neither is set. A file that cannot be read or holds no valid
// key is exit 1 naming the flag or the variable; one that others may read
// is logged as a warning.
func (f *storeFlags) keys(log *slog.Logger) (*sealed.Ring, error) {
	from, path := "--secrets-key-file", *f.secretsKeyFile
	if path == "" {
		from, path = "$"+envSecretsKeyFile, os.Getenv(envSecretsKeyFile)
	}
	if path == "" {
		return nil, nil
	}
	ring, err := sealed.LoadFile(path, log)
	if err != nil {
		return nil, fail(1, "%s %s: %v", from, path, err)
	}
	return ring, nil
}

// spec returns the store the flags choose: --store, else --data DIR (the
// bbolt file DIR/tasks.db), else $A2A_STORE, else memory. --store and
// --data together, and --migrate with neither a postgres:// store nor an
// offline queue in PostgreSQL (pgQueue), are usage errors (exit 2). A
// password in the --store DSN prints a warning on stderr.
func (f *storeFlags) spec(dataDir string, pgQueue bool, stderr io.Writer) (storeSpec, error) {
	var s storeSpec
	var err error
	storeGiven := given(f.fs, "store")
	switch {
	case storeGiven && dataDir != "":
		return s, fail(2, "give one of --store and --data, not both: --data DIR keeps tasks in bolt://DIR/tasks.db (the offline queue's directory is --queue-dir)")
	case storeGiven:
		s, err = parseStore("--store", *f.store)
	case dataDir != "":
		p := filepath.Join(dataDir, "tasks.db")
		s = storeSpec{kind: storeBolt, path: p, dsnRef: newDSNRef("--data", "bolt://"+(&url.URL{Path: p}).EscapedPath())}
	case os.Getenv(envStore) != "":
		s, err = parseStore("$"+envStore, os.Getenv(envStore))
	default:
		s = storeSpec{kind: storeMemory, dsnRef: newDSNRef("", storeMemory)}
	}
	if err != nil {
		return s, err
	}
	if *f.migrate && s.kind != storePostgres && !pgQueue {
		return s, fail(2, "--migrate goes with a postgres:// store (--store or $%s) or offline queue (--queue or $%s), not %s", envStore, envQueue, s.shown)
	}
	if s.from == "--store" && len(s.secrets) > 0 {
		warnPasswordIn(stderr, f.fs.Name(), "the --store DSN", storePasswordHelp)
	}
	return s, nil
}

// open opens the store: nil for memory (the reference agent's default
// store). A migration applied (migrate) is told to migrated. Errors are exit status 2 for a DSN that does not parse and for
// a bolt:// path that is a directory, 1 otherwise (the database
// unreachable, its schema not the one this a2a knows, the file locked);
// each names the flag, and none quotes a password.
func (s storeSpec) open(ctx context.Context, migrate bool, keys *sealed.Ring, migrated func(component string, from, to int)) (taskstore.Store, error) {
	switch s.kind {
	case storeBolt:
		if fi, err := os.Stat(s.path); err == nil && fi.IsDir() {
			return nil, fail(2, "%s %s: %s is a directory: name the database file (%s/tasks.db, say)", s.from, s.shown, s.path, strings.TrimSuffix(s.shown, "/"))
		}
		st, err := taskstore.OpenBolt(s.path, nil, 0, taskstore.SealSecrets(keys))
		if err != nil {
			msg := err.Error()
			if strings.HasSuffix(msg, "timeout") {
				msg += " (another process has the file open: one agent at a time)"
			}
			return nil, fail(1, "%s %s: %s", s.from, s.shown, msg)
		}
		return st, nil
	case storePostgres:
		return s.openPostgres(ctx, migrate, keys, migrated)
	}
	return nil, nil
}

// pgStore is a pgstore.Store on a pool of its own: Close closes both.
type pgStore struct {
	*pgstore.Store
	pool *pgxpool.Pool
}

func (s pgStore) Close() error {
	err := s.Store.Close()
	s.pool.Close()
	return err
}

func (s storeSpec) openPostgres(ctx context.Context, migrate bool, keys *sealed.Ring, migrated func(component string, from, to int)) (taskstore.Store, error) {
	pool, ref, err := s.pgPool(ctx)
	if err != nil {
		return nil, err
	}
	s.dsnRef = ref
	if migrate {
		from, err := pgstore.Migrate(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, s.schemaError(err)
		}
		if from != pgstore.SchemaVersion {
			migrated("taskstore", from, pgstore.SchemaVersion)
		}
	}
	st, err := pgstore.OpenPool(ctx, pool, pgstore.Options{Keys: keys})
	if err != nil {
		pool.Close()
		return nil, s.schemaError(err)
	}
	return pgStore{Store: st, pool: pool}, nil
}
