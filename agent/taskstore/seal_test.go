package taskstore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/sealtest"
	"github.com/a2abind/a2abind/internal/sealtest/sealagent"
)

var bg = context.Background()

// The secrets the tests store, each a string found nowhere else.
const (
	secretToken = "tok-7f3a9c2e-do-not-store-in-clear"
	secretCreds = "cred-51b8d604-do-not-store-in-clear"
)

func openBolt(t *testing.T, path string, opts ...taskstore.Option) *taskstore.Bolt {
	t.Helper()
	return openBoltAt(t, path, nil, opts...)
}

func openBoltAt(t *testing.T, path string, now func() time.Time, opts ...taskstore.Option) *taskstore.Bolt {
	t.Helper()
	s, err := taskstore.OpenBolt(path, now, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// withSecrets is a task with three push configs: one with a token, one
// with a token and bearer credentials, one with neither.
func withSecrets(id string) taskstore.Record {
	return sealagent.TaskWithSecrets(id, secretToken, secretCreds)
}

// A Bolt file written with a key ring holds no secret: not the token, not
// the credentials, in no form; the store reads them back intact, and so
// does GetTaskPushNotificationConfig through an agent.Server. Without a
// ring the same file holds them (the check finds what it looks for).
func TestBoltFileShowsNoSecret(t *testing.T) {
	for _, sealing := range []bool{true, false} {
		t.Run(map[bool]string{true: "sealed", false: "in clear"}[sealing], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tasks.db")
			var opts []taskstore.Option
			if sealing {
				opts = append(opts, taskstore.SealSecrets(sealtest.NewRing(t, "k1")))
			}
			s := openBolt(t, path, opts...)
			r := withSecrets("t1")
			if _, err := s.Create(bg, r); err != nil {
				t.Fatal(err)
			}
			if _, err := taskstore.SetPushDelivery(bg, s, "t1", taskstore.PushDelivery{ConfigID: "cfg-2", State: "failing", At: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if err := taskstore.ReplaceTask(bg, s, a2a.Task{ID: "t1", ContextID: "ctx-t1", Status: &a2a.TaskStatus{State: a2a.TaskStateCompleted}}); err != nil {
				t.Fatal(err)
			}
			got, err := s.Get(bg, "t1")
			if err != nil {
				t.Fatal(err)
			}
			if !sealagent.EqualConfigs(got.PushConfigs, r.PushConfigs) {
				t.Fatalf("read back %+v, want %+v", got.PushConfigs, r.PushConfigs)
			}
			id := sealagent.ServeTask(t, s, secretToken, secretCreds)
			dump, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !sealing {
				sealtest.AssertPresent(t, "a file written without a ring", dump, secretToken, secretCreds)
				return
			}
			sealtest.AssertAbsent(t, "the bbolt file", dump, secretToken, secretCreds)
			if !bytes.Contains(dump, []byte("https://hooks.example/two")) || !bytes.Contains(dump, []byte(id)) {
				t.Fatal("the file does not hold the configs' URLs and the task: is this the store's file?")
			}
		})
	}
}

// rawTask reads the stored value of a task from a closed Bolt file.
func rawTask(t *testing.T, path, id string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v []byte
	if err := db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(tx.Bucket([]byte("tasks")).Get([]byte(id)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// setRawTask rewrites the stored value of a task in a closed Bolt file.
func setRawTask(t *testing.T, path, id string, change func(m map[string]any)) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("tasks"))
		var m map[string]any
		if err := json.Unmarshal(b.Get([]byte(id)), &m); err != nil {
			return err
		}
		change(m)
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), v)
	}); err != nil {
		t.Fatal(err)
	}
}

// sealedWith returns the ids of the keys the push secrets of a stored
// value are sealed with ("-" for a config with none).
func sealedWith(t *testing.T, v []byte) string {
	t.Helper()
	var w struct {
		PushSecrets [][]byte `json:"pushSecrets"`
	}
	if err := json.Unmarshal(v, &w); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range w.PushSecrets {
		if s == nil {
			ids = append(ids, "-")
			continue
		}
		id, err := sealed.KeyID(s)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, ",")
}

// Rotation: values sealed with k1 open while k1 is in the ring; a write
// seals them again with the current key k2, after which k1 may go.
func TestBoltRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	k1, k2 := sealtest.NewKey(t, "k1"), sealtest.NewKey(t, "k2")
	r := withSecrets("t1")
	s := openBolt(t, path, taskstore.SealSecrets(sealtest.RingOf(t, k1)))
	for _, id := range []string{"t1", "t2"} {
		rec := withSecrets(id)
		if _, err := s.Create(bg, rec); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if got := sealedWith(t, rawTask(t, path, "t1")); got != "k1,k1,-" {
		t.Fatalf("sealed with %s", got)
	}

	s = openBolt(t, path, taskstore.SealSecrets(sealtest.RingOf(t, k2, k1)))
	if got, err := s.Get(bg, "t1"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, r.PushConfigs) {
		t.Fatalf("a record of the old key, read with both: %v %+v", err, got.PushConfigs)
	}
	// t1 is written (its delivery report), t2 is not.
	if _, err := taskstore.SetPushDelivery(bg, s, "t1", taskstore.PushDelivery{ConfigID: "cfg-1", State: "delivered", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := sealedWith(t, rawTask(t, path, "t1")); got != "k2,k2,-" {
		t.Fatalf("after a write, sealed with %s", got)
	}
	if got := sealedWith(t, rawTask(t, path, "t2")); got != "k1,k1,-" {
		t.Fatalf("a record not written, sealed with %s", got)
	}

	s = openBolt(t, path, taskstore.SealSecrets(sealtest.RingOf(t, k2)))
	if got, err := s.Get(bg, "t1"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, r.PushConfigs) {
		t.Fatalf("the rewritten record without k1: %v %+v", err, got.PushConfigs)
	}
	if _, err := s.Get(bg, "t2"); !errors.Is(err, sealed.ErrUnknownKey) || !strings.Contains(err.Error(), "t2") {
		t.Fatalf("a record of k1 without k1: %v", err)
	}
	if _, err := s.List(bg, taskstore.Filter{}); !errors.Is(err, sealed.ErrUnknownKey) {
		t.Fatalf("a listing holding a record of k1 without k1: %v", err)
	}
	s.Close()

	// Reseal rewrites what is left of k1 (t2 alone), and only that.
	s = openBolt(t, path, taskstore.SealSecrets(sealtest.RingOf(t, k2, k1)))
	before, _ := s.Get(bg, "t2")
	if n, err := s.Reseal(bg); n != 1 || err != nil {
		t.Fatalf("Reseal: %d %v, want the one record of k1", n, err)
	}
	if n, err := s.Reseal(bg); n != 0 || err != nil {
		t.Fatalf("Reseal again: %d %v", n, err)
	}
	s.Close()
	if got := sealedWith(t, rawTask(t, path, "t2")); got != "k2,k2,-" {
		t.Fatalf("after Reseal, sealed with %s", got)
	}
	s = openBolt(t, path, taskstore.SealSecrets(sealtest.RingOf(t, k2)))
	after, err := s.Get(bg, "t2")
	if err != nil || !sealagent.EqualConfigs(after.PushConfigs, withSecrets("t2").PushConfigs) || !after.Updated.Equal(before.Updated) {
		t.Fatalf("the resealed record without k1: %v %+v, updated %v (was %v)", err, after.PushConfigs, after.Updated, before.Updated)
	}
	if _, err := s.List(bg, taskstore.Filter{}); err != nil {
		t.Fatalf("the listing without k1: %v", err)
	}
}

// A file written without a ring is read with one, and each record is
// sealed on its next write; a store without a ring refuses a sealed
// record rather than answer its configs without their secrets.
func TestBoltSealsClearRecordsOnTheirNextWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	r := withSecrets("t1")
	s := openBolt(t, path)
	if _, err := s.Create(bg, r); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if v := rawTask(t, path, "t1"); !bytes.Contains(v, []byte(secretToken)) || sealedWith(t, v) != "" {
		t.Fatalf("written without a ring: %s", v)
	}
	keys := sealtest.NewRing(t, "k1")
	s = openBolt(t, path, taskstore.SealSecrets(keys))
	if got, err := s.Get(bg, "t1"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, r.PushConfigs) {
		t.Fatalf("a clear record read with a ring: %v %+v", err, got.PushConfigs)
	}
	if _, err := s.Update(bg, "t1", func(r *taskstore.Record) error {
		r.MessageIDs = append(r.MessageIDs, "m2")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	v := rawTask(t, path, "t1")
	sealtest.AssertAbsent(t, "the record written again", v, secretToken, secretCreds)
	if got := sealedWith(t, v); got != "k1,k1,-" {
		t.Fatalf("sealed with %s", got)
	}

	// Reseal seals what a file holds in clear, without waiting for writes.
	s = openBolt(t, path, taskstore.SealSecrets(keys))
	if _, err := s.Create(bg, withSecrets("t2")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Reseal(bg); n != 0 || err != nil {
		t.Fatalf("Reseal of a sealed file: %d %v", n, err)
	}
	s.Close()
	clear := openBolt(t, path)
	if _, err := clear.Create(bg, withSecrets("t3")); err != nil {
		t.Fatal(err)
	}
	if n, err := clear.Reseal(bg); n != 0 || err != nil {
		t.Fatalf("Reseal without a ring: %d %v", n, err)
	}
	clear.Close()
	s = openBolt(t, path, taskstore.SealSecrets(keys))
	if n, err := s.Reseal(bg); n != 1 || err != nil {
		t.Fatalf("Reseal of the record written in clear: %d %v", n, err)
	}
	s.Close()
	sealtest.AssertAbsent(t, "the record resealed", rawTask(t, path, "t3"), secretToken, secretCreds)

	s = openBolt(t, path)
	if _, err := s.Get(bg, "t1"); !errors.Is(err, taskstore.ErrNoKeys) {
		t.Fatalf("a sealed record read without a ring: %v", err)
	}
	if _, err := s.Update(bg, "t1", func(*taskstore.Record) error { return nil }); !errors.Is(err, taskstore.ErrNoKeys) {
		t.Fatalf("a sealed record updated without a ring: %v", err)
	}
}

// Sealed secrets open only where they were sealed: moved to another
// config, or left under a config whose URL was changed in the file (to
// have them sent elsewhere), they do not open.
func TestBoltSealedSecretsAreBoundToTheirConfig(t *testing.T) {
	keys := sealtest.NewRing(t, "k1")
	for _, tc := range []struct {
		name   string
		change func(m map[string]any)
	}{
		{"swapped between two configs", func(m map[string]any) {
			s := m["pushSecrets"].([]any)
			s[0], s[1] = s[1], s[0]
		}},
		{"the URL changed", func(m map[string]any) {
			m["pushConfigs"].([]any)[1].(map[string]any)["url"] = "https://attacker.example/"
		}},
		{"the scheme changed", func(m map[string]any) {
			m["pushConfigs"].([]any)[1].(map[string]any)["authentication"] = map[string]any{"scheme": "Basic"}
		}},
		{"a byte of the sealed value changed", func(m map[string]any) {
			s := m["pushSecrets"].([]any)
			b, _ := base64.StdEncoding.DecodeString(s[0].(string))
			b[len(b)-3] ^= 1
			s[0] = base64.StdEncoding.EncodeToString(b)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tasks.db")
			s := openBolt(t, path, taskstore.SealSecrets(keys))
			if _, err := s.Create(bg, withSecrets("t1")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			setRawTask(t, path, "t1", tc.change)
			s = openBolt(t, path, taskstore.SealSecrets(keys))
			if _, err := s.Get(bg, "t1"); !errors.Is(err, sealed.ErrOpen) {
				t.Fatalf("Get: %v", err)
			}
		})
	}
}

// The Memory store keeps nothing at rest: SealSecrets changes nothing.
func TestMemoryIgnoresSealSecrets(t *testing.T) {
	s := taskstore.NewMemory(nil, taskstore.SealSecrets(sealtest.NewRing(t, "k1")))
	r := withSecrets("t1")
	if _, err := s.Create(bg, r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(bg, "t1"); err != nil || !sealagent.EqualConfigs(got.PushConfigs, r.PushConfigs) {
		t.Fatalf("%v %+v", err, got.PushConfigs)
	}
}
