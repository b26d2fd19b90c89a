package pginbox

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2abind/a2abind/agent/inbox"
	"github.com/a2abind/a2abind/agent/inbox/inboxtest"
	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/internal/sealtest"
	"github.com/a2abind/a2abind/internal/sealtest/sealagent"
)

// The secrets and the message the tests queue, each a string found
// nowhere else.
const (
	secretToken = "tok-8c5d12e7-do-not-store-in-clear"
	secretCreds = "cred-e60a4b93-do-not-store-in-clear"
	secretText  = "text-2d7b8f41-the-caller-wrote"
)

// The contract of every store holds for a store sealing the payloads, its
// totals in line with its rows.
func TestSealingPassesTheContract(t *testing.T) {
	keys := sealtest.NewRing(t, "k1")
	inboxtest.Run(t, func(t *testing.T, c inboxtest.Config) func() inbox.Store {
		dsn := pgtest.NewSchema(t)
		return func() inbox.Store {
			return open(t, dsn, Options{Migrate: true, Now: c.Now, MaxReplay: c.MaxReplay, Keys: keys})
		}
	}, inboxtest.WithCheck(func(t *testing.T, s inbox.Store) { checkTotals(t, s.(*Store)) }))
}

// A queue written with a key ring holds no secret, in no form, nor the
// queued message: not in its tables read through SQL, not in pg_dump's
// dump of it, not in the node's files (its tables and write-ahead log,
// after a CHECKPOINT); GetTaskPushNotificationConfig through an
// agent.Server returns the secrets intact. Written without a ring, each of
// the three holds them (the checks find what they look for). The node is
// the test's own, so that no other test's rows are in its files.
func TestDatabaseShowsNoSecret(t *testing.T) {
	node := pgtest.Start(t)
	for _, sealing := range []bool{true, false} {
		name := map[bool]string{true: "sealed", false: "in clear"}[sealing]
		dsn := node.NewDatabase(t)
		o := Options{Migrate: true}
		if sealing {
			o.Keys = sealtest.NewRing(t, "k1")
		}
		s := open(t, dsn, o)
		sealagent.Queue(t, s, secretToken, secretCreds, secretText)
		if st, err := s.Stats(ctx); err != nil || st.Messages != 1 {
			t.Fatalf("%s: queued %+v %v", name, st, err)
		}
		for what, dump := range sealtest.PGDumps(t, s.pool, dsn, node.Dir(), "a2a_inbox", "SELECT payload FROM a2a_inbox") {
			if sealing {
				sealtest.AssertAbsent(t, name+": "+what, dump, secretToken, secretCreds, secretText)
			} else {
				sealtest.AssertPresent(t, name+": "+what, dump, secretToken, secretCreds, secretText)
			}
		}
	}
}

// sealedBy says how the payload of seq is kept: "clear", or the id of the
// key that sealed it.
func sealedBy(t *testing.T, s *Store, seq uint64) string {
	t.Helper()
	var payload []byte
	var isSealed bool
	if err := s.pool.QueryRow(ctx, "SELECT payload, sealed FROM a2a_inbox WHERE seq = $1", int64(seq)).Scan(&payload, &isSealed); err != nil {
		t.Fatal(err)
	}
	if !isSealed {
		return "clear"
	}
	id, err := sealed.KeyID(payload)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func enqueue(t *testing.T, s *Store, r inbox.Record) inbox.Record {
	t.Helper()
	got, dup, full, err := s.Enqueue(ctx, r, roomy)
	if err != nil || dup || full != "" {
		t.Fatalf("Enqueue: %v %v %q", err, dup, full)
	}
	return got
}

// Rotation: rows sealed with k1 open while k1 is in the ring; a row
// written again (Untake) is sealed with the current key k2, and opens once
// k1 is gone. Rows written in clear are read with a ring; a store without
// a ring refuses sealed rows with inbox.ErrNoKeys, one lacking their key
// with sealed.ErrUnknownKey, and both remove them all the same.
func TestRotation(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	k1, k2 := sealtest.NewKey(t, "k1"), sealtest.NewKey(t, "k2")
	plain := open(t, dsn, Options{Migrate: true})
	clear := enqueue(t, plain, msg("p1", "clear"))
	s1 := open(t, dsn, Options{Keys: sealtest.RingOf(t, k1)})
	a, b := enqueue(t, s1, msg("p1", "a")), enqueue(t, s1, msg("p1", "b"))
	if got := sealedBy(t, s1, clear.Seq) + " " + sealedBy(t, s1, a.Seq); got != "clear k1" {
		t.Fatalf("stored %s", got)
	}
	if _, err := plain.Next(ctx, 0, 10); !errors.Is(err, inbox.ErrNoKeys) {
		t.Fatalf("sealed rows read without a ring: %v", err)
	}

	s12 := open(t, dsn, Options{Keys: sealtest.RingOf(t, k2, k1)})
	got, err := s12.Next(ctx, 0, 10)
	if err != nil || len(got) != 3 || string(got[0].Payload) != string(msg("p1", "clear").Payload) || string(got[1].Payload) != string(msg("p1", "a").Payload) {
		t.Fatalf("read with both keys: %v %+v", err, got)
	}
	if _, _, err := s12.Take(ctx, []inbox.Taken{{Seq: a.Seq, ReplayKey: "obj-a", Until: inboxtest.T0.Add(2 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := s12.Untake(ctx, []inbox.Record{got[1]}, []string{"obj-a"}); err != nil {
		t.Fatal(err)
	}
	if x, y := sealedBy(t, s12, a.Seq), sealedBy(t, s12, b.Seq); x != "k2" || y != "k1" {
		t.Fatalf("after Untake, sealed with %s and %s", x, y)
	}

	s2 := open(t, dsn, Options{Keys: sealtest.RingOf(t, k2)})
	if r, ok, err := s2.Lookup(ctx, "task-a"); !ok || err != nil || string(r.Payload) != string(msg("p1", "a").Payload) {
		t.Fatalf("the row sealed again, without k1: %v %v", ok, err)
	}
	if _, _, err := s2.Lookup(ctx, "task-b"); !errors.Is(err, sealed.ErrUnknownKey) || !strings.Contains(err.Error(), "seq") {
		t.Fatalf("a row of k1 without k1: %v", err)
	}
	removed, err := s2.Remove(ctx, []uint64{b.Seq})
	if err != nil || len(removed) != 1 || removed[0].Payload != nil || removed[0].TaskID != "task-b" {
		t.Fatalf("Remove of a row it cannot open: %+v %v", removed, err)
	}
	if st, err := s2.Stats(ctx); err != nil || st.Messages != 2 || st.Bytes != int64(len(msg("p1", "clear").Payload)+len(msg("p1", "a").Payload)) {
		t.Fatalf("Stats %+v %v", st, err)
	}
	checkTotals(t, s2)
}

// A sealed payload opens only in its own row: moved to another, it fails
// with sealed.ErrOpen.
func TestASealedPayloadIsBoundToItsRecord(t *testing.T) {
	s := open(t, pgtest.NewSchema(t), Options{Migrate: true, Keys: sealtest.NewRing(t, "k1")})
	a, b := enqueue(t, s, msg("p1", "a")), enqueue(t, s, msg("p2", "b"))
	if _, err := s.pool.Exec(ctx, "UPDATE a2a_inbox SET payload = (SELECT payload FROM a2a_inbox WHERE seq = $1) WHERE seq = $2", int64(a.Seq), int64(b.Seq)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Lookup(ctx, "task-b"); !errors.Is(err, sealed.ErrOpen) {
		t.Fatalf("Lookup: %v", err)
	}
}

// A queue of schema version 1 is migrated with its rows: each keeps its
// size, in clear, and is read and counted as before.
func TestMigrationKeepsTheRowsOfVersion1(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := msg("p1", "old")
	if _, err := schema.MigrateTo(ctx, pool, 1); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO a2a_inbox (seq, peer, message_id, task_id, context_id, payload, enqueued, expires)
			VALUES (nextval('a2a_inbox_seq'), 'p1', 'old', 'task-old', '', $1, now(), now() + interval '1 hour')`, []any{r.Payload}},
		{"UPDATE a2a_inbox_totals SET messages = 1, bytes = $1 WHERE slot = 0", []any{len(r.Payload)}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	s := open(t, dsn, Options{Migrate: true, Keys: sealtest.NewRing(t, "k1")})
	got, ok, err := s.Lookup(ctx, "task-old")
	if !ok || err != nil || !bytes.Equal(got.Payload, r.Payload) {
		t.Fatalf("the row of version 1: %v %v %+v", ok, err, got)
	}
	checkTotals(t, s)
	if _, err := s.Remove(ctx, []uint64{got.Seq}); err != nil {
		t.Fatal(err)
	}
	checkTotals(t, s)
	if st, _ := s.Stats(ctx); st.Messages != 0 || st.Bytes != 0 {
		t.Fatalf("Stats after removing it: %+v", st)
	}
}
