package pgstore

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// beginSQL starts a write transaction. READ COMMITTED whatever the
// server's default: each statement sees what is committed when it starts,
// and a row lock waited for gives the row as its holder left it
// (PostgreSQL's "Transaction Isolation").
const beginSQL = "BEGIN ISOLATION LEVEL READ COMMITTED"

// pipeTx is a transaction on a connection of the pool that saves round
// trips: BEGIN is sent with its first statement, and the statements whose
// results it does not need, then the change of the totals, with COMMIT,
// each in one pgx.Batch (pgx's "Batch"; the
// extended query protocol's pipelining, PostgreSQL's "Message Flow").
type pipeTx struct {
	conn  *pgxpool.Conn
	begun bool
}

// batch sends BEGIN and sql in one round trip; the caller reads sql's
// result from the batch, then closes it.
func (p *pipeTx) batch(ctx context.Context, sql string, args ...any) (pgx.BatchResults, error) {
	p.begun = true
	b := &pgx.Batch{}
	b.Queue(beginSQL)
	b.Queue(sql, args...)
	br := p.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

// Exec runs a statement in the transaction.
func (p *pipeTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.begun {
		return p.conn.Exec(ctx, sql, args...)
	}
	br, err := p.batch(ctx, sql, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// QueryRow runs a query of one row in the transaction.
func (p *pipeTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if p.begun {
		return p.conn.QueryRow(ctx, sql, args...)
	}
	br, err := p.batch(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br: br, row: br.QueryRow()}
}

// Query runs a query in the transaction; the caller closes the rows.
func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.begun {
		return p.conn.Query(ctx, sql, args...)
	}
	br, err := p.batch(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// batchRows are the rows of a query sent with BEGIN: closing them closes
// the batch, whose error Err then returns.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// statement is a statement and its arguments.
type statement struct {
	sql  string
	args []any
}

// commit runs later, adds tasks and bytes to the totals slot slot, when
// not zero, and commits, in one round trip. A transaction that ran no
// statement and has none for later has nothing to commit.
func (p *pipeTx) commit(ctx context.Context, later []statement, tasks, bytes int64, slot int) error {
	if !p.begun && len(later) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	if !p.begun {
		p.begun = true
		b.Queue(beginSQL)
	}
	counted := tasks == 0 && bytes == 0
	for i, st := range later {
		if !counted && i == len(later)-1 {
			// The change of the totals rides with the last statement, a
			// data-modifying statement of its own in WITH (PostgreSQL's
			// "Data-Modifying Statements in WITH"): one statement less for
			// the server to run.
			n := len(st.args)
			sql := "WITH later AS (" + st.sql + ") UPDATE a2a_task_totals SET tasks = tasks + $" + strconv.Itoa(n+1) +
				", bytes = bytes + $" + strconv.Itoa(n+2) + " WHERE slot = $" + strconv.Itoa(n+3)
			b.Queue(sql, append(st.args[:n:n], tasks, bytes, slot)...)
			counted = true
			continue
		}
		b.Queue(st.sql, st.args...)
	}
	if !counted {
		b.Queue("UPDATE a2a_task_totals SET tasks = tasks + $1, bytes = bytes + $2 WHERE slot = $3", tasks, bytes, slot)
	}
	b.Queue("COMMIT")
	br := p.conn.SendBatch(ctx, b)
	var tag pgconn.CommandTag
	var err error
	for range b.Len() {
		if tag, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	return err
}

// rollback ends the transaction, if begun, without its changes. A
// connection it fails to end is closed by the pool when released
// (pgxpool's Conn.Release).
func (p *pipeTx) rollback(ctx context.Context) {
	if p.begun {
		_, _ = p.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
}

// batchRow is the row of a query sent with BEGIN: reading it closes the
// batch.
type batchRow struct {
	br  pgx.BatchResults
	row pgx.Row
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// errRow is a row that could not be read.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
