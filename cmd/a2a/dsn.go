package main

// DSNs: the PostgreSQL database of a2a db (--dsn, $A2A_DSN) and of a2a
// agent --store postgres:// and --queue postgres://. A DSN's password is never printed: every DSN
// shown is redacted (its passwords replaced by xxxxx), and every message
// that could quote one is scrubbed of it.

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
)

// envDSN is the environment variable of a2a db's database; --dsn takes
// precedence.
const envDSN = "A2A_DSN"

// pgConnectTimeout bounds a connection attempt to PostgreSQL when the DSN
// sets no connect_timeout (nor $PGCONNECT_TIMEOUT).
const pgConnectTimeout = 10 * time.Second

// storePasswordHelp says how to give a PostgreSQL password without a
// flag (pgx reads them as libpq does: PostgreSQL's documentation,
// "Environment Variables" and "The Password File").
const storePasswordHelp = "$PGPASSWORD or the password file ~/.pgpass ($PGPASSFILE)"

// dsnRef is a DSN, or another store URL, as given (raw), with where it
// comes from (from: the flag or variable, for messages), as it may be
// printed (shown) and the passwords it holds (secrets, scrubbed from
// messages).
type dsnRef struct {
	from, raw, shown string
	secrets          []string
}

func newDSNRef(from, raw string) dsnRef {
	s := dsnRef{from: from, raw: raw}
	s.shown, s.secrets = redactDSN(raw)
	return s
}

// schemaError is the message of a failed open or migration: a schema this
// a2a cannot use (the task store's, pgstore, or the offline queue's,
// pginbox) says what to do.
func (s dsnRef) schemaError(err error) error {
	var what string
	var database, known int
	var se *pgstore.SchemaError
	var qe *pginbox.SchemaError
	switch {
	case errors.As(err, &se):
		what, database, known = "task store", se.Database, se.Known
	case errors.As(err, &qe):
		what, database, known = "offline queue", qe.Database, qe.Known
	default:
		return fail(1, "%s %s: %s", s.from, s.shown, s.scrub(err))
	}
	if database > known {
		return fail(1, "%s %s: the database's %s schema is version %d, newer than version %d, the newest this a2a knows: run a newer a2a, or use another database",
			s.from, s.shown, what, database, known)
	}
	return fail(1, "%s %s: the database's %s schema is version %d, this a2a needs version %d: apply the migrations with a2a db migrate --dsn %s (or start the agent with --migrate)",
		s.from, s.shown, what, database, known, s.shown)
}

// pgPool connects a pool to the database of a DSN (a2a agent's --store
// and --queue): exit status 2 for a DSN that does not parse, 1 for a
// database that cannot be reached; no message quotes a password. The
// returned dsnRef also scrubs the password the DSN's parse found.
func (s dsnRef) pgPool(ctx context.Context) (*pgxpool.Pool, dsnRef, error) {
	cfg, err := pgxpool.ParseConfig(s.raw)
	if err != nil {
		return nil, s, fail(2, "%s: %s", s.from, s.scrub(err))
	}
	s.secrets = append(s.secrets, cfg.ConnConfig.Password)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s, fail(1, "%s %s: %s", s.from, s.shown, s.scrub(err))
	}
	return pool, s, nil
}

// scrub is err's message on one line, with the DSN's passwords replaced
// by xxxxx.
func (s dsnRef) scrub(err error) string { return scrubSecrets(err.Error(), s.secrets) }

// scrubSecrets puts msg on one line and replaces each secret in it, as
// given and percent-encoded, by xxxxx.
func scrubSecrets(msg string, secrets []string) string {
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, ":\n", ": "), "\n", "; ")
	msg = strings.Join(strings.Fields(msg), " ")
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		for _, form := range []string{sec, url.PathEscape(sec), url.QueryEscape(sec)} {
			msg = strings.ReplaceAll(msg, form, "xxxxx")
		}
	}
	return msg
}

// The keywords of a DSN's secrets (libpq's password and sslpassword, the
// passphrase of the client key).
var secretKeys = map[string]bool{"password": true, "sslpassword": true}

// kvSecret matches a secret in a keyword/value DSN: the keyword, then a
// value in single quotes (backslash escapes) or up to the next blank
// (PostgreSQL's documentation, "Keyword/Value Connection Strings").
var kvSecret = regexp.MustCompile(`(^|\s)((?i:(?:ssl)?password))\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s\\]|\\.)*)`)

// kvEscape is a backslash escape in a keyword/value DSN's value.
var kvEscape = regexp.MustCompile(`\\(.)`)

// redactDSN returns a DSN (a URL, postgres://user:password@host/db?...,
// or keyword/value pairs) as it may be printed, its passwords replaced by
// xxxxx: the URL's userinfo password and password and sslpassword
// parameters, and the password and sslpassword keywords. It also returns
// the passwords it found, for scrubbing messages. A malformed DSN is
// redacted on a best-effort basis that may mask more than the password.
func redactDSN(dsn string) (shown string, secrets []string) {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL {
		shown = kvSecret.ReplaceAllStringFunc(dsn, func(m string) string {
			sub := kvSecret.FindStringSubmatch(m)
			v := sub[3]
			if strings.HasPrefix(v, "'") {
				v = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
			}
			if v = kvEscape.ReplaceAllString(v, "$1"); v != "" {
				secrets = append(secrets, v, sub[3])
			}
			return sub[1] + sub[2] + "=xxxxx"
		})
		return shown, secrets
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	// The userinfo ends at the last @ before the query: a password with an
	// unencoded / or @ is masked whole (a host:port/path@ is masked too).
	query := ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i:]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, password, hasPassword := strings.Cut(rest[:at], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":xxxxx")
			secrets = append(secrets, password)
			if p, err := url.PathUnescape(password); err == nil && p != password {
				secrets = append(secrets, p)
			}
		}
		rest = rest[at:]
	}
	b.WriteString(rest)
	if query != "" {
		q, fragment, hasFragment := strings.Cut(query[1:], "#")
		pairs := strings.Split(q, "&")
		for i, pair := range pairs {
			k, v, _ := strings.Cut(pair, "=")
			key, err := url.QueryUnescape(k)
			if err != nil || !secretKeys[strings.ToLower(key)] || v == "" {
				continue
			}
			pairs[i] = k + "=xxxxx"
			secrets = append(secrets, v)
			if p, err := url.QueryUnescape(v); err == nil && p != v {
				secrets = append(secrets, p)
			}
		}
		b.WriteString("?" + strings.Join(pairs, "&"))
		if hasFragment {
			b.WriteString("#" + fragment)
		}
	}
	return b.String(), secrets
}

// parsePG parses a DSN (from names the flag or variable): a postgres://
// or postgresql:// URL, or keyword/value pairs. Errors are usage errors
// (exit 2); none quotes a password.
func parsePG(from, dsn string) (*pgx.ConnConfig, dsnRef, error) {
	s := newDSNRef(from, dsn)
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && scheme != "postgres" && scheme != "postgresql" {
		return nil, s, fail(2, "%s %s: not a postgres:// or postgresql:// URL (nor keyword/value pairs)", from, s.shown)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, s, fail(2, "%s: %s", from, s.scrub(err))
	}
	if cfg.Password != "" { // from the DSN, $PGPASSWORD or a password file
		s.secrets = append(s.secrets, cfg.Password)
	}
	return cfg, s, nil
}

// holdsPassword reports whether a DSN, as given, holds a password (those
// from $PGPASSWORD or a password file do not count).
func holdsPassword(dsn string) bool {
	_, secrets := redactDSN(dsn)
	return len(secrets) > 0
}

// pgConn connects to the database of a2a db's DSN (from names the flag or
// variable). Errors are exit status 2 for a DSN that does not parse, 1
// for a database that cannot be reached; none quotes a password.
func pgConn(ctx context.Context, from, dsn string) (*pgx.Conn, dsnRef, error) {
	cfg, s, err := parsePG(from, dsn)
	if err != nil {
		return nil, s, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = pgConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, s, fail(1, "%s %s: %s", from, s.shown, s.scrub(err))
	}
	return conn, s, nil
}
