package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2abind/a2abind/agent"
	"github.com/a2abind/a2abind/agent/sealed"
	"github.com/a2abind/a2abind/agent/taskstore"
	"github.com/a2abind/a2abind/agent/taskstore/storetest"
	"github.com/a2abind/a2abind/generated/a2a"
	"github.com/a2abind/a2abind/internal/pgtest"
	"github.com/a2abind/a2abind/internal/sealtest"
	"github.com/a2abind/a2abind/internal/uuidv4"
	"github.com/a2abind/a2abind/jsonrpc"
)

// The secrets the tests store, each a string found nowhere else.
const (
	secretToken = "tok-3e81d0c4-do-not-store-in-clear"
	secretCreds = "cred-9a27f15b-do-not-store-in-clear"
)

// withSecrets is a task with three push configs: one with a token, one
// with a token and bearer credentials, one with neither.
func withSecrets(id string) taskstore.Record {
	return taskstore.Record{Task: a2a.Task{ID: id, ContextID: "ctx-" + id, Status: &a2a.TaskStatus{State: a2a.TaskStateWorking}},
		PushConfigs: []a2a.TaskPushNotificationConfig{
			{ID: "cfg-1", TaskID: id, URL: "https://hooks.example/one", Token: secretToken},
			{ID: "cfg-2", TaskID: id, URL: "https://hooks.example/two", Token: secretToken + "-2",
				Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: secretCreds}},
			{ID: "cfg-3", TaskID: id, URL: "https://hooks.example/three"},
		}}
}

func equalConfigs(a, b []a2a.TaskPushNotificationConfig) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
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
		if got, err := s.Get(ctx, "t1"); err != nil || !equalConfigs(got.PushConfigs, r.PushConfigs) {
			t.Fatalf("%s: read back %v %+v, want %+v", name, err, got.PushConfigs, r.PushConfigs)
		}
		serveThroughAgent(t, s)

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

// notifier takes the notifications and sends none.
type notifier struct{}

func (notifier) Notify(a2a.TaskPushNotificationConfig, *a2a.StreamResponse) {}
func (notifier) Forget(string, string)                                      {}

// call serves one request through srv as a transport whose card declares
// push notifications would, and decodes its final result into out.
func call(t *testing.T, srv *agent.Server, method a2a.Method, params, out any) {
	t.Helper()
	data, err := jsonrpc.EncodeRequest(json.RawMessage(`1`), method, params)
	if err != nil {
		t.Fatal(err)
	}
	req, _, perr := srv.DecodeRequest(data)
	if perr != nil {
		t.Fatal(perr)
	}
	var final *agent.Reply
	sink := agent.SinkFunc(func(_ context.Context, r agent.Reply) error {
		if r.Final {
			final = &r
		}
		return nil
	})
	yes := true
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := srv.Serve(c, agent.Call{Request: req, Capabilities: &a2a.AgentCapabilities{PushNotifications: &yes}}, sink); err != nil {
		t.Fatal(err)
	}
	if final == nil || final.Err != nil {
		t.Fatalf("%s: %+v", method, final)
	}
	b, err := json.Marshal(final.Result)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
}

// serveThroughAgent has an agent.Server on st create a task whose message
// carries a push config with the secrets, add a second config with
// CreateTaskPushNotificationConfig, and read both back with
// GetTaskPushNotificationConfig, intact.
func serveThroughAgent(t *testing.T, st taskstore.Store) {
	t.Helper()
	srv := agent.NewServer(agent.HandlerFunc(func(ctx context.Context, turn *agent.Turn) error {
		return turn.AskInput(ctx, "more?")
	}), agent.WithStore(st), agent.WithPush(agent.PushConfig{Notifier: notifier{}}))
	t.Cleanup(func() { srv.Close(ctx) })
	id := uuidv4.New()
	first := &a2a.TaskPushNotificationConfig{ID: "via-message", URL: "https://hooks.example/msg", Token: secretToken,
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: secretCreds}}
	var sent a2a.SendMessageResponse
	call(t, srv, a2a.MethodSendMessage, &a2a.SendMessageRequest{
		Message:       &a2a.Message{MessageID: uuidv4.New(), TaskID: id, Role: a2a.RoleUser, Parts: []a2a.Part{{Content: a2a.PartText("hello")}}},
		Configuration: &a2a.SendMessageConfiguration{TaskPushNotificationConfig: first}}, &sent)
	second := &a2a.TaskPushNotificationConfig{ID: "via-create", TaskID: id, URL: "https://hooks.example/create", Token: secretToken + "-c",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Basic", Credentials: secretCreds + "-c"}}
	var made a2a.TaskPushNotificationConfig
	call(t, srv, a2a.MethodCreateTaskPushNotificationConfig, second, &made)
	for _, want := range []*a2a.TaskPushNotificationConfig{first, second} {
		var got a2a.TaskPushNotificationConfig
		call(t, srv, a2a.MethodGetTaskPushNotificationConfig, &a2a.GetTaskPushNotificationConfigRequest{TaskID: id, ID: want.ID}, &got)
		if got.Token != want.Token || got.Authentication == nil || got.Authentication.Credentials != want.Authentication.Credentials ||
			got.Authentication.Scheme != want.Authentication.Scheme || got.URL != want.URL {
			t.Fatalf("GetTaskPushNotificationConfig %s: %+v (authentication %+v), want %+v", want.ID, got, got.Authentication, want)
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
	if got, err := s1.Get(ctx, "clear"); err != nil || !equalConfigs(got.PushConfigs, withSecrets("clear").PushConfigs) {
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
	if got, err := s12.Get(ctx, "t1"); err != nil || !equalConfigs(got.PushConfigs, withSecrets("t1").PushConfigs) {
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
		if err != nil || !equalConfigs(got.PushConfigs, withSecrets(id).PushConfigs) {
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
