package main

import (
	"strings"
	"testing"

	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
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

// notRunLine is the demo's line of the profile's stories it does not tell.
const notRunLine = "not run here: 01 (OAuth), 04 (binary artifacts), 06 (ubsp-v1)"

// TestDemoReadsLikeAStory: the transcript's topics are short, explained
// once by a legend at the top; the stories not told are listed; one
// offline line per disconnect; the summary's count is the last line.
func TestDemoReadsLikeAStory(t *testing.T) {
	r := runCLI(t, []string{envPG + "="}, "demo")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	story09 := r.stdout[strings.Index(r.stdout, "== story 09"):strings.Index(r.stdout, "== story H02")]
	cases := []struct {
		name string
		ok   bool
	}{
		{"the legend, once, before the first story", strings.Count(r.stdout, "legend: the transcript writes topics short") == 1 &&
			strings.Index(r.stdout, "legend:") < strings.Index(r.stdout, "== story 02")},
		{"the legend explains reply/ID", strings.Contains(r.stdout, "  reply/ID         $a2a/v1/reply/demo/lab-")},
		{"short topics: no org/unit in the transcript lines", strings.Contains(r.stdout, "  request/echo [corr=") && strings.Contains(r.stdout, "  reply/requester [corr=") &&
			!strings.Contains(r.stdout, "s  request/demo/") && !strings.Contains(r.stdout, "s  reply/demo/")},
		{"the stories not told are listed at the top and in the summary", strings.Count(r.stdout, notRunLine) == 2},
		{"one offline line for the broker-managed disconnect", strings.Count(story09, "discovery/presence [status=offline status-source=broker]") == 1},
		{"the summary's count is the last line", lines[len(lines)-1] == demoPassedNoPG && lines[len(lines)-2] == "  "+notRunLine},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Fatalf("not so:\n%s", r.stdout)
			}
		})
	}
}

// TestDemoSkipsWhatTheBrokerCannotServe: on mosquitto 2.0, which never
// delivers topics beginning with $ to shared subscriptions, story 05's pool
// under $a2a/v1 is a SKIP with its reason, and the run passes.
func TestDemoSkipsWhatTheBrokerCannotServe(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.NameMosquitto)
	r := runCLI(t, []string{envPG + "="}, "demo", "--broker", b.URL(), "--quiet")
	want := "11 passed, 2 skipped (05: the broker does not deliver topics under $a2a/v1 to $share subscriptions; F01: no PostgreSQL given: --pg DSN)"
	if r.code != 0 || !strings.Contains(r.stdout, "  SKIP  05 ") || !strings.HasSuffix(r.stdout, want+"\n") ||
		!strings.Contains(r.stdout, "   SKIP: this broker does not deliver topics under $a2a/v1 to $share subscriptions") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
