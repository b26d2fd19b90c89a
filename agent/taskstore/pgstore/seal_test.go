package pgstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/storetest"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/internal/sealtest"
	"github.com/a2abind/a2abind/internal/sealtest/sealagent"
)

// The secrets the tests store, each a string found nowhere else.
const (
	secretToken = "tok-3e81d0c4-do-not-store-in-clear"
	secretCreds = "cred-9a27f15b-do-not-store-in-clear"
)

// withSecrets is a task with three push configs: one with a token, one
// with a token and bearer credentials, one with neither.
func withSecrets(id string) taskstore.Record {
	return sealagent.TaskWithSecrets(id, secretToken, secretCreds)
}

// The contract of every store holds for a store sealing the secrets.
func TestSealingPassesTheContract(t *testing.T) {
	keys := sealtest.NewRing(t, "k1")
	storetest.Run(t, func(t *testing.T, c storetest.Config) taskstore.Store {
		o := options(c)
		o.Keys = keys
		return open(t, pgtest.NewSchema(t), o)
	}, storetest.WithCheck(func(t *testing.T, s taskstore.Store) { checkTotals(t, s.(*Store)) }))
}

// A database written with a key ring holds no secret, in no form: not in
// its tables read through SQL, not in pg_dump's dump of it, not in the
// node's files (its tables and write-ahead log, after a CHECKPOINT); the
// store reads them back intact, and so does
// GetTaskPushNotificationConfig through an agent.Server. Written without a
// ring, each of the three holds them (the checks find what they look
// for). The node is the test's own, so that no other test's rows are in
// its files.
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
		r := withSecrets("t1")
		if _, err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := taskstore.SetPushDelivery(ctx, s, "t1", taskstore.PushDelivery{ConfigID: "cfg-2", State: "failing", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := taskstore.ReplaceTask(ctx, s, a2a.Task{ID: "t1", ContextID: "ctx-t1", Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted}}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx, "t1"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, r.PushConfigs) {
			t.Fatalf("%s: read back %v %+v, want %+v", name, err, got.PushConfigs, r.PushConfigs)
		}
		sealagent.ServeTask(t, s, secretToken, secretCreds)

		for what, dump := range sealtest.PGDumps(t, s.pool, dsn, node.Dir(), "a2a_tasks", "SELECT task, push FROM a2a_tasks") {
			if !sealing {
				sealtest.AssertPresent(t, name+": "+what, dump, secretToken, secretCreds)
				continue
			}
			sealtest.AssertAbsent(t, name+": "+what, dump, secretToken, secretCreds)
			if sealtest.Find(dump, "hooks.example/two") == "" {
				t.Fatalf("%s: %s do not hold the configs' URLs: not the store's data?", name, what)
			}
		}
	}
}

// storedPush reads the stored push value of a task.
func storedPush(t *testing.T, s *Store, id string) pushRecord {
	t.Helper()
	var b []byte
	if err := s.pool.QueryRow(ctx, "SELECT push FROM a2a_tasks WHERE id = $1", id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	p, err := decodePush(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sealedWith returns the ids of the keys a task's push secrets are sealed
// with ("-" for a config with none; "" when none is sealed).
func sealedWith(t *testing.T, s *Store, id string) string {
	t.Helper()
	var ids []string
	for _, v := range storedPush(t, s, id).Secrets {
		if v == nil {
			ids = append(ids, "-")
			continue
		}
		k, err := sealed.KeyID(v)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, k)
	}
	return strings.Join(ids, ",")
}

// Rotation: rows sealed with k1 open while k1 is in the ring; a write
// seals them again with the current key k2, Reseal seals the rest, after
// which k1 may go. Rows written in clear are read with a ring and sealed
// on their next write; a store without a ring refuses sealed rows.
func TestRotation(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	k1, k2 := sealtest.NewKey(t, "k1"), sealtest.NewKey(t, "k2")
	plain := open(t, dsn, Options{Migrate: true})
	if _, err := plain.Create(ctx, withSecrets("clear")); err != nil {
		t.Fatal(err)
	}
	s1 := open(t, dsn, Options{Keys: sealtest.RingOf(t, k1)})
	if got, err := s1.Get(ctx, "clear"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, withSecrets("clear").PushConfigs) {
		t.Fatalf("a row written in clear, read with a ring: %v %+v", err, got.PushConfigs)
	}
	for _, id := range []string{"t1", "t2"} {
		if _, err := s1.Create(ctx, withSecrets(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := plain.Get(ctx, "t1"); !errors.Is(err, taskstore.ErrNoKeys) {
		t.Fatalf("a sealed row read without a ring: %v", err)
	}
	if got := sealedWith(t, s1, "t1") + " " + sealedWith(t, s1, "clear"); got != "k1,k1,- " {
		t.Fatalf("sealed with %q", got)
	}

	s12 := open(t, dsn, Options{Keys: sealtest.RingOf(t, k2, k1)})
	if got, err := s12.Get(ctx, "t1"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, withSecrets("t1").PushConfigs) {
		t.Fatalf("a row of the old key, read with both: %v %+v", err, got.PushConfigs)
	}
	if _, err := taskstore.SetPushDelivery(ctx, s12, "t1", taskstore.PushDelivery{ConfigID: "cfg-1", State: "delivered", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s12.Update(ctx, "clear", func(r *taskstore.Record) error {
		r.MessageIDs = append(r.MessageIDs, "m2")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := sealedWith(t, s12, "t1") + " " + sealedWith(t, s12, "clear") + " " + sealedWith(t, s12, "t2"); got != "k2,k2,- k2,k2,- k1,k1,-" {
		t.Fatalf("after writes, sealed with %q", got)
	}
	s2 := open(t, dsn, Options{Keys: sealtest.RingOf(t, k2)})
	if _, err := s2.Get(ctx, "t2"); !errors.Is(err, sealed.ErrUnknownKey) {
		t.Fatalf("a row of k1 without k1: %v", err)
	}
	before, _ := s12.Get(ctx, "t2")
	if n, err := s12.Reseal(ctx); n != 1 || err != nil {
		t.Fatalf("Reseal: %d %v, want the one row of k1", n, err)
	}
	if n, err := s12.Reseal(ctx); n != 0 || err != nil {
		t.Fatalf("Reseal again: %d %v", n, err)
	}
	for _, id := range []string{"t1", "t2", "clear"} {
		got, err := s2.Get(ctx, id)
		if err != nil || !sealagent.EqualConfigs(got.PushConfigs, withSecrets(id).PushConfigs) {
			t.Fatalf("%s without k1: %v %+v", id, err, got.PushConfigs)
		}
		if id == "t2" && !got.Updated.Equal(before.Updated) {
			t.Fatalf("Reseal changed Updated: %v, was %v", got.Updated, before.Updated)
		}
	}
	if p, err := s2.List(ctx, taskstore.Filter{}); err != nil || p.Total != 3 {
		t.Fatalf("the listing without k1: %v %+v", err, p)
	}
	checkTotals(t, s2)
}

// Sealed secrets open only where they were sealed: moved to another
// config, or left under a config whose URL was changed in the table (to
// have them sent elsewhere), they do not open.
func TestSealedSecretsAreBoundToTheirConfig(t *testing.T) {
	keys := sealtest.NewRing(t, "k1")
	for _, tc := range []struct {
		name   string
		change func(p *pushRecord)
	}{
		{"swapped between two configs", func(p *pushRecord) { p.Secrets[0], p.Secrets[1] = p.Secrets[1], p.Secrets[0] }},
		{"the URL changed", func(p *pushRecord) { p.Configs[1].URL = "https://attacker.example/" }},
		{"moved to another task", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, pgtest.NewSchema(t), Options{Migrate: true, Keys: keys})
			for _, id := range []string{"t1", "t2"} {
				if _, err := s.Create(ctx, withSecrets(id)); err != nil {
					t.Fatal(err)
				}
			}
			p := storedPush(t, s, "t1")
			if tc.change != nil {
				tc.change(&p)
			} else {
				other := storedPush(t, s, "t2")
				p.Secrets = other.Secrets
			}
			b, err := p.encode()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, "UPDATE a2a_tasks SET push = $2 WHERE id = $1", "t1", b); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, "t1"); !errors.Is(err, sealed.ErrOpen) {
				t.Fatalf("Get: %v", err)
			}
		})
	}
}
