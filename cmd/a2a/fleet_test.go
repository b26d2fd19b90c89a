package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/requester"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
	"github.com/a2abind/a2abind/transport/mqtt/mqtttest"
)

// fleetTrials is how many members TestPoolFailoverFleet kills.
const fleetTrials = 20

// TestPoolFailoverFleet: pool failover with real processes
// (docs/protocol.md §4.6.1). Three a2a agent --pool workers processes
// share one PostgreSQL task store; a2a send asks the pool ("ask ...": the
// member that takes it answers INPUT_REQUIRED), the test kills that member
// (SIGKILL) and starts a new one under a fresh id, and a2a send
// --pool-failover sends the follow-up: its retry profile runs out against
// the dead member, it goes to the pool, and another member completes the
// same task, with its history. Each of the trials, all in one context,
// checks: the follow-up completes on a live member, naming the earlier
// trials' tasks of the context; GetTask shows it COMPLETED with the
// asking member's question in its history; the database holds the task
// once, each message once (history and accepted message ids). At the end
// the database holds exactly one completed task per trial: none lost, none
// served twice.
func TestPoolFailoverFleet(t *testing.T) {
	began := time.Now()
	dsn := pgtest.NewDatabase(t)
	b := mqtttest.StartEmbedded(t)
	env := []string{envStore + "=", "PGPASSWORD="}
	sendEnv := []string{"XDG_STATE_HOME=" + t.TempDir()}

	members := map[string]*process{}
	next := 0
	startMember := func() (string, *process) {
		next++
		id := fmt.Sprintf("member-%d", next)
		p := startEnv(t, env, "agent", "--broker", b.URL(), "--org", "acme", "--unit", "fleet", "--id", id,
			"--pool", "workers", "--store", dsn, "--migrate")
		members[id] = p
		return id, p
	}
	for range 3 {
		startMember()
	}
	for _, p := range members {
		p.waitFor(t, "online")
	}
	send := func(args ...string) result {
		t.Helper()
		return runCLI(t, sendEnv, append([]string{"send", "--broker", b.URL(), "--org", "acme", "--unit", "fleet", "--pool", "workers", "--json"}, args...)...)
	}
	// A short retry profile: the dead member costs two attempts of 500 ms.
	failover := []string{"--pool-failover", "--reply-timeout", "500ms", "--attempts", "2", "--retry-backoff", "50ms"}
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())

	contextID := uuid.NewString()
	var tasks []string
	for trial := range fleetTrials {
		t0 := time.Now()
		asked := send("--context", contextID, fmt.Sprintf("ask trial %d", trial))
		if asked.code != 0 {
			t.Fatalf("trial %d: ask: exit %d\n%s%s", trial, asked.code, asked.stdout, asked.stderr)
		}
		first, waiting := jsonLines(t, asked.stdout)[0], lastLine(t, asked)
		holder := first.Responder
		if waiting.State != "TASK_STATE_INPUT_REQUIRED" || members[holder] == nil {
			t.Fatalf("trial %d: ask: state %s from %q\n%s", trial, waiting.State, holder, asked.stdout)
		}
		killed := members[holder]
		killed.cmd.Process.Kill()
		<-killed.done
		delete(members, holder)
		fresh, freshP := startMember()

		done := send(append(failover, "--task", waiting.TaskID, "--context", contextID, fmt.Sprintf("blue %d", trial))...)
		lines := jsonLines(t, done.stdout)
		last := lines[len(lines)-1]
		by := lines[0].Responder
		if done.code != 0 || last.State != "TASK_STATE_COMPLETED" || last.TaskID != waiting.TaskID || by == holder || members[by] == nil ||
			!strings.Contains(done.stdout, fmt.Sprintf(`"answer received: blue %d"`, trial)) ||
			!strings.Contains(done.stdout, fmt.Sprintf(`" (earlier tasks in this context: %d)"`, trial)) {
			t.Fatalf("trial %d: the follow-up after %s was killed, answered by %q: exit %d\n%s%s\nagent %s:\n%s", trial, holder, by, done.code, done.stdout, done.stderr, holder, killed.output())
		}

		got := send("--get", waiting.TaskID)
		if got.code != 0 || lastLine(t, got).State != "TASK_STATE_COMPLETED" {
			t.Fatalf("trial %d: --get: exit %d\n%s%s", trial, got.code, got.stdout, got.stderr)
		}
		var item struct {
			Task *a2a.Task `json:"task"`
		}
		if err := json.Unmarshal(jsonLines(t, got.stdout)[0].Item, &item); err != nil || item.Task == nil {
			t.Fatalf("trial %d: --get printed %s: %v", trial, got.stdout, err)
		}
		texts := historyTexts(item.Task.History)
		want := []string{fmt.Sprintf("ask trial %d", trial), holder + " asks: which option do you want?", fmt.Sprintf("blue %d", trial)}
		if !isSubsequence(want, texts) {
			t.Fatalf("trial %d: history %q lacks %q in order", trial, texts, want)
		}
		checkStoredOnce(t, db, waiting.TaskID, 2)
		tasks = append(tasks, waiting.TaskID)
		freshP.waitFor(t, "online")
		t.Logf("trial %d: %s killed, %s completed the task, %s started (%v)", trial, holder, by, fresh, time.Since(t0).Round(time.Millisecond))
	}

	var n, completed int
	if err := db.QueryRow(context.Background(), "SELECT count(*), count(*) FILTER (WHERE state = 'TASK_STATE_COMPLETED') FROM a2a_tasks").Scan(&n, &completed); err != nil {
		t.Fatal(err)
	}
	if n != fleetTrials || completed != fleetTrials || len(slices.Compact(slices.Sorted(slices.Values(tasks)))) != fleetTrials {
		t.Fatalf("the store holds %d tasks, %d completed; want %d of %d", n, completed, fleetTrials, fleetTrials)
	}
	t.Logf("%d of %d trials: the follow-up completed on another member, each task stored once; %v in all", fleetTrials, fleetTrials, time.Since(began).Round(time.Millisecond))
}

// historyTexts returns the text of each message of a history.
func historyTexts(history []a2a.Message) []string {
	out := make([]string, 0, len(history))
	for _, m := range history {
		var parts []string
		for _, p := range m.Parts {
			if tx, ok := p.Content.(a2a.PartText); ok {
				parts = append(parts, string(tx))
			}
		}
		out = append(out, strings.Join(parts, ""))
	}
	return out
}

// isSubsequence reports whether want appears in have in order.
func isSubsequence(want, have []string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && h == want[i] {
			i++
		}
	}
	return i == len(want)
}

// checkStoredOnce reads task id from the pgstore tables: one row, its
// accepted message ids (the requester's messages) numbering accepted and
// all different, and no message twice in its history.
func checkStoredOnce(t *testing.T, db *pgx.Conn, id string, accepted int) {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT message_ids, task FROM a2a_tasks WHERE id = $1", id)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ids  []string
		task []byte
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.ids, &x.task)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("task %s: %d rows", id, len(got))
	}
	ids := got[0].ids
	if len(ids) != accepted || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != accepted {
		t.Fatalf("task %s: accepted message ids %q, want %d different", id, ids, accepted)
	}
	task, err := a2a.ParseTaskJSON(got[0].task)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, m := range task.History {
		if slices.Contains(seen, m.MessageID) {
			t.Fatalf("task %s: message %s twice in the history %q", id, m.MessageID, historyTexts(task.History))
		}
		seen = append(seen, m.MessageID)
	}
}

// TestPoolFleetServesAResumedTaskOnce: one follow-up (one messageId)
// reaching two members of a pool that share a PostgreSQL store at the same
// moment, as when a member thought gone was only slow, or a pool retry
// lands on another member while the first is still reading the task. It
// must be served once: the message once in the history and in the
// accepted ids, one turn.
func TestPoolFleetServesAResumedTaskOnce(t *testing.T) {
	const trials = 10
	dsn := pgtest.NewDatabase(t)
	b := mqtttest.StartEmbedded(t)
	env := []string{envStore + "=", "PGPASSWORD="}
	var agents []*process
	for _, id := range []string{"twin-1", "twin-2"} {
		agents = append(agents, startEnv(t, env, "agent", "--broker", b.URL(), "--org", "acme", "--unit", "twins", "--id", id,
			"--pool", "workers", "--store", dsn, "--migrate"))
	}
	for _, p := range agents {
		p.waitFor(t, "online")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func(id string) *a2amqtt.Client {
		c, err := a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: a2amqtt.Connection{Broker: b.URL()}, Org: "acme", Unit: "twins", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	asker := client("asker")
	var twice []string
	for trial := range trials {
		res, err := asker.SendMessage(ctx, requester.TextMessage("ask", "", uuid.NewString()), requester.ToPool("workers"))
		if err != nil || res.Task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("trial %d: %+v %v", trial, res, err)
		}
		follow := requester.TextMessage(fmt.Sprintf("blue %d", trial), res.Task.ID, res.Task.ContextID)
		// Two requesters, each new to the task, send the same message to
		// one member each.
		answers := make([]string, 2)
		var wg sync.WaitGroup
		for k, to := range []string{"twin-1", "twin-2"} {
			c := client(fmt.Sprintf("req-%d-%d", trial, k))
			wg.Go(func() {
				r, err := c.SendMessage(ctx, follow, requester.ToAgent(to))
				if err != nil {
					answers[k] = err.Error()
					return
				}
				answers[k] = to + ": " + string(r.Task.Status.State)
			})
		}
		wg.Wait()
		var ids []string
		var raw []byte
		if err := db.QueryRow(ctx, "SELECT message_ids, task FROM a2a_tasks WHERE id = $1", res.Task.ID).Scan(&ids, &raw); err != nil {
			t.Fatal(err)
		}
		task, err := a2a.ParseTaskJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		served := 0
		for _, text := range historyTexts(task.History) {
			if text == fmt.Sprintf("blue %d", trial) {
				served++
			}
		}
		t.Logf("trial %d: %v; accepted message ids %d, the follow-up %d times in the history", trial, answers, len(ids), served)
		if len(ids) != 2 || served != 1 {
			twice = append(twice, fmt.Sprintf("task %s: accepted %d message ids, the follow-up %d times in the history", res.Task.ID, len(ids), served))
		}
	}
	if len(twice) > 0 {
		t.Fatalf("%d of %d follow-ups served twice:\n%s", len(twice), trials, strings.Join(twice, "\n"))
	}
}
