package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/taskstore/pgstore"
	"github.com/a2abind/a2abind/cmd/a2a/internal/refagent"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/generated/mqttbind"
	"github.com/a2abind/a2abind/requester"
	a2amqtt "github.com/a2abind/a2abind/transport/mqtt"
)

// NotGivenError says that a story needs something the run was not given
// (story F01: a PostgreSQL database, Config.PG). The story is skipped, not
// failed (Result.Skipped); Reason is what its SKIP line says.
type NotGivenError struct{ Reason string }

func (e *NotGivenError) Error() string { return e.Reason }

// noPG is why story F01 is skipped without Config.PG.
var noPG = &NotGivenError{Reason: "no PostgreSQL given: --pg DSN"}

// fleetProfile is the retry profile of story F01's requester: the member
// that was killed costs two attempts of a second before the follow-up goes
// to the pool (docs/protocol.md §4.4, §4.6.1).
func fleetProfile() mqttbind.RetryProfile {
	p := mqttbind.DefaultRetryProfile()
	p.ReplyFirstTimeout, p.MaxAttempts, p.RetryBackoff = time.Second, 2, []time.Duration{100 * time.Millisecond}
	return p
}

// fleetStore is a pgstore.Store on a pool of its own: Close closes both
// (a refagent closes the store it was given).
type fleetStore struct {
	*pgstore.Store
	pool *pgxpool.Pool
}

func (s fleetStore) Close() error {
	err := s.Store.Close()
	s.pool.Close()
	return err
}

// storyF01 tells an agent fleet on PostgreSQL (docs/protocol.md §4.6.1):
// three members of a pool share a task store (agent/taskstore/pgstore) in
// a schema of the story's own, created and migrated in Config.PG's
// database and dropped at the end. The requester asks the pool; the member
// holding the INPUT_REQUIRED task is killed (its connections dropped, as a
// crash would); the follow-up, with pool failover, exhausts its retry
// profile against the dead member, goes to the pool, and another member
// completes the same task, with its history. The database holds the task
// once, each message once.
func storyF01(ctx context.Context, d *demo) (detail string, err error) {
	if d.pg == "" {
		return "", noPG
	}
	cfg, err := pgxpool.ParseConfig(d.pg)
	if err != nil {
		return "", fmt.Errorf("--pg: %w", err)
	}
	// A message quoting the DSN's password shows xxxxx instead (pgx's
	// own do not quote it).
	if pw := cfg.ConnConfig.Password; pw != "" {
		defer func() {
			if err != nil {
				err = errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
			}
		}()
	}
	admin, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return "", fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(context.Background())
	suffix := make([]byte, 4)
	rand.Read(suffix)
	schema := "a2a_demo_" + hex.EncodeToString(suffix)
	quoted := pgx.Identifier{schema}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+quoted); err != nil {
		return "", fmt.Errorf("creating the schema %s: %w", schema, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, derr := admin.Exec(dctx, "DROP SCHEMA "+quoted+" CASCADE"); derr != nil && err == nil {
			err = fmt.Errorf("dropping the schema %s: %w", schema, derr)
		}
	}()
	fmt.Fprintf(d.out, "   (PostgreSQL: the task store in schema %s, migrated now, dropped at the end)\n", schema)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	open := func() (fleetStore, error) {
		pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
		if err != nil {
			return fleetStore{}, err
		}
		st, err := pgstore.OpenPool(ctx, pool, pgstore.Options{Migrate: true})
		if err != nil {
			pool.Close()
			return fleetStore{}, err
		}
		return fleetStore{Store: st, pool: pool}, nil
	}

	// The members first: a broker that offers no shared subscriptions
	// refuses the first one (and the story is skipped, as story 05).
	ids := []string{"fleet-1", "fleet-2", "fleet-3"}
	members := map[string]*refagent.Agent{}
	var live []string
	defer func() {
		for _, id := range live {
			members[id].Close(context.Background())
		}
	}()
	for _, id := range ids {
		st, err := open()
		if err != nil {
			return "", fmt.Errorf("opening %s's task store: %w", id, err)
		}
		c := d.agentConfig(id, "fleet")
		c.Store = st
		m, err := refagent.Start(ctx, c)
		if err != nil {
			return "", err
		}
		members[id] = m
		live = append(live, id)
	}
	if err := d.sniff.probeShared(ctx); err != nil {
		return "", err
	}
	for _, id := range ids {
		if err := d.sniff.seen(ctx, d.discovery(id), mqttbind.StatusOnline, ""); err != nil {
			return "", err
		}
	}
	client, err := a2amqtt.NewClient(ctx, a2amqtt.ClientConfig{Connection: d.conn, Root: d.root, Org: d.org, Unit: d.unit, ID: "fleet-requester",
		Requester: requester.Config{Logger: d.log, PoolFailover: true, Retry: fleetProfile()}})
	if err != nil {
		return "", err
	}
	defer client.Close(context.Background())

	conv := client.NewConversation(requester.Target{Pool: "fleet"})
	asked, err := conv.Turn(ctx, "ask the fleet")
	if err != nil {
		return "", err
	}
	holder := asked.Responder
	if asked.Task.Status.State != a2a.TaskStateInputRequired || members[holder] == nil {
		return "", fmt.Errorf("the pool answered %s from %q", asked.Task.Status.State, holder)
	}
	members[holder].Kill()
	live = slices.DeleteFunc(live, func(id string) bool { return id == holder })
	if err := d.sniff.seen(ctx, d.discovery(holder), mqttbind.StatusOffline, mqttbind.StatusSourceLWT); err != nil {
		return "", err
	}
	done, err := conv.Resume(ctx, asked.Task.ID, "blue")
	if err != nil {
		return "", fmt.Errorf("the follow-up after %s was killed: %w", holder, err)
	}
	by := done.Responder
	if done.Task.ID != asked.Task.ID || done.Task.Status.State != a2a.TaskStateCompleted || !slices.Contains(live, by) ||
		!strings.Contains(artifactText(done.Task), "answer received: blue") {
		return "", fmt.Errorf("the follow-up after %s was killed: task %s %s from %q", holder, short(done.Task.ID), done.Task.Status.State, by)
	}
	got, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: asked.Task.ID})
	if err != nil {
		return "", fmt.Errorf("GetTask: %w", err)
	}
	if got.Status.State != a2a.TaskStateCompleted || !slices.ContainsFunc(got.History, func(m a2a.Message) bool {
		return strings.Contains(PartsText(m.Parts), holder+" asks")
	}) {
		return "", fmt.Errorf("GetTask: %s, without %s's question in its history", got.Status.State, holder)
	}
	messages, err := storedOnce(ctx, admin, schema, asked.Task.ID)
	if err != nil {
		return "", err
	}
	for _, id := range live {
		members[id].Close(context.Background())
		if err := d.sniff.seen(ctx, d.discovery(id), mqttbind.StatusOffline, ""); err != nil {
			return "", err
		}
	}
	live = nil
	return fmt.Sprintf("%s held task %s (INPUT_REQUIRED) and was killed; the follow-up failed over to the pool and %s completed it; stored once, its %d messages once each",
		holder, short(asked.Task.ID), by, messages), nil
}

// storedOnce checks that the schema's task store holds one task, id, once,
// its two accepted message ids different and no message twice in its
// history, and returns the length of its history.
func storedOnce(ctx context.Context, db *pgx.Conn, schema, id string) (int, error) {
	var tasks int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "a2a_tasks"}.Sanitize()).Scan(&tasks); err != nil {
		return 0, err
	}
	var ids []string
	var raw []byte
	err := db.QueryRow(ctx, "SELECT message_ids, task FROM "+pgx.Identifier{schema, "a2a_tasks"}.Sanitize()+" WHERE id = $1", id).Scan(&ids, &raw)
	if err != nil {
		return 0, fmt.Errorf("reading task %s from the database: %w", short(id), err)
	}
	if tasks != 1 || len(ids) != 2 || ids[0] == ids[1] {
		return 0, fmt.Errorf("the database holds %d tasks, task %s with accepted message ids %q: want one task, two different ids", tasks, short(id), ids)
	}
	task, err := a2a.ParseTaskJSON(raw)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	for _, m := range task.History {
		if seen[m.MessageID] {
			return 0, fmt.Errorf("task %s: message %s twice in its history", short(id), m.MessageID)
		}
		seen[m.MessageID] = true
	}
	return len(task.History), nil
}
