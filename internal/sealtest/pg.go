package sealtest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/internal/pgtest"
)

// PGDumps are the three views of the database of dsn, pool's, on the node
// whose directory is dir, that the PostgreSQL stores' tests scan for
// secrets, by name: PGTables, PGDump and PGNodeFiles. table is a table the
// store writes (each view must show it), raw a query whose every column is
// bytea, read as raw bytes.
func PGDumps(t testing.TB, pool *pgxpool.Pool, dsn, dir, table, raw string) map[string][]byte {
	t.Helper()
	return map[string][]byte{
		"the tables read through SQL": PGTables(t, pool, table, raw),
		"pg_dump":                     PGDump(t, dsn, table),
		"the node's files":            PGNodeFiles(t, pool, dir),
	}
}

// PGTables is every row of every table of the pool's schema, as text
// (bytea as hex), which must include table, and the raw bytes of every
// column of the rows of the query raw (each a bytea, NULL read as none).
func PGTables(t testing.TB, pool *pgxpool.Pool, table, raw string) []byte {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	rows, err := pool.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tables, table) {
		t.Fatalf("tables %v, without %s", tables, table)
	}
	for _, name := range tables {
		rows, err := pool.Query(ctx, "SELECT t::text FROM "+pgx.Identifier{name}.Sanitize()+" t")
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(strings.Join(texts, "\n"))
	}
	rows, err = pool.Query(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		cols := make([][]byte, len(rows.FieldDescriptions()))
		dst := make([]any, len(cols))
		for i := range cols {
			dst[i] = &cols[i]
		}
		if err := rows.Scan(dst...); err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			out.Write(c)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// PGDump runs pg_dump (of the node's version, else the one on PATH) on the
// database of dsn, data only; its dump must name table.
func PGDump(t testing.TB, dsn, table string) []byte {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
	slices.Sort(bins)
	bin := ""
	if len(bins) > 0 {
		bin = bins[len(bins)-1]
	} else if p, err := exec.LookPath("pg_dump"); err == nil {
		bin = p
	} else {
		t.Fatalf("no pg_dump: %s", pgtest.InstallHint)
	}
	cmd := exec.Command(bin, "--data-only", "--no-password", "--dbname="+dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v: %s", err, stderr.String())
	}
	if !bytes.Contains(out, []byte(table)) {
		t.Fatalf("pg_dump dumped no table %s:\n%s", table, out)
	}
	return out
}

// PGNodeFiles has the node of pool write what it holds to its files
// (CHECKPOINT) and returns the bytes of every file of its directory dir.
func PGNodeFiles(t testing.TB, pool *pgxpool.Pool, dir string) []byte {
	t.Helper()
	if _, err := pool.Exec(context.Background(), "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a temporary file gone meanwhile
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		out.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
