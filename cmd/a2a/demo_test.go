package main

import (
	"strings"
	"testing"

	"github.com/a2abind/a2abind/internal/pgtest"
)

// TestDemoFleetStoryOnPostgres: a2a demo --pg DSN tells story F01, the
// agent fleet, on that database, and every story passes; a password in
// --pg is warned about and never printed.
func TestDemoFleetStoryOnPostgres(t *testing.T) {
	dsn := withPassword(t, pgtest.NewDatabase(t))
	r := runCLI(t, []string{envPG + "=", "PGPASSWORD="}, "demo", "--quiet", "--pg", dsn)
	if r.code != 0 || !strings.Contains(r.stdout, "  pass  F01 ") || !strings.Contains(r.stdout, "all 13 stories passed") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "a2a demo: warning: the --pg DSN holds a password") {
		t.Errorf("no warning of the password in --pg:\n%s", r.stderr)
	}
	noSecret(t, r.stdout, r.stderr)
}

// TestDemoPGUsageErrors: a --pg or $A2A_PG that is not a PostgreSQL DSN
// stops a2a demo before any story (exit 2), naming where it comes from,
// the password never printed.
func TestDemoPGUsageErrors(t *testing.T) {
	checkUsageErrors(t, []usageCase{
		{"--pg empty", nil, []string{"demo", "--pg", ""}, 2, []string{"--pg: give the PostgreSQL database of story F01"}},
		{"--pg that does not parse", nil, []string{"demo", "--pg", "postgres://u:" + dbSecret + "@%zz/db"}, 2, []string{"--pg", "cannot parse"}},
		{"$A2A_PG of another scheme", []string{envPG + "=mysql://a:" + dbSecret + "@db/x"}, []string{"demo"}, 2,
			[]string{"$A2A_PG mysql://a:xxxxx@db/x: not a postgres:// or postgresql:// URL"}},
	})
}
