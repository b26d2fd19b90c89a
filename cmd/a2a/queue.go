package main

// The offline queue of a2a agent in PostgreSQL: --queue postgres://...,
// $A2A_QUEUE (reachability.go chooses it). A DSN is printed redacted
// (dsn.go).

import (
	"context"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/agent/sealed"
)

// envQueue is the environment variable of a2a agent's offline queue in
// PostgreSQL; --queue, --queue-dir and --data take precedence.
const envQueue = "A2A_QUEUE"

// parseQueue reads the value of --queue or $A2A_QUEUE (from names which):
// a postgres:// or postgresql:// URL. Errors are usage errors (exit 2)
// naming from; none quotes a password.
func parseQueue(from, raw string) (dsnRef, error) {
	q := newDSNRef(from, raw)
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || (!strings.EqualFold(scheme, "postgres") && !strings.EqualFold(scheme, "postgresql")) {
		return q, fail(exitUsage, "%s: %q is not a postgres:// or postgresql:// URL (the offline queue in PostgreSQL; a directory is --queue-dir)", from, q.shown)
	}
	return q, nil
}

// pgQueue is a pginbox.Store on a pool of its own: Close closes both. It
// keeps the Store's Notify (an inbox.Notifier).
type pgQueue struct {
	*pginbox.Store
	pool *pgxpool.Pool
}

func (q pgQueue) Close() error {
	err := q.Store.Close()
	q.pool.Close()
	return err
}

// openQueue opens the offline queue in the database of q. A migration
// applied (migrate) is told to migrated. Errors are
// exit status 2 for a DSN that does not parse, 1 otherwise (the database
// unreachable, its schema not the one this a2a knows); each names the
// flag or variable, and none quotes a password.
func openQueue(ctx context.Context, q dsnRef, migrate bool, keys *sealed.Ring, migrated func(component string, from, to int), log *slog.Logger) (pgQueue, error) {
	pool, q, err := q.pgPool(ctx)
	if err != nil {
		return pgQueue{}, err
	}
	if migrate {
		from, err := pginbox.Migrate(ctx, pool)
		if err != nil {
			pool.Close()
			return pgQueue{}, q.schemaError(err)
		}
		if from != pginbox.SchemaVersion {
			migrated("inbox", from, pginbox.SchemaVersion)
		}
	}
	st, err := pginbox.OpenPool(ctx, pool, pginbox.Options{Logger: log, Keys: keys})
	if err != nil {
		pool.Close()
		return pgQueue{}, q.schemaError(err)
	}
	return pgQueue{Store: st, pool: pool}, nil
}

// A pgQueue wakes the agent when another agent sharing it queued records.
var _ inbox.Notifier = pgQueue{}
