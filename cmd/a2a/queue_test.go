package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/a2abind/a2abind/agent/inbox/pginbox"
	"github.com/a2abind/a2abind/internal/pgtest"
)

// TestQueueUsageErrors: an offline queue that cannot be used stops a2a
// agent with a one-line error naming --queue (or $A2A_QUEUE, or both
// flags), exit 2 for what is wrong on the command line, 1 for a database
// that cannot be reached; the password is never printed.
func TestQueueUsageErrors(t *testing.T) {
	dir := t.TempDir()
	agent := []string{"agent", "--http", "127.0.0.1:0", "--id", "x"}
	sleep := append(agent[:len(agent):len(agent)], "--reachability", "sleep")
	with := func(base []string, args ...string) []string { return append(base[:len(base):len(base)], args...) }
	pg := "postgres://postgres:" + dbSecret + "@127.0.0.1:1/none?sslmode=disable"
	shown := "postgres://postgres:xxxxx@127.0.0.1:1/none?sslmode=disable"
	checkUsageErrors(t, []usageCase{
		{"--queue and --queue-dir", nil, with(sleep, "--queue", pg, "--queue-dir", dir), 2, []string{"give one of --queue and --queue-dir, not both"}},
		{"--queue not a URL", nil, with(sleep, "--queue", dir), 2, []string{"--queue: \"" + dir + "\" is not a postgres:// or postgresql:// URL", "--queue-dir"}},
		{"--queue of another scheme", nil, with(sleep, "--queue", "mysql://a:"+dbSecret+"@db/x"), 2, []string{"--queue: \"mysql://a:xxxxx@db/x\" is not a postgres://"}},
		{"--queue without --reachability", nil, with(agent, "--queue", pg), 2, []string{"--queue goes with --reachability"}},
		{"--queue with a mode that never queues", nil, with(agent, "--reachability", "always_on", "--queue", pg), 2,
			[]string{"--queue goes with --reachability hourly_wake or sleep (always_on never queues)"}},
		{"no queue", nil, sleep, 2, []string{"--reachability sleep queues messages: give --queue-dir DIR or --queue postgres://"}},
		{"$A2A_QUEUE not a URL", []string{envQueue + "=" + dir}, sleep, 2, []string{"$A2A_QUEUE: \"" + dir + "\" is not a postgres://"}},
		{"--queue that does not parse", nil, with(sleep, "--queue", "postgres://u:"+dbSecret+"@%zz/db"), 2, []string{"--queue", "cannot parse"}},
		{"--queue unreachable", nil, with(sleep, "--queue", pg), 1, []string{"--queue " + shown + ": ", "connect"}},
		{"$A2A_QUEUE unreachable", []string{envQueue + "=" + pg}, sleep, 1, []string{"$A2A_QUEUE " + shown + ": ", "connect"}},
		{"--migrate with neither in PostgreSQL", nil, with(sleep, "--queue-dir", dir, "--migrate"), 2,
			[]string{"--migrate goes with a postgres:// store (--store or $A2A_STORE) or offline queue (--queue or $A2A_QUEUE)"}},
	})
}

// TestAgentQueueSchema: a2a agent --queue postgres:// refuses a database
// whose offline queue schema is older than it knows (a new one) without
// --migrate, pointing at a2a db migrate, and one whose schema is newer
// with --migrate or without (exit 1), naming both versions; it never
// comes online. --migrate applies the offline queue's migrations (and
// not the task store's, in memory here). A password in --queue is warned
// about, never printed.
func TestAgentQueueSchema(t *testing.T) {
	plain := pgtest.NewDatabase(t)
	dsn := withPassword(t, plain)
	shown, _ := redactDSN(dsn)
	env := []string{envStore + "=", envQueue + "=", "PGPASSWORD="}
	args := []string{"agent", "--http", "127.0.0.1:0", "--id", "x", "--reachability", "sleep", "--queue", dsn}

	r := runCLI(t, env, args...)
	want := fmt.Sprintf("--queue %s: the database's offline queue schema is version 0, this a2a needs version %d: apply the migrations with a2a db migrate --dsn %s",
		shown, pginbox.SchemaVersion, shown)
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "a2a agent: warning: the --queue DSN holds a password") ||
		strings.Contains(r.stdout, "listening") {
		t.Fatalf("a new database without --migrate: exit %d, want 1 with %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	noSecret(t, r.stdout, r.stderr)

	ag := startOffAgentEnv(t, env, append(args[1:], "--migrate")...)
	out := ag.p.output()
	if !strings.Contains(out, fmt.Sprintf("agent x: schema inbox: version 0 -> %d\n", pginbox.SchemaVersion)) || strings.Contains(out, "schema taskstore") ||
		!strings.Contains(out, "agent is sleep: offline queue "+shown+" (at most 500 messages") {
		t.Fatalf("--migrate:\n%s", out)
	}
	ag.p.cmd.Process.Signal(syscall.SIGTERM)
	<-ag.p.done
	noSecret(t, ag.p.output())

	newer := pginbox.SchemaVersion + 98
	setComponentVersion(t, plain, "inbox", newer)
	want = fmt.Sprintf("--queue %s: the database's offline queue schema is version %d, newer than version %d, the newest this a2a knows", shown, newer, pginbox.SchemaVersion)
	for _, migrate := range []bool{false, true} {
		a := args
		if migrate {
			a = append(args[:len(args):len(args)], "--migrate")
		}
		r := runCLI(t, env, a...)
		if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "listening") {
			t.Fatalf("--migrate %v: exit %d, want 1 with %q\n%s%s", migrate, r.code, want, r.stdout, r.stderr)
		}
		noSecret(t, r.stdout, r.stderr)
	}
}

// TestOfflineFleetSharesAQueueOnPostgres: two a2a agent processes, asleep
// with store-and-forward over HTTP, share an offline queue (--queue) and
// a task store (--store) on one PostgreSQL database. Messages sent to one
// of them are queued; both are woken at once (SIGUSR1): each message is delivered
// once across the two (their "delivered" log lines), as the task it was
// given, and none is lost; GetTask through either agent finds every task
// COMPLETED; the database holds each task once, with its message once,
// and an empty queue.
func TestOfflineFleetSharesAQueueOnPostgres(t *testing.T) {
	const n = 150
	dsn := pgtest.NewDatabase(t)
	env := []string{envStore + "=", envQueue + "=", "PGPASSWORD="}
	member := func(id string) *offAgent {
		return startOffAgentEnv(t, env, "--http", "127.0.0.1:0", "--id", id, "--reachability", "sleep",
			"--store", dsn, "--queue", dsn, "--migrate", "--queue-max-per-peer", "500", "--log-level", "info")
	}
	a, b := member("fleet-a"), member("fleet-b")
	c := offlineClient(t)

	tasks := map[string]string{} // task id → token (none: anonymous)
	byMessage := map[string]string{}
	for i := range n {
		mid := fmt.Sprintf("fleet-%02d", i)
		id := offQueue(t, c, a.endpoint, "", mid, fmt.Sprintf("job %d", i))
		tasks[id], byMessage[mid] = "", id
	}
	// Both at once: each takes batches of 64 (the default) from the
	// queue while the other does.
	for _, m := range []*offAgent{a, b} {
		if err := m.p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []*offAgent{a, b} {
		offWaitOutput(t, m.p, "agent awake\n")
	}
	for id, v := range offWaitEnded(t, c, a.endpoint, tasks) {
		if v.Status.State != "TASK_STATE_COMPLETED" {
			t.Errorf("task %s ended %s through fleet-a: %s", id, v.Status.State, v.reason())
		}
	}
	for id := range tasks {
		v, found, err := offGetTask(c, b.endpoint, "", id)
		if err != nil || !found || v.Status.State != "TASK_STATE_COMPLETED" {
			t.Errorf("task %s through fleet-b: %s, found %v, %v", id, v.Status.State, found, err)
		}
	}
	// Stopped, both agents have written every line they will.
	for _, m := range []*offAgent{a, b} {
		m.p.cmd.Process.Signal(syscall.SIGTERM)
		<-m.p.done
		if code := m.p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("an agent exited %d:\n%s", code, m.p.output())
		}
	}
	byA, byB := offReadDeliveries(a.p.output()), offReadDeliveries(b.p.output())
	all := offReadDeliveries(a.p.output(), b.p.output())
	for mid, id := range byMessage {
		if all.count[mid] != 1 || all.tasks[mid][0] != id {
			t.Errorf("message %s delivered %d times (%v), want once as task %s", mid, all.count[mid], all.tasks[mid], id)
		}
	}
	if len(all.count) != n {
		t.Errorf("%d messages delivered, want %d", len(all.count), n)
	}
	t.Logf("fleet-a delivered %d, fleet-b %d", len(byA.count), len(byB.count))

	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for id := range tasks {
		checkStoredOnce(t, conn, id, 1)
	}
	var queued int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM a2a_inbox").Scan(&queued); err != nil || queued != 0 {
		t.Fatalf("the queue holds %d records (%v), want none", queued, err)
	}
}
